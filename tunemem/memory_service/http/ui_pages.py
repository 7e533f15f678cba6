"""The read-only analyst pages under `/ui`, rendered on the server as self-contained HTML.

Each page is one document with its style inline and no script, font or image from elsewhere
(it works air-gapped, like the audit report): the lessons with filters and, ranked by value,
their values in a chip's context; one lesson with its values per stage and scope and its
outcome history as an SVG chart with a legend; the transfer heat maps are the audit report
itself (`audit_html.render_report`) under the same navigation bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from tunemem.memory_service.core.schemas.learning import OutcomePublic
from tunemem.memory_service.core.schemas.lessons import LessonDetail, LessonFilter, LessonList
from tunemem.retrieval.values import ScopeStats, update_stats

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
nav { margin-bottom: 1em; } nav a { margin-right: 1.2em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ccc; padding: .3em .6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, .id { font: 12px ui-monospace, monospace; white-space: nowrap; }
form.filters label { margin-right: .8em; white-space: nowrap; }
form.filters input { width: 8em; }
.meta { color: #555; } .empty { color: #555; font-style: italic; }
svg text { font: 12px system-ui, sans-serif; fill: #333; }
td.hint { font: 12px ui-monospace, monospace; overflow-wrap: anywhere; max-width: 60em; }
"""
STAGE_COLOURS = {"draft": "#1f77b4", "refine": "#d95f02"}
VALUE_COLOURS = {"draft": "#0b3d66", "refine": "#7a3300"}
TEXT_WIDTH = 140
# Separated in the markup, not only by style: the audit report brings its own style sheet.
NAV = (
    '<nav><a href="/ui">lessons</a> · <a href="/ui/transfer">transfer</a> · '
    '<a href="/docs">API</a></nav>'
)


def clip(text: str, width: int = TEXT_WIDTH) -> str:
    """The text on one line, whole if it fits, else cut at a word and ended with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def page(title: str, body: str) -> str:
    """One whole document with the navigation bar."""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{NAV}<h1>{escape(title)}</h1>{body}</body></html>\n"
    )


def with_navigation(report: str) -> str:
    """A whole report document (the audit's) with the pages' navigation bar on top."""
    return report.replace("<body>", f"<body>{NAV}", 1)


def _hint_value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_hint_value(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_hint_value(v) for v in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def hint_table(hint: dict[str, Any]) -> str:
    """A lesson's structured hint as a table of its fields (a configuration as name=value
    pairs), wrapped to the page's width."""
    rows = "".join(
        f'<tr><th>{escape(str(key))}</th><td class="hint">{escape(_hint_value(value))}</td></tr>'
        for key, value in hint.items()
    )
    return f'<h2>Hint</h2><table id="hint">{rows}</table>'


def _field(name: str, label: str, value: str | None) -> str:
    shown = escape(value or "", quote=True)
    return f'<label>{label} <input name="{name}" value="{shown}"></label>'


def _select(name: str, label: str, choices: Sequence[str], chosen: str) -> str:
    options = "".join(
        f'<option value="{c}"{" selected" if c == chosen else ""}>{c}</option>' for c in choices
    )
    return f'<label>{label} <select name="{name}">{options}</select></label>'


def lessons_page(where: LessonFilter, lessons: LessonList) -> str:
    """The lessons matching a filter; ranked by value, with each one's value in the context."""
    form = (
        '<form class="filters" method="get" action="/ui">'
        + _select("kind", "kind", ["", "insight", "failure", "exemplar", "api"], where.kind or "")
        + _field("op", "op", where.op)
        + _field("chip", "chip", where.chip)
        + _field("backend", "backend", where.backend)
        + _field("q", "text", where.q)
        + _select("sort", "order", ["created", "value", "-value"], where.sort)
        + _select("stage", "stage", ["draft", "refine"], where.stage)
        + '<button type="submit">show</button></form>'
    )
    valued = where.sort != "created"
    head = "<tr><th>id</th><th>kind</th><th>op</th>"
    head += (
        "<th>value</th><th>95% interval</th><th>scope</th><th>n (scope / chain)</th>"
        if valued
        else "<th>chips</th>"
    )
    head += "<th>text</th></tr>"
    rows = []
    for lesson in lessons.data:
        a = lesson.applicability
        cells = (
            f'<td><a class="id" href="/ui/lessons/{quote(lesson.id)}">{escape(lesson.id)}</a></td>'
            f"<td>{escape(lesson.kind)}</td><td>{escape(a.op or '*')}</td>"
        )
        if valued and lesson.value is not None:
            v = lesson.value
            cells += (
                f'<td class="num">{v.value:+.3g}</td>'
                f'<td class="num">[{v.ci_low:+.3g}, {v.ci_high:+.3g}]</td>'
                f'<td>{escape(v.value_scope)}</td><td class="num">{v.n} / {v.n_total}</td>'
            )
        else:
            cells += f"<td>{escape(', '.join(a.chips) or '*')}</td>"
        cells += f"<td>{escape(clip(lesson.text))}</td>"
        rows.append(f'<tr class="lesson" data-id="{escape(lesson.id)}">{cells}</tr>')
    if rows:
        table = f'<table id="lessons">{head}{"".join(rows)}</table>'
    elif valued:
        where_text = f"on {where.chip}" if where.chip else "in the global scope"
        table = (
            f'<p class="empty">No lesson has outcomes {escape(where_text)} at stage '
            f"{escape(where.stage)} yet. Run an agent against this server (<code>tunemem agent "
            "run --task tunemem/ingest/samples/targets/convolution --chip w6600 --url ...</code>) "
            "or report outcomes (<code>POST /v1/outcomes</code>) to fill it.</p>"
        )
    else:
        table = '<p class="empty">No lesson matches these filters.</p>'
    what = (
        f"ranked by {'highest' if where.sort == 'value' else 'lowest'} value "
        f"{'on ' + where.chip if where.chip else 'in the global scope'}, stage {where.stage}"
        if valued
        else "oldest first"
    )
    summary = f'<p class="meta">{lessons.count} lessons; {escape(what)}.</p>'
    return page("tunemem lessons", form + summary + table)


