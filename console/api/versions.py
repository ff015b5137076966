"""Table versions: the table's version with every other version's readers and preflight, the
preflight of one target, rehearsals (a worker runs the change on a copy of the table) and version
changes (request, list, detail; approve and reject through `/approvals/version-change/{id}/...`,
the one workflow). The same services as the pages: roles, the passing rehearsal a request needs,
one open version change per table, the two-person rule, the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from pydantic import Field

from console import permissions
from console.api.common import paged, user_of
from console.api.common import role as role_of
from console.api.schemas import Problem, page_of
from console.api.tables import ERRORS, table_of
from console.models_versions import VersionChange, VersionRehearsal
from console.selectors import versions as selectors
from console.services import versions

router = Router(tags=["versions"])


class TargetOut(Schema):
    version: int
    newer: bool
    readers: str = Field(..., description="the engines and releases known to read this table version")
    check: dict[str, Any] | None = Field(..., description="the preflight of moving there: steps with their "
                                         "blockers (blocking) and notes")
    error: str


class VersionsOut(Schema):
    current: int | None
    readers: str
    targets: list[TargetOut]
    error: str


class TargetIn(Schema):
    to: int = Field(..., description="the target table version (6, 8 or 9)")


class RehearsalOut(Schema):
    id: int
    table_id: int
    from_version: int
    target: int
    status: str = Field(..., description="queued, running, passed, failed")
    requested_by: str | None
    requested_at: datetime
    finished_at: datetime | None
    report: dict[str, Any]
    error: str


class VersionChangeOut(Schema):
    id: int
    table_id: int
    from_version: int
    target: int
    status: str = Field(..., description="draft (waiting for approval), approved, running, completed, failed, "
                        "stale, rejected")
    plan: dict[str, Any]
    rehearsal: RehearsalOut | None
    requested_by: str | None
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str
    writers_stopped: bool
    result: dict[str, Any]
    error: str
    started_at: datetime | None
    finished_at: datetime | None


def _name(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def rehearsal_out(row: VersionRehearsal) -> dict[str, Any]:
    return {"id": row.pk, "table_id": row.table_id, "from_version": row.from_version, "target": row.target,
            "status": row.status, "requested_by": _name(row.requested_by), "requested_at": row.requested_at,
            "finished_at": row.finished_at, "report": row.report, "error": row.error}


def change_out(row: VersionChange) -> dict[str, Any]:
    fields = ("from_version", "target", "status", "plan", "requested_at", "decided_at", "decision_note",
              "writers_stopped", "result", "error", "started_at", "finished_at")
    return {f: getattr(row, f) for f in fields} | {
        "id": row.pk, "table_id": row.table_id, "requested_by": _name(row.requested_by),
        "decided_by": _name(row.decided_by), "rehearsal": rehearsal_out(row.rehearsal) if row.rehearsal else None}


@router.get("/tables/{table_id}/version", response={200: VersionsOut, **ERRORS},
            summary="The table's version, and the preflight of moving to each other")
def table_versions(request: HttpRequest, table_id: int) -> dict[str, Any]:
    """Read from the table now: its table version and who reads it, and for each other version
    Cleanline moves tables to (6, 8, 9) whether it is newer, who reads it and the preflight of
    moving there (every blocker Hudi's upgrade and downgrade handlers would meet, with its instant
    or setting, what clears it and the Hudi rule). `error` when the table cannot be read."""
    found = selectors.version_overview(table_of(request, table_id))
    return {"current": found.current, "readers": found.readers, "error": found.error,
            "targets": [{"version": t.version, "newer": t.newer, "readers": t.readers, "check": t.check,
                         "error": t.error} for t in found.targets]}


@router.get("/tables/{table_id}/version/check", response={200: dict[str, Any], 409: Problem, **ERRORS},
            summary="The preflight of moving the table to one version")
def version_check(request: HttpRequest, table_id: int, to: int) -> dict[str, Any]:
    """`ready` when no blocker stands; the steps with their blockers and notes. 409 for a version
    Cleanline does not move tables to, or a table it cannot read."""
    table = table_of(request, table_id)
    return selectors.version_check(table, to)


@router.post("/tables/{table_id}/version/rehearsals", auth=role_of(permissions.REQUEST_VERSION_CHANGE),
             response={202: RehearsalOut, 409: Problem, **ERRORS}, summary="Rehearse a version change")
def rehearse(request: HttpRequest, table_id: int, body: TargetIn) -> Status[dict[str, Any]]:
    """Operators and admins: a worker runs the change on a copy of the table (its `.hoodie`
    copied, its data files linked) and compares it (timeline, file-system view, metadata table,
    hudi-rs's rows); the table is not written. Follow it at GET .../version/rehearsals/{id}. 409
    for the table's own version or one Cleanline does not move tables to."""
    table = table_of(request, table_id, permissions.REQUEST_VERSION_CHANGE)
    return Status(202, rehearsal_out(versions.version_rehearsal_request(table=table, user=user_of(request),
                                                                        target=body.to)))


@router.get("/tables/{table_id}/version/rehearsals/{rehearsal_id}", response={200: RehearsalOut, **ERRORS},
            summary="A rehearsal and its report")
def get_rehearsal(request: HttpRequest, table_id: int, rehearsal_id: int) -> dict[str, Any]:
    return rehearsal_out(get_object_or_404(selectors.rehearsals_of(table_of(request, table_id)), pk=rehearsal_id))


class Paging(Schema):
    status: str = ""
    page: int = 1
    page_size: int = 50


@router.get("/tables/{table_id}/version-changes", response={200: page_of(VersionChangeOut), **ERRORS},
            summary="Version changes")
def list_changes(request: HttpRequest, table_id: int, filters: Query[Paging]) -> dict[str, Any]:
    """Newest first; `status` filters (the one vocabulary of every change that waits for approval)."""
    rows = selectors.version_changes_of(table_of(request, table_id))
    if filters.status:
        rows = rows.filter(status=filters.status)
    return paged(rows, filters.page, filters.page_size, change_out)


@router.post("/tables/{table_id}/version-changes", auth=role_of(permissions.REQUEST_VERSION_CHANGE),
             response={202: VersionChangeOut, 409: Problem, **ERRORS}, summary="Ask for a version change")
def request_change(request: HttpRequest, table_id: int, body: TargetIn) -> Status[dict[str, Any]]:
    """Operators and admins: the library's plan is kept with the newest passing rehearsal of this
    very move, and the change waits for another admin's approval (`draft`; approve with POST
    /approvals/version-change/{id}/approve). Once approved a worker rehearses it again under the
    table's lock and changes the table only if that passes. 409 while the preflight names a
    blocker or no rehearsal of the move passed. One open version change per table: while one
    waits, is approved or runs, this answers that one."""
    table = table_of(request, table_id, permissions.REQUEST_VERSION_CHANGE)
    return Status(202, change_out(versions.version_change_request(table=table, user=user_of(request),
                                                                  target=body.to)))


@router.get("/tables/{table_id}/version-changes/{change_id}", response={200: VersionChangeOut, **ERRORS},
            summary="A version change")
def get_change(request: HttpRequest, table_id: int, change_id: int) -> dict[str, Any]:
    """Its status, the plan and the rehearsal it rests on, and once run its `result` (the
    rehearsal under the lock, the steps) or `error`."""
    return change_out(get_object_or_404(selectors.version_changes_of(table_of(request, table_id)), pk=change_id))


__all__ = ["router"]
