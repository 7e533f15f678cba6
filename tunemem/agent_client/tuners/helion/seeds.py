"""Helion's `autotune_seed_configs` and `autotune_config_filter`, from the memory.

`HelionMemory(url).autotune(kernel, args)` is the memory-first mode (`memory_first.py`):
the memory's candidates timed by Helion, its search only when they are not trusted.
`HelionMemory(url).seed_configs(kernel, args)` lists the memory's exemplar lessons for the
kernel (one bounded request: `GET /v1/lessons?kind=exemplar&op=<kernel>`; Helion runs fill
them through the `helion-autotune` ingest format), keeps those whose configuration is a Helion
one, and ranks them for the call's shape and chip with `ranking.rank_seeds` (nearest shape
first, other chips at half weight). `config_filter(kernel, args)` drops the configurations
that the memory's failure lessons say fail on this chip. Both return Helion's own behaviour
(no seeds, no filter) after one warning when the memory is away, slow, erring or malformed:
every request goes through `memory_link.MemoryLink` (one deadline, no retry, a capped answer).
Helion is imported only when a seed is built.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tunemem import wire
from tunemem.agent_client.tuners.helion.memory_first import (
    DEFAULT_CANDIDATES,
    HelionDriver,
    MemoryFirstOutcome,
    MemoryFirstPlan,
    memory_first_autotune,
    plan_memory_first,
)
from tunemem.agent_client.tuners.helion.ranking import RankedSeed, Timing, rank_seeds
from tunemem.agent_client.tuners.helion.trust import TrustPolicy
from tunemem.agent_client.tuners.memory_link import (
    RETRY_AFTER_S,
    MemoryLink,
    MemoryLinkError,
    brief,
)
from tunemem.agent_client.tuners.memory_policy import MemoryUnavailableWarning
from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.readers.helion_autotune import flatten_config, unflatten_config

# Exemplars listed per request: a page of the listing (the service's limit is 500).
MAX_LESSONS = 500
DEFAULT_SEEDS = 8


class _Link(MemoryLink):
    """`MemoryLink` with the one GET this integration needs, under the same bounds."""

    def get(self, path: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """GET `path` and return the answer's JSON object, all within `timeout_s`."""
        return self.send(wire.Request("GET", path, params=dict(params)))


def kernel_name(kernel: Any) -> str:
    """The name Helion logs for a kernel: a string as given, else `.name` or the function's."""
    if isinstance(kernel, str):
        return kernel
    for candidate in (
        getattr(kernel, "name", None),
        getattr(getattr(kernel, "fn", None), "__name__", None),
    ):
        if isinstance(candidate, str) and candidate:
            return candidate
    return getattr(kernel, "__name__", "kernel")


def shape_of(args: Sequence[Any]) -> tuple[int, ...]:
    """The memory's shape key of a call: every tensor argument's sizes, in order (as the
    `helion-autotune` reader stores `signature.shape`). A tuple of ints is taken as is."""
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return tuple(int(a) for a in args)
    return tuple(int(d) for a in args if hasattr(a, "shape") for d in a.shape)


def device_of(args: Sequence[Any]) -> str | None:
    """The device name of the first CUDA tensor argument (torch's name for it), else None."""
    for arg in args:
        device = getattr(arg, "device", None)
        if getattr(device, "type", None) == "cuda":
            import torch

            return str(torch.cuda.get_device_name(device))
    return None


