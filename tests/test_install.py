"""A fresh machine installs what was tested: the locks satisfy pyproject.toml, the distribution
is one top-level package (`tunemem`), and it lives beside Hugging Face's `kernels` (which
transformers 5.25 and later require) from the clone's root and from anywhere else."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT
# What each lock must cover: requirements-dev.lock everything `make install` and CI install,
# requirements.lock what `make run` installs. torch is installed from the machine's wheel
# folder (its CPU build), so it is pinned in pyproject.toml and left out of both locks.
COVERS = {
    "requirements-dev.lock": ["dev", "server", "kernels", "tuners", "bench"],
    "requirements.lock": ["server"],
}
OUTSIDE_THE_LOCK = {"torch"}
# The platform the locks are compiled for (`make lock`): Python 3.11 on x86-64 Linux.
LOCK_ENV = {
    **default_environment(),
    "python_version": "3.11",
    "python_full_version": "3.11.7",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")


def read_lock(name: str) -> dict[str, tuple[Version, list[str]]]:
    """Each pinned package of a lock: its version and its hashes."""
    pins: dict[str, tuple[Version, list[str]]] = {}
    current = None
    for line in (LOCKS / name).read_text(encoding="utf-8").splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            pins[current] = (Version(match.group(3)), [])
        elif current and line.strip().startswith("--hash=sha256:"):
            pins[current][1].append(line.strip().removeprefix("--hash=sha256:").rstrip(" \\"))
    return pins


def requirements(extras: list[str]) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [Requirement(text) for text in project["dependencies"]]
    for extra in extras:
        wanted += [Requirement(text) for text in project["optional-dependencies"][extra]]
    return wanted


def unmet(lock: dict[str, tuple[Version, list[str]]], wanted: list[Requirement]) -> list[str]:
    problems = []
    for req in wanted:
        name = canonicalize_name(req.name)
        if req.marker is not None and not req.marker.evaluate(LOCK_ENV):
            continue
        if name in OUTSIDE_THE_LOCK:
            continue
        if name not in lock:
            problems.append(f"{req} is not in the lock")
        elif not req.specifier.contains(lock[name][0], prereleases=True):
            problems.append(f"{req} is not met by the locked {name}=={lock[name][0]}")
    return problems


@pytest.mark.parametrize("lock_name", sorted(COVERS))
def test_each_lock_satisfies_pyproject(lock_name: str) -> None:
    lock = read_lock(lock_name)
    problems = unmet(lock, requirements(COVERS[lock_name]))
    assert problems == [], f"run `make lock` and review the diff: {problems}"
    assert all(hashes for _, hashes in lock.values()), "every pin carries its hashes"


def test_a_lock_that_no_longer_satisfies_pyproject_is_caught() -> None:
    """The check above can fail: a pin outside the range pyproject.toml asks for, and a
    dependency missing from the lock, are each reported."""
    lock = read_lock("requirements.lock")
    lock[canonicalize_name("fastapi")] = (Version("0.1.0"), ["x"])
    del lock[canonicalize_name("httpx")]
    problems = unmet(lock, requirements(["server"]))
    assert any(p.startswith("fastapi") and "is not met" in p for p in problems)
    assert any(p.startswith("httpx") and "not in the lock" in p for p in problems)


def test_serve_lock_pins_the_same_versions_as_dev_lock() -> None:
    dev, serve = read_lock("requirements-dev.lock"), read_lock("requirements.lock")
    differ = {n: (str(v), str(dev[n][0])) for n, (v, _) in serve.items() if dev[n][0] != v}
    assert set(serve) <= set(dev) and differ == {}


def test_torch_is_pinned_in_pyproject_and_kept_out_of_the_locks() -> None:
    torch = [r for r in requirements([]) if canonicalize_name(r.name) == "torch"]
    assert [str(r.specifier) for r in torch] == ["==2.13.0"]
    for name in COVERS:
        assert "torch" not in read_lock(name)
        assert not any(n.startswith("nvidia-") for n in read_lock(name)), "a CUDA torch's wheels"


def test_the_wheel_holds_one_top_level_package(tmp_path: Path, monkeypatch) -> None:
    """What `pip install tunemem` puts in site-packages: `tunemem/` and its metadata, nothing
    that could shadow another project's top-level name (`kernels`, `platforms`, `bench`...)."""
    from setuptools import build_meta

    monkeypatch.chdir(ROOT)
    wheel = tmp_path / build_meta.build_wheel(str(tmp_path))
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
        names = archive.namelist()
    assert tops == {"tunemem", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    assert "tunemem/ingest/samples/LICENSES.md" in names  # the sample data travels with it
    assert "tunemem/platforms/chips.json" in names


def test_the_installed_environment_has_one_top_level_package_of_ours() -> None:
    from importlib.metadata import distribution

    dist = distribution("tunemem")
    top = dist.read_text("top_level.txt")
    if top is not None:  # a regular install records it
        assert top.split() == ["tunemem"]
    entry = [e for e in dist.entry_points if e.name == "tunemem"]
    assert [e.value for e in entry] == ["tunemem.cli.app:main"]


PROBE = """
import json, sys
import kernels
from kernels import get_kernel  # Hugging Face's API, absent from any package of ours
import transformers
from tunemem.tuners import MemoryStrategy, autotune, tune_moe
print(json.dumps({"kernels": kernels.__file__, "transformers": transformers.__version__}))
"""


def _probe(cwd: Path, env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user's process: an empty model cache, offline, no inherited path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNEMEM_", "PYTHONPATH"))}
    env.update(HF_HUB_OFFLINE="1", TUNEMEM_MODEL_CACHE=str(tmp_path / "models"))
    return env


@pytest.mark.slow
def test_beside_hugging_face_kernels_from_the_clone_root_and_elsewhere(tmp_path, clean_env):
    """Seen failing first: with the project's top-level `kernels/`, `import kernels` at the
    clone's root (pytest, `python -m`, the ONNX export's subprocess) found ours, and
    transformers 5.25 failed with "cannot import name 'CUDAProperties' from 'kernels'"."""
    transformers = pytest.importorskip("transformers")
    assert Version(transformers.__version__) >= Version("5.25")
    at_root = _probe(ROOT, {**clean_env, "PYTHONPATH": str(ROOT)})
    elsewhere = _probe(tmp_path, clean_env)
    for seen in (at_root, elsewhere):
        found = Path(seen["kernels"]).resolve()
        assert "site-packages" in found.parts and not found.is_relative_to(ROOT / "tunemem")


@pytest.mark.slow
def test_the_embedder_exports_from_an_empty_cache_and_the_service_serves(tmp_path, clean_env):
    """From a directory outside the clone, with an empty model cache: the default embedder's
    ONNX export runs (the subprocess that imports transformers, and so HF `kernels`), and
    `tunemem serve` answers /healthz."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tunemem = Path(sys.executable).with_name("tunemem")
    env = {**clean_env, "TUNEMEM_DATA_DIR": str(tmp_path / "store")}
    server = subprocess.Popen(
        [str(tunemem), "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        import httpx

        deadline = time.monotonic() + 240
        answer = None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.5)
        assert answer is not None, "the service never answered"
        assert answer.status_code == 200 and answer.json()["status"] == "ok"
        assert list((tmp_path / "models").rglob("*.onnx")), "the ONNX export landed in the cache"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
