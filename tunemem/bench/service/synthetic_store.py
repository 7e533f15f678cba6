"""Synthetic store for `tunemem bench service`: SYNTHETIC lessons and values, bulk-loaded.

Lessons are template texts over ops, chips, dtypes and tuning parameters (labelled synthetic
in their provenance). Their vectors come from the service's own embedder through its lesson
path (`embed_documents`, so the on-disk embedding cache keeps them across runs). MiniLM embeds
only 15-40 lesson texts a second on two shared cores, so with `distinct=D` only the first D
lessons are embedded and lesson i >= D carries lesson (i mod D)'s vector plus Gaussian jitter
(cosine about 0.98 to it). Rows go straight into SQL (executemany in big batches) and into the
vector index (upserts in batches), past the dedup path, which is not what is measured; a
batch's SQL rows and index entries are written side by side while the next batch is made. A
fraction of lessons get LessonValue rows so value lookups hit rows.
"""

from __future__ import annotations

import functools
import hashlib
import random
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

SYNTHETIC_NOTE = (
    "SYNTHETIC lessons (template texts over ops/chips/parameters) and SYNTHETIC value rows; "
    "latencies and rates are real measurements of the HTTP path."
)
JITTER = 0.01  # per-coordinate sigma of the reuse jitter: cosine about 0.98 at 384 dimensions
OPS = ("softmax", "rmsnorm", "layernorm", "gemm", "attention", "fused_moe", "conv2d", "gelu")
CHIPS = ("a100", "h100", "h200", "mi250x", "mi300x", "ascend-910b", "x86-cpu")
DTYPES = ("fp16", "bf16", "fp32", "fp8")
KINDS = ("insight", "insight", "failure", "exemplar", "api")
TEMPLATES = {
    "insight": "On {chip}, {op} in {dtype} runs {ratio:.2f}x faster with BLOCK_SIZE={b} than "
    "with {b2}; num_warps={w} keeps occupancy high for rows of {n} elements.",
    "failure": "{op} on {chip} fails when BLOCK_SIZE={b} and num_stages={s}: shared memory "
    "needs {smem} KB, more than the chip offers per block.",
    "exemplar": "Best {op} configuration on {chip} for {m}x{n} {dtype}: BLOCK_M={bm}, "
    "BLOCK_N={b}, num_warps={w}, num_stages={s}, {lat:.3f} ms.",
    "api": "{backend} note for {op}: load tiles of {b} elements with vectorised loads and "
    "keep the reduction in {dtype} accumulators; {w} warps per program suit {chip}.",
}
STAGES = ("draft", "refine")


@functools.lru_cache(maxsize=64)
def _chip_facts(chip: str) -> tuple[str, list[str]]:
    from tunemem import platforms

    descriptor = platforms.resolve(chip)
    return descriptor.backend, platforms.scope_chain(descriptor)


# ------------------------------------------------------------------ synthetic store
def synthetic_lessons(
    start: int, count: int, seed: int, tenant: str = "default"
) -> list[dict[str, Any]]:
    """Rows of the Lesson table for lessons start..start+count, deterministic per seed.

    Ids and content hashes include the tenant, so cases sharing a server database never collide.
    """
    from tunemem.memory_service.core.sql.tables import utcnow

    rng = random.Random(seed * 1_000_003 + start)
    now = utcnow()
    rows = []
    for i in range(start, start + count):
        kind, op, chip = rng.choice(KINDS), rng.choice(OPS), rng.choice(CHIPS)
        backend, _ = _chip_facts(chip)
        dtype = rng.choice(DTYPES)
        text = TEMPLATES[kind].format(
            chip=chip,
            op=op,
            dtype=dtype,
            backend=backend,
            ratio=rng.uniform(1.05, 3.0),
            b=2 ** rng.randint(5, 12),
            b2=2 ** rng.randint(5, 12),
            w=2 ** rng.randint(0, 4),
            s=rng.randint(1, 5),
            n=2 ** rng.randint(8, 16),
            m=2 ** rng.randint(6, 14),
            bm=2 ** rng.randint(4, 8),
            smem=rng.randint(64, 400),
            lat=rng.uniform(0.01, 5.0),
        )
        app = {
            "op": op,
            "kernel": None,
            "chips": [chip],
            "families": [],
            "backends": [backend],
            "models": [],
            "scenarios": [],
            "dtypes": [dtype],
        }
        digest = hashlib.sha256(f"synthetic:{tenant}:{seed}:{i}".encode()).hexdigest()
        rows.append(
            {
                "id": str(uuid.UUID(digest[:32])),
                "tenant": tenant,
                "kind": kind,
                "text": text,
                "hint": None,
                "code": None,
                "content_hash": digest,
                "applicability": app,
                "op": op,
                "chips": f",{chip},",
                "backends": f",{backend},",
                "provenance": {"source_format": "synthetic-bench", "synthetic": True},
                "status": "active",
                "created_at": now,
                "updated_at": now,
            }
        )
    return rows