class HelionMemory:
    """The memory's part in Helion autotunes: seeds and a filter per kernel (see the module).

    Args:
        memory_url: the memory service's address, e.g. "http://127.0.0.1:8600".
        api_key, timeout_s: the memory's key and the bound on each request, in seconds.
        max_lessons: the most lessons one listing reads.
        client: an object answering `get(path, params)` (tests); default: a `MemoryLink`.
    """

    def __init__(
        self,
        memory_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        max_lessons: int = MAX_LESSONS,
        client: Any | None = None,
    ) -> None:
        self.link: Any = client or _Link(memory_url, api_key, timeout_s=timeout_s)
        self.max_lessons = max(1, min(int(max_lessons), MAX_LESSONS))
        self.last_seeds: list[RankedSeed] = []
        self.error: str | None = None
        self._down_until = 0.0

    # -- the two doors -----------------------------------------------------------------------

    def seed_configs(
        self,
        kernel: Any,
        args: Sequence[Any],
        *,
        chip: str | None = None,
        k: int = DEFAULT_SEEDS,
    ) -> list[Any]:
        """`helion.Config`s for `autotune_seed_configs`, best first; [] when the memory holds
        nothing for the kernel or cannot answer (one warning).

        Args:
            kernel: the Helion kernel (or its name, as Helion logs it).
            args: the call's arguments (or a tuple of ints: the shape key itself).
            chip: the device name; default the first CUDA tensor's.
            k: the most seeds.
        """
        seeds = self.seed_dicts(kernel, args, chip=chip, k=k)
        if not seeds:
            return []
        import helion

        return [helion.Config(**seed) for seed in seeds]

    def seed_dicts(
        self,
        kernel: Any,
        args: Sequence[Any],
        *,
        chip: str | None = None,
        k: int = DEFAULT_SEEDS,
    ) -> list[dict[str, Any]]:
        """The same seeds as plain configuration dicts (no Helion needed); `last_seeds` keeps
        each one's score and why it was chosen."""
        name = kernel_name(kernel)
        lessons = self._list({"kind": "exemplar", "op": name})
        if lessons is None:
            self.last_seeds = []
            return []
        timings = timings_from_lessons(lessons, name)
        target_chip = chip_context(chip if chip is not None else device_of(args)).chip
        self.last_seeds = rank_seeds(
            timings, kernel=name, shape=shape_of(args), device=target_chip, k=k
        )
        return [dict(seed.config) for seed in self.last_seeds]

    def config_filter(
        self, kernel: Any, args: Sequence[Any] = (), *, chip: str | None = None
    ) -> Callable[[Any], Any] | None:
        """A callable for `autotune_config_filter` that skips configurations the memory's
        failure lessons for this kernel (on this chip, or on any) say fail; None when there
        are none or the memory cannot answer."""
        name = kernel_name(kernel)
        lessons = self._list({"kind": "failure", "op": name})
        if not lessons:
            return None
        target_chip = chip_context(chip if chip is not None else device_of(args)).chip
        avoid = list(avoided_settings(lessons, target_chip))
        if not avoid:
            return None

        def keep(config: Any) -> Any:
            try:
                flat = flatten_config(getattr(config, "config", config))
            except Exception:  # never break Helion's search on a configuration we cannot read
                return config
            for setting in avoid:
                if all(flat.get(p, _MISSING) == v for p, v in setting.items()):
                    return None
            return config

        return keep

    def autotune(
        self,
        kernel: Any,
        args: Sequence[Any],
        *,
        chip: str | None = None,
        k: int = DEFAULT_CANDIDATES,
        seed_k: int = 4,
        policy: TrustPolicy | None = None,
        driver: HelionDriver | None = None,
    ) -> MemoryFirstOutcome:
        """Memory first (`memory_first.py`): time the memory's `k` best candidates for this
        call with Helion's benchmarking and set the fastest on the kernel when `policy` trusts
        them; otherwise Helion's own search with `seed_k` seeds (no seeds, after one warning,
        when the memory cannot answer). The outcome says which path ran and why."""
        name, timings, target_chip = self._remembered(kernel, args, chip)
        outcome = memory_first_autotune(
            kernel,
            args,
            timings,
            kernel_name=name,
            shape=shape_of(args),
            device=target_chip,
            k=k,
            seed_k=seed_k,
            policy=policy,
            driver=driver,
        )
        self.last_seeds = outcome.candidates
        return outcome

    def plan(
        self,
        kernel: Any,
        args: Sequence[Any],
        *,
        chip: str | None = None,
        k: int = DEFAULT_CANDIDATES,
        seed_k: int = 4,
        policy: TrustPolicy | None = None,
    ) -> MemoryFirstPlan:
        """What `autotune` would do for this call, without Helion: the verdict (`.trust`), the
        candidates it would time and the seeds its search would take."""
        name, timings, target_chip = self._remembered(kernel, args, chip)
        return plan_memory_first(
            timings,
            kernel_name=name,
            shape=shape_of(args),
            device=target_chip,
            k=k,
            seed_k=seed_k,
            policy=policy,
        )

    def _remembered(
        self, kernel: Any, args: Sequence[Any], chip: str | None
    ) -> tuple[str, list[Timing], str]:
        name = kernel_name(kernel)
        lessons = self._list({"kind": "exemplar", "op": name}) or []
        target_chip = chip_context(chip if chip is not None else device_of(args)).chip
        return name, timings_from_lessons(lessons, name), target_chip

    # -- one bounded listing ---------------------------------------------------------------

    def _list(self, query: dict[str, Any]) -> list[dict[str, Any]] | None:
        if time.monotonic() < self._down_until:
            return None
        try:
            answer = self.link.get("/v1/lessons", {**query, "limit": self.max_lessons})
            data = answer.get("data") if isinstance(answer, dict) else None
            if not isinstance(data, list):
                raise MemoryLinkError("the answer has no 'data' list")
        except Exception as exc:  # the memory is untrusted: any failure is Helion's own search
            self.error = brief(exc)
            self._down_until = time.monotonic() + RETRY_AFTER_S
            warnings.warn(
                f"tunemem: the memory could not help Helion ({self.error}); "
                "Helion autotunes on its own",
                MemoryUnavailableWarning,
                stacklevel=3,
            )
            return None
        return [item for item in data if isinstance(item, dict)]


