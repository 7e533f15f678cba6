"""Helion's `RemoteCacheBackend` over the memory: exact hits shared between machines.

Point Helion at it with two variables (Helion builds the backend itself, with no arguments, so
the memory's address comes from the environment):

    HELION_AUTOTUNE_CACHE=RemoteAutotuneCache
    HELION_REMOTE_CACHE_BACKEND=tunemem.agent_client.tuners.helion.remote_cache.MemoryCacheBackend
    TUNEMEM_HELION_URL=http://memory:8600        # TUNEMEM_HELION_API_KEY when keys are checked

Each entry (Helion's `.best_config` JSON: `config`, `key.fields`, `flat_config`) is stored as
one exemplar lesson of op `helion-cache`: the entry itself as the lesson's code, its
configuration flattened as the hint (so it is a configuration like any other), its key in the
text and provenance. `get` finds the newest lesson whose provenance carries the key; `list`
returns the newest entries, for Helion's own same-GPU, same-shape warm start. Every request is
bounded as `memory_link` says; a failure is one warning, then misses (Helion's local cache
stays the source of truth) until `RETRY_AFTER_S` has passed.

Helion's base class is used when Helion is installed; without it the class still works over
the memory (Helion is not there to load it). Nothing else in tunemem imports this module.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterable
from typing import Any

try:
    from helion.autotuner.remote_cache import RemoteCacheBackend
except ImportError:  # Helion absent: the backend still speaks to the memory (tests, tools)
    RemoteCacheBackend = object  # type: ignore[assignment,misc]

from tunemem.agent_client.tuners.helion.seeds import MemoryUnavailableWarning, _Link
from tunemem.agent_client.tuners.memory_link import RETRY_AFTER_S, MemoryLinkError, brief
from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.readers.helion_autotune import flatten_config

OP = "helion-cache"
URL_VARIABLE = "TUNEMEM_HELION_URL"
KEY_VARIABLE = "TUNEMEM_HELION_API_KEY"
# Helion's entries are a few kilobytes; a lesson's code holds at most 200,000 characters.
MAX_ENTRY_CHARS = 200_000
PAGE = 500


class MemoryCacheBackend(RemoteCacheBackend):
    """The memory as Helion's remote autotune cache (see the module).

    Args:
        memory_url: the memory's address; default `$TUNEMEM_HELION_URL`.
        api_key: default `$TUNEMEM_HELION_API_KEY`.
        timeout_s: the bound on each request.
        client: an object with `get(path, params)` and `post(path, body)` (tests).
    """

    def __init__(
        self,
        memory_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        client: Any | None = None,
    ) -> None:
        url = memory_url or os.environ.get(URL_VARIABLE, "")
        if not url and client is None:
            raise ValueError(f"set {URL_VARIABLE} to the memory's address (or pass memory_url)")
        self.link: Any = client or _Link(
            url, api_key or os.environ.get(KEY_VARIABLE) or None, timeout_s=timeout_s
        )
        self.error: str | None = None
        self._down_until = 0.0

    def get(self, key: str) -> str | None:
        """The entry stored under `key`, or None (a miss, or the memory is away)."""
        lessons = self._lessons({"q": key})
        for lesson in reversed(lessons or []):
            provenance = lesson.get("provenance")
            code = lesson.get("code")
            if isinstance(provenance, dict) and provenance.get("helion_cache_key") == key:
                if isinstance(code, str):
                    return code
        return None

    def put(self, key: str, data: str) -> None:
        """Store Helion's entry under `key` (a lesson; see the module)."""
        if time.monotonic() < self._down_until or len(data) > MAX_ENTRY_CHARS:
            return
        try:
            lesson = entry_lesson(key, data)
        except (ValueError, KeyError, TypeError):
            return  # not an entry Helion writes: nothing to share, and the memory is not at fault
        try:
            self.link.post("/v1/lessons", {"lessons": [lesson]})
        except Exception as exc:  # untrusted memory: Helion's local cache is already written
            self._failed(brief(exc))

    def list(self, max_results: int | None = None) -> Iterable[str]:
        """The newest entries first, at most `max_results` (one page of the listing)."""
        limit = max(1, min(int(max_results or PAGE), PAGE))
        first = self._lessons({"limit": 1}, raw=True)
        if not isinstance(first, dict) or not isinstance(first.get("count"), int):
            return []
        offset = max(0, first["count"] - limit)
        lessons = self._lessons({"limit": limit, "offset": offset}) or []
        codes = [lesson.get("code") for lesson in lessons]
        return [code for code in reversed(codes) if isinstance(code, str)]

    # -- bounded requests ----------------------------------------------------------------------

    def _lessons(self, query: dict[str, Any], raw: bool = False) -> Any:
        if time.monotonic() < self._down_until:
            return None
        params = {"op": OP, "kind": "exemplar", "limit": PAGE, **query}
        try:
            answer = self.link.get("/v1/lessons", params)
            if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
                raise MemoryLinkError("the answer has no 'data' list")
        except Exception as exc:
            self._failed(brief(exc))
            return None
        if raw:
            return answer
        return [item for item in answer["data"] if isinstance(item, dict)]

    def _failed(self, reason: str) -> None:
        first = self.error is None
        self.error = reason
        self._down_until = time.monotonic() + RETRY_AFTER_S
        if first:
            warnings.warn(
                f"tunemem: Helion's remote cache in the memory failed ({reason}); "
                "Helion's local cache goes on alone",
                MemoryUnavailableWarning,
                stacklevel=3,
            )


def entry_lesson(key: str, data: str) -> dict[str, Any]:
    """The lesson that stores one Helion cache entry (`data`, its JSON text) under `key`.

    Raises:
        ValueError, KeyError, TypeError: `data` is not a Helion cache entry.
    """
    entry = json.loads(data)
    config = entry["config"]
    config = json.loads(config) if isinstance(config, str) else config
    if not isinstance(config, dict):
        raise TypeError("the entry's config is not an object")
    fields = entry["key"]["fields"]
    if not isinstance(fields, dict):
        raise TypeError("the entry's key fields are not an object")
    hardware = fields.get("hardware")
    chip = chip_context(hardware)
    try:
        hint: dict[str, Any] | None = {"config": flatten_config(config)}
    except ValueError:  # a configuration value the memory cannot hold as a parameter
        hint = None
    return {
        "kind": "exemplar",
        "text": (
            f"Helion autotune cache entry {key}: the best configuration Helion found for one "
            f"kernel and shape on {hardware or 'an unnamed device'}."
        ),
        "hint": hint,
        "code": data,
        "applicability": {
            "op": OP,
            "kernel": str(fields.get("kernel_source_hash", ""))[:256] or None,
            "chips": [chip.chip] if chip.known else [],
        },
        "provenance": {
            "source": "helion RemoteCacheBackend",
            "helion_cache_key": key,
            "hardware": str(hardware or ""),
            "specialization_key": str(fields.get("specialization_key", ""))[:2000],
        },
    }
