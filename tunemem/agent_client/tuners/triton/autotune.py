"""`triton.autotune` with a memory: time only the configurations the memory ranks best.

`autotune(configs, key, ..., memory_url=..., top_k=...)` takes `triton.autotune`'s arguments
plus the memory's address and how many configurations to time; `hook(kernel, memory_url)` gives
an existing `@triton.autotune` kernel the same behaviour. For a key not tuned yet, the given
configurations (after the user's own `early_config_prune`) go to `POST /v1/suggest` as the
space's valid list; Triton times the memory's best plus a small exploration share; then every
timing (`configs_timings`) goes back, in a background thread bounded in time, as outcomes
against the suggestion and as a trajectory (`records`). The memory unreachable, erring,
slow, malformed or empty: one warning line, then Triton's own behaviour; every request goes
through `memory_link` (one deadline for the whole request, no retry, a cap on the answer), and
only suggestions that are one of the given configurations are timed. docs/triton.md is the
user's page.
"""

from __future__ import annotations

import atexit
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from tunemem.agent_client.client import MemoryClient
from tunemem.agent_client.tuners.memory_link import MemoryLink, brief
from tunemem.agent_client.tuners.memory_policy import MemoryGuard, MemoryUnavailableWarning
from tunemem.agent_client.tuners.triton import choice
from tunemem.agent_client.tuners.triton.records import (
    Pending,
    config_params,
    device_context,
    dtype_name,
    interpreter_bench,
    interpreting,
    outcomes,
    params_key,
    scalar,
    timing_ms,
    timing_spread_ms,
    trajectory,
)
from tunemem.agent_client.tuners.triton.rounds import RoundPolicy

__all__ = ["MemoryTuning", "MemoryUnavailableWarning", "autotune", "hook", "interpreter_bench"]


