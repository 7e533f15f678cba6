"""The transfer audit through HTTP and the CLI, on real Kernel Tuner caches.

The store holds the A100 and MI250X convolution caches (real measurements, MIT, see
shared/data/SOURCES.md). Outcomes are reported through the API with chosen results, so the
expected values, the correlation's sign and the helped/hurt lists are known by hand; the
optimum fraction is checked against a value computed here straight from the raw cache file.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

REPO_ROOT = Path(__file__).resolve().parents[3]
CONVOLUTION = REPO_ROOT.parent / "shared" / "data" / "kerneltuner" / "convolution"
CACHES = ("A100.json.gz", "MI250X.json.gz")

pytestmark = pytest.mark.skipif(
    not all((CONVOLUTION / name).exists() for name in CACHES),
    reason=f"real Kernel Tuner caches not found under {CONVOLUTION} (../shared/data is absent)",
)

ALPHA = 0.3
# Reported results per lesson slot: a100 and mi250x disagree in order (a rank correlation
# of -1), lessons 0 and 1 helped on a100 and hurt on mi250x, lesson 2 the other way round.
PLAN = {"a100": [[True] * 3, [True], [False]], "mi250x": [[False] * 3, [False], [True]]}


def q_after(results: list[bool]) -> float:
    q = 0.0  # Q0
    for good in results:
        q += ALPHA * ((1.0 if good else -1.0) - q)
    return q


def retrieve(client: TestClient, chip: str) -> dict:
    body = {
        "query": "fast convolution configuration",
        "task": {"op": "convolution"},
        "context": {"chip": chip},
        "stage": "draft",
        # More than the store holds: every convolution lesson comes back on both chips.
        "k": 100,
    }
    response = client.post("/v1/retrieve", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def report(client: TestClient, retrieval_id: str, lesson_id: str, good: bool) -> None:
    outcome = {"compiled": True, "correct": good}
    response = client.post(
        "/v1/outcomes",
        json={"retrieval_id": retrieval_id, "used": [lesson_id], "outcome": outcome},
    )
    assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    """A service with both caches ingested and the PLAN's outcomes reported over HTTP."""
    from tunemem.ingest.readers import read_any
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.http.app import create_app
    from tunemem.memory_service.http.routes.audit import router
    from tunemem.memory_service.service import MemoryService

    data_dir = tmp_path_factory.mktemp("audit-store")
    service = MemoryService(Settings(data_dir=data_dir, alpha=ALPHA, q0=0.0), embedder=embedder)
    summary = service.ingest(read_any([CONVOLUTION / name for name in CACHES]))
    assert summary.added == 2
    app = create_app(service)
    app.include_router(router)
    with TestClient(app) as client:
        retrievals = {chip: retrieve(client, chip) for chip in PLAN}
        returned = [[item["id"] for item in r["lessons"]] for r in retrievals.values()]
        shared = sorted(set(returned[0]) & set(returned[1]))[:3]
        assert len(shared) == 3, "both retrievals must return three common lessons"
        for chip, slots in PLAN.items():
            for lesson_id, results in zip(shared, slots, strict=True):
                for good in results:
                    report(client, retrievals[chip]["retrieval_id"], lesson_id, good)
        yield {
            "service": service,
            "app": app,
            "client": client,
            "lessons": shared,
            "data_dir": data_dir,
        }
    service.close()


