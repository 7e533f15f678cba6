"""The floor of `tunemem bench service`: what one retrieve cannot avoid, timed on the built
store before the server starts (the bare query embedding and the bare index query, with the
same fresh texts), and beside it, alternately on the same texts so the ratios see the same
machine load: the model on one core, and (MiniLM on ONNX Runtime) the model on PyTorch."""

from __future__ import annotations

import random
import time
import uuid
from typing import Any

from tunemem.bench.service.driver import fresh_query, percentiles


def time_floor(service: Any, seed: int, queries: int) -> dict[str, Any]:
    """Floor timings on `service`'s store (`queries` fresh query texts)."""
    from tunemem.memory_service.core.learning.loop import LearningLoop
    from tunemem.memory_service.core.schemas.learning import RetrieveRequest
    from tunemem.retrieval.ranking import recall_size

    settings = service.settings
    bare = service.embedder
    while hasattr(bare, "inner"):  # past the query and disk caches: the model itself
        bare = bare.inner
    tenant = settings.tenant
    n = 2 * recall_size(settings.ranking(k=3), service.index.count(tenant))
    rng = random.Random(seed + 99)
    bare.embed(["warm-up"])
    # The same texts on one core, and on PyTorch (the ONNX default's reference): timed
    # beside the floor, alternately, so the ratios see the same machine load.
    one_core = _one_core_pass(bare)
    torch_model = _torch_reference(settings) if settings.embedder == "minilm" else None
    if torch_model is not None:
        torch_model.embed(["warm-up"])
    embed_ms, index_ms, both_ms, one_ms, torch_ms = [], [], [], [], []
    for i in range(queries):
        request = RetrieveRequest(**fresh_query(rng, i, f"floor-{uuid.uuid4().hex[:6]}"))
        chip, backend, _ = LearningLoop.resolve_context(request.context)
        text = LearningLoop.query_text(request, chip, backend)
        t0 = time.perf_counter()
        vector = bare.embed([text])[0]
        t1 = time.perf_counter()
        service.index.query(vector, n, tenant)
        t2 = time.perf_counter()
        embed_ms.append(1000 * (t1 - t0))
        index_ms.append(1000 * (t2 - t1))
        both_ms.append(1000 * (t2 - t0))
        if one_core is not None:
            t0 = time.perf_counter()
            one_core(text)  # `bare` has no query cache: embedded again
            one_ms.append(1000 * (time.perf_counter() - t0))
        if torch_model is not None:
            t0 = time.perf_counter()
            torch_model.embed([text])
            torch_ms.append(1000 * (time.perf_counter() - t0))
    return {
        "embedder": bare.name,
        "index_query_n": n,
        "embed_ms": percentiles(embed_ms),
        "index_query_ms": percentiles(index_ms),
        "embed_plus_query_ms": percentiles(both_ms),
        "embed_one_core_ms": percentiles(one_ms),
        "torch_embed_ms": percentiles(torch_ms),
    }


def _one_core_pass(bare: Any) -> Any:
    """One text's pass on one thread, or None. ONNX Runtime gets a session of one thread here
    (the service's shared session runs every pass on all its threads); PyTorch sets its
    threads per pass."""
    model_file = getattr(bare, "model_file", None)
    if model_file is not None:
        from tunemem.memory_service.core.embedding.minilm_onnx import shared_session

        session = shared_session(model_file, 1)
        return lambda text: session.run(None, bare._features(text))
    encode = getattr(bare, "_encode_one", None)
    return None if encode is None else (lambda text: encode(text, most=1))


def _torch_reference(settings: Any) -> Any:
    """MiniLM on PyTorch, bare (no caches), for the side-by-side floor."""
    from tunemem.memory_service.core.embedding.minilm_torch import MiniLMTorchEmbedder

    return MiniLMTorchEmbedder(settings.embedding_model_path, threads=settings.embed_threads)
