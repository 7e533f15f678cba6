"""What a live measurement is evidence of: the chip, the toolchain and the template revision.

Shared by the live runners (stored with every attempt) and the sweep (stored with every
trajectory), so both name a chip and a toolchain the same way.
"""

from __future__ import annotations

import platform as host_platform
import sys
from pathlib import Path

from tunemem.ingest.records import stable_hash
from tunemem.kernels.tasks.base import KernelTask


def chip_identity(device_name: str) -> tuple[str, str]:
    """(normalised chip id, backend) of a device name, through `platforms.resolve`."""
    try:
        from tunemem.platforms import resolve

        chip = resolve(device_name)
        return chip.id, chip.backend
    except (ImportError, LookupError, ValueError):
        slug = "-".join(device_name.lower().replace("nvidia", "").split())
        return slug or "unknown", "cuda"


def template_hash(task: KernelTask) -> str:
    """Hash of the task module's source: which revision of the Triton template was measured."""
    module = sys.modules.get(task.launch.__module__)
    source = getattr(module, "__file__", None) if module is not None else None
    if not source:
        return "unknown"
    return stable_hash(Path(source).read_text(), 16)


def toolchain_versions() -> dict[str, str]:
    """Versions of what compiled and ran the kernels."""
    import torch
    import triton

    versions = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": host_platform.python_version(),
    }
    if torch.version.cuda:
        versions["cuda"] = str(torch.version.cuda)
    return versions


def host_chip() -> tuple[str, str, str]:
    """(chip id, backend, raw name) of this machine's CPU, for runs on the interpreter."""
    raw = host_platform.processor() or host_platform.machine() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                raw = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from tunemem.platforms import resolve

        chip = resolve(host_platform.machine() or "cpu")
        return chip.id, chip.backend, raw
    except (ImportError, LookupError, ValueError):
        return "cpu", "cpu", raw
