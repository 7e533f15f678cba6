"""The transfer page's pictures, drawn by a real browser (headless Chromium): the chip x chip
matrix of the fraction of the target's optimum as a heat map with squares sized by the number
of lessons, first on the page, and per pair a strip of the source's lessons at the fraction
each reaches (issue 31: the page opened on an all-n/a rank-correlation matrix and had no plot).

The store holds the bundled A100 and MI250X convolution caches (real measurements, see
ingest/samples/LICENSES.md); the figures drawn are compared with `GET /v1/audit/transfer`.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

import pytest
from fastapi.testclient import TestClient

from tunemem.ingest.readers import read_any
from tunemem.ingest.samples import SAMPLES_DIR
from tunemem.memory_service.http.app import create_app
from tunemem.memory_service.http.transfer_plots import CELL, STRIP_WIDTH

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CACHES = [
    SAMPLES_DIR / "kerneltuner" / "convolution" / f"{chip}.json.gz" for chip in ("A100", "MI250X")
]

# Added to a copy of the page: the browser's own layout of every mark, written into the DOM.
MEASURE = """
<script>
const box = (e) => {
  const r = e.getBoundingClientRect();
  return [r.left, r.top, r.width, r.height];
};
const out = {
  order: [...document.querySelectorAll("h2, svg.plot")].map((e) => e.id || e.textContent),
  matrix: box(document.getElementById("plot-optimum-matrix")),
  cells: [...document.querySelectorAll("#plot-optimum-matrix rect.cell")].map((e) => ({
    source: e.dataset.source, target: e.dataset.target, n: +e.dataset.n,
    value: +e.dataset.value, box: box(e), fill: getComputedStyle(e).fill })),
  strips: [...document.querySelectorAll("svg.strip")].map((s) => ({
    source: s.dataset.source, target: s.dataset.target, box: box(s),
    dots: [...s.querySelectorAll("circle.lesson")].map(
      (c) => ({ value: +c.dataset.value, box: box(c) })) })),
};
const pre = document.createElement("pre"); pre.id = "measured";
pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
</script>
"""


@pytest.fixture(scope="module")
def page_and_audit(tmp_path_factory, embedder):
    from tunemem.memory_service.core.settings import Settings
    from tunemem.memory_service.service import MemoryService

    data_dir = tmp_path_factory.mktemp("transfer-plot")
    service = MemoryService(Settings(data_dir=data_dir, index="memory"), embedder=embedder)
    try:
        assert service.ingest(read_any(CACHES)).added == 2
        with TestClient(create_app(service)) as client:
            page = client.get("/ui/transfer")
            assert page.status_code == 200
            audit = client.get("/v1/audit/transfer").json()
        yield page.text, audit
    finally:
        service.close()


def test_the_optimum_matrix_comes_first_and_the_rank_correlation_after(page_and_audit) -> None:
    page, _ = page_and_audit
    optimum = page.index('id="plot-optimum-matrix"')
    assert optimum < page.index("<h2>Rank correlation of lesson values</h2>")
    assert page.index("<h2>Fraction of the target") < optimum


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium (apt-get install chromium)")
def test_the_browser_draws_the_matrix_and_the_strips_as_the_audit_says(page_and_audit, tmp_path):
    page, audit = page_and_audit
    copy = tmp_path / "transfer.html"
    copy.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            copy.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "the browser did not run the measuring script"
    measured = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&"))

    with_optimum = {
        (p["source"], p["target"]): p["optimum"]
        for p in audit["pairs"]
        if p["optimum"] and p["optimum"]["n_lessons"]
    }
    assert with_optimum, "the bundled caches give both directions an optimum figure"
    cells = {(c["source"], c["target"]): c for c in measured["cells"]}
    assert set(cells) == set(with_optimum)
    most = max(o["n_lessons"] for o in with_optimum.values())
    left, top, width, height = measured["matrix"]
    for key, cell in cells.items():
        x, y, w, h = cell["box"]
        assert left <= x and x + w <= left + width and top <= y and y + h <= top + height
        assert cell["value"] == pytest.approx(with_optimum[key]["mean_fraction"], abs=1e-4)
        # Area by count: the side is the cell's less a margin, times sqrt(n / most).
        assert w == pytest.approx((CELL - 8) * math.sqrt(cell["n"] / most), abs=0.6)
        assert cell["fill"] not in ("none", "rgb(0, 0, 0)")

    strips = {(s["source"], s["target"]): s for s in measured["strips"]}
    assert set(strips) == set(with_optimum)
    for key, strip in strips.items():
        reaches = with_optimum[key]["reaches"]
        assert len(strip["dots"]) == len(reaches)
        sx, _, sw, _ = strip["box"]
        assert sw == pytest.approx(STRIP_WIDTH, abs=1)
        for dot, reach in zip(strip["dots"], reaches, strict=True):
            x, _, w, _ = dot["box"]
            centre = x + w / 2 - sx
            # The axis runs from 30 px (fraction 0) to the width less 20 px (fraction 1).
            expected = 30 + (STRIP_WIDTH - 50) * min(max(reach["fraction"], 0.0), 1.0)
            assert centre == pytest.approx(expected, abs=1.0)
