"""The transfer audit as one self-contained HTML page: heat maps, plots and lesson lists.

First the informative matrix: the mean fraction of the target's recorded optimum that the
source's configuration lessons reach (white at 0, green at 1), drawn as a heat map whose
squares are sized by the number of lessons (`transfer_plots`) and then as a table. Then the
rank correlation of lesson values (diverging: red below 0, blue above), which stays n/a until
lessons have outcomes on two chips. Per pair: a strip of the source's lessons at the fraction
of the target's optimum each reaches, the lessons that helped on the source and hurt on the
target, the lessons observed on both with their values, and the configurations tried on the
target. No external scripts, styles or fonts: the file opens anywhere, offline.
"""

from __future__ import annotations

from html import escape

from tunemem.memory_service.core.schemas.audit import (
    LessonPairValuePublic,
    TransferAuditPublic,
    TransferPairPublic,
)
from tunemem.memory_service.http.audit_advice import code_spans, fill_advice
from tunemem.memory_service.http.transfer_plots import optimum_matrix_svg, optimum_strip_svg

MAX_ROWS = 20

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; } h3 { margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
td.heat { text-align: center; min-width: 5.5em; font-variant-numeric: tabular-nums; }
td.heat small { display: block; color: #333; font-size: .75em; }
td.none { background: #eee; color: #888; }
.meta { color: #555; } .legend span { display: inline-block; padding: .1em .6em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: .85em; }
svg.plot { display: block; margin: .5em 0; } svg.plot text { fill: #333; }
"""


def _mix(low: tuple[int, int, int], high: tuple[int, int, int], t: float) -> str:
    t = max(0.0, min(1.0, t))
    r, g, b = (round(lo + (hi - lo) * t) for lo, hi in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def correlation_colour(rho: float) -> str:
    """Diverging: -1 red, 0 white, +1 blue."""
    white, red, blue = (255, 255, 255), (215, 48, 39), (49, 104, 189)
    return _mix(white, blue, rho) if rho >= 0 else _mix(white, red, -rho)


def fraction_colour(fraction: float) -> str:
    """Sequential: 0 white, 1 green."""
    return _mix((255, 255, 255), (26, 152, 80), fraction)


def _cell(
    heat_map: str, source: str, target: str, value: float | None, colour: str, note: str
) -> str:
    attrs = f'data-map="{heat_map}" data-source="{escape(source)}" data-target="{escape(target)}"'
    if value is None:
        return (
            f'<td class="heat none" {attrs} title="{escape(note)}">'
            f"n/a<small>{escape(note)}</small></td>"
        )
    shown = f"{value:+.2f}" if heat_map == "spearman" else f"{value:.2f}"
    return (
        f'<td class="heat" {attrs} data-value="{value:.4f}" style="background:{colour}" '
        f'title="{escape(source)} → {escape(target)}: {value:.3f}, {escape(note)}">'
        f"{shown}<small>{escape(note)}</small></td>"
    )


def _heat_map(audit: TransferAuditPublic, heat_map: str, caption: str) -> str:
    pairs = {(p.source, p.target): p for p in audit.pairs}
    head = "".join(f"<th>{escape(s)}</th>" for s in audit.scopes)
    rows = []
    for source in audit.scopes:
        cells = []
        for target in audit.scopes:
            pair = pairs.get((source, target))
            if pair is None:
                cells.append(f'<td class="heat none diagonal" data-map="{heat_map}">—</td>')
            elif heat_map == "spearman":
                note = f"n={pair.n_common}"
                rho = pair.spearman
                cells.append(
                    _cell(heat_map, source, target, rho, correlation_colour(rho or 0.0), note)
                )
            else:
                opt = pair.optimum
                value = opt.mean_fraction if opt else None
                note = (
                    "no space"
                    if opt is None
                    else "not measured"
                    if opt.best_fraction is None
                    else f"best {opt.best_fraction:.2f}, {opt.n_lessons} lessons"
                )
                cells.append(
                    _cell(heat_map, source, target, value, fraction_colour(value or 0.0), note)
                )
        rows.append(f"<tr><th>{escape(source)}</th>{''.join(cells)}</tr>")
    return (
        f'<table class="heatmap" id="heatmap-{heat_map}"><caption>{escape(caption)}</caption>'
        f"<tr><th>source ↓ / target →</th>{head}</tr>{''.join(rows)}</table>"
    )


def _legend() -> str:
    stops = [-1.0, -0.5, 0.0, 0.5, 1.0]
    corr = "".join(
        f'<span style="background:{correlation_colour(v)}">{v:+.1f}</span>' for v in stops
    )
    frac = "".join(
        f'<span style="background:{fraction_colour(v)}">{v:.2f}</span>'
        for v in (0.0, 0.25, 0.5, 0.75, 1.0)
    )
    return (
        f'<p class="legend">rank correlation: {corr} &nbsp; optimum fraction: {frac} '
        '&nbsp; <span style="background:#eee">n/a</span> not enough data</p>'
    )


def _lesson_rows(audit: TransferAuditPublic, items: list[LessonPairValuePublic]) -> str:
    rows = []
    for item in items[:MAX_ROWS]:
        lesson = audit.lessons.get(item.lesson_id)
        text = lesson.text if lesson else ""
        kind = lesson.kind if lesson else ""
        rows.append(
            f"<tr><td><code>{escape(item.lesson_id)}</code></td><td>{escape(kind)}</td>"
            f'<td class="num">{item.source_q:+.3f} (n={item.source_n})</td>'
            f'<td class="num">{item.target_q:+.3f} (n={item.target_n})</td>'
            f"<td>{escape(text)}</td></tr>"
        )
    more = f"<p>… and {len(items) - MAX_ROWS} more</p>" if len(items) > MAX_ROWS else ""
    return (
        "<table><tr><th>lesson</th><th>kind</th><th>value on source</th>"
        f"<th>value on target</th><th>text</th></tr>{''.join(rows)}</table>{more}"
    )


def _optimum_rows(audit: TransferAuditPublic, pair: TransferPairPublic) -> str:
    """One row per lesson measured on the target (which space and how it was measured), then
    the lessons no target space measured."""
    opt = pair.optimum
    if opt is None:
        return ""
    rows = []
    for reach in opt.reaches[:MAX_ROWS]:
        lesson = audit.lessons.get(reach.lesson_id)
        config = ", ".join(f"{k}={v}" for k, v in (lesson.config or {}).items()) if lesson else ""
        latency = f"{reach.latency_ms:.4g} ms" if reach.latency_ms is not None else "failed"
        optimum = f"{reach.optimum_ms:.4g} ms" if reach.optimum_ms is not None else "?"
        where = (
            f"{reach.coverage} ({reach.origin}"
            + (f", {reach.n_spaces} spaces" if reach.n_spaces > 1 else "")
            + ")"
        )
        rows.append(
            f"<tr><td><code>{escape(reach.lesson_id)}</code></td>"
            f"<td>{escape(reach.target_chip)}</td><td><code>{escape(config)}</code></td>"
            f"<td>{escape(where)}</td>"
            f'<td class="num">{escape(latency)}</td><td class="num">{escape(optimum)}</td>'
            f'<td class="num">{reach.fraction:.3f}</td></tr>'
        )
    summary = (
        f"mean {opt.mean_fraction:.3f}, best {opt.best_fraction:.3f}"
        if opt.mean_fraction is not None and opt.best_fraction is not None
        else "none measured"
    )
    unmeasured = (
        f'<p class="meta">Not measured on {escape(pair.target)} (no stored space holds the '
        f"configuration; not infeasible): {len(opt.not_measured)} lessons, "
        + ", ".join(f"<code>{escape(lid)}</code>" for lid in opt.not_measured[:MAX_ROWS])
        + "</p>"
        if opt.not_measured
        else ""
    )
    table = (
        "<table><tr><th>lesson</th><th>target chip</th><th>configuration</th>"
        "<th>measured on</th><th>latency there</th><th>target optimum</th><th>fraction</th></tr>"
        f"{''.join(rows)}</table>"
        if rows
        else ""
    )
    return (
        f"<h4>source configurations on the target's measured spaces ({summary})</h4>"
        '<p class="meta">Complete recordings first; where none holds a configuration, the '
        "partial runs that timed it (the fraction of each run's own best).</p>"
        f"{table}{unmeasured}"
    )


def _pair_section(audit: TransferAuditPublic, pair: TransferPairPublic) -> str:
    if not pair.common and pair.optimum is None:
        return ""
    rho = f"{pair.spearman:+.3f}" if pair.spearman is not None else "n/a"
    agree = f"{pair.sign_agreement:.0%}" if pair.sign_agreement is not None else "n/a"
    parts = [
        f'<section class="pair" data-source="{escape(pair.source)}" '
        f'data-target="{escape(pair.target)}">'
        f"<h3>{escape(pair.source)} → {escape(pair.target)}</h3>"
        f'<p class="meta">{pair.n_common} lessons with outcomes on both; rank correlation '
        f"{rho}; same verdict on {agree}; helped on both: {len(pair.helped_both)}</p>"
    ]
    if pair.helped_source_hurt_target:
        parts.append(
            f'<h4 class="hurt">helped on {escape(pair.source)}, hurt on {escape(pair.target)}</h4>'
        )
        parts.append(_lesson_rows(audit, pair.helped_source_hurt_target))
    if pair.common:
        parts.append("<details><summary>all lessons observed on both</summary>")
        parts.append(_lesson_rows(audit, pair.common) + "</details>")
    parts.append(optimum_strip_svg(pair, fraction_colour))
    parts.append(_optimum_rows(audit, pair))
    parts.append("</section>")
    return "".join(parts)


def _claim_rows(audit: TransferAuditPublic) -> str:
    """Per recorded run that outcomes on its chip re-measured: claimed reach vs measured."""
    head = (
        "<h2>Claims against outcomes</h2><p>Recorded runs whose configurations agents re-measured"
        " on the run's chip; reproduced is the mean of min(1, claimed / measured latency), and a"
        " run's recorded reach weighs in values by how well its claims reproduced.</p>"
    )
    if not audit.claims:
        return head + '<p class="empty">No recorded configuration re-measured on its chip yet.</p>'
    rows = "".join(
        f"<tr><td>{escape(c.trajectory_id[:12])}</td><td>{escape(c.chip)}</td>"
        f'<td>{escape(c.op)}</td><td class="num">{c.n}</td>'
        f'<td class="num">{c.reproduced:.2f}</td>'
        f'<td class="num">{c.claimed_reach:.2f} &rarr; {c.measured_reach:.2f}</td>'
        f"<td>{escape(c.source[:80])}</td></tr>"
        for c in audit.claims[:MAX_ROWS]
    )
    return (
        f'{head}<table id="claims"><tr><th>run</th><th>chip</th><th>op</th><th>re-measured</th>'
        "<th>reproduced</th><th>claimed reach &rarr; measured</th><th>source</th></tr>"
        f"{rows}</table>"
    )


def selectors_form(audit: TransferAuditPublic) -> str:
    """The page's level, stage and op selectors: a GET form back to `/ui/transfer`."""

    def select(name: str, options: list[tuple[str, str]], chosen: str) -> str:
        items = "".join(
            f'<option value="{escape(value)}"{" selected" if value == chosen else ""}>'
            f"{escape(label)}</option>"
            for value, label in options
        )
        return f'<label>{name} <select name="{name}">{items}</select></label> '

    stages = [("", "with evidence"), ("draft", "draft"), ("refine", "refine")]
    ops = [("", "all"), *((op, op) for op in audit.ops)]
    return (
        '<form class="selectors" method="get" action="/ui/transfer">'
        + select("level", [("chip", "chip"), ("backend", "backend")], audit.level)
        + select("stage", stages, audit.stage if audit.stage_note is None else "")
        + select("op", ops, audit.op or "")
        + '<button type="submit">show</button></form>'
    )


def render_report(
    audit: TransferAuditPublic,
    title: str = "tunemem transfer audit",
    *,
    store: str = "--url URL",
    selectors: bool = False,
) -> str:
    """The whole report as one HTML document (UTF-8 text).

    Args:
        store: how the advice's commands reach the store the audit read
            (`audit_advice.store_option`).
        selectors: add the level, stage and op form (the served page `/ui/transfer`).
    """
    scope_word = "chips" if audit.level == "chip" else "backends"
    sections = "".join(_pair_section(audit, pair) for pair in audit.pairs)
    note = f'<p class="meta stage-note">{escape(audit.stage_note)}.</p>' if audit.stage_note else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        + (selectors_form(audit) if selectors else "")
        + f'<p class="meta">{escape(scope_word)}: {escape(", ".join(audit.scopes) or "none")}; '
        f"stage: {escape(audit.stage)}; op: {escape(audit.op or 'all')}; a lesson helped where "
        f"its value is above {audit.neutral:+.2f}; observed means at least {audit.min_n} "
        "outcome(s).</p>"
        + note
        + _legend()
        + "".join(f'<p class="advice">{code_spans(line)}</p>' for line in fill_advice(audit, store))
        + "<h2>Fraction of the target's optimum reached by the source's configurations</h2>"
        + '<p class="meta">Colour: the mean fraction of the target\'s measured optimum that the '
        "source's configuration lessons reach there (complete recordings, else the partial runs "
        "that timed them); square area: how many lessons.</p>"
        + optimum_matrix_svg(audit, fraction_colour)
        + _heat_map(audit, "optimum", "mean optimum fraction of the source's configuration lessons")
        + "<h2>Rank correlation of lesson values</h2>"
        + _heat_map(audit, "spearman", "Spearman rank correlation, source (row) vs target")
        + "<h2>Pairs</h2>"
        + (sections or "<p>No pair has lessons observed on both sides or recorded spaces.</p>")
        + _claim_rows(audit)
        + "</body></html>\n"
    )