class MemoryTuning:
    """The memory's part in one autotuned kernel: which configurations to time, what to report.

    Args:
        memory_url: the memory service's address, e.g. "http://127.0.0.1:8600".
        top_k: configurations to time for a new key, as Triton's own `prune_configs_by` top_k:
            an int (a count) or a float <= 1.0 (a fraction of the given configurations, at
            least one).
        explore: the share of each round after the opening spent on the untimed
            configurations farthest from everything timed (space-filling); the rest of a round
            is what the memory suggests from the key's timings so far.
        op, kernel: how the memory names the operator and the kernel (default: the kernel
            function's name for both).
        signature: (named_args) -> the problem's signature; default: the key arguments' values
            and the first tensor argument's dtype.
        api_key, timeout_s: the memory's key and the bound on each call, in seconds.
        options: ranking options for the suggest call (the service's `RetrieveOptions`).
        context: overrides of the device context (chip, backend, model, scenario, toolchain).
        seed: the exploration's seed (mixed with the key).
        client: a ready `MemoryClient` (tests, or a shared one); default: one of its own.
        policy: how the rounds spend `top_k` (`rounds.RoundPolicy`; its explore share
            is `explore`).
    """

    def __init__(
        self,
        memory_url: str,
        *,
        top_k: int | float = 5,
        explore: float = 0.5,
        op: str | None = None,
        kernel: str | None = None,
        signature: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        options: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        seed: int = 0,
        client: MemoryClient | None = None,
        policy: RoundPolicy | None = None,
        origin: str = "measured",
    ) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int | float) or top_k <= 0:
            raise ValueError(f"top_k must be a positive int or a fraction <= 1.0, not {top_k!r}")
        if isinstance(top_k, float) and top_k > 1.0:
            raise ValueError(f"a float top_k is a fraction <= 1.0, not {top_k!r}")
        if not 0.0 <= explore <= 1.0:
            raise ValueError(f"explore is a share between 0 and 1, not {explore!r}")
        self.memory_url = memory_url
        self.top_k = top_k
        self.explore = explore
        base = policy or RoundPolicy()
        self.policy = RoundPolicy(base.opening, base.step, base.min_gain, explore, base.sure)
        self.op = op
        self.kernel = kernel
        self.signature = signature
        self.timeout_s = timeout_s
        self.options = dict(options or {})
        self.context_overrides = dict(context or {})
        self.seed = seed
        # "measured" by Triton on this device; "replayed" where the timings are a recording's.
        self.origin = origin
        self.client = MemoryLink(memory_url, api_key, timeout_s=timeout_s, client=client)
        self.reports: list[dict[str, Any]] = []  # what went back to the memory, per key
        self.last_decision: dict[str, Any] | None = None
        # The key being tuned: what goes back to the memory once Triton has timed it.
        self.pending: Pending | None = None
        # The call being tuned (Triton's args and kwargs) and what the rounds timed in it.
        self._call: tuple[tuple[Any, ...], dict[str, Any]] | None = None
        self._measured: dict[Any, tuple[Any, Any]] = {}
        # The tuners' one policy: one warning, then the memory left alone (its Retry-After
        # when busy); reports on its background thread.
        self.guard = MemoryGuard(self.client, self._unavailable, note=self._unavailable)
        self._context: dict[str, Any] | None = None
        # How the memory names the operator and the kernel; attach() fills in the function's.
        self._names = (op or kernel or "kernel", kernel or op or "kernel")
        _LIVE.add(self)

    # -- attaching ---------------------------------------------------------------------------

    def attach(self, autotuner: Any) -> Any:
        """Hook an autotuned kernel (a `triton.runtime.autotuner.Autotuner`); returns it."""
        for needed in ("configs", "cache", "run", "arg_names"):
            if not hasattr(autotuner, needed):
                raise TypeError(
                    f"hook() takes a kernel decorated with @triton.autotune; {autotuner!r} "
                    f"has no {needed!r}"
                )
        if getattr(autotuner, "_tunemem", None) is not None:
            raise ValueError("this kernel is already hooked to a memory")
        base = getattr(autotuner, "base_fn", None) or autotuner.fn
        name = getattr(base, "__name__", "kernel")
        self._names = (self.op or name, self.kernel or name)
        user_prune = autotuner.early_config_prune
        original_run = autotuner.run
        original_bench = autotuner._bench

        def bench(configs: list[Any]) -> dict[Any, Any]:
            """Triton's own benchmarking of each configuration, kept for Triton's pass."""
            assert self._call is not None
            args, kwargs = self._call
            out = {}
            for config in configs:
                out[config] = original_bench(*args, config=config, **kwargs)
                self._measured[params_key(config_params(config))] = (config, out[config])
            return out

        def remembered_bench(*args: Any, config: Any, **kwargs: Any) -> Any:
            # Triton's benchmark pass over the pruned list: what the rounds timed is not re-run.
            found = self._measured.get(params_key(config_params(config)))
            return found[1] if found else original_bench(*args, config=config, **kwargs)

        def early_config_prune(configs: list[Any], named_args: dict[str, Any], **kwargs: Any):
            if user_prune is not None:
                configs = user_prune(configs, named_args, **kwargs)
            rounds = bench if self._call is not None else None
            return self.choose(list(configs), {**named_args, **kwargs}, autotuner.keys, rounds)

        def run(*args: Any, **kwargs: Any) -> Any:
            before = set(autotuner.cache)
            timings_before = getattr(autotuner, "configs_timings", None)
            self.pending, self._call, self._measured = None, (args, kwargs), {}
            try:
                result = original_run(*args, **kwargs)
            finally:
                self._call = None
            pending, self.pending = self.pending, None
            timings = getattr(autotuner, "configs_timings", None)
            if timings is timings_before and self._measured:
                timings = dict(self._measured.values())  # one config left: Triton timed none
            elif timings is timings_before:
                timings = None
            if pending is not None and set(autotuner.cache) - before and timings:
                self.report(pending, timings)
            return result

        if getattr(autotuner, "_do_bench", "absent") is None and interpreting():
            autotuner._do_bench = interpreter_bench
        autotuner.early_config_prune = early_config_prune
        autotuner.run = run
        autotuner._bench = remembered_bench
        autotuner._tunemem = self
        return autotuner

    # -- choosing ----------------------------------------------------------------------------

    def budget(self, given: int) -> int:
        """How many of `given` configurations to time."""
        if isinstance(self.top_k, float):
            return max(1, int(given * self.top_k))
        return min(given, self.top_k)

    def task_of(self, named: dict[str, Any], keys: list[str]) -> dict[str, Any]:
        """The memory's task for these arguments: op, kernel, signature and dtype."""
        dtype = next((dtype_name(v.dtype) for v in named.values() if hasattr(v, "dtype")), None)
        if self.signature is not None:
            signature = dict(self.signature(named))
        else:
            signature = {k: scalar(named[k]) for k in keys if k in named}
            if dtype is not None:
                signature.setdefault("dtype", dtype)
        op, kernel = self._names
        return {"op": op, "kernel": kernel, "signature": signature, "dtype": dtype}

    def choose(
        self,
        configs: list[Any],
        named: dict[str, Any],
        keys: list[str],
        bench: Callable[[list[Any]], dict[Any, Any]] | None = None,
    ) -> list[Any]:
        """The configurations to time for a new key, searched in rounds when `bench` (Triton's
        benchmarking of a list of configurations) is given: the memory's best, then what the
        key's own timings suggest (`choice`, `rounds`). Without `bench`, the
        opening round alone. Every configuration when they fit the budget anyway, or when the
        memory cannot help (with one warning line).
        """
        return choice.choose(self, configs, named, keys, bench)

    def record(self, pending: Pending, decision: dict[str, Any]) -> None:
        """Keep the key's pending report (`pending`) and the decision (`last_decision`)."""
        self.pending = pending
        self.last_decision = decision

    def suggest(
        self,
        task: dict[str, Any],
        valid: list[dict[str, Any]],
        k: int,
        observations: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any] | None:
        """The memory's suggest answer for the task over `valid` (None: no answer, the memory
        left alone after a failure or a 429)."""
        if not self.guard.available:
            return None
        params: dict[str, list[Any]] = {}
        for config in valid:
            for name, value in config.items():
                if value not in params.setdefault(name, []):
                    params[name].append(value)
        body: dict[str, Any] = {
            "task": task,
            "context": self.context(),
            "space": {"params": params, "valid": valid},
            "observations": observations or [],
            "k": max(1, min(k, 100)),
            "stage": "refine",
            "seed": self.seed,
        }
        if self.options:
            body["options"] = self.options
        # None when busy too: this key is Triton's own, a later one asks after the Retry-After.
        answer: dict[str, Any] | None = self.guard.ask("suggest", lambda m: m.suggest(**body))
        return answer

    def context(self) -> dict[str, Any]:
        if self._context is None:
            self._context = {**device_context(), **self.context_overrides}
        return self._context

    def warn(self, message: str) -> None:
        """The drop-in's one warning line (`MemoryUnavailableWarning`)."""
        warnings.warn(f"tunemem: {message}; Triton autotunes as usual", MemoryUnavailableWarning, 3)

    # -- reporting ---------------------------------------------------------------------------

    def report(self, pending: Pending, timings: Mapping[Any, Any]) -> None:
        """Send Triton's timings of a new key back to the memory, in the background."""
        measured, spreads = [], {}
        for config, timing in timings.items():
            measured.append((config_params(config), timing_ms(timing)))
            spreads[params_key(config_params(config))] = timing_spread_ms(timing)
        report = {
            "key": pending.key,
            "retrieval_id": pending.retrieval_id,
            "trajectory": trajectory(pending, measured, self.context(), self.origin),
            "outcomes": outcomes(pending, measured, self.origin, spreads),
            "sent": False,
            "error": None,
        }
        self.reports.append(report)
        if not self.guard.submit(lambda link: _send(link, report)):
            report["error"] = "memory unavailable"

    def _unavailable(self, message: str) -> None:
        self.warn(f"memory at {self.memory_url} {message}")

    def flush(self, timeout_s: float | None = None) -> bool:
        """Wait for the reports in flight (at most `timeout_s` in all); True when none is left."""
        return self.guard.flush(self.timeout_s * 4 if timeout_s is None else timeout_s)


