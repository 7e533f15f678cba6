"""`python -m tunemem.bench.studies.index_load N CONFIG STEP [PORT]`: bulk-load a Chroma server
collection.

Loads N vectors (each one of the first 20,000 MiniLM lesson vectors of a `bench service`
embedding cache plus Gaussian jitter, as `service_store` does) into a fresh collection of the
Chroma server on 127.0.0.1:PORT, in upserts of STEP entries, then times 200 fresh queries of
k = 100 and their recall against exact search. CONFIG is JSON: {"metadata": {...}} adds HNSW
settings to the collection's metadata, {"nometa": 1} writes entries without metadata (as
`ChromaIndex` does), otherwise each entry carries the four fields the index once wrote.
Prints its figures; the collection is dropped at the end.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from typing import Any

import numpy as np


def main(argv: list[str]) -> None:
    import chromadb
    from chromadb.config import Settings

    n, cfg, step = int(argv[0]), json.loads(argv[1]), int(argv[2])
    port = int(argv[3]) if len(argv) > 3 else 8011
    cache = os.environ.get("TUNEMEM_BENCH_CACHE", "/tmp/scale/bench-cache.sqlite")
    db = sqlite3.connect(cache)
    rows = db.execute("SELECT vector FROM embedding LIMIT 20000")
    base = np.stack([np.frombuffer(blob, dtype=np.float32) for (blob,) in rows])
    rng = np.random.default_rng(1)

    def vectors(start: int, count: int) -> np.ndarray:
        jittered = base[np.arange(start, start + count) % len(base)] + 0.01 * rng.standard_normal(
            (count, base.shape[1])
        )
        return (jittered / np.linalg.norm(jittered, axis=1, keepdims=True)).astype(np.float32)

    client = chromadb.HttpClient(
        host="127.0.0.1", port=port, settings=Settings(anonymized_telemetry=False)
    )
    name = "load-" + uuid.uuid4().hex[:8]
    metadata = {"hnsw:space": "cosine", **cfg.get("metadata", {})}
    collection = client.create_collection(name=name, embedding_function=None, metadata=metadata)
    print("config", json.dumps(collection.configuration_json)[:400])
    loaded = []
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, n, step):
        v = vectors(start, min(step, n - start))
        loaded.append(v)
        ids = [f"l{i}" for i in range(start, start + len(v))]
        metas: list[Any] = [
            {"tenant": "default", "kind": "insight", "op": "gemm", "backends": "cuda"}
        ] * len(ids)
        collection.upsert(ids=ids, embeddings=v, metadatas=None if cfg.get("nometa") else metas)
    load = time.perf_counter() - t0
    client_cpu = time.process_time() - c0
    print(f"loaded {n} in {load:.1f} s = {n / load:.0f}/s; client CPU {client_cpu:.1f} s")
    every = np.concatenate(loaded)
    queries, k = vectors(7, 200), int(cfg.get("k", 100))
    exact = np.argsort(-(queries @ every.T), axis=1)[:, :k]
    latencies, recalls = [], []
    for i, query in enumerate(queries):
        t = time.perf_counter()
        got = collection.query(
            query_embeddings=[query.tolist()], n_results=k, include=["distances"]
        )
        latencies.append((time.perf_counter() - t) * 1000)
        found = {int(x[1:]) for x in got["ids"][0]}
        recalls.append(len(found & set(exact[i].tolist())) / k)
    latencies.sort()
    print(
        f"query k={k}: p50 {latencies[100]:.2f} p99 {latencies[197]:.2f} ms; "
        f"recall@{k} mean {np.mean(recalls):.4f} min {np.min(recalls):.3f}"
    )
    client.delete_collection(name)


if __name__ == "__main__":
    main(sys.argv[1:])
