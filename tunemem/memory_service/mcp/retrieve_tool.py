"""The MCP `retrieve_lessons` tool: the lessons worth reading before a kernel attempt."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.learning import RetrieveRequest, RetrieveResponse
from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.mcp.strict import service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def retrieve_lessons_tool(service: MemoryAPI) -> Tool:
    """The `retrieve_lessons` tool over `service`."""

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

    return strict_tool(retrieve_lessons, title="Retrieve lessons")
