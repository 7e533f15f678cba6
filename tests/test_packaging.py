"""Packaging: the licence file matches pyproject's SPDX licence and builds into the metadata
without setuptools' deprecation warning; compose.yaml's server mode names real settings."""

from __future__ import annotations

import tomllib
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_licence_file_is_the_declared_licence() -> None:
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not the deprecated table
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License\n") and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_metadata_builds_with_the_licence_and_no_deprecation(tmp_path: Path, monkeypatch) -> None:
    setuptools = pytest.importorskip("setuptools")
    major = int(setuptools.__version__.split(".")[0])
    if major < 77:
        pytest.skip(f"setuptools {setuptools.__version__} predates SPDX licence expressions (77)")
    from setuptools import build_meta

    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist_info = build_meta.prepare_metadata_for_build_wheel(str(tmp_path))
    metadata = (tmp_path / dist_info / "METADATA").read_text(encoding="utf-8")
    assert "License-Expression: Apache-2.0" in metadata
    assert "License-File: LICENSE" in metadata
    licence_warnings = [w for w in caught if "licen" in str(w.message).lower()]
    assert licence_warnings == [], [str(w.message) for w in licence_warnings]


def test_compose_runs_postgres_chroma_and_two_workers() -> None:
    yaml = pytest.importorskip("yaml")
    from tunemem.memory_service.core.settings import Settings

    compose = yaml.safe_load((ROOT / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    workers = [s for s in services.values() if s.get("command", [])[:2] == ["tunemem", "serve"]]
    assert len(workers) == 2
    assert services["db"]["image"].startswith("postgres:")
    assert services["chroma"]["command"][:2] == ["chroma", "run"]
    fields = set(Settings.model_fields)
    for worker in workers:
        env = worker["environment"]
        assert env["TUNEMEM_INDEX"] == "chroma-http"
        assert env["TUNEMEM_DATABASE_URL"].startswith("postgresql+psycopg://")
        for name in env:
            assert name.removeprefix("TUNEMEM_").lower() in fields, name
    ports = {port for worker in workers for port in worker["ports"]}
    assert len(ports) == 2
