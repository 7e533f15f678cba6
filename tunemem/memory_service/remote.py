"""RemoteService: the MemoryAPI of a running tunemem server, over its v1 HTTP API.

The CLI (given `--url`) and the MCP server (given `--url`) use it, so a command or a tool
behaves the same against the embedded store and against a server. The API key, when given,
goes with every request; a server's JSON error becomes the same `ServiceError` (code, message,
status) the embedded service would raise. The requests the agent's clients send too (retrieve,
suggest, report, lessons, uploads) are built by `tunemem.wire`, once for all of them; the
answers are read into the service's own schemas.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, Self

import httpx

from tunemem import wire
from tunemem.ingest.records import RejectedRecord, TrajectoryRecord
from tunemem.memory_service.core.errors import ServiceError
from tunemem.memory_service.core.schemas.admin import IndexRebuilt, ValuesRebuilt
from tunemem.memory_service.core.schemas.audit import TransferAuditPublic, TransferQuery
from tunemem.memory_service.core.schemas.ingest import IngestSummary, TrajectoriesIn
from tunemem.memory_service.core.schemas.learning import (
    LessonHistory,
    RetrieveRequest,
    RetrieveResponse,
)
from tunemem.memory_service.core.schemas.lessons import (
    LessonDetail,
    LessonFilter,
    LessonList,
    LessonPublic,
    LessonsCreated,
    LessonUpdate,
)
from tunemem.memory_service.core.schemas.outcomes import ReportRequest, ReportResponse
from tunemem.memory_service.core.schemas.suggest import SuggestRequest, SuggestResponse

# The JSON of one upload at most: below the server's default body limit (8 MiB). One
# trajectory larger than this is sent alone and gzip-compressed (`http/inflate.py`).
UPLOAD_BYTES = 6 * 1024 * 1024


def _how_to_send(refused: ServiceError, size: int) -> str:
    """What a user can do about a trajectory the server refused alone, compressed or not."""
    if refused.status == 422:
        return ""
    what = f" ({size:,} bytes of JSON, sent gzip-compressed"
    if refused.status in (400, 415):
        what += "; this server takes no compressed upload (an older tunemem)"
    return (
        f"{what}: ingest it without --url on the server's host, or raise the server's "
        "TUNEMEM_MAX_BODY_BYTES (bytes sent) and TUNEMEM_MAX_INFLATED_BODY_BYTES (inflated))"
    )


class RemoteService:
    """The memory of a server at `url`, reached over HTTP with an optional bearer key."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0):
        self._client = httpx.Client(
            base_url=url.rstrip("/"), headers=wire.bearer(api_key), timeout=timeout
        )

    def _request(self, request: wire.Request) -> Any:
        """Send one request of the wire; its answer's JSON."""
        return self._call(request.method, request.path, **request.options())

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code == 404 and self._not_a_route(response):
            where = str(self._client.base_url).rstrip("/") + path
            raise ServiceError(
                f"{where} is no route of a tunemem server: --url takes "
                "the server's root address (e.g. http://127.0.0.1:8000, without /v1 or a path)",
                code="not_found",
                status=404,
            )
        if response.status_code >= 400:
            self._raise(response)
        return response.json()

    @staticmethod
    def _not_a_route(response: httpx.Response) -> bool:
        """A 404 for the path itself (the server has no such route, or is no tunemem server),
        not a tunemem answer about a lesson or a retrieval that does not exist."""
        try:
            code = response.json().get("code")
        except (ValueError, AttributeError):
            return True
        return code in (None, "not_found", "http_error")

    def _unreachable(self, exc: Exception) -> ServiceError:
        return ServiceError(
            f"cannot reach {self._client.base_url}: {exc}", code="unreachable", status=503
        )

    @staticmethod
    def _raise(response: httpx.Response) -> NoReturn:
        try:
            body = response.json()
        except ValueError:
            body = {"code": "http_error", "message": response.text}
        raise ServiceError(
            body.get("message", ""), code=body.get("code"), status=response.status_code
        )

    def retrieve(self, request: RetrieveRequest) -> RetrieveResponse:
        return RetrieveResponse(**self._request(wire.retrieve(**request.model_dump(mode="json"))))

    def report(
        self, request: ReportRequest, *, idempotency_key: str | None = None
    ) -> ReportResponse:
        body = request.model_dump(mode="json")
        return ReportResponse(**self._request(wire.report(**body, idempotency_key=idempotency_key)))

    def suggest(self, request: SuggestRequest) -> SuggestResponse:
        return SuggestResponse(**self._request(wire.suggest(**request.model_dump(mode="json"))))

    def list_lessons(self, where: LessonFilter | None = None) -> LessonList:
        filters = (where or LessonFilter()).model_dump(exclude_none=True)
        return LessonList(**self._request(wire.list_lessons(**filters)))

    def get_lesson(self, lesson_id: str) -> LessonDetail:
        return LessonDetail(**self._call("GET", f"/v1/lessons/{lesson_id}"))

    def lesson_history(self, lesson_id: str) -> LessonHistory:
        return LessonHistory(**self._call("GET", f"/v1/lessons/{lesson_id}/history"))

    def update_lesson(self, lesson_id: str, update: LessonUpdate) -> LessonPublic:
        body = update.model_dump(mode="json", exclude_unset=True)
        return LessonPublic(**self._call("PATCH", f"/v1/lessons/{lesson_id}", json=body))

    def archive_lesson(self, lesson_id: str) -> LessonPublic:
        return LessonPublic(**self._call("DELETE", f"/v1/lessons/{lesson_id}"))

    def add_lessons(self, lessons: list[Any]) -> LessonsCreated:
        request = wire.add_lessons(lesson.model_dump(mode="json") for lesson in lessons)
        return LessonsCreated(**self._request(request))

    def ingest(
        self,
        records: Iterable[TrajectoryRecord | RejectedRecord],
        *,
        progress: Callable[[TrajectoryRecord | RejectedRecord], None] | None = None,
        batch_size: int = 50,
    ) -> IngestSummary:
        """Upload trajectories in batches of at most `batch_size` and `UPLOAD_BYTES`; records
        a reader rejected are counted here, and so is a trajectory the server refuses alone
        (too large for its body limit, or invalid): the rest go on (`_send`)."""
        summary = IngestSummary()
        batch: list[dict[str, Any]] = []
        size = 0
        for record in records:
            if progress:
                progress(record)
            if isinstance(record, RejectedRecord):
                summary.rejected += 1
                summary.rejects.append(
                    {"path": record.path, "position": record.position, "reason": record.reason}
                )
                continue
            item = record.to_dict()
            length = len(json.dumps(item, separators=(",", ":")))
            if batch and (len(batch) >= batch_size or size + length > UPLOAD_BYTES):
                self._send(batch, summary)
                batch, size = [], 0
            batch.append(item)
            size += length
        if batch:
            self._send(batch, summary)
        return summary

    def _send(
        self, batch: list[dict[str, Any]], summary: IngestSummary, compressed: bool = False
    ) -> None:
        """Upload a batch; one the server refuses as too large (413) or invalid (422) is sent
        again in halves. A trajectory too large alone (over `UPLOAD_BYTES`, or refused with
        413) is sent gzip-compressed, so it is stored whole, as the embedded ingest stores it;
        one refused even so becomes a reject saying how to get it in. Any other failure
        (unreachable, no key) stops the ingest: the rest would fail alike."""
        size = len(json.dumps(batch[0], separators=(",", ":"))) if len(batch) == 1 else 0
        if size > UPLOAD_BYTES:
            compressed = True
        try:
            summary.merge(self._upload(batch, compressed))
        except ServiceError as exc:
            if exc.status not in ((400, 413, 415, 422) if compressed else (413, 422)):
                raise
            if len(batch) > 1:
                half = len(batch) // 2
                self._send(batch[:half], summary)
                self._send(batch[half:], summary)
                return
            if exc.status == 413 and not compressed:
                self._send(batch, summary, compressed=True)
                return
            summary.read += 1
            summary.rejected += 1
            summary.rejects.append(
                {
                    "path": str(batch[0].get("source")),
                    "position": "file",
                    "reason": f"the server refused the upload: {exc}{_how_to_send(exc, size)}",
                }
            )

    def _upload(self, batch: list[dict[str, Any]], compressed: bool = False) -> IngestSummary:
        # Unchecked here: the server checks the batch and refuses it in the API's words.
        body = TrajectoriesIn.model_construct(trajectories=batch)
        if not compressed:
            return self.upload_trajectories(body)
        data = json.dumps(
            body.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        answer = self._call(
            "POST", "/v1/trajectories", content=gzip.compress(data, 6), headers=headers
        )
        return IngestSummary(**answer)

    def upload_trajectories(self, body: TrajectoriesIn) -> IngestSummary:
        return IngestSummary(
            **self._request(wire.upload_trajectories(**body.model_dump(mode="json")))
        )

    def audit_transfer(self, query: TransferQuery | None = None) -> TransferAuditPublic:
        params = (query or TransferQuery()).as_params()
        return TransferAuditPublic.model_validate(
            self._call("GET", "/v1/audit/transfer", params=params)
        )

    def rebuild_values(self, tenant: str | None = None) -> int:
        params = {"tenant": tenant} if tenant else {}
        body = self._call("POST", "/v1/admin/values/rebuild", params=params)
        return ValuesRebuilt.model_validate(body).outcomes_replayed

    def reindex(self, *, tenant: str | None = None) -> int:
        params = {"tenant": tenant} if tenant else {}
        body = self._call("POST", "/v1/admin/reindex", params=params)
        return IndexRebuilt.model_validate(body).lessons_indexed

    def export(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Download the tenant's bundle (GET /v1/admin/export) to `path`, gzipped if its name
        ends in .gz; returns the server's counts."""
        params = {"tenant": tenant} if tenant else {}
        try:
            with self._client.stream("GET", "/v1/admin/export", params=params) as response:
                if response.status_code >= 400:
                    response.read()
                    self._raise(response)
                scratch = path.with_name(path.name + ".part")
                with scratch.open("wb") as fh:
                    for chunk in response.iter_bytes():
                        fh.write(chunk)
                counts: dict[str, int] = json.loads(response.headers["X-Tunemem-Counts"])
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from exc
        if path.suffix == ".gz":
            scratch.replace(path)
        else:  # the server sends gzip; a .jsonl name asks for plain text
            with gzip.open(scratch, "rb") as packed, path.open("wb") as plain:
                shutil.copyfileobj(packed, plain)
            scratch.unlink()
        return counts

    def import_bundle(self, path: Path, *, tenant: str | None = None) -> dict[str, int]:
        """Upload a bundle (POST /v1/admin/import); returns the counts added."""
        params = {"tenant": tenant} if tenant else {}
        counts: dict[str, int] = self._call(
            "POST", "/v1/admin/import", params=params, content=path.read_bytes()
        )
        return counts

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()
