"""Whether an int8 MiniLM (ONNX Runtime dynamic quantisation) retrieves what fp32 does.

`python -m bench.embedder_int8 --data ../shared/data --out bench/results`: ingest the data
into a throwaway store (hashing embedder: only the distilled lesson texts are wanted), embed
every lesson text and one realistic query per distinct (task, chip, backend, stage) of its
trajectories (the text a tuner's retrieve embeds, `retrieval.query.query_text`) with the fp32
model and with its int8 copy, and report the cosine between the two models' vectors, the
overlap of each query's ten nearest lessons, and each model's time per query on one thread
(side by side in one run). The int8 copy is made here, in a temporary folder; the product
ships fp32 only unless this holds (issue 21: mean top-10 overlap >= 0.95).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import machine, write_result
from ingest.readers import iter_paths, read_any
from memory_service.core import lesson_rows
from memory_service.core.minilm_onnx import MiniLMOnnxEmbedder
from memory_service.core.schema import Lesson, Trajectory
from memory_service.core.settings import Settings
from memory_service.service import MemoryService
from retrieval.query import query_text

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


def run(data: Path, out: Path, queries_max: int = 400, seed: int = 0) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="tunemem-int8-") as tmp:
        lessons, queries = distilled_texts(data, Path(tmp))
        queries = random.Random(seed).sample(queries, min(queries_max, len(queries)))
        fp32 = MiniLMOnnxEmbedder(threads=1)
        int8_file = Path(tmp) / "minilm-int8.onnx"
        quantize_dynamic(str(fp32.model_file), str(int8_file), weight_type=QuantType.QInt8)
        int8 = MiniLMOnnxEmbedder(threads=1, onnx_file=int8_file)
        vectors = {}
        per_query_ms: dict[str, list[float]] = {"fp32": [], "int8": []}
        for name, model in (("fp32", fp32), ("int8", int8)):
            vectors[name] = (model.embed(lessons), model.embed(queries))
        for text in queries[:200]:  # alternate, so both see the same load
            for name, model in (("fp32", fp32), ("int8", int8)):
                started = time.perf_counter()
                model.embed([text])
                per_query_ms[name].append((time.perf_counter() - started) * 1e3)
    (l32, q32), (l8, q8) = vectors["fp32"], vectors["int8"]
    cosines = np.concatenate([np.sum(l32 * l8, axis=1), np.sum(q32 * q8, axis=1)])
    overlaps = []
    for a, b in zip(q32 @ l32.T, q8 @ l8.T, strict=True):
        overlaps.append(len(set(np.argsort(-a)[:10]) & set(np.argsort(-b)[:10])) / 10)
    overlap = np.asarray(overlaps)
    result: dict[str, Any] = {
        "benchmark": "embedder-int8",
        "command": f"python -m bench.embedder_int8 --data {data} --out {out}",
        "machine": machine(),
        "load_average_1min": [load_before, round(os.getloadavg()[0], 2)],
        "lessons": len(lessons),
        "queries": len(queries),
        "cosine_min": round(float(cosines.min()), 5),
        "cosine_mean": round(float(cosines.mean()), 5),
        "top10_overlap_mean": round(float(overlap.mean()), 4),
        "top10_overlap_min": round(float(overlap.min()), 2),
        "queries_overlap_below_0.9": int((overlap < 0.9).sum()),
        "query_ms_p50": {k: round(float(np.median(v)), 2) for k, v in per_query_ms.items()},
        "goal_overlap": GOAL_OVERLAP,
        "met": bool(overlap.mean() >= GOAL_OVERLAP),
    }
    write_result(out, "embedder-int8", result, _markdown(result))
    return result


def _markdown(r: dict[str, Any]) -> str:
    m = r["machine"]
    verdict = (
        "holds: int8 may be measured on the learning benchmark next"
        if r["met"]
        else "does not hold: the product keeps fp32 (int8 is left out)"
    )
    return (
        "# int8 MiniLM against fp32 (ONNX Runtime)\n\n"
        f"Machine: {m['cpu']}, {m['cores']} cores, shared with other developers' work; load "
        f"average (1 min) before and after: {r['load_average_1min'][0]} → "
        f"{r['load_average_1min'][1]}. Command: `{r['command']}`\n\n"
        f"Data: the {r['lessons']:,} distilled lessons of the data folder (real tuning data) "
        f"and {r['queries']} realistic queries (the text a retrieve embeds for a distinct "
        "task, chip, backend and stage of its trajectories), run once; int8 is ONNX Runtime's "
        "dynamic quantisation (int8 weights, uint8 activations) of the fp32 export.\n\n"
        "| measure | value |\n|---|---|\n"
        f"| cosine int8 vs fp32, min / mean | {r['cosine_min']} / {r['cosine_mean']} |\n"
        f"| top-10 overlap with fp32, mean / min | {r['top10_overlap_mean']} / "
        f"{r['top10_overlap_min']} |\n"
        f"| queries with overlap below 0.9 | {r['queries_overlap_below_0.9']} of "
        f"{r['queries']} |\n"
        f"| one query, one thread, p50 ms: fp32 / int8 (side by side) | "
        f"{r['query_ms_p50']['fp32']} / {r['query_ms_p50']['int8']} |\n\n"
        f"Goal: mean top-10 overlap >= {r['goal_overlap']}: {verdict}.\n"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    run(args.data, args.out, args.queries)
