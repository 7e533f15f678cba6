"""Shared test fixtures: the real bundled embedder (loaded once) and fresh services."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False


# Without a GPU, Triton kernels run in the interpreter; this must be set before any test
# module imports triton.
if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def embedder():
    from tunemem.memory_service.core.embedding.factory import create_embedder

    return create_embedder("minilm")


@pytest.fixture
def make_service(tmp_path, embedder):
    """Factory for services on a data directory (default: a fresh one), real Chroma index."""
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    made = []

    def factory(data_dir: Path | None = None, **overrides):
        settings = Settings(data_dir=data_dir or tmp_path / "store", **overrides)
        service = MemoryService(settings, embedder=embedder)
        made.append(service)
        return service

    yield factory
    for service in made:
        service.close()


@pytest.fixture
def service(make_service):
    return make_service()


@pytest.fixture
def client(service):
    from fastapi.testclient import TestClient

    from tunemem.memory_service.http.app import create_app

    with TestClient(create_app(service)) as test_client:
        yield test_client
