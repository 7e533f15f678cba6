"""Performance-model costs at the largest family: training time and suggest latency.

`python -m tunemem.bench.studies.model_speed [--caches DIR] [--target CHIP] [--out PATH]` ingests
the
family's caches except the target chip's into a fresh in-process service, times the model's training
(the background build a store change starts, waited for here), then times `suggest` for the
target with 0, 20, 50 and 100 of its own observations (k=1, the agent's request; repeated,
p50 and p95), and the same with the model off. Writes JSON and Markdown under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tunemem.bench.common.paths import KERNELTUNER_CACHES, RESULTS_OF
from tunemem.bench.common.results import machine, memory_held, memory_held_line
from tunemem.bench.learning.tasks import discover_tasks

DEFAULT = KERNELTUNER_CACHES


def _request(target: Any, observations: list[tuple[dict[str, Any], float | None]]) -> Any:
    from tunemem.memory_service.core.schemas.learning import ContextIn, TaskIn
    from tunemem.memory_service.core.schemas.suggest import ObservationIn, SpaceIn, SuggestRequest

    recording = target.recording
    return SuggestRequest(
        task=TaskIn(op=recording.task.op, signature=recording.task.signature),
        context=ContextIn(chip=target.chip, backend=recording.context.backend),
        space=SpaceIn(params=recording.space),
        observations=[
            ObservationIn(config=c, latency_ms=ms, feasible=ms is not None)
            for c, ms in observations
        ],
        k=1,
        seed=0,
    )


def run(caches: Path, target_chip: str | None, repeats: int) -> dict[str, Any]:
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    tasks = discover_tasks([caches])
    target = next((t for t in tasks if t.chip == target_chip), tasks[0])
    sources = [t for t in tasks if t.chip != target.chip]
    keys = [k for k, m in target.recording.measurements.items() if m.latency_ms]
    names = target.recording.param_names
    report: dict[str, Any] = {
        "benchmark": "model_speed",
        "memory_held": memory_held(
            "complete", "the family's recorded caches except the target chip's"
        ),
        "caches": str(caches),
        "target": target.name,
        "sources": [s.name for s in sources],
        "machine": machine(),
        "suggest_ms": {},
    }
    with tempfile.TemporaryDirectory(prefix="tunemem-model-speed-") as folder:
        for model_on in (True, False):
            service = MemoryService(
                Settings(
                    data_dir=Path(folder) / str(model_on),
                    index="memory",
                    suggest_model=model_on,
                    model_wait_s=600.0,
                )
            )
            try:
                service.ingest([s.trajectory() for s in sources])
                if model_on:
                    started = time.perf_counter()
                    service.suggest(_request(target, []))  # starts the build and waits for it
                    report["first_suggest_with_training_s"] = round(
                        time.perf_counter() - started, 2
                    )
                    built = service._models.get(  # noqa: SLF001  # the benchmark reads the cache
                        service.settings.tenant, target.recording.task.op, names
                    )
                    assert built is not None
                    report["training_s"] = round(built.build_s, 2)
                    report["configurations"] = built.n_configs
                    report["candidates"] = built.model.size
                for n in (0, 20, 50, 100):
                    step = max(1, len(keys) // max(1, n)) if n else 1
                    chosen = keys[::step][:n]
                    observations = [
                        (
                            dict(zip(names, k, strict=True)),
                            target.recording.measurements[k].latency_ms,
                        )
                        for k in chosen
                    ]
                    request = _request(target, observations)
                    service.suggest(request)  # warm
                    times = []
                    for _ in range(repeats):
                        started = time.perf_counter()
                        service.suggest(request)
                        times.append(1000 * (time.perf_counter() - started))
                    label = f"{'model' if model_on else 'no model'}, {n} observations"
                    report["suggest_ms"][label] = {
                        "p50": round(statistics.median(times), 1),
                        "p95": round(sorted(times)[int(0.95 * (len(times) - 1))], 1),
                    }
                    print(label, report["suggest_ms"][label], flush=True)
            finally:
                service.close()
    return report


def write_markdown(report: dict[str, Any], path: Path) -> None:
    lines = [
        "# Performance model: training time and suggest latency",
        "",
        memory_held_line(report["memory_held"]),
        "",
        f"Family: `{report['caches']}`; target {report['target']} (its cache not in memory), "
        f"sources {', '.join(report['sources'])}; {report['configurations']} stored "
        f"configurations, {report['candidates']} candidates; machine {report['machine']}.",
        "",
        f"Training (background build, one core): {report['training_s']} s; the first suggest "
        f"after the ingest, told to wait for it: {report['first_suggest_with_training_s']} s "
        "(by default a suggest never waits: it answers without the model meanwhile).",
        "",
        "| suggest (k=1, in process) | p50 ms | p95 ms |",
        "|---|---|---|",
    ]
    for label, t in report["suggest_ms"].items():
        lines.append(f"| {label} | {t['p50']} | {t['p95']} |")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caches", type=Path, default=DEFAULT / "gemm_clblast")
    parser.add_argument("--target", default=None, help="target chip id (default: the first)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--out", type=Path, default=RESULTS_OF["studies"] / "model-speed.json")
    args = parser.parse_args()
    report = run(args.caches, args.target, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out.with_suffix(".md"))


if __name__ == "__main__":
    main()
