"""The noisy-memory sweep's table: `python -m tunemem.bench.learning.sweep DIR [--out FILE.md]`.

Reads every learning-benchmark JSON in DIR (one per protocol x noise sigma x mislabel fraction
x dirt, as `tunemem bench learning --noise S --mislabel F [--partial P --replayed R
--single-timings T]` writes them) and writes one Markdown table
(DIR/sweep.md unless --out):
per cell and arm, the fraction of the optimum at 1, 5 and 10 attempts and the top-3 ranking
quality (lifelong: the second half of the stream; loo: every target), with each arm's lead over
similarity-only retrieval, and each arm's drop from its own clean cell of the same protocol.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tunemem.bench.common.results import memory_held, memory_held_line

COLUMNS = ("1", "5", "10", "top_3")
DIRT = {"partial": "partial", "replayed": "replayed", "single_timings": "single timings"}


def dirt_of(noise: dict[str, Any]) -> str:
    """The cell's dirty-memory streams (`bench.learning.dirty`), "" for none."""
    return ", ".join(f"{name} {noise[key]}" for key, name in DIRT.items() if noise.get(key))


def is_clean(noise: dict[str, Any]) -> bool:
    return noise["sigma"] == 0 and noise["mislabel"] == 0 and not dirt_of(noise)


def _summary(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    if report["protocol"] == "lifelong":
        return dict(report["summary_second_half"])
    return dict(report["summary"])


def load_cells(folder: Path) -> list[dict[str, Any]]:
    """The reports in `folder`, sorted by protocol, sigma, mislabel fraction."""
    cells = []
    for path in sorted(folder.glob("*.json")):
        report = json.loads(path.read_text())
        if report.get("benchmark") == "learning":
            noise = report.get("noise") or {"sigma": 0.0, "mislabel": 0.0}
            cells.append({"path": path.name, "noise": noise, **report})
    return sorted(
        cells,
        key=lambda c: (
            c["protocol"],
            c["noise"]["sigma"],
            c["noise"]["mislabel"],
            dirt_of(c["noise"]),
        ),
    )


def sweep_table(cells: list[dict[str, Any]]) -> list[str]:
    """Markdown rows: one per (cell, arm)."""
    clean = {c["protocol"]: _summary(c) for c in cells if is_clean(c["noise"])}
    lines = [
        "| protocol | sigma | mislabel | dirt | seeds | arm | @1 | @5 | @10 | top-3 | @5 − sim"
        " | @10 − sim | top-3 − sim | @5 − own clean | @10 − own clean |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        summary = _summary(cell)
        similarity = summary.get("similarity")
        base = clean.get(cell["protocol"], {})
        for arm, row in summary.items():
            values = " | ".join(f"{row[c]:.3f}" for c in COLUMNS)
            lead = " | ".join(
                f"{row[c] - similarity[c]:+.3f}" if similarity and arm != "similarity" else ""
                for c in ("5", "10", "top_3")
            )
            own = base.get(arm)
            drop = " | ".join(f"{row[c] - own[c]:+.3f}" if own else "" for c in ("5", "10"))
            lines.append(
                f"| {cell['protocol']} | {cell['noise']['sigma']} | {cell['noise']['mislabel']}"
                f" | {dirt_of(cell['noise'])} | {cell['seeds']} | {arm} | {values} | {lead}"
                f" | {drop} |"
            )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    cells = load_cells(args.folder)
    if not cells:
        raise SystemExit(f"no learning-benchmark JSON in {args.folder}")
    first = cells[0]
    text = "\n".join(
        [
            "# Noisy memory sweep (learning benchmark)\n",
            memory_held_line(
                memory_held(
                    "complete",
                    "as the learning benchmark's protocols hold them (leave-one-chip-out: the "
                    "other chips' caches; lifelong: the caches of the tasks before), with each "
                    "cell's noise and mislabelling applied to what enters the memory",
                )
            )
            + "\n",
            f"Cells: {len(cells)} from `{args.folder}`;"
            f" seeds {sorted({c['seeds'] for c in cells})},"
            f" budget {sorted({c['budget'] for c in cells})}; machine {first['machine']['cpu']},"
            f" {first['machine']['cores']} cores. lifelong: second half of the stream; loo: every"
            " target. Fractions of each task's true recorded optimum (the agent measures the"
            " recording; only what enters the memory is noisy or mislabelled).\n",
            *sweep_table(cells),
            "",
        ]
    )
    out = args.out or args.folder / "sweep.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
