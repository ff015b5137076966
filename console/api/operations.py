"""Savepoints, restore, failed writes and jobs: the same services as the pages (roles, the
typed confirmations, the table lock, the audit log)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from pydantic import field_validator

from console import permissions, selectors, services
from console.api.common import paged, role, user_of
from console.api.filters import one_of
from console.api.schemas import (
    Accepted,
    FailedWriteOut,
    JobOut,
    Problem,
    RestoreIn,
    RestorePreviewOut,
    RollbackIn,
    SavepointIn,
    SavepointOut,
    page_of,
)
from console.api.tables import ERRORS, table_of
from console.models import Job, JobStatus

router = Router(tags=["operations"])


def job_out(job: Job) -> dict[str, Any]:
    values = {f: getattr(job, f) for f in JobOut.model_fields if f not in ("id", "requested_by")}
    return values | {"id": job.pk, "requested_by": job.requested_by.get_username() if job.requested_by else None}


def rollback_out(preview: Any) -> dict[str, Any]:
    return {"instant": preview.instant.requested_time, "action": preview.instant.action,
            "files_to_delete": [list(f) for f in preview.files_to_delete],
            "logs_to_mark": [list(f) for f in preview.logs_to_mark], "bytes_to_delete": preview.bytes_to_delete}


@router.get("/tables/{table_id}/savepoints", response={200: list[SavepointOut], 409: Problem, **ERRORS},
            summary="Savepoints")
def list_savepoints(request: HttpRequest, table_id: int) -> list[dict[str, Any]]:
    table = table_of(request, table_id)
    return [{"instant": s.instant.requested_time, "savepointed_by": s.savepointed_by,
             "savepointed_at_ms": s.savepointed_at_ms, "comments": s.comments, "files": s.files, "bytes": s.bytes,
             "missing_files": s.missing_files, "holds_back_archival": s.holds_back_archival}
            for s in selectors.savepoints(table)]


@router.post("/tables/{table_id}/savepoints",
             auth=role(permissions.CREATE_SAVEPOINT), response={201: Accepted, 409: Problem, **ERRORS},
             summary="Create a savepoint")
def create_savepoint(request: HttpRequest, table_id: int, body: SavepointIn) -> Status[dict[str, str]]:
    table = table_of(request, table_id, permissions.CREATE_SAVEPOINT)
    done = services.savepoint_create(table=table, user=user_of(request), instant_time=body.instant,
                                     comment=body.comment, writers_stopped=body.writers_stopped)
    return Status(201, {"detail": f"Savepoint {done} created."})


@router.delete("/tables/{table_id}/savepoints/{instant}",
               auth=role(permissions.DELETE_SAVEPOINT), response={200: Accepted, 409: Problem, **ERRORS},
               summary="Delete a savepoint")
def delete_savepoint(request: HttpRequest, table_id: int, instant: str,
                     writers_stopped: bool = False) -> dict[str, str]:
    table = table_of(request, table_id, permissions.DELETE_SAVEPOINT)
    services.savepoint_delete(table=table, user=user_of(request), instant_time=instant,
                              writers_stopped=writers_stopped)
    return {"detail": f"Savepoint {instant} deleted."}


@router.get("/tables/{table_id}/restore/{savepoint}", response={200: RestorePreviewOut, 409: Problem, **ERRORS},
            summary="Restore preview")
def restore_preview(request: HttpRequest, table_id: int, savepoint: str) -> dict[str, Any]:
    """The instants a restore to `savepoint` rolls back and the files each deletes; what
    happens to the metadata table."""
    table = table_of(request, table_id)
    preview = selectors.restore_preview(table, savepoint)
    return {"savepoint": preview.savepoint, "bytes_to_delete": preview.bytes_to_delete,
            "metadata_table": preview.metadata_table, "rollbacks": [rollback_out(r) for r in preview.rollbacks]}


@router.post("/tables/{table_id}/restore",
             auth=role(permissions.RESTORE), response={202: JobOut, 409: Problem, **ERRORS}, summary="Restore")
def restore(request: HttpRequest, table_id: int, body: RestoreIn) -> Status[dict[str, Any]]:
    """Admins; `confirm` is the table's name. A job runs it: follow it at /jobs/{id}."""
    table = table_of(request, table_id, permissions.RESTORE)
    job = services.job_request(table=table, user=user_of(request), kind=Job.Kind.RESTORE,
                               target=body.savepoint, confirm_name=body.confirm, writers_stopped=body.writers_stopped)
    return Status(202, job_out(job))


@router.get("/tables/{table_id}/failed-writes", response={200: list[FailedWriteOut], 409: Problem, **ERRORS},
            summary="Failed writes")
def failed_writes(request: HttpRequest, table_id: int) -> list[dict[str, Any]]:
    """Failed writes under the table's failed-writes policy, newest first, each with its
    rollback preview or why it cannot be rolled back now."""
    table = table_of(request, table_id)
    return [{"instant": f.instant.requested_time, "action": f.instant.action, "age_seconds": f.age_seconds,
             "refusal": f.refusal, "preview": rollback_out(f.preview) if f.preview is not None else None}
            for f in selectors.failed_write_previews(table)]


@router.post("/tables/{table_id}/rollback",
             auth=role(permissions.RESTORE), response={202: JobOut, 409: Problem, **ERRORS},
             summary="Roll back a failed write")
def rollback(request: HttpRequest, table_id: int, body: RollbackIn) -> Status[dict[str, Any]]:
    """Admins; `confirm` is the failed write's instant time. A job runs it."""
    table = table_of(request, table_id, permissions.RESTORE)
    job = services.job_request(table=table, user=user_of(request), kind=Job.Kind.ROLLBACK,
                               target=body.instant, confirm_name=body.confirm, writers_stopped=body.writers_stopped)
    return Status(202, job_out(job))


class JobFilters(Schema):
    status: str = ""
    page: int = 1
    page_size: int = 50

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        return one_of("status", value, JobStatus.values)


@router.get("/tables/{table_id}/jobs", response={200: page_of(JobOut), **ERRORS}, summary="Jobs")
def list_jobs(request: HttpRequest, table_id: int, filters: Query[JobFilters]) -> dict[str, Any]:
    rows = table_of(request, table_id).jobs.select_related("requested_by")
    if filters.status:
        rows = rows.filter(status=filters.status)
    return paged(rows, filters.page, filters.page_size, job_out)


@router.get("/tables/{table_id}/jobs/{job_id}", response={200: JobOut, **ERRORS}, summary="A job")
def get_job(request: HttpRequest, table_id: int, job_id: int) -> dict[str, Any]:
    """State (queued, running, completed, failed), result and error."""
    return job_out(get_object_or_404(table_of(request, table_id).jobs, pk=job_id))


__all__ = ["router"]