def _y(reward: float, top: float, height: float) -> float:
    return top + (1.0 - max(-1.0, min(1.0, reward))) / 2.0 * height


def history_chart(outcomes: Sequence[OutcomePublic], alpha: float, q0: float) -> str:
    """The outcome history as an SVG: each outcome's reward as a dot (by stage), and the running
    global-scope value it produced as a line, oldest to newest, with a legend."""
    if not outcomes:
        return (
            '<p class="empty" id="no-history">No outcomes yet: the chart fills as agents report '
            "attempts that used this lesson (<code>POST /v1/outcomes</code>).</p>"
        )
    width, height, left, top, plot_h = 760, 290, 48, 16, 200
    plot_w = width - left - 20
    step = plot_w / max(1, len(outcomes) - 1)
    dots, lines = [], []
    running: dict[str, list[str]] = {}
    stats: dict[str, ScopeStats] = {}
    for position, outcome in enumerate(outcomes):
        x = left + (step * position if len(outcomes) > 1 else plot_w / 2)
        y = _y(outcome.reward, top, plot_h)
        colour = STAGE_COLOURS.get(outcome.stage, "#555")
        dots.append(
            f'<circle class="outcome" data-stage="{outcome.stage}" '
            f'data-reward="{outcome.reward:.4f}" cx="{x:.1f}" cy="{y:.1f}" r="4.5" '
            f'fill="{colour}"><title>#{outcome.id} {outcome.stage}: reward '
            f"{outcome.reward:+.3g}</title></circle>"
        )
        current = update_stats(stats.get(outcome.stage), outcome.reward, alpha, q0)
        stats[outcome.stage] = current
        running.setdefault(outcome.stage, []).append(f"{x:.1f},{_y(current.q, top, plot_h):.1f}")
    for stage, points in running.items():
        lines.append(
            f'<polyline class="value-line" data-stage="{stage}" points="{" ".join(points)}" '
            f'fill="none" stroke="{VALUE_COLOURS.get(stage, "#333")}" stroke-width="2"/>'
        )
    axes = (
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#999"/>'
        f'<line x1="{left}" y1="{_y(0, top, plot_h)}" x2="{left + plot_w}" '
        f'y2="{_y(0, top, plot_h)}" stroke="#ccc" stroke-dasharray="4 3"/>'
        + "".join(
            f'<text x="{left - 8}" y="{_y(v, top, plot_h) + 4}" text-anchor="end">{label}</text>'
            for v, label in ((1.0, "+1"), (0.0, "0"), (-1.0, "−1"))
        )
        + f'<text x="{left + plot_w / 2}" y="{top + plot_h + 22}" text-anchor="middle">'
        f"outcomes, oldest to newest ({len(outcomes)})</text>"
    )
    entries = []
    for stage in sorted(running):
        entries.append(("dot", STAGE_COLOURS.get(stage, "#555"), f"{stage} reward"))
        entries.append(("line", VALUE_COLOURS.get(stage, "#333"), f"{stage} value (global Q)"))
    legend_items = []
    for slot, (mark, colour, label) in enumerate(entries):
        x = left + slot * 170
        y = top + plot_h + 46
        symbol = (
            f'<circle cx="{x + 6}" cy="{y - 4}" r="4.5" fill="{colour}"/>'
            if mark == "dot"
            else f'<line x1="{x}" y1="{y - 4}" x2="{x + 14}" y2="{y - 4}" stroke="{colour}" '
            'stroke-width="2"/>'
        )
        legend_items.append(f'{symbol}<text x="{x + 20}" y="{y}">{escape(label)}</text>')
    legend = f'<g class="legend">{"".join(legend_items)}</g>'
    return (
        f'<svg id="history" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="outcome history">{axes}{"".join(lines)}{"".join(dots)}'
        f"{legend}</svg>"
    )


