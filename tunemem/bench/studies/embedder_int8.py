"""Whether an int8 MiniLM (ONNX Runtime dynamic quantisation) retrieves what fp32 does.

`python -m tunemem.bench.studies.embedder_int8 --data ../shared/data --out
bench/results/studies`: ingest the data into a throwaway store (hashing embedder: only the
distilled lesson texts are wanted), embed every lesson text and one realistic query per distinct
(task, chip, backend, stage) of its trajectories (the text a tuner's retrieve embeds,
`retrieval.query.query_text`) with the fp32 model and with its int8 copy, and report the cosine
between the two models' vectors, the overlap of each query's ten nearest lessons, and each
model's time per query on one thread (side by side in one run). The int8 copy is made here, in a
temporary folder; the product ships fp32 only unless this holds (issue 21: mean top-10 overlap
>= 0.95)."""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from tunemem.bench.common.paths import RESULTS_OF
from tunemem.bench.common.results import memory_held, provenance, write_result
from tunemem.ingest.readers import iter_paths, read_any
from tunemem.memory_service.core.embedding.minilm_onnx import MiniLMOnnxEmbedder
from tunemem.memory_service.core.lessons import rows as lesson_rows
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import Lesson, Trajectory
from tunemem.memory_service.service import MemoryService
from tunemem.retrieval.query import query_text

GOAL_OVERLAP = 0.95


def distilled_texts(data: Path, workdir: Path) -> tuple[list[str], list[str]]:
    """(lesson embedding texts, realistic query texts) of the data's distilled lessons."""
    from sqlmodel import select

    settings = Settings(data_dir=workdir / "store", embedder="hashing", index="memory")
    service = MemoryService(settings)
    try:
        service.ingest(read_any(list(iter_paths([data]))))
        with service.store.session() as session:
            lessons = [
                lesson_rows.embedding_text(r.kind, r.text, r.applicability)
                for r in session.exec(select(Lesson).where(Lesson.status == "active"))
            ]
            queries: set[str] = set()
            for t in session.exec(select(Trajectory)):
                task = t.task or {}
                for stage in ("draft", "refine"):
                    queries.add(
                        query_text(
                            "",
                            stage=stage,
                            op=task.get("op") or t.op,
                            kernel=task.get("kernel"),
                            signature=task.get("signature") or None,
                            dtype=task.get("dtype"),
                            chip=t.chip,
                            backend=t.backend,
                        )
                    )
    finally:
        service.close()
    return lessons, sorted(queries)


# (label, quantize_dynamic keywords): ONNX Runtime's defaults (every op it can quantise, one
# scale per tensor), and the matrix products alone with one scale per output channel.
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("int8, every op, per tensor", {}),
    ("int8, MatMul only, per channel", {"op_types_to_quantize": ["MatMul"], "per_channel": True}),
)


def run(data: Path, out: Path, queries_max: int = 400, seed: int = 0) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="tunemem-int8-") as tmp:
        lessons, queries = distilled_texts(data, Path(tmp))
        queries = random.Random(seed).sample(queries, min(queries_max, len(queries)))
        models: dict[str, MiniLMOnnxEmbedder] = {"fp32": MiniLMOnnxEmbedder(threads=1)}
        for number, (label, keywords) in enumerate(VARIANTS):
            int8_file = Path(tmp) / f"minilm-int8-{number}.onnx"
            quantize_dynamic(
                str(models["fp32"].model_file),
                str(int8_file),
                weight_type=QuantType.QInt8,
                **keywords,  # type: ignore[arg-type]
            )
            models[label] = MiniLMOnnxEmbedder(threads=1, onnx_file=int8_file)
        vectors = {name: (m.embed(lessons), m.embed(queries)) for name, m in models.items()}
        per_query_ms: dict[str, list[float]] = {name: [] for name in models}
        for text in queries[:200]:  # alternate, so every model sees the same load
            for name, model in models.items():
                started = time.perf_counter()
                model.embed([text])
                per_query_ms[name].append((time.perf_counter() - started) * 1e3)
    l32, q32 = vectors["fp32"]
    rows = []
    for label, _ in VARIANTS:
        l8, q8 = vectors[label]
        cosines = np.concatenate([np.sum(l32 * l8, axis=1), np.sum(q32 * q8, axis=1)])
        overlap = np.asarray(
            [
                len(set(np.argsort(-a)[:10]) & set(np.argsort(-b)[:10])) / 10
                for a, b in zip(q32 @ l32.T, q8 @ l8.T, strict=True)
            ]
        )
        rows.append(
            {
                "model": label,
                "cosine_min": round(float(cosines.min()), 5),
                "cosine_mean": round(float(cosines.mean()), 5),
                "top10_overlap_mean": round(float(overlap.mean()), 4),
                "top10_overlap_min": round(float(overlap.min()), 2),
                "queries_overlap_below_0.9": int((overlap < 0.9).sum()),
                "query_ms_p50": round(float(np.median(per_query_ms[label])), 2),
                "met": bool(overlap.mean() >= GOAL_OVERLAP),
            }
        )
    result: dict[str, Any] = {
        "benchmark": "embedder-int8",
        "memory_held": memory_held("none", "the embedder is measured on the data set's lessons"),
        **provenance(
            f"python -m tunemem.bench.studies.embedder_int8 --data {data} --out {out}",
            seeds=[0],
            kind="measured",
        ),
        "load_average_1min": [load_before, round(os.getloadavg()[0], 2)],
        "lessons": len(lessons),
        "queries": len(queries),
        "fp32_query_ms_p50": round(float(np.median(per_query_ms["fp32"])), 2),
        "goal_overlap": GOAL_OVERLAP,
        "variants": rows,
    }
    write_result(out, "embedder-int8", result, _markdown(result))
    return result


def _markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    lines = [
        "# int8 MiniLM against fp32 (ONNX Runtime)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores, shared with other developers' work; load "
        f"average (1 min) before and after: {r['load_average_1min'][0]} → "
        f"{r['load_average_1min'][1]}. Command: `{r['command']}`",
        "",
        f"Data: the {r['lessons']:,} distilled lessons of the data folder (real tuning data) "
        f"and {r['queries']} realistic queries (the text a retrieve embeds for a distinct "
        "task, chip, backend and stage of its trajectories), run once. int8: ONNX Runtime's "
        "dynamic quantisation (int8 weights, uint8 activations) of the fp32 export. Times: one "
        "fresh query on one thread, the models alternating on the same texts (ratios hold, "
        f"absolute figures carry the load). fp32: {r['fp32_query_ms_p50']} ms p50.",
        "",
        "| model | cosine to fp32 min / mean | top-10 overlap mean / min "
        "| queries below 0.9 | query p50 ms | overlap >= 0.95 |",
        "|---|---|---|---|---|---|",
    ]
    for v in r["variants"]:
        lines.append(
            f"| {v['model']} | {v['cosine_min']} / {v['cosine_mean']} "
            f"| {v['top10_overlap_mean']} / {v['top10_overlap_min']} "
            f"| {v['queries_overlap_below_0.9']} of {r['queries']} | {v['query_ms_p50']} "
            f"| {'yes' if v['met'] else 'no'} |"
        )
    held = any(v["met"] for v in r["variants"])
    lines += [
        "",
        "Verdict: "
        + (
            "an int8 model holds the overlap; the learning benchmark decides next."
            if held
            else "no int8 model keeps fp32's nearest lessons; the product ships fp32 only."
        ),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=RESULTS_OF["studies"])
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    run(args.data, args.out, args.queries)
