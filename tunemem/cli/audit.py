"""`tunemem audit transfer`: the transfer matrix as a table, JSON, or an HTML report.

Against the embedded store by default; against a running server with `--url` (it reads
`GET /v1/audit/transfer`). Both paths go through the MemoryAPI and produce the same
`TransferAuditPublic`, so the table and the report do not depend on where the audit was
computed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from tunemem.cli.common import (
    ApiKeyOpt,
    DataDirOpt,
    JsonOpt,
    UrlOpt,
    clip,
    console,
    err,
    fail,
    open_service,
    request_from,
    run_guarded,
)
from tunemem.memory_service.core.schemas.audit import (
    AuditLevel,
    PairOptimumPublic,
    TransferAuditPublic,
    TransferQuery,
)
from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.http.audit_advice import fill_advice, store_option
from tunemem.memory_service.http.audit_html import render_report

audit_app = typer.Typer(help="Audits over the outcome log.", no_args_is_help=True)


def _optimum_cell(opt: PairOptimumPublic | None) -> str:
    """mean / best, lessons measured (and those no target space measured)."""
    if opt is None:
        return "n/a"
    unmeasured = f", {len(opt.not_measured)} not measured" if opt.not_measured else ""
    if opt.mean_fraction is None or opt.best_fraction is None:
        return f"not measured ({len(opt.not_measured)} lessons)"
    return f"{opt.mean_fraction:.2f} / {opt.best_fraction:.2f}, {opt.n_lessons}{unmeasured}"


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def print_matrix(audit: TransferAuditPublic, store: str = "") -> None:
    """One row per ordered pair: correlation, agreement, helped/hurt count, optimum reach."""
    table = Table(
        "source",
        "target",
        "common",
        "rank corr",
        "same verdict",
        "helped→hurt",
        "optimum (mean / best, lessons)",
        title=(f"transfer audit, {audit.level} level, stage {audit.stage}, op {audit.op or 'all'}"),
    )
    for pair in audit.pairs:
        opt = pair.optimum
        table.add_row(
            pair.source,
            pair.target,
            str(pair.n_common),
            _fmt(pair.spearman, "+.2f"),
            _fmt(pair.sign_agreement, ".0%"),
            str(len(pair.helped_source_hurt_target)),
            _optimum_cell(opt),
        )
    console.print(table)
    if audit.stage_note:
        console.print(audit.stage_note, markup=False)
    for line in fill_advice(audit, store):
        console.print(line, markup=False)
    hurt = [(p, item) for p in audit.pairs for item in p.helped_source_hurt_target]
    if hurt:
        lessons = Table(
            "source → target",
            "lesson",
            "value src",
            "value tgt",
            "text",
            title="lessons that helped on the source and hurt on the target",
        )
        for pair, item in hurt:
            brief = audit.lessons.get(item.lesson_id)
            lessons.add_row(
                f"{pair.source} → {pair.target}",
                item.lesson_id,
                f"{item.source_q:+.3g} (n={item.source_n})",
                f"{item.target_q:+.3g} (n={item.target_n})",
                Text(clip(brief.text if brief else "", 100)),
            )
        console.print(lessons)
    print_claims(audit)


def print_claims(audit: TransferAuditPublic) -> None:
    """Per recorded run re-measured on its chip: how its claims reproduced."""
    if not audit.claims:
        return
    table = Table(
        "run",
        "chip",
        "op",
        "re-measured",
        "reproduced",
        "claimed reach → measured",
        "source",
        title="recorded runs whose configurations outcomes re-measured (worst first)",
    )
    for claim in audit.claims:
        table.add_row(
            claim.trajectory_id[:12],
            claim.chip,
            claim.op,
            str(claim.n),
            f"{claim.reproduced:.2f}",
            f"{claim.claimed_reach:.2f} → {claim.measured_reach:.2f}",
            Text(clip(claim.source, 60)),
        )
    console.print(table)


@audit_app.command("transfer")
def transfer(
    level: Annotated[
        AuditLevel | None,
        typer.Option(help="chip or backend; default: backend when only --backends"),
    ] = None,
    chips: Annotated[str | None, typer.Option(help="comma list of chips (level chip)")] = None,
    backends: Annotated[
        str | None, typer.Option(help="comma list of backends (level backend)")
    ] = None,
    op: Annotated[str | None, typer.Option(help="operator family, e.g. convolution")] = None,
    stage: Annotated[
        Stage | None,
        typer.Option(help="draft or refine; default: the stage with evidence of transfer"),
    ] = None,
    min_n: Annotated[int, typer.Option(help="outcomes a lesson needs per scope")] = 1,
    toolchain: Annotated[
        list[str] | None,
        typer.Option(help="cut by toolchain: component=version (repeatable), e.g. triton=3.6"),
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="also write the HTML report here")
    ] = None,
    url: UrlOpt = None,
    data_dir: DataDirOpt = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Which lessons transfer between chips (or backends): values, rank correlation, reach."""
    given = {"level": level, "chips": chips, "backends": backends, "op": op, "toolchain": toolchain}
    given["stage"] = stage
    query = request_from(
        TransferQuery,
        min_n=min_n,
        **{name: value for name, value in given.items() if value is not None},
    )

    def go() -> TransferAuditPublic:
        with open_service(url, data_dir, api_key=api_key) as memory:
            return memory.audit_transfer(query)

    audit = run_guarded(go)
    if as_json:
        console.print_json(audit.model_dump_json())
    else:
        print_matrix(audit, store_option(url, data_dir))
    if html is not None:
        try:
            html.write_text(
                render_report(audit, store=store_option(url, data_dir)), encoding="utf-8"
            )
        except OSError as exc:
            fail(f"cannot write {html}: {exc}")
        err.print(f"wrote the HTML report to {html}")