def _which_value(alpha: float) -> str:
    """What the two tables are: the estimate every door shows, and the running rewards."""
    return (
        f'<p class="meta" id="which-value">The first table is the one value the memory ranks '
        "this lesson by in each context: what a retrieve there shows (and so the agent's "
        "output), what a report answers with and what <code>lessons top --chip CHIP</code> "
        "lists, named by its estimator, with the term carrying the most weight, its 95 % "
        "interval within the reward range [-1, 1] and each term's share of its weight. The "
        "second holds the own-outcome terms: Q is the running reward in one scope, moved by "
        f"α = {alpha:g} toward each outcome's reward.</p>"
    )


def _in_context_table(lesson: LessonDetail) -> str:
    rows = "".join(
        f'<tr class="estimate"><td>{escape(v.stage)}</td>'
        f"<td>{escape(v.chip or 'global')}</td><td>{escape(v.estimator)}</td>"
        f'<td class="num">{v.value:+.3g}</td>'
        f'<td class="num">[{v.ci_low:+.3g}, {v.ci_high:+.3g}]</td>'
        f'<td>{escape(v.value_scope)}</td><td class="num">{v.n} / {v.n_total}</td>'
        f"<td>{escape(_terms(v.terms))}</td></tr>"
        for v in lesson.in_context
    )
    return (
        '<table id="in-context"><tr><th>stage</th><th>context</th><th>estimator</th>'
        "<th>value</th><th>95% interval</th><th>weighs most</th><th>n (scope / chain)</th>"
        f"<th>terms</th></tr>{rows}</table>"
    )


def _terms(terms: dict[str, float]) -> str:
    ranked = sorted(terms.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {share:.0%}" for name, share in ranked)


def _origins(outcomes: Sequence[OutcomePublic]) -> str:
    """How the outcomes' numbers were obtained, counted by origin (measured on which device)."""
    if not outcomes:
        return ""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        where = f" on {outcome.device_reported}" if outcome.device_reported else ""
        key = f"{outcome.origin}{where}"
        counts[key] = counts.get(key, 0) + 1
    parts = ", ".join(f"{n} {escape(key)}" for key, n in sorted(counts.items()))
    return f'<p class="meta" id="outcome-origins">Outcomes by origin: {parts}.</p>'


def lesson_page(
    lesson: LessonDetail,
    outcomes: Sequence[OutcomePublic],
    alpha: float,
    q0: float,
) -> str:
    """One lesson: its text and applicability, its values per stage and scope, its history."""
    a = lesson.applicability
    where = ", ".join(
        f"{name}: {', '.join(values)}"
        for name, values in (
            ("chips", a.chips),
            ("families", a.families),
            ("backends", a.backends),
            ("dtypes", a.dtypes),
        )
        if values
    )
    meta = (
        f'<p class="meta"><span class="id">{escape(lesson.id)}</span> · {escape(lesson.kind)} · '
        f"op {escape(a.op or '*')} · {escape(where or 'applies anywhere')} · "
        f"{escape(lesson.status)}</p>"
    )
    text = f"<p>{escape(lesson.text)}</p>"
    hint = hint_table(lesson.hint) if lesson.hint else ""
    run = lesson.source_run
    source = (
        f'<p class="meta" id="source-run">Distilled from run <code>{escape(run.trajectory_id)}'
        f"</code> on {escape(run.chip)}: {escape(run.origin)}, {escape(run.coverage)}"
        + (f", timed on {escape(run.device_reported)}" if run.device_reported else "")
        + "</p>"
        if run
        else ""
    )
    if lesson.values:
        rows = "".join(
            f'<tr class="value"><td>{escape(v.stage)}</td><td>{escape(v.scope)}</td>'
            f'<td class="num">{v.n}</td><td class="num">{v.q:+.3g}</td></tr>'
            for v in lesson.values
        )
        values = (
            _in_context_table(lesson)
            + '<table id="values"><tr><th>stage</th><th>scope</th><th>n</th><th>Q (running '
            f"reward)</th></tr>{rows}</table>" + _which_value(alpha)
        )
    else:
        values = '<p class="empty">No values yet: no outcome has credited this lesson.</p>'
    return page(
        "tunemem lesson",
        meta
        + text
        + source
        + hint
        + "<h2>Value in each context, and its own-outcome terms</h2>"
        + values
        + "<h2>Outcome history</h2>"
        + history_chart(outcomes, alpha, q0)
        + _origins(outcomes),
    )
