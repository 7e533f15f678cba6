"""vLLM fused-MoE tuned-config files: one trajectory per file, exemplars without timings.

The file name carries the shape and device:
`E=<experts>,N=<intermediate size>,device_name=<torch device name, spaces as _>
[,dtype=<quantisation>][,block_shape=[<n>,<k>]][,backend=<kernel implementation>].json`;
the body maps batch size M (a string) to the Triton launch configuration vLLM's tuner
chose for it. Non-numeric top-level keys ("triton_version") go to evidence. Each attempt is
"the tuned best for M=<m>": params are the launch configuration plus "M"; no latency is
recorded, so these are exemplars without measured ratios (`evidence["measured"] = False`,
`evidence["shape_params"] = ["M"]`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from tunemem.ingest.chip_context import chip_context
from tunemem.ingest.errors import FormatMismatchError
from tunemem.ingest.records import (
    AttemptRecord,
    ContextSpec,
    RejectedRecord,
    TaskSpec,
    TrajectoryRecord,
)
from tunemem.ingest.sources import DEFAULT_MAX_FILE_BYTES, finite, load_json, source_label

FORMAT = "vllm-moe"

NAME_PATTERN = re.compile(
    r"^E=(?P<E>\d+),N=(?P<N>\d+),device_name=(?P<device>[^,]+)(?P<rest>(?:,\w+=(?:\[[^\]]*\]|[^,]*))*)"
    r"\.json$"
)
_OPTION = re.compile(r",(?P<key>\w+)=(?P<value>\[[^\]]*\]|[^,]*)")


def _options(rest: str) -> dict[str, str]:
    """The optional `,key=value` parts after the device name (dtype, block_shape, backend)."""
    return {m["key"]: m["value"] for m in _OPTION.finditer(rest)}


def _block_shape(text: str | None) -> list[int] | None:
    if not text:
        return None
    parts = [p.strip() for p in text.strip("[]").split(",") if p.strip()]
    return [int(p) for p in parts] if all(p.isdecimal() for p in parts) else None


def detect(path: Path) -> bool:
    """The file name follows vLLM's fused-MoE config naming."""
    return bool(NAME_PATTERN.match(path.name))


def _scalar(value: object) -> bool:
    return isinstance(value, str | bool) or finite(value) is not None


def read(
    path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Iterator[TrajectoryRecord | RejectedRecord]:
    """Yield the file's rejects, then its one trajectory of per-M exemplars."""
    match = NAME_PATTERN.match(path.name)
    if not match:
        raise FormatMismatchError(path, "file name is not E=..,N=..,device_name=..[,dtype=..].json")
    doc, digest = load_json(path, max_bytes)
    if not isinstance(doc, dict):
        raise FormatMismatchError(path, "body is not an object keyed by batch size M")
    device = match["device"].replace("_", " ")
    chip = chip_context(device)
    options = _options(match["rest"])
    dtype = options.get("dtype")
    block_shape = _block_shape(options.get("block_shape"))
    impl = options.get("backend")
    evidence: dict[str, object] = {
        "tool": "vllm benchmark_moe",
        "measured": False,
        "shape_params": ["M"],
        "path": str(path),
    }
    attempts: list[AttemptRecord] = []
    for key, config in doc.items():
        if not (key.isdecimal() and len(key) <= 18):
            if _scalar(config):
                evidence[key] = config
            else:
                yield RejectedRecord(str(path), f"[{key!r}]", "non-numeric key with a non-scalar")
            continue
        if not isinstance(config, dict) or not config:
            yield RejectedRecord(str(path), f"[{key!r}]", "configuration is not a non-empty object")
            continue
        if not all(_scalar(v) for v in config.values()):
            yield RejectedRecord(str(path), f"[{key!r}]", "configuration values must be scalars")
            continue
        attempts.append(AttemptRecord(index=len(attempts), params={"M": int(key), **config}))
    if not attempts:
        raise FormatMismatchError(path, "no batch size entry")
    if "triton_version" in evidence:
        toolchain = {"triton": str(evidence["triton_version"])}
    else:
        toolchain = {}
    yield TrajectoryRecord(
        source_format=FORMAT,
        source=source_label(path, digest),
        task=TaskSpec(
            op="fused_moe",
            kernel=f"fused_moe_kernel[{impl}]" if impl else "fused_moe_kernel",
            signature={
                "E": int(match["E"]),
                "N": int(match["N"]),
                "dtype": dtype,
                "block_shape": block_shape,
                **({"backend": impl} if impl else {}),
            },
            dtype=dtype,
        ),
        context=ContextSpec(
            chip=chip.chip, backend=chip.backend, chip_raw=match["device"], toolchain=toolchain
        ),
        attempts=attempts,
        evidence=evidence,
    )
