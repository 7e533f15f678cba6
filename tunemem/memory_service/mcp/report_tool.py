"""The MCP `report_outcome` tool: an attempt's outcome, from which the lessons it used learn."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.mcp.strict import service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def report_outcome_tool(service: MemoryAPI) -> Tool:
    """The `report_outcome` tool over `service`."""

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
        config: Annotated[
            dict[str, str | int | float | bool] | None,
            Field(
                description="the configuration you tried (parameter -> value): each used "
                "lesson is then credited by whether you followed it, and a warning your "
                "configuration disproved loses value"
            ),
        ] = None,
        timings_ms: Annotated[
            list[float] | None,
            Field(
                description="every timing of the attempt, ms (latency_ms defaults to their "
                "median); several tight timings move values more than one"
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
                    "config": config,
                    "timings_ms": timings_ms,
                },
                reporter="mcp",
            )
            return service.report(request, idempotency_key=idempotency_key)

    return strict_tool(report_outcome, title="Report an attempt's outcome")