def synthetic_values(rows: list[dict[str, Any]], fraction: float, seed: int) -> list[dict]:
    """LessonValue rows (both stages; chip, backend and global scopes) for a fraction of rows."""
    from tunemem.memory_service.core.sql.tables import utcnow

    rng = random.Random(seed)
    now = utcnow()
    values = []
    for row in rows:
        if rng.random() >= fraction:
            continue
        chain = _chip_facts(row["chips"].strip(","))[1]
        for stage in STAGES:
            for scope in (chain[0], chain[2], chain[3]):
                n = rng.randint(1, 20)
                q = rng.uniform(-1.0, 1.0)
                values.append(
                    {
                        "lesson_id": row["id"],
                        "stage": stage,
                        "scope": scope,
                        "n": n,
                        "q": q,
                        "sumsq": n * (q * q + 0.1),
                        "updated_at": now,
                    }
                )
    return values


def build_store(
    service: Any,
    size: int,
    seed: int,
    value_fraction: float,
    *,
    distinct: int = 0,
    batch: int = 20_000,
) -> dict[str, Any]:
    """Bulk-load `size` synthetic lessons into the service's SQL store and vector index.

    Args:
        service: the MemoryService to fill.
        size: lessons.
        seed: seed of texts, values and jitter.
        value_fraction: share of lessons given LessonValue rows.
        distinct: embed only the first `distinct` lessons (0: all); the rest reuse their
            vectors with jitter (module docstring).
        batch: lessons per SQL transaction and index upsert round.
    """
    import numpy as np
    from sqlalchemy import insert

    from tunemem.memory_service.core.lessons import rows as lesson_rows
    from tunemem.memory_service.core.sql.tables import Lesson, LessonValue

    spent = {"generate_s": 0.0, "embed_s": 0.0, "sql_s": 0.0, "index_s": 0.0}
    tenant = service.settings.tenant
    embedded = size if distinct <= 0 else min(distinct, size)
    base = np.zeros((0, service.embedder.dim), dtype=np.float32)
    rng = np.random.default_rng(seed)
    n_values = 0

    def write_sql(rows: list[dict], values: list[dict]) -> None:
        t0 = time.perf_counter()
        with service.engine.begin() as conn:
            conn.execute(insert(Lesson.__table__), rows)  # type: ignore[attr-defined]
            if values:
                conn.execute(insert(LessonValue.__table__), values)  # type: ignore[attr-defined]
        spent["sql_s"] += time.perf_counter() - t0

    def write_index(rows: list[dict], vectors: np.ndarray) -> None:
        t0 = time.perf_counter()
        service.vectors.upsert(
            [r["id"] for r in rows],
            vectors,
            [
                {"tenant": tenant, "kind": r["kind"], "op": r["op"], "backends": r["backends"]}
                for r in rows
            ],
        )
        spent["index_s"] += time.perf_counter() - t0

    # The SQL rows and the index entries of one batch are written side by side (the database
    # and the index server are other processes), while the next batch is generated.
    pending: list[Future[None]] = []
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="bench-load") as pool:
        for start in range(0, size, batch):
            t0 = time.perf_counter()
            rows = synthetic_lessons(start, min(batch, size - start), seed, tenant)
            values = synthetic_values(rows, value_fraction, seed + start)
            t1 = time.perf_counter()
            own = max(0, min(len(rows), embedded - start))
            fresh = service.embedder.embed_documents(
                [
                    lesson_rows.embedding_text(r["kind"], r["text"], r["applicability"])
                    for r in rows[:own]
                ]
            )
            base = np.concatenate([base, fresh]) if own else base
            reused = np.arange(start + own, start + len(rows)) % embedded
            jittered = base[reused] + JITTER * rng.standard_normal((len(reused), base.shape[1]))
            jittered /= np.linalg.norm(jittered, axis=1, keepdims=True)
            vectors = np.concatenate([fresh, jittered.astype(np.float32)])
            t2 = time.perf_counter()
            for done in pending:
                done.result()
            pending = [
                pool.submit(write_sql, rows, values),
                pool.submit(write_index, rows, vectors),
            ]
            n_values += len(values)
            spent["generate_s"] += t1 - t0
            spent["embed_s"] += t2 - t1
        for done in pending:
            done.result()
    wall = time.perf_counter() - started
    return {
        **{k: round(v, 2) for k, v in spent.items()},
        "build_s": round(wall, 2),
        "lessons_per_s": round(size / wall, 1) if wall else 0.0,
        "value_rows": n_values,
        "embedded_lessons": embedded,
        "embedding_cache_hits": getattr(service.embedder, "hits", None),
    }
