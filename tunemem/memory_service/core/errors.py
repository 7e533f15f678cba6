"""Service errors: a stable machine-readable code, a human message and an HTTP status."""

from __future__ import annotations


class ServiceError(Exception):
    """Raised by the service for bad requests; adapters turn it into 4xx / CLI exit codes."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        if status:
            self.status = status


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class InvalidInput(ServiceError):
    status = 422
    code = "invalid_input"


class ReindexRequired(Conflict):
    """The tenant's vectors were made by another embedder than the service's."""

    code = "reindex_required"
