"""A Kernel Tuner cache's coverage, decided from what the file holds (issue 36): the bundled
sweeps (real caches) are complete; a few of their entries, or their entries out of Kernel
Tuner's enumeration order, are a partial run; readers say what their files are."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

from tunemem.ingest.provenance import kerneltuner_coverage
from tunemem.ingest.readers import read_any
from tunemem.ingest.records import TrajectoryRecord
from tunemem.ingest.samples import SAMPLES_DIR, TARGETS_DIR

W6600 = TARGETS_DIR / "convolution" / "W6600.json.gz"


def entries(path: Path) -> tuple[dict, list[str], list[dict]]:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    keys = doc["tune_params_keys"]
    configs = [{k: entry[k] for k in keys} for entry in doc["cache"].values()]
    return doc["tune_params"], keys, configs


def test_a_restricted_sweep_is_complete_and_its_parts_are_not() -> None:
    declared, keys, configs = entries(W6600)
    assert kerneltuner_coverage(declared, keys, configs)[0] == "complete"
    assert kerneltuner_coverage(declared, keys, configs[:10])[0] == "partial"  # 10 evaluations
    shuffled = random.Random(0).sample(configs, len(configs) // 2)
    coverage, why = kerneltuner_coverage(declared, keys, shuffled)
    assert coverage == "partial" and "2181 of 10240" in why


def test_every_declared_configuration_is_complete_in_any_order() -> None:
    declared = {"a": [1, 2], "b": ["x", "y"]}
    every = [{"a": a, "b": b} for b in ("y", "x") for a in (2, 1)]
    assert kerneltuner_coverage(declared, ["a", "b"], every)[0] == "complete"
    assert kerneltuner_coverage({}, ["a"], every)[0] == "partial"


def test_readers_say_what_their_files_are() -> None:
    records = [r for r in read_any([SAMPLES_DIR, TARGETS_DIR]) if isinstance(r, TrajectoryRecord)]
    seen = {(r.source_format, r.provenance.origin, r.provenance.coverage) for r in records}
    assert ("kerneltuner", "recorded", "complete") in seen
    assert ("vllm-moe", "shipped", "partial") in seen
    assert all(r.provenance.device_reported is None for r in records)
    assert all(r.provenance.origin != "unstated" for r in records)
