"""MCP server: the memory operations as MCP tools (DESIGN section 6), over one facade.

`build_mcp_server(service)` wraps a `MemoryAPI` (an embedded `MemoryService`, or a
`RemoteService`: a running tunemem server reached over HTTP) in an
`mcp.server.mcpserver.MCPServer` whose tools are thin adapters: they build the same request
models the HTTP API takes, call the facade, and return its response models as structured
output. A `ServiceError` becomes an MCP tool error (`is_error=True`) whose text carries
`"<code>: <message>"`, so an agent sees the same stable code the HTTP API would send. Tool
docstrings become the tool descriptions an LLM reads, so they say when to call the tool and
what to do with its answer. Every tool refuses arguments it does not take
(`memory_service.mcp.strict`).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import ToolAnnotations
from pydantic import Field

from memory_service.core.schemas.audit import TransferAuditPublic
from memory_service.core.schemas.learning import LessonHistory, RetrieveRequest, RetrieveResponse
from memory_service.core.schemas.lessons import (
    Applicability,
    LessonCreate,
    LessonDetail,
    LessonFilter,
    LessonKind,
    LessonList,
    LessonsCreated,
    Stage,
)
from memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from memory_service.mcp.strict import service_errors, strict_tool
from memory_service.mcp.suggest_tool import suggest_tool
from memory_service.protocol import MemoryAPI

SERVER_NAME = "tunemem"
TRANSPORTS = ("stdio", "streamable-http")

INSTRUCTIONS = """\
tunemem is a memory of GPU/NPU kernel-tuning experience whose lessons are ranked by how much
they actually helped before, on this chip, at this stage.

The loop, once per kernel attempt:
1. Before writing or tuning a kernel, call `retrieve_lessons` with the operator, chip and
   stage ("draft" until you have a kernel that compiles and is correct, then "refine").
   Keep the `retrieval_id` it returns.
