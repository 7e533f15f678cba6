"""The transfer audit as pictures (inline SVG, no script): the chip x chip matrix of the
fraction of the target's optimum as a heat map whose squares are sized by the number of
source lessons behind them, and per chip pair a strip of those lessons, one dot each at the
fraction of the target's recorded optimum its configuration reaches.

Both are built from the audit's `optimum` figures only (`TransferPairPublic.optimum`), so the
page and the HTML report show the same numbers as `GET /v1/audit/transfer`. Every mark carries
`data-*` attributes with the number it draws, which the browser test reads back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from tunemem.memory_service.core.schemas.audit import TransferAuditPublic, TransferPairPublic

CELL = 64  # px: the side of a matrix cell; a square of full size fills it less a margin
LABEL = 110  # px: room for the row labels on the left and the column labels on top
STRIP_WIDTH = 420
STRIP_HEIGHT = 56


def optimum_matrix_svg(audit: TransferAuditPublic, colour: Callable[[float], str]) -> str:
    """Rows: source, columns: target. A square's colour is the mean fraction of the target's
    optimum that the source's configuration lessons reach; its area is proportional to their
    number (the largest count fills the cell). An empty cell: no lesson or no recorded space."""
    scopes = audit.scopes
    pairs = {(p.source, p.target): p for p in audit.pairs}
    most = max((p.optimum.n_lessons for p in audit.pairs if p.optimum), default=0)
    size = LABEL + CELL * len(scopes)
    marks: list[str] = []
    for i, name in enumerate(scopes):
        middle = LABEL + CELL * i + CELL / 2
        marks.append(
            f'<text x="{LABEL - 6}" y="{middle + 4:.0f}" text-anchor="end">{escape(name)}</text>'
            f'<text transform="translate({middle + 4:.0f},{LABEL - 6}) rotate(-45)">'
            f"{escape(name)}</text>"
        )
    for row, source in enumerate(scopes):
        for col, target in enumerate(scopes):
            x, y = LABEL + CELL * col, LABEL + CELL * row
            marks.append(
                f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="none" stroke="#ccc"/>'
            )
            pair = pairs.get((source, target))
            opt = pair.optimum if pair else None
            if opt is None or opt.mean_fraction is None or most == 0:
                continue
            side = (CELL - 8) * math.sqrt(opt.n_lessons / most)
            left, top = x + (CELL - side) / 2, y + (CELL - side) / 2
            marks.append(
                f'<rect class="cell" data-source="{escape(source)}" '
                f'data-target="{escape(target)}" data-value="{opt.mean_fraction:.4f}" '
                f'data-n="{opt.n_lessons}" x="{left:.1f}" y="{top:.1f}" width="{side:.1f}" '
                f'height="{side:.1f}" fill="{colour(opt.mean_fraction)}" stroke="#555">'
                f"<title>{escape(source)} → {escape(target)}: mean {opt.mean_fraction:.2f} of "
                f"the optimum, best {opt.best_fraction:.2f}, {opt.n_lessons} lessons</title>"
                "</rect>"
                f'<text x="{x + CELL / 2:.0f}" y="{y + CELL / 2 + 4:.0f}" '
                f'text-anchor="middle">{opt.mean_fraction:.2f}</text>'
            )
    return (
        f'<svg class="plot" id="plot-optimum-matrix" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" font-size="11" role="img" '
        "aria-label=\"fraction of the target's optimum, source (row) by target (column); "
        'square area: number of source lessons">'
        f"{''.join(marks)}</svg>"
    )


def optimum_strip_svg(pair: TransferPairPublic, colour: Callable[[float], str]) -> str:
    """One dot per source lesson measured on the target's recorded space, at the fraction of
    the target's optimum its configuration reaches (0: infeasible there, 1: the optimum); a
    tick marks the mean. Empty string when the pair has no such lesson."""
    opt = pair.optimum
    if opt is None or not opt.reaches or opt.mean_fraction is None:
        return ""
    left, right = 30, STRIP_WIDTH - 20
    axis_y = STRIP_HEIGHT - 18

    def at(fraction: float) -> float:
        return left + (right - left) * min(max(fraction, 0.0), 1.0)

    marks = [
        f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="#888"/>',
        *(
            f'<text x="{at(t):.0f}" y="{STRIP_HEIGHT - 4}" text-anchor="middle">{t:.1f}</text>'
            for t in (0.0, 0.25, 0.5, 0.75, 1.0)
        ),
        f'<line class="mean" data-value="{opt.mean_fraction:.4f}" x1="{at(opt.mean_fraction):.1f}"'
        f' y1="6" x2="{at(opt.mean_fraction):.1f}" y2="{axis_y}" stroke="#333" '
        'stroke-dasharray="3,2"/>',
    ]
    for i, reach in enumerate(opt.reaches):
        jitter = 8 + (i * 7) % max(axis_y - 14, 1)  # spread equal fractions apart, repeatably
        marks.append(
            f'<circle class="lesson" data-lesson="{escape(reach.lesson_id)}" '
            f'data-value="{reach.fraction:.4f}" cx="{at(reach.fraction):.1f}" cy="{jitter}" '
            f'r="4" fill="{colour(reach.fraction)}" stroke="#333">'
            f"<title>{escape(reach.lesson_id)}: {reach.fraction:.3f} of the optimum on "
            f"{escape(reach.target_chip)}</title></circle>"
        )
    return (
        f'<svg class="plot strip" data-source="{escape(pair.source)}" '
        f'data-target="{escape(pair.target)}" width="{STRIP_WIDTH}" height="{STRIP_HEIGHT}" '
        f'viewBox="0 0 {STRIP_WIDTH} {STRIP_HEIGHT}" font-size="10" role="img" '
        f'aria-label="{escape(pair.source)} lessons on {escape(pair.target)}: fraction of the '
        f'optimum">{"".join(marks)}</svg>'
    )
