"""The MCP `suggest` tool: the next configurations of a parameter space to try."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver.tools.base import Tool
from pydantic import Field

from tunemem.memory_service.core.schemas.lessons import Stage
from tunemem.memory_service.core.schemas.suggest import SuggestRequest, SuggestResponse
from tunemem.memory_service.mcp.strict import service_errors, strict_tool
from tunemem.memory_service.protocol import MemoryAPI


def suggest_tool(service: MemoryAPI) -> Tool:
    """The `suggest` tool over `service`."""

    def suggest(
        params: Annotated[
            dict[str, list[Any]],
            Field(
                description="the parameter space: allowed values per parameter, e.g. "
                '{"BLOCK_SIZE": [64, 128, 256], "num_warps": [2, 4, 8]}'
            ),
        ],
        op: Annotated[str | None, Field(description="operator family, e.g. gemm")] = None,
        kernel: Annotated[str | None, Field(description="kernel name")] = None,
        chip: Annotated[str | None, Field(description="target chip, e.g. H200, MI300X")] = None,
        backend: Annotated[str | None, Field(description="only needed without a chip")] = None,
        signature: Annotated[
            dict[str, Any] | None,
            Field(description='problem sizes, e.g. {"M": 4096, "N": 4096}'),
        ] = None,
        dtype: Annotated[str | None, Field(description="e.g. bf16, fp16, fp32")] = None,
        valid: Annotated[
            list[dict[str, Any]] | None,
            Field(description="the valid configurations, when not every combination is"),
        ] = None,
        observations: Annotated[
            list[dict[str, Any]] | None,
            Field(
                description="what you measured so far: "
                '[{"config": {...}, "latency_ms": 1.2, "feasible": true}, ...]'
            ),
        ] = None,
        k: Annotated[int, Field(ge=1, le=100, description="configurations to return")] = 5,
        stage: Annotated[
            Stage | None, Field(description="default: draft until something is feasible")
        ] = None,
        seed: Annotated[int | None, Field(ge=0, description="the search's seed")] = None,
    ) -> SuggestResponse:
        """Get the next configurations of a parameter space to try, untried by you so far.

        Call it with your space and what you measured; it answers up to k valid
        configurations, those the memory's lessons point to first (source "exemplar" or
        "preference"), then a model's ("model") and a search around your best ("search").
        Each carries the lessons it rests on. After timing one, call `report_outcome` with
        the answer's `retrieval_id` and `used` = that suggestion's lesson ids.
        """
        with service_errors():
            request = SuggestRequest(
                task={"op": op, "kernel": kernel, "signature": signature or {}, "dtype": dtype},
                context={"chip": chip, "backend": backend},
                space={"params": params, "valid": valid},
                observations=observations or [],
                k=k,
                stage=stage,
                seed=seed,
            )
            return service.suggest(request)

    return strict_tool(suggest, title="Suggest configurations to try")