2. Evaluate your attempt, then call `report_outcome` with that `retrieval_id`, whether it
   compiled, whether it was correct, and its latency (plus the best latency before it, when
   refining). Name the lessons you actually used in `used`. This is how the memory learns.
   To tune a parameter space, `suggest` answers the next configurations to try (untried by
   you, the memory's first); report each one's outcome against its `retrieval_id`.
3. When you find something reusable (a configuration that won, a cause of failure, an API
   detail), call `add_lesson` with precise applicability so it reaches the right tasks.

Lessons of kind "failure" come back as warnings: things to avoid, not to do. Errors are tool
errors whose text carries a stable code, e.g. "retrieval_not_found: no retrieval with id ...".
"""


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build_mcp_server(service: MemoryAPI, *, name: str = SERVER_NAME) -> MCPServer:
    """An MCP server whose tools call `service` (embedded MemoryService or RemoteService)."""

    def retrieve_lessons(
        stage: Annotated[
            Stage,
            Field(
                description='"draft" (the default): you need a first kernel that compiles and '
                'is correct; "refine": you have one and want it faster'
            ),
        ] = "draft",
        op: Annotated[
            str | None,
            Field(description="operator family, e.g. softmax, rmsnorm, gemm, attention"),
        ] = None,
        chip: Annotated[
            str | None,
            Field(description="target chip as you know it, e.g. H200, A100, MI300X, Ascend 910B"),
        ] = None,
        query: Annotated[str, Field(description="free text: what you try or what failed")] = "",
        signature: Annotated[
            dict[str, Any] | None,
            Field(description='problem sizes and layout, e.g. {"M": 4096, "N": 4096}'),
        ] = None,
        dtype: Annotated[str | None, Field(description="e.g. bf16, fp16, fp32")] = None,
        model: Annotated[str | None, Field(description="the model served, if any")] = None,
        scenario: Annotated[str | None, Field(description="prefill, decode, training ...")] = None,
        backend: Annotated[
            str | None,
            Field(description="e.g. cuda, hip, ascend, cpu; only needed when no chip is given"),
        ] = None,
        k: Annotated[int | None, Field(ge=1, le=100, description="lessons to return")] = None,
        toolchain: Annotated[
            dict[str, str] | None,
            Field(
                description='versions you compile with, e.g. {"triton": "3.6.0", "cuda": "13.0"}'
            ),
        ] = None,
    ) -> RetrieveResponse:
        """Get the lessons worth reading before your next kernel attempt.

        Call this before each attempt. Lessons are ranked by similarity to your task and by
        their learned value (how much they helped earlier attempts in this context). Each
        lesson has `text`, an optional structured `hint` (parameter settings to try) and
        optional `code`; `warning: true` means a known failure to avoid; `transferred: true`
        means it was learned on another backend: `rendered_text` swaps only unambiguous nouns
        into your backend's terms and `glossary` maps its other terms, with caveats where a
        quantity (warp width, on-chip memory) differs. With `toolchain`, `stale: true` means
        all its evidence is from older compiler versions: re-validate it first. `breakdown`
        explains the rank (similarity, value, the scope the value came from, how many outcomes
        back it). Keep `retrieval_id`: pass it to `report_outcome` after you evaluate the
        attempt.
        """
        with service_errors():
            request = RetrieveRequest(
                query=query,
                task={"op": op, "signature": signature or {}, "dtype": dtype},
                context={
                    "chip": chip,
                    "backend": backend,
                    "model": model,
                    "scenario": scenario,
                    "toolchain": toolchain or {},
                },
                stage=stage,
                k=k,
            )
            return service.retrieve(request)

    def report_outcome(
        retrieval_id: Annotated[
            str, Field(description="the retrieval_id that retrieve_lessons returned")
        ],
        compiled: Annotated[bool, Field(description="did the kernel compile / launch")],
        correct: Annotated[
            bool | None,
            Field(
                description="did it match the reference within tolerance; required when it "
                "compiled, unless `error` says how it failed"
            ),
        ] = None,
        latency_ms: Annotated[
            float | None, Field(gt=0.0, description="measured latency of this attempt, ms")
        ] = None,
        best_before_ms: Annotated[
            float | None,
            Field(gt=0.0, description="best latency you had before this attempt, ms (refine)"),
        ] = None,
        error: Annotated[
            str | None, Field(description="compiler or runtime error text, if it failed")
        ] = None,
        used: Annotated[
            list[str] | None,
            Field(
                description="ids of the returned lessons you actually applied; "
                "null credits every returned lesson"
            ),
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Field(description="any unique string; a retried report with it counts once"),
        ] = None,
    ) -> ReportResponse:
        """Report what happened after an attempt, so the lessons you used learn from it.

        In draft stage the reward is +1 if the kernel compiled and was correct, -1 otherwise.
        In refine stage it is -1 if infeasible, else grows with the speed-up over
        `best_before_ms`. The answer gives the reward and each credited lesson's new value
        with its confidence interval. Report every attempt, failures included: that is what
        makes bad lessons sink. Errors: `retrieval_not_found` (unknown retrieval_id),
        `lesson_not_in_retrieval` (a `used` id was not returned by that retrieval).
        """
        with service_errors():
            request = ReportRequest(
                retrieval_id=retrieval_id,
                used=used,
                outcome={
                    "compiled": compiled,
                    "correct": correct,
                    "latency_ms": latency_ms,
                    "best_before_ms": best_before_ms,
                    "error": error,
                },
                reporter="mcp",
            )
            return service.report(request, idempotency_key=idempotency_key)

    def add_lesson(
        kind: Annotated[
            LessonKind,
            Field(
                description='"insight" (why something works), "failure" (what breaks and why), '
                '"exemplar" (a good kernel or configuration), "api" (backend API knowledge)'
            ),
        ],
        text: Annotated[
            str,
            Field(
                min_length=1,
                description="the lesson in one to three sentences, concrete: name the "
                "parameters, sizes and effect measured",
            ),
        ],
        applicability: Annotated[
            Applicability | None,
            Field(
                description="where it applies (op, chips, families, backends, dtypes, models, "
                "scenarios, signature); an empty list means any"
            ),
        ] = None,
        hint: Annotated[
            dict[str, Any] | None,
            Field(description='structured parameters to try, e.g. {"BLOCK_SIZE": 1024}'),
        ] = None,
        code: Annotated[str | None, Field(description="kernel source (exemplars)")] = None,
    ) -> LessonsCreated:
        """Store a lesson you learned, so later attempts (yours or other agents') can use it.

        Adding is idempotent: the same content, or a near-duplicate with the same
        applicability and hint, merges into the existing lesson (its id is then listed in
        `merged`). `ids[0]` is the lesson's id either way. Narrow `applicability` to where the
        lesson was observed (op, chip, dtype); the memory itself learns how far it carries.
        """
        with service_errors():
            where = applicability or Applicability()
            lesson = LessonCreate(kind=kind, text=text, applicability=where, hint=hint, code=code)
            lesson.provenance = {"source": "mcp"}
            return service.add_lessons([lesson])

    def list_lessons(
        kind: Annotated[LessonKind | None, Field(description="only this kind")] = None,
        op: Annotated[str | None, Field(description="only lessons for this operator")] = None,
        chip: Annotated[str | None, Field(description="only lessons naming this chip")] = None,
        backend: Annotated[str | None, Field(description="this backend or any")] = None,
        q: Annotated[str | None, Field(description="text contains (case-insensitive)")] = None,
        status: Annotated[
            Literal["active", "archived", "all"], Field(description="lesson status")
        ] = "active",
        limit: Annotated[int, Field(ge=1, le=500, description="page size")] = 20,
        offset: Annotated[int, Field(ge=0, description="page start")] = 0,
    ) -> LessonList:
        """Browse stored lessons by filters, oldest first; `count` is the total matching.

        Use it to inspect what the memory holds. To choose lessons for an attempt, call
        `retrieve_lessons` instead: it ranks by learned value, this does not.
        """
        with service_errors():
            where = LessonFilter(
                kind=kind,
                backend=backend,
                chip=chip,
                op=op,
                q=q,
                status=status,
                limit=limit,
                offset=offset,
            )
            return service.list_lessons(where)

    def get_lesson(
        lesson_id: Annotated[str, Field(description="a lesson id")],
    ) -> LessonDetail:
        """One lesson in full, with its learned values per stage and scope.

        `values` lists (stage, scope, n, q): q is the lesson's running reward in that scope
        (chip:..., family:..., backend:..., global) from n outcomes. Error:
        `lesson_not_found`.
        """
        with service_errors():
            return service.get_lesson(lesson_id)

    def lesson_history(
        lesson_id: Annotated[str, Field(description="a lesson id")],
    ) -> LessonHistory:
        """The outcomes that credited a lesson, oldest first, and its values per scope.

        Use it to see why a lesson ranks where it does: every value is explained by these
        outcomes (compiled, correct, latency, reward). Error: `lesson_not_found`.
        """
        with service_errors():
            return service.lesson_history(lesson_id)

    def audit_transfer(
        level: Annotated[
            Literal["chip", "backend"], Field(description="compare chips or backends")
        ] = "chip",
        chips: Annotated[
            list[str] | None, Field(description="chips to compare (level chip); default all")
        ] = None,
        backends: Annotated[
            list[str] | None, Field(description="backends to compare (level backend)")
        ] = None,
        op: Annotated[str | None, Field(description="only this operator family")] = None,
        stage: Annotated[Stage, Field(description="whose values are compared")] = "draft",
        min_n: Annotated[
            int, Field(ge=1, description="outcomes a lesson needs on a chip to count there")
        ] = 1,
    ) -> TransferAuditPublic:
        """Which lessons carry over from one chip (or backend) to another.

        For every ordered pair (source, target) of scopes: the lessons with outcomes on
        both and their values (Q) on each, the rank correlation of those values
        (`spearman`), the share judged alike, `helped_source_hurt_target` (lessons to
        distrust on the target), and, where recorded search spaces exist, the fraction of
        the target's optimum that source configurations reach. `lessons` maps the ids
        mentioned to their text. Use it to decide how far to trust lessons learned elsewhere.
        """
        with service_errors():
            return service.audit_transfer(
                level=level, chips=chips, backends=backends, op=op, stage=stage, min_n=min_n
            )

    tools: list[Tool] = [
        strict_tool(retrieve_lessons, title="Retrieve lessons"),
        strict_tool(report_outcome, title="Report an attempt's outcome"),
        suggest_tool(service),
        strict_tool(add_lesson, title="Add a lesson"),
        strict_tool(list_lessons, title="List lessons", annotations=READ_ONLY),
        strict_tool(get_lesson, title="Show a lesson", annotations=READ_ONLY),
        strict_tool(lesson_history, title="A lesson's outcome history", annotations=READ_ONLY),
        strict_tool(audit_transfer, title="Transfer audit", annotations=READ_ONLY),
    ]
    server = MCPServer(name, instructions=INSTRUCTIONS, log_level="WARNING", tools=tools)
    return server


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_mcp_server(
    service: MemoryAPI, transport: str = "stdio", *, host: str = "127.0.0.1", port: int = 8765
) -> None:
    """Serve the tools over stdio (default) or streamable HTTP at http://host:port/mcp.

    The HTTP endpoint checks no keys, so, like a keyless store, it binds loopback only.
    """
    if transport not in TRANSPORTS:
        raise ValueError(f"unknown transport {transport!r}; valid: {', '.join(TRANSPORTS)}")
    if transport == "streamable-http" and not is_loopback(host):
        raise ValueError(
            f"the MCP HTTP endpoint has no keys: bind it to loopback, not {host!r}; for remote "
            "agents run `tunemem serve` with keys and `tunemem mcp --url` beside each agent"
        )
    server = build_mcp_server(service)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
