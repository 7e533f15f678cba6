"""A store records which embedder made its vectors, and a service with another embedder
refuses to compare or write them until a reindex with its own embedder replaces them."""
# SYNTHETIC lessons; two hashing embedders of different dimensions stand for two models.

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import delete

from tunemem.memory_service.core.embedding.factory import HashingEmbedder
from tunemem.memory_service.core.errors import ReindexRequired
from tunemem.memory_service.core.schemas.learning import RetrieveRequest
from tunemem.memory_service.core.schemas.lessons import LessonCreate
from tunemem.memory_service.core.settings import Settings
from tunemem.memory_service.core.sql.tables import VectorModel
from tunemem.memory_service.core.vectors.embedder_guard import VectorModels
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.service import MemoryService

LESSONS = [
    LessonCreate(kind="insight", text=text, applicability={"op": "softmax"})
    for text in (
        "softmax on h200: BLOCK_SIZE 1024 and 8 warps were fastest",
        "softmax rows under 512: one warp per row avoids idle lanes",
    )
]
ASK = RetrieveRequest.model_validate(
    {
        "query": "softmax on h200: BLOCK_SIZE 1024 and 8 warps were fastest",
        "task": {"op": "softmax"},
        "context": {"chip": "h200"},
        "stage": "draft",
    }
)


def _service(data_dir, embedder, **overrides) -> MemoryService:
    return MemoryService(Settings(data_dir=data_dir, **overrides), embedder=embedder)


def _recorded(service: MemoryService, tenant: str = "default") -> str | None:
    return VectorModels(service.store, ttl=0.0).get(tenant)


def test_the_first_vectors_record_their_model_and_another_model_is_refused(tmp_path):
    store = tmp_path / "store"
    first = _service(store, HashingEmbedder(dim=512))
    first.add_lessons(LESSONS)
    assert _recorded(first) == "hashing:512"
    assert first.retrieve(ASK).lessons
    first.close()

    other = _service(store, HashingEmbedder(dim=256))
    try:
        with pytest.raises(ReindexRequired) as refused:
            other.retrieve(ASK)
        assert refused.value.status == 409 and "hashing:512" in refused.value.message
        with pytest.raises(ReindexRequired):
            other.add_lessons(
                [LessonCreate(kind="insight", text="gemm: 4 stages", applicability={"op": "gemm"})]
            )
        assert other.counts()["lessons"] == 2  # the refused add changed nothing
        assert _recorded(other) == "hashing:512"

        assert other.reindex() == 2  # the one way on: every vector made again by this model
        assert _recorded(other) == "hashing:256"
        assert [lesson.text for lesson in other.retrieve(ASK).lessons]
    finally:
        other.close()

    back = _service(store, HashingEmbedder(dim=512))  # the first model is now the other one
    try:
        with pytest.raises(ReindexRequired):
            back.retrieve(ASK)
    finally:
        back.close()


def test_vectors_without_a_record_are_refused_until_a_reindex(tmp_path):
    service = _service(tmp_path / "store", HashingEmbedder())
    try:
        service.add_lessons(LESSONS)
        with service.store.session() as session:  # a store from before records were kept
            session.exec(delete(VectorModel))  # type: ignore[call-overload]
            session.commit()
        service.vectors.models.ttl = 0.0
        with pytest.raises(ReindexRequired, match="did not record"):
            service.retrieve(ASK)
        service.reindex()
        assert _recorded(service) == "hashing:512" and service.retrieve(ASK).lessons
    finally:
        service.close()


def test_a_new_store_takes_the_first_model_and_a_refusal_is_a_409_over_http(tmp_path):
    store = tmp_path / "store"
    first = _service(store, HashingEmbedder(dim=512))
    assert _recorded(first) == "hashing:512" and _recorded(first, "another") == "hashing:512"
    first.close()

    other = _service(store, HashingEmbedder(dim=256))
    try:
        client = TestClient(create_app(other))
        answer = client.post("/v1/retrieve", json=ASK.model_dump(mode="json"))
        assert answer.status_code == 409
        assert answer.json()["code"] == "reindex_required"
        lesson = {"kind": "insight", "text": "gemm: 4 stages", "applicability": {"op": "gemm"}}
        answer = client.post("/v1/lessons", json={"lessons": [lesson]})
        assert answer.status_code == 409 and other.counts()["lessons"] == 0
        other.reindex(tenant="default")  # one tenant's own record, beside the store's
        assert _recorded(other) == "hashing:256" and _recorded(other, "another") == "hashing:512"
        assert client.post("/v1/lessons", json={"lessons": [lesson]}).status_code == 201
    finally:
        other.close()
