"""Small bundled sample of real tuning data, for seeding a new store and for examples.

`sample_paths()` is what a new store is seeded with; `target_paths()` are recordings of a chip
the seed leaves out (W6600), for the README's unseen-chip transfer demo. Origins and licences
are in `LICENSES.md` next to this file.
"""

from __future__ import annotations

from pathlib import Path

SAMPLES_DIR = Path(__file__).resolve().parent
TARGETS_DIR = SAMPLES_DIR / "targets"


def sample_paths() -> list[Path]:
    """The sample sources, ready for `read_any`: cache files, vLLM files, a timing folder."""
    paths = sorted((SAMPLES_DIR / "kerneltuner").rglob("*.json.gz"))
    paths += sorted((SAMPLES_DIR / "vllm_fused_moe").glob("*.json"))
    paths += sorted(p for p in (SAMPLES_DIR / "kernelbench_timings").iterdir() if p.is_dir())
    return paths


def target_paths() -> list[Path]:
    """Recordings of chips whose lessons the seed does not hold (never seeded)."""
    return sorted(TARGETS_DIR.rglob("*.json.gz"))
