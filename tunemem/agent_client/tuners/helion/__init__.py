"""Helion with a memory: seeds, a filter, a remote cache and log ingest (docs/helion.md).

- `HelionMemory(url).autotune(kernel, args)`: memory first. The memory's candidates for the
  call's shape, timed by Helion's own benchmarking, the fastest set on the kernel; Helion's
  search (seeded) only when `trust.judge` does not trust them (`memory_first.py`).
- `HelionMemory(url).seed_configs(kernel, args)` -> `helion.Config`s for
  `autotune_seed_configs`: the memory's best configurations for nearby shapes and chips.
- `HelionMemory(url).config_filter(kernel, args)` -> a callable for `autotune_config_filter`
  that skips configurations the memory's failure lessons say fail on this chip.
- `remote_cache.MemoryCacheBackend`: Helion's `RemoteCacheBackend` over the memory, loaded by
  `HELION_REMOTE_CACHE_BACKEND` (that module imports Helion; this package does not).
- Helion's own logs (`HELION_AUTOTUNE_LOG`, `HELION_AUTOTUNE_LOG_DETAILS=1`) fill the memory
  through the `helion-autotune` ingest format (`tunemem.ingest.readers.helion_autotune`).

Helion stays optional: nothing here imports it until a seed is built.
"""

from tunemem.agent_client.tuners.helion.memory_first import (
    MemoryFirstOutcome,
    MemoryFirstPlan,
    memory_first_autotune,
    plan_memory_first,
)
from tunemem.agent_client.tuners.helion.ranking import RankedSeed, Timing, rank_seeds
from tunemem.agent_client.tuners.helion.seeds import (
    HelionMemory,
    MemoryUnavailableWarning,
    seed_configs,
    shape_of,
)
from tunemem.agent_client.tuners.helion.trust import Trust, TrustPolicy

__all__ = [
    "HelionMemory",
    "MemoryFirstOutcome",
    "MemoryFirstPlan",
    "MemoryUnavailableWarning",
    "RankedSeed",
    "Timing",
    "Trust",
    "TrustPolicy",
    "memory_first_autotune",
    "plan_memory_first",
    "rank_seeds",
    "seed_configs",
    "shape_of",
]