_MISSING = object()


def timings_from_lessons(lessons: Sequence[Mapping[str, Any]], kernel: str) -> list[Timing]:
    """Exemplar lessons of Helion runs as timings (a lesson that is not one is skipped)."""
    out = []
    for lesson in lessons:
        hint = lesson.get("hint")
        app = lesson.get("applicability")
        if not isinstance(hint, dict) or not isinstance(app, dict):
            continue
        latency = hint.get("latency_ms")
        flat = hint.get("config")
        shape = (
            (app.get("signature") or {}).get("shape")
            if isinstance(app.get("signature"), dict)
            else None
        )
        if not (
            isinstance(latency, int | float) and isinstance(flat, dict) and isinstance(shape, list)
        ):
            continue
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            continue
        try:
            config = unflatten_config(flat)
        except ValueError:
            continue
        chips = app.get("chips") if isinstance(app.get("chips"), list) else []
        chip = chips[0] if chips and isinstance(chips[0], str) else "unknown"
        out.append(Timing(kernel, tuple(shape), chip, config, float(latency)))
    return out


def avoided_settings(lessons: Sequence[Mapping[str, Any]], chip: str) -> list[dict[str, Any]]:
    """The `avoid` settings of failure lessons that apply on `chip` (or on any chip)."""
    out = []
    for lesson in lessons:
        hint = lesson.get("hint")
        app = lesson.get("applicability")
        if not isinstance(hint, dict) or not isinstance(hint.get("avoid"), dict):
            continue
        chips = app.get("chips") if isinstance(app, dict) else None
        if isinstance(chips, list) and chips and chip not in chips:
            continue
        if hint["avoid"]:
            out.append(dict(hint["avoid"]))
    return out


def seed_configs(
    kernel: Any,
    args: Sequence[Any],
    memory_url: str,
    *,
    chip: str | None = None,
    k: int = DEFAULT_SEEDS,
    timeout_s: float = 5.0,
    api_key: str | None = None,
) -> list[Any]:
    """One call: the memory's seeds for `kernel` at `args` (see `HelionMemory.seed_configs`)."""
    memory = HelionMemory(memory_url, api_key=api_key, timeout_s=timeout_s)
    try:
        return memory.seed_configs(kernel, args, chip=chip, k=k)
    finally:
        close = getattr(memory.link, "close", None)
        if callable(close):
            close()
