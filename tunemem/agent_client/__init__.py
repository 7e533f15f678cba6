"""The tuning agent (a LangGraph graph) and its HTTP client of the memory API.

This package reaches the memory service over HTTP only; it never imports `memory_service`.
"""

from tunemem.agent_client.client import AsyncMemoryClient, MemoryClient, RetryPolicy
from tunemem.agent_client.models import (
    MemoryAPIError,
    Outcome,
    OutcomeReceipt,
    Retrieval,
    RetrievedLesson,
    ServiceWarning,
    TransientAPIError,
)

__all__ = [
    "AsyncMemoryClient",
    "MemoryAPIError",
    "MemoryClient",
    "Outcome",
    "OutcomeReceipt",
    "RetrievedLesson",
    "Retrieval",
    "RetryPolicy",
    "ServiceWarning",
    "TransientAPIError",
]
