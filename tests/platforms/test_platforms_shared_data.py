"""Every device name in the real data sets (../shared/data) resolves to a known chip of the
right vendor and backend: vLLM fused-MoE file names, Kernel Tuner `device_name` fields,
KernelBench timing folders and their `hardware` fields."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from tunemem.platforms import resolve

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"shared data directory {DATA} is absent")

VENDOR_BACKEND = {"nvidia": "cuda", "amd": "hip", "intel": "xpu", "huawei": "ascend"}


def _vendor_hint(name: str) -> str | None:
    lowered = name.lower()
    if "intel" in lowered:
        return "intel"
    if lowered.startswith(("amd", "radeon", "mi")):
        return "amd"
    if lowered.startswith(("nvidia", "tesla")) or re.match(r"^[abhlt]\d", lowered):
        return "nvidia"
    return None


def _vllm_device_names() -> set[str]:
    names = set()
    for path in (DATA / "vllm_fused_moe").glob("*.json"):
        match = re.search(r"device_name=([^,]+?)(?:,|\.json$)", path.name)
        if match:
            names.add(match.group(1))
    return names


def _kerneltuner_device_names() -> set[str]:
    names = set()
    for path in (DATA / "kerneltuner").glob("*/*.json.gz"):
        if path.name.endswith("_T4.json.gz"):
            continue
        with gzip.open(path, "rt") as handle:
            name = json.load(handle).get("device_name")
        if name:  # the MI250X caches store an empty device_name; the file name says MI250X
            names.add(name)
        names.add(path.name.removesuffix(".json.gz"))
    return names


def _kernelbench_names() -> set[str]:
    names = set()
    for folder in (DATA / "kernelbench_timings").iterdir():
        names.add(folder.name)
        for path in folder.glob("*.json"):
            for level in json.loads(path.read_text()).values():
                for entry in (level or {}).values():
                    if entry and entry.get("hardware"):
                        names.add(entry["hardware"])
    return names


def _all_names() -> list[str]:
    if not DATA.is_dir():
        return []
    return sorted(_vllm_device_names() | _kerneltuner_device_names() | _kernelbench_names())


def test_data_has_device_names() -> None:
    names = _all_names()
    assert len(names) > 40
    assert "NVIDIA A100-PCIE-40GB" in names and "AMD_Instinct_MI300X" in names


@pytest.mark.parametrize("name", _all_names())
def test_device_name_resolves_to_known_chip(name: str) -> None:
    chip = resolve(name)
    assert chip.known, f"{name!r} did not resolve to a known chip"
    vendor = _vendor_hint(name)
    if vendor is not None:
        assert chip.vendor == vendor, name
        assert chip.backend == VENDOR_BACKEND[vendor], name


def test_kerneltuner_gpus_resolve_to_their_chips() -> None:
    expected = {"A100": "a100", "A4000": "a4000", "MI250X": "mi250x", "W6600": "w6600"}
    for stem, chip_id in expected.items():
        assert resolve(stem).id == chip_id
