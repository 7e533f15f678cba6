"""Triton's own autotuner, captured: every autotune of the process goes to the memory.

Triton calls `triton.knobs.autotuning.listener(fn=, key=, best_config=, configs_timings=,
duration=, cache_hit=)` after each autotune (`triton/runtime/autotuner.py`, `Autotuner.run`).
`TritonCapture.install()` sets that listener (keeping one already set, which is called after
it); the listener only snapshots what Triton gives and queues it, and the memory link's
`Reporter` turns it into a trajectory (`capture_records`) and uploads it on a
background thread, bounded (a full queue drops and counts, a failure warns once and leaves the
memory alone for `RETRY_AFTER_S`). Nothing the memory does, and no error of the capture's own,
reaches the program: the listener catches everything. A kernel already hooked to the memory
(the `triton.autotune` drop-in, `hook`) reports its own timings and is not captured twice.

Provenance: a cache hit (`cache_hit=True`: Triton read the timings from its disk cache, or one
configuration was left and none was timed) is not a measurement, so nothing is uploaded for it
(counted in `skipped_cache_hits`). Under `TRITON_INTERPRET=1` the timings are the interpreter's
wall clock on the CPU: uploaded with no latency, the wall clock kept as a metric, the run
marked `interpreter` (`capture_records`).

Two Tritons cannot take the listener: one without `knobs.autotuning.listener` (older than the
listener) says so in `reason` and captures nothing; and under the interpreter Triton 3.9's
own call fails (it walks `fn.fn` down to a `JITFunction`, and an interpreted kernel has none),
so there the capture leaves the knob alone and calls the same listener from around
`Autotuner.run` instead, with the same arguments Triton would give.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import warnings
from typing import Any

from tunemem.agent_client.tuners.memory_link import MemoryLink, Reporter, brief
from tunemem.agent_client.tuners.triton.capture_records import Autotune, trajectory
from tunemem.agent_client.tuners.triton.records import interpreting

# Autotunes queued for upload, at most; past this they are dropped and counted.
MAX_PENDING = 1_000
# How long the program's exit waits for uploads in flight.
EXIT_FLUSH_S = 10.0


class CaptureUnavailableWarning(UserWarning):
    """Triton's autotunes cannot be captured here, or the memory cannot take them now; the
    program runs as it would without the capture."""


def listener_support() -> tuple[bool, str]:
    """(whether the installed Triton calls an autotuning listener, why not when it does not)."""
    try:
        import triton
        from triton import knobs
    except ImportError as exc:
        return False, f"Triton is not importable ({brief(exc)})"
    autotuning = getattr(knobs, "autotuning", None)
    if autotuning is None or not hasattr(autotuning, "listener"):
        return False, (
            f"Triton {triton.__version__} has no triton.knobs.autotuning.listener, so its "
            "autotunes cannot be captured (a newer Triton calls one after every autotune)"
        )
    return True, ""


class TritonCapture:
    """The listener of Triton's autotunes, sending each to the memory in the background.

    Args:
        memory_url: the memory service's address.
        api_key: a key with the agent role, when the server checks keys.
        timeout_s: the deadline of each upload.
        client: an object with `upload_trajectories` (tests, or a shared `MemoryClient`).
        context: overrides of the device context (chip, backend, model, scenario, toolchain).
        max_pending: autotunes queued at most; more are dropped and counted.
    """

    def __init__(
        self,
        memory_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        client: Any | None = None,
        context: dict[str, Any] | None = None,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.memory_url = memory_url
        self._link_args = (memory_url, api_key, timeout_s, client)
        self.link = MemoryLink(memory_url, api_key, timeout_s=timeout_s, client=client)
        self.reporter = Reporter(self._failed, max_pending=max_pending)
        self.context_overrides = dict(context or {})
        self.active = False
        self.reason = ""
        self.mode = ""  # "listener" or "interpreter" once installed
        self.captured = 0  # autotunes queued for upload
        self.skipped_cache_hits = 0  # autotunes whose timings were not measured
        self.skipped_drop_in = 0  # autotunes of kernels hooked to the memory already
        self.errors = 0  # listener calls the capture could not read (never raised)
        self.warned: list[str] = []
        self._previous: Any = None
        self._original_run: Any = None
        self._lock = threading.Lock()

    def _after_fork(self) -> None:
        url, api_key, timeout_s, client = self._link_args
        self.link = MemoryLink(url, api_key, timeout_s=timeout_s, client=client)
        self.reporter = Reporter(self._failed, max_pending=self.reporter.max_pending)
        self._lock = threading.Lock()

    # -- installing -------------------------------------------------------------------------

    def install(self) -> TritonCapture:
        """Start capturing every autotune of this process; returns self. Where Triton cannot
        call a listener, one warning says why and `active` stays False."""
        with self._lock:
            if self.active:
                return self
            supported, why = listener_support()
            if interpreting():
                self._wrap_run()
            elif not supported:
                self.reason = why
                self._warn(why)
                return self
            else:
                from triton import knobs

                self._previous = knobs.autotuning.listener
                knobs.autotuning.listener = self
                self.mode = "listener"
            self.active = True
            _INSTALLED.append(self)
        return self

    def uninstall(self) -> None:
        """Stop capturing (what is queued is still sent); the earlier listener is restored."""
        with self._lock:
            if not self.active:
                return
            if self.mode == "listener":
                from triton import knobs

                if knobs.autotuning.listener is self:
                    knobs.autotuning.listener = self._previous
            elif self._original_run is not None:
                from triton.runtime.autotuner import Autotuner

                Autotuner.run = self._original_run  # type: ignore[method-assign]
                self._original_run = None
            self.active = False
            if self in _INSTALLED:
                _INSTALLED.remove(self)

    def _wrap_run(self) -> None:
        """Under the interpreter: call the listener from around `Autotuner.run`, after a run
        that benchmarked (its `configs_timings` is new), as Triton's own call would."""
        from triton.runtime.autotuner import Autotuner

        original = Autotuner.run
        capture = self

        def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
            before = getattr(autotuner, "configs_timings", None)
            known = set(autotuner.cache)
            result = original(autotuner, *args, **kwargs)
            try:
                timings = getattr(autotuner, "configs_timings", None)
                new = [key for key in autotuner.cache if key not in known]
                if new and timings is not None and timings is not before:
                    key = new[-1]
                    capture.capture(
                        autotuner,
                        fn=autotuner.fn,
                        key=key,
                        best_config=autotuner.cache[key],
                        configs_timings=timings,
                        duration=getattr(autotuner, "bench_time", None),
                        cache_hit=False,
                    )
            except Exception:  # the capture never reaches the program
                capture.errors += 1
            return result

        self._original_run = original
        Autotuner.run = run  # type: ignore[method-assign]
        self.mode = "interpreter"

    # -- the listener -----------------------------------------------------------------------

    def __call__(
        self,
        *,
        fn: Any,
        key: Any,
        best_config: Any,
        configs_timings: Any,
        duration: Any = None,
        cache_hit: bool = False,
        **more: Any,
    ) -> None:
        """Triton's listener call; the earlier listener, if any, is called after it."""
        try:
            self.capture(
                _calling_autotuner(),
                fn=fn,
                key=key,
                best_config=best_config,
                configs_timings=configs_timings,
                duration=duration,
                cache_hit=cache_hit,
            )
        except Exception:  # the capture never reaches the program
            self.errors += 1
        if self._previous is not None:
            self._previous(
                fn=fn,
                key=key,
                best_config=best_config,
                configs_timings=configs_timings,
                duration=duration,
                cache_hit=cache_hit,
                **more,
            )

    def capture(
        self,
        autotuner: Any,
        *,
        fn: Any,
        key: Any,
        best_config: Any,
        configs_timings: Any,
        duration: Any,
        cache_hit: bool,
    ) -> bool:
        """Queue one autotune for upload; False when it is not (a cache hit, or dropped)."""
        if cache_hit:
            self.skipped_cache_hits += 1
            return False
        if getattr(autotuner, "_tunemem", None) is not None:
            self.skipped_drop_in += 1  # the drop-in reports its own timings
            return False
        tune = Autotune(
            name=_kernel_name(fn),
            key=tuple(key) if isinstance(key, tuple | list) else (key,),
            key_names=tuple(getattr(autotuner, "keys", None) or ()),
            timings=list(configs_timings.items()),
            best=best_config,
            duration_s=duration,
            interpreter=interpreting(),
            device_index=_current_device(),
        )
        queued = self.reporter.submit(lambda: self._send(tune))
        if queued:
            self.captured += 1
        return queued

    def _send(self, tune: Autotune) -> None:
        self.link.upload_trajectories([trajectory(tune, self.context_overrides)])

    # -- failures, counts and flushing -----------------------------------------------------

    def _failed(self, message: str) -> None:
        self._warn(f"{message} at {self.memory_url}; autotunes are not captured for a while")

    def _warn(self, message: str) -> None:
        self.warned.append(message)
        warnings.warn(
            f"tunemem capture: {message}; the program runs as usual",
            CaptureUnavailableWarning,
            3,
        )

    @property
    def sent(self) -> int:
        return self.reporter.sent

    @property
    def dropped(self) -> int:
        return self.reporter.dropped

    def flush(self, timeout_s: float = EXIT_FLUSH_S) -> bool:
        """Wait for the uploads in flight, at most `timeout_s`; True when none is left."""
        return self.reporter.flush(timeout_s)

    def summary(self) -> dict[str, Any]:
        return {
            "active": self.active,
            "mode": self.mode,
            "reason": self.reason,
            "captured": self.captured,
            "sent": self.sent,
            "dropped": self.dropped,
            "skipped_cache_hits": self.skipped_cache_hits,
            "skipped_drop_in": self.skipped_drop_in,
            "errors": self.errors,
        }


