"""Where a server's time goes: py-spy samples of the server process, attributed to stages.

`record(pid, seconds)` samples a running server with py-spy (raw, collapsed stacks);
`attribute(raw_text)` assigns every busy sample (idle threads and an idle event loop left
out) to an (area, operation) pair: the area is the outermost marker on the stack (the
retrieve or report service call, authentication, request validation, response encoding,
the HTTP stack itself), the operation the innermost one (embedding, vector index query or
count, SQL statements, JSON decoding of SQL columns, SQL flush and commit, ranking).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

# (area, substring of a frame), matched from the root of the stack towards the leaf.
AREAS = (
    ("auth", "needs.<locals>.dependency"),
    ("retrieve", "LearningLoop.retrieve ("),
    ("report", "LearningLoop.report ("),
    ("request validation", "request_body_to_args"),
    ("request validation", "_validate_request_body"),
    ("response encoding", "serialize_response"),
    ("response encoding", "JSONResponse.render"),
    ("response encoding", "ORJSONResponse.render"),
)
# (operation, substring of a frame), matched from the leaf towards the root.
OPERATIONS = (
    ("embedding", "core/embedder.py"),
    ("embedding", "core/embedding_passes.py"),
    ("embedding", "core/minilm_onnx.py"),
    ("embedding", "core/minilm_torch.py"),
    ("embedding", "onnxruntime/"),
    ("embedding", "sentence_transformers/"),
    ("embedding", "torch/"),
    ("index count", "Collection.count"),
    ("index count", "Index.count ("),
    ("index query", "Collection.query"),
    ("index query", "MemoryIndex.query"),
    ("SQL JSON decode", "result_processor.<locals>.process"),
    ("SQL commit", "Session.commit"),
    ("SQL write", "Session.flush"),
    ("SQL statements", "Session.exec"),
    ("SQL statements", "Session.execute"),
    ("SQL statements", "Session.get"),
    ("SQL statements", "Connection.execute"),
    ("SQL statements", "sqlalchemy/"),
    ("ranking", "tunemem/retrieval/"),
    ("response models", "pydantic/"),
)
IDLE_LEAVES = (
    "Runner.run (",
    "select (",
    "poll (",
    "Condition.wait",
    "_worker (concurrent",
    "Queue.get",
    "sleep",
)


def attribute(raw: str) -> dict[str, Any]:
    """Busy-sample shares per (area, operation) from py-spy's raw output."""
    cells: Counter[tuple[str, str]] = Counter()
    busy = idle = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        if any(marker in frames[-1] for marker in IDLE_LEAVES):
            idle += n
            continue
        busy += n
        area = next((a for f in frames for a, m in AREAS if m in f), "HTTP stack")
        operation = next(
            (o for f in reversed(frames) for o, m in OPERATIONS if m in f), "other Python"
        )
        cells[(area, operation)] += n
    rows = [
        {"area": a, "operation": o, "samples": n, "share": round(n / busy, 3) if busy else 0.0}
        for (a, o), n in cells.most_common()
    ]
    return {"busy_samples": busy, "idle_samples": idle, "rows": rows}


def _py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"  # installed into this environment
    return str(beside) if beside.exists() else shutil.which("py-spy")


def start(
    pid: int, seconds: float, rate: int = 100, gil: bool = False
) -> subprocess.Popen[str] | str:
    """Start `record` in the background (a process to `finish`), or say why it cannot run.

    `gil`: sample only the thread that holds the interpreter lock (py-spy --gil), so the
    busy samples over all samples taken are the share of the time the lock was held: under
    concurrency, near 1 means the lock is what serialises requests.
    """
    exe = _py_spy()
    if exe is None:
        return "py-spy is not installed (pip install py-spy)"
    out = Path(tempfile.mkdtemp(prefix="tunemem-profile-")) / "raw.txt"
    command = [exe, "record", "-p", str(pid), "-d", str(max(1, round(seconds))), "-r", str(rate)]
    command += ["--format", "raw", "-o", str(out), "--nonblocking", "--subprocesses"]
    if gil:
        command.append("--gil")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    process.raw_path = out  # type: ignore[attr-defined]
    return process


def finish(
    process: subprocess.Popen[str] | str, rate: int = 100, seconds: float | None = None
) -> dict[str, Any]:
    """The attribution of a background `start`, or why there is none; with `seconds`, also
    the busy samples' share of the samples that `seconds` at `rate` hold (`busy_share`)."""
    if isinstance(process, str):
        return {"available": False, "reason": process}
    output, _ = process.communicate(timeout=120)
    out: Path = process.raw_path  # type: ignore[attr-defined]
    if process.returncode != 0 or not out.exists():
        return {"available": False, "reason": (output or "").strip()[-300:]}
    result = {"available": True, "rate_hz": rate, **attribute(out.read_text())}
    if seconds:
        result["busy_share"] = round(result["busy_samples"] / (rate * max(1, round(seconds))), 3)
    shutil.rmtree(out.parent, ignore_errors=True)
    return result