def audit(client: TestClient, **params) -> dict:
    response = client.get("/v1/audit/transfer", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def pair_of(body: dict, source: str, target: str) -> dict:
    return next(p for p in body["pairs"] if p["source"] == source and p["target"] == target)


def test_chip_pair_values_correlation_and_helped_hurt(store):
    body = audit(store["client"], level="chip", op="convolution")
    assert body["scopes"] == ["a100", "mi250x"]
    first, second, third = store["lessons"]
    forward = pair_of(body, "a100", "mi250x")
    assert forward["n_common"] == 3
    values = {c["lesson_id"]: c for c in forward["common"]}
    for lesson_id, a100, mi250x in zip(store["lessons"], PLAN["a100"], PLAN["mi250x"], strict=True):
        assert values[lesson_id]["source_q"] == pytest.approx(q_after(a100))
        assert values[lesson_id]["target_q"] == pytest.approx(q_after(mi250x))
        assert values[lesson_id]["source_n"] == len(a100)
    assert forward["spearman"] == pytest.approx(-1.0)
    assert forward["sign_agreement"] == 0.0
    # Sorted by how much worse the target is: the thrice-good lesson first.
    assert [c["lesson_id"] for c in forward["helped_source_hurt_target"]] == [first, second]
    backward = pair_of(body, "mi250x", "a100")
    assert [c["lesson_id"] for c in backward["helped_source_hurt_target"]] == [third]
    assert backward["spearman"] == pytest.approx(-1.0)
    assert set(body["lessons"]) >= set(store["lessons"])


def test_backend_level_pairs_cuda_and_hip(store):
    body = audit(store["client"], level="backend")
    assert body["level"] == "backend" and body["scopes"] == ["cuda", "hip"]
    forward = pair_of(body, "cuda", "hip")
    assert forward["n_common"] == 3 and forward["spearman"] == pytest.approx(-1.0)
    assert len(forward["helped_source_hurt_target"]) == 2
    # backends= alone selects the backend level.
    assert audit(store["client"], backends="hip,cuda")["scopes"] == ["hip", "cuda"]


def test_refine_stage_and_other_op_have_no_common_lessons(store):
    refine = audit(store["client"], stage="refine")
    assert all(p["n_common"] == 0 and p["spearman"] is None for p in refine["pairs"])
    other = audit(store["client"], op="softmax")
    assert other["scopes"] == [] and other["pairs"] == []


def test_min_n_leaves_out_lessons_seen_once(store):
    body = audit(store["client"], min_n=2)
    forward = pair_of(body, "a100", "mi250x")
    assert [c["lesson_id"] for c in forward["common"]] == [store["lessons"][0]]
    assert forward["spearman"] is None


def raw_cache(cache_path: Path) -> tuple[list[dict], float]:
    """The raw entries of a cache file and its fastest numeric `time`, read independently."""
    with gzip.open(cache_path, "rt") as handle:
        entries = list(json.load(handle)["cache"].values())
    return entries, min(e["time"] for e in entries if isinstance(e["time"], int | float))


def test_optimum_fraction_matches_the_raw_cache(store):
    body = audit(store["client"], chips="A100,MI250X")
    forward = pair_of(body, "a100", "mi250x")
    reach = forward["optimum"]
    exemplars = (
        store["client"]
        .get("/v1/lessons", params={"chip": "a100", "kind": "exemplar", "limit": 500})
        .json()["data"]
    )
    assert reach["n_lessons"] == len(exemplars) > 0 and reach["n_spaces"] == 1
    lessons = body["lessons"]
    entries, fastest = raw_cache(CONVOLUTION / "MI250X.json.gz")
    for item in reach["reaches"]:
        assert lessons[item["lesson_id"]]["origin"] == "a100"
        assert item["target_chip"] == "mi250x"
        assert item["optimum_ms"] == pytest.approx(fastest)
        config = lessons[item["lesson_id"]]["config"]
        times = [e["time"] for e in entries if all(e[k] == v for k, v in config.items())]
        assert len(times) == 1, "the config is recorded once in the MI250X space"
        expected = fastest / times[0] if isinstance(times[0], int | float) else 0.0
        assert item["fraction"] == pytest.approx(expected, rel=1e-9)
    fractions = [r["fraction"] for r in reach["reaches"]]
    assert fractions == sorted(fractions, reverse=True)
    assert reach["mean_fraction"] == pytest.approx(sum(fractions) / len(fractions))
    assert reach["best_fraction"] == fractions[0]
    assert 0.0 < reach["best_fraction"] <= 1.0


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"chips": "not-a-chip"}, "unknown_chip"),
        ({"level": "backend", "chips": "a100"}, "invalid_audit_filter"),
        ({"backends": "tpu"}, "unknown_backend"),
        ({"stage": "deploy"}, "invalid_request"),
        ({"level": "rack"}, "invalid_request"),
        ({"min_n": 0}, "invalid_request"),
    ],
)
def test_bad_queries_get_4xx_with_a_code(store, params, code):
    response = store["client"].get("/v1/audit/transfer", params=params)
    assert response.status_code == 422
    assert response.json()["code"] == code