_INSTALLED: list[TritonCapture] = []


@atexit.register
def _flush_installed() -> None:
    for capture in list(_INSTALLED):
        capture.flush(EXIT_FLUSH_S)


def _after_fork_in_child() -> None:
    """A forked child (a worker pool) inherits the listener but not the upload thread, and
    must not share the parent's connections: each installed capture starts its own."""
    for capture in list(_INSTALLED):
        capture._after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _calling_autotuner() -> Any:
    """The `Autotuner` whose `run` called the listener (two frames up: the listener's own
    frame, then Triton's), for the key's argument names; None when it is not there."""
    frame: Any = sys._getframe(2)
    for _ in range(3):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if hasattr(candidate, "keys") and hasattr(candidate, "arg_names"):
            return candidate
        frame = frame.f_back
    return None


def _kernel_name(fn: Any) -> str:
    while fn is not None and not hasattr(fn, "__name__"):
        fn = getattr(fn, "fn", None)
    return str(getattr(fn, "__name__", "kernel"))


def _current_device() -> int | None:
    """The CUDA device this thread runs on, read without starting CUDA (None: not started)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception:
        return None
    return None


def capture_triton(memory_url: str, **options: Any) -> TritonCapture:
    """Capture every Triton autotune of this process into the memory at `memory_url`
    (`TritonCapture`'s keyword arguments); returns the installed capture, the one already
    installed for that memory when there is one (`tunemem capture` and a call in the
    program's code do not send each autotune twice)."""
    for capture in _INSTALLED:
        if capture.memory_url.rstrip("/") == memory_url.rstrip("/"):
            return capture
    return TritonCapture(memory_url, **options).install()
