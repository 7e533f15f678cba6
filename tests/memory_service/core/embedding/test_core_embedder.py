"""Embeddings are bit-identical however they are computed: alone (a query), in a batch of
lessons of mixed lengths (ingest), on one thread or several, or read back from the on-disk
cache (a re-run); MiniLM on ONNX Runtime (the default) gives PyTorch's vectors within cosine
0.9999 and the same nearest neighbours, and the service never imports PyTorch with it."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tunemem.memory_service.core.embedding.cache import DiskCachedEmbedder, EmbeddingCache
from tunemem.memory_service.core.embedding.factory import HashingEmbedder

WORDS = (
    "softmax rmsnorm gemm attention tile block warps stages shared memory registers "
    "occupancy BLOCK_SIZE=1024 num_warps=8 fp16 bf16 a100 h200 mi300x vectorised loads "
    "reduction accumulators tensor cores wgmma cp.async coalesced bank conflicts"
).split()


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 40))) for _ in range(count)]
    texts.append(" ".join(rng.choices(WORDS, k=400)))  # past the model's 256 tokens: truncated
    texts.append(texts[3])  # a repeat within the batch
    return texts


def _same_length_texts(lengths: tuple[int, ...], each: int, seed: int) -> list[str]:
    """`each` different texts per token count: single letters are one token apiece."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return [" ".join(rng.choices(letters, k=n - 2)) for n in lengths for _ in range(each)]


@pytest.fixture(scope="module")
def torch_embedder():
    from tunemem.memory_service.core.embedding.factory import create_embedder

    return create_embedder("minilm-torch")


@pytest.fixture(params=["onnx", "torch"])
def minilm(request, embedder, torch_embedder):
    """The MiniLM embedder on each runtime (with its query cache in front)."""
    return embedder if request.param == "onnx" else torch_embedder


def test_minilm_batches_equal_single_text_embeddings_bit_for_bit(minilm) -> None:
    # Mixed lengths, and texts of one length, which an ingest embeds in one pass where that
    # keeps their bits (PyTorch), and one pass each where it does not (ONNX Runtime).
    from tunemem.memory_service.core.embedding.factory import PASS_TOKENS

    embedder = minilm
    lengths = (20, 64, 131, 256)
    same = _same_length_texts(lengths, each=5, seed=3)
    groups = embedder.inner._same_length_groups([embedder.inner._features(t) for t in same])
    if embedder.inner.stacks_same_length:
        passes = sum(-(-5 // max(1, PASS_TOKENS // n)) for n in lengths)
        assert len(groups) == passes < len(same)  # texts of one length share passes
    else:
        assert len(groups) == len(same)
    texts = _texts(40, seed=11) + same
    batch = embedder.embed_documents(texts)
    alone = np.stack([embedder.inner.embed([t])[0] for t in texts])
    assert batch.dtype == np.float32 and batch.shape == (len(texts), embedder.dim)
    assert np.array_equal(batch, alone)
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_disk_cache_returns_the_computed_vectors_and_only_for_its_model(tmp_path: Path) -> None:
    texts = _texts(25, seed=5)
    first = DiskCachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "c.sqlite"))
    computed = first.embed_documents(texts)
    assert first.misses == len(set(texts)) and first.hits == len(texts) - len(set(texts))
    first.cache.close()

    again = DiskCachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "c.sqlite"))
    assert np.array_equal(again.embed_documents(texts), computed)
    assert again.misses == 0 and again.hits == len(texts)
    assert np.array_equal(again.embed([texts[0]]), computed[:1])  # queries: computed alike

    other = DiskCachedEmbedder(HashingEmbedder(dim=64), again.cache)  # another fingerprint
    assert other.embed_documents(texts[:3]).shape == (3, 64) and other.hits == 0


def test_a_service_reuses_cached_lesson_embeddings_across_stores(make_service, tmp_path) -> None:
    from tunemem.memory_service.core.schemas.lessons import LessonCreate

    lessons = [
        LessonCreate(kind="insight", text=t, applicability={"op": "softmax"})
        for t in _texts(6, seed=2)[:6]
    ]
    shared = str(tmp_path / "shared-cache.sqlite")
    one = make_service(tmp_path / "one", embedding_cache=shared)
    one.add_lessons(lessons)
    assert one.embedder.misses == 6
    two = make_service(tmp_path / "two", embedding_cache=shared)
    two.add_lessons(lessons)
    assert two.embedder.misses == 0 and two.embedder.hits == 6
    off = make_service(tmp_path / "three", embedding_cache="off")
    assert not isinstance(off.embedder, DiskCachedEmbedder)
    assert not (tmp_path / "three" / "embedding-cache.sqlite").exists()


def test_minilm_vectors_do_not_depend_on_the_thread_count(minilm) -> None:
    from tunemem.memory_service.core.embedding.factory import SHARED_PASS_MIN_TOKENS, Cores

    embedder = minilm
    model = embedder.inner
    # Every token count a pass may run on several threads at up to 72, then every 9th; "a"
    # is one token, and a text has two more ([CLS], [SEP]); the last one is truncated.
    counts = [*range(SHARED_PASS_MIN_TOKENS - 2, 71), *range(79, 260, 9)]
    texts = [" ".join(["a"] * n) for n in counts] + _texts(12, seed=23)
    one = np.stack([model._encode_one(t, most=1) for t in texts])
    shared, model._cores = model._cores, Cores(cores=2, most=2, window=0.0)  # two threads
    try:
        every = np.stack([model._encode_one(t) for t in texts])
    finally:
        model._cores = shared
    assert np.array_equal(one.view(np.uint32), every.view(np.uint32))
    assert np.array_equal(one, embedder.embed_documents(texts))  # ingest == query, bit for bit