def test_html_format_over_http(store):
    response = store["client"].get("/v1/audit/transfer", params={"format": "html"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    page = response.text
    assert 'id="heatmap-spearman"' in page and 'id="heatmap-optimum"' in page
    assert 'data-source="a100" data-target="mi250x" data-value="-1.0000"' in page
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_keys_scope_the_audit_to_the_callers_tenant(store):
    from sqlmodel import Session

    from tunemem.memory_service.core.access.keys import create_key, open_store, revoke_key

    client = store["client"]
    with Session(store["service"].engine) as session:
        own, own_secret = create_key(session, "reader", "default", "audit test")
        other, other_secret = create_key(session, "reader", "elsewhere", "audit test")
        key_ids = [own.id, other.id]
    try:
        assert client.get("/v1/audit/transfer").status_code == 401
        mine = client.get(
            "/v1/audit/transfer", headers={"Authorization": f"Bearer {own_secret}"}
        ).json()
        assert pair_of(mine, "a100", "mi250x")["n_common"] == 3
        theirs = client.get(
            "/v1/audit/transfer", headers={"Authorization": f"Bearer {other_secret}"}
        ).json()
        assert theirs["scopes"] == [] and theirs["lessons"] == {}
    finally:
        with Session(store["service"].engine) as session:
            for key_id in key_ids:
                revoke_key(session, key_id)
    assert client.get("/v1/audit/transfer").status_code == 401  # keys fail closed
    with Session(store["service"].engine) as session:
        open_store(session)  # `tunemem keys open`: the shared store is keyless again
    assert client.get("/v1/audit/transfer").status_code == 200


def cli_app() -> typer.Typer:
    from tunemem.cli.audit import audit_app

    root = typer.Typer()
    root.add_typer(audit_app, name="audit")
    return root


def test_cli_table_json_and_html(store, tmp_path):
    runner = CliRunner()
    data_dir = str(store["data_dir"])
    table = runner.invoke(cli_app(), ["audit", "transfer", "--data-dir", data_dir])
    assert table.exit_code == 0, table.output
    assert "a100" in table.output and "mi250x" in table.output and "-1.00" in table.output
    assert "helped on the source and hurt on the target" in table.output
    report_path = tmp_path / "audit.html"
    as_json = runner.invoke(
        cli_app(),
        ["audit", "transfer", "--data-dir", data_dir, "--json", "--html", str(report_path)],
    )
    assert as_json.exit_code == 0, as_json.output
    assert report_path.read_text().startswith("<!DOCTYPE html>")
    # --level is a choice: a wrong one is refused naming the choices, before any store opens
    bad = runner.invoke(cli_app(), ["audit", "transfer", "--data-dir", data_dir, "--level", "x"])
    assert bad.exit_code == 2 and "'x' is not one of 'chip'" in bad.output
    cut = ["audit", "transfer", "--data-dir", data_dir, "--toolchain", "triton"]
    bad = runner.invoke(cli_app(), cut)
    assert bad.exit_code == 2 and "invalid_toolchain: toolchain: bad toolchain" in bad.output


@pytest.fixture
def server_url(store):
    """The store's app served over real HTTP on a free loopback port."""
    import socket
    import threading
    import time

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(store["app"], host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the test server did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_cli_against_a_server_matches_the_embedded_store(store, server_url, tmp_path):
    runner = CliRunner()
    args = ["audit", "transfer", "--json", "--op", "convolution"]
    remote = runner.invoke(cli_app(), [*args, "--url", server_url])
    local = runner.invoke(cli_app(), [*args, "--data-dir", str(store["data_dir"])])
    assert remote.exit_code == 0 and local.exit_code == 0, remote.output + local.output
    assert json.loads(remote.output) == json.loads(local.output)
    bad = runner.invoke(cli_app(), ["audit", "transfer", "--url", server_url, "--chips", "zz"])
    assert bad.exit_code == 2 and "unknown_chip" in bad.output


CHROMIUM = next(
    (Path(p) for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()),
    None,
)


@pytest.mark.browser
@pytest.mark.skipif(
    CHROMIUM is None,
    reason="needs headless Chromium at /usr/bin/chromium (apt-get install chromium)",
)
def test_report_renders_heat_maps_in_a_real_browser(store, tmp_path):
    import re
    import subprocess

    report_path = tmp_path / "transfer.html"
    result = CliRunner().invoke(
        cli_app(),
        ["audit", "transfer", "--data-dir", str(store["data_dir"]), "--html", str(report_path)],
    )
    assert result.exit_code == 0, result.output
    browser = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [*browser, "--dump-dom", report_path.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    # The DOM the browser built: two 2x2 heat maps with one off-diagonal cell per pair each.
    cells = re.findall(r'<td class="heat"[^>]*data-map="(\w+)"[^>]*data-value="([-0-9.]+)"', dom)
    assert sorted(m for m, _ in cells) == ["optimum", "optimum", "spearman", "spearman"]
    assert {v for m, v in cells if m == "spearman"} == {"-1.0000"}
    assert all(0.0 < float(v) <= 1.0 for m, v in cells if m == "optimum")
    assert 'style="background:#d73027"' in dom  # rank correlation -1 is full red
    shot = tmp_path / "transfer.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", "--window-size=1000,800", report_path.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