def _send(link: MemoryLink, report: dict[str, Any]) -> None:
    """One key's report: its outcomes, then its trajectory (on the guard's thread)."""
    try:
        for item in report["outcomes"]:
            retrieval_id = item.get("retrieval_id") or report["retrieval_id"]
            if retrieval_id is not None:
                link.report(retrieval_id, item["outcome"], used=item["used"])
        link.upload_trajectories([report["trajectory"]])
        report["sent"] = True
    except Exception as exc:  # the guard warns once; it never reaches the user's loop
        report["error"] = brief(exc)
        raise


_LIVE: weakref.WeakSet[MemoryTuning] = weakref.WeakSet()


@atexit.register
def _flush_all() -> None:
    for tuning in list(_LIVE):
        tuning.flush()


def hook(
    kernel: Any,
    memory_url: str,
    /,
    *,
    top_k: int | float = 5,
    explore: float = 0.5,
    **memory: Any,
) -> Any:
    """Give an existing `@triton.autotune` kernel a memory; returns the same kernel.

    Keyword arguments are `MemoryTuning`'s (op, kernel, signature, api_key, timeout_s,
    options, context, seed, client). The tuning object is `kernel._tunemem`.
    """
    return MemoryTuning(memory_url, top_k=top_k, explore=explore, **memory).attach(kernel)


def autotune(
    configs: list[Any],
    key: list[str],
    prune_configs_by: dict[str, Any] | None = None,
    reset_to_zero: list[str] | None = None,
    restore_value: list[str] | None = None,
    pre_hook: Callable[..., Any] | None = None,
    post_hook: Callable[..., Any] | None = None,
    warmup: int | None = None,
    rep: int | None = None,
    use_cuda_graph: bool = False,
    do_bench: Callable[..., Any] | None = None,
    *,
    memory_url: str,
    top_k: int | float = 5,
    explore: float = 0.5,
    **memory: Any,
) -> Callable[[Any], Any]:
    """`triton.autotune` (its arguments, `cache_results` too where Triton has it) plus
    `memory_url`, `top_k`, `explore` and `MemoryTuning`'s keywords."""
    import inspect

    import triton

    triton_kwargs: dict[str, Any] = {
        "prune_configs_by": prune_configs_by,
        "reset_to_zero": reset_to_zero,
        "restore_value": restore_value,
        "pre_hook": pre_hook,
        "post_hook": post_hook,
        "do_bench": do_bench,
    }
    if warmup is not None or rep is not None or use_cuda_graph:
        triton_kwargs.update(warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph)
    accepted = inspect.signature(triton.autotune).parameters
    for name in [n for n in memory if n in accepted]:
        triton_kwargs[name] = memory.pop(name)  # e.g. cache_results on newer Tritons
    decorate = triton.autotune(configs, key, **triton_kwargs)

    def decorator(fn: Any) -> Any:
        return hook(decorate(fn), memory_url, top_k=top_k, explore=explore, **memory)

    return decorator