def test_a_lone_pass_takes_every_core_and_overlapping_passes_one_each() -> None:
    from tunemem.memory_service.core.embedding.factory import Cores

    cores = Cores(cores=2, most=2, window=0.05)
    assert cores.take() == 2  # alone
    cores.give(2)
    first = cores.take(most=1)
    assert first == 1
    assert cores.take() == 1  # another pass is in flight: one core, and the pool is crowded
    cores.give(1)
    cores.give(first)
    assert cores.take() == 1  # still within the window after the overlap
    cores.give(1)
    time.sleep(0.06)
    assert cores.take() == 2  # the overlap is over
    cores.give(2)


def _lesson_like_texts(count: int, seed: int) -> list[str]:
    """SYNTHETIC lesson and query texts in the words and shape of distilled lessons."""
    rng = random.Random(seed)
    ops = ["softmax", "rmsnorm", "gemm", "attention", "layernorm", "conv2d", "fused moe"]
    chips = ["a100", "h100", "h200", "mi300x", "l4", "t4", "rtx 4090"]
    out = []
    for _ in range(count):
        op, chip = rng.choice(ops), rng.choice(chips)
        params = " ".join(
            f"{name}={rng.choice(values)}"
            for name, values in (
                ("BLOCK_SIZE", [64, 128, 256, 512, 1024]),
                ("num_warps", [2, 4, 8, 16]),
                ("num_stages", [1, 2, 3, 4]),
            )
            if rng.random() < 0.8
        )
        verb = rng.choice(["was fastest", "failed to compile", "ran out of shared memory"])
        out.append(f"{op} {rng.choice(['fp16', 'bf16', 'fp32'])} on {chip}: {params} {verb}")
    return out


def test_onnx_runtime_vectors_equal_pytorch_vectors(embedder, torch_embedder) -> None:
    texts = _texts(30, seed=41) + _lesson_like_texts(300, seed=42)
    onnx = embedder.inner.embed_documents(texts)
    torch = torch_embedder.inner.embed_documents(texts)
    assert embedder.fingerprint != torch_embedder.fingerprint  # not bit for bit: two models
    assert float(np.min(np.sum(onnx * torch, axis=1))) >= 0.9999
    # The same ten nearest lessons for each query as PyTorch's vectors give.
    queries = _lesson_like_texts(40, seed=43)
    q_onnx, q_torch = embedder.inner.embed(queries), torch_embedder.inner.embed(queries)
    lessons_onnx, lessons_torch = onnx[30:], torch[30:]
    overlaps = []
    for a, b in zip(q_onnx @ lessons_onnx.T, q_torch @ lessons_torch.T, strict=True):
        top_a, top_b = set(np.argsort(-a)[:10]), set(np.argsort(-b)[:10])
        overlaps.append(len(top_a & top_b) / 10)
    assert float(np.mean(overlaps)) >= 0.95 and min(overlaps) >= 0.8


def test_the_onnx_model_is_exported_once_into_the_model_cache(embedder, tmp_path) -> None:
    from tunemem.memory_service.core.embedding.minilm_onnx import EXPORT_FORMAT, onnx_model_file

    model_file = embedder.inner.model_file
    assert model_file.exists() and model_file.name.endswith(f"{EXPORT_FORMAT}.onnx")
    before = model_file.stat().st_mtime_ns
    from tunemem.memory_service.core.embedding.factory import bundled_model_path

    again = onnx_model_file(bundled_model_path(), model_file.parent)
    assert again == model_file and again.stat().st_mtime_ns == before  # taken, not re-made


def test_a_service_on_onnx_runtime_answers_without_importing_torch(tmp_path) -> None:
    script = (
        "import sys\n"
        "from tunemem.memory_service.core.schemas.learning import RetrieveRequest\n"
        "from tunemem.memory_service.core.schemas.lessons import LessonCreate\n"
        "from tunemem.memory_service.core.settings import Settings\n"
        "from tunemem.memory_service.service import MemoryService\n"
        f"service = MemoryService(Settings(data_dir={str(tmp_path / 'store')!r}))\n"
        "service.add_lessons([LessonCreate(kind='insight', text='softmax: BLOCK_SIZE 1024 on"
        " h200', applicability={'op': 'softmax'})])\n"
        "got = service.retrieve(RetrieveRequest.model_validate({'task': {'op': 'softmax'},"
        " 'context': {'chip': 'h200'}, 'query': 'softmax block size', 'stage': 'draft'}))\n"
        "assert got.lessons, got\n"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[4],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "False"]


def test_onnx_embedders_share_one_session_and_its_vectors(embedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tunemem.memory_service.core.embedding.minilm_onnx import MiniLMOnnxEmbedder

    first = embedder.inner
    second = MiniLMOnnxEmbedder(cache_dir=first.model_file.parent)
    assert second is not first and second.session is first.session  # one copy of the weights
    texts = _texts(8, seed=31)
    alone = first.embed(texts)
    assert np.array_equal(alone.view(np.uint32), second.embed(texts).view(np.uint32))
    # Passes of several callers overlapping on the one session: the same bits as alone.
    with ThreadPoolExecutor(max_workers=4) as pool:
        rows = list(pool.map(lambda t: second.embed([t])[0], texts * 3))
    assert np.array_equal(
        np.stack(rows).view(np.uint32), np.concatenate([alone] * 3).view(np.uint32)
    )
