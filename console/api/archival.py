"""Archival: the table's plan and blockers now, its archivals (request, approve, decline,
status). The same services as the pages: roles, the two-person rule, one open archival per
table, the re-validation under the table's lock, the audit log."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status

from console import permissions, selectors, services
from console.api.common import paged, problem, role, user_of
from console.api.schemas import ApproveIn, ArchivalOut, ArchivalPlanOut, DecisionIn, Problem, page_of
from console.api.tables import ERRORS, table_of
from console.models import Archival

router = Router(tags=["archival"])


def archival_out(row: Archival) -> dict[str, Any]:
    values = {f: getattr(row, f) for f in ArchivalOut.model_fields if f not in ("id", "requested_by", "decided_by")}
    return values | {"id": row.pk, "requested_by": row.requested_by.get_username() if row.requested_by else None,
                     "decided_by": row.decided_by.get_username() if row.decided_by else None}


def archival_of(request: HttpRequest, table_id: int, archival_id: int,
                permission: str = permissions.VIEW) -> Archival:
    return get_object_or_404(selectors.archivals_of(table_of(request, table_id, permission)), pk=archival_id)


@router.get("/tables/{table_id}/archival", response={200: ArchivalPlanOut, 409: Problem, **ERRORS},
            summary="What archival would move now, and what blocks it")
def archival_plan(request: HttpRequest, table_id: int) -> Any:
    """Read from the table now, with its writer options, as Hudi's archiver of its version
    decides: the active timeline before and after, the instants archival moves, every blocker
    with its instant and since when. 409 when the library cannot plan (settings Hudi refuses)."""
    preview = selectors.archival_preview(table_of(request, table_id))
    if preview.error:
        return problem(409, "Archival cannot be planned", preview.error)
    return preview.summary | {"instants": preview.instants}


class Paging(Schema):
    status: str = ""
    page: int = 1
    page_size: int = 50


@router.get("/tables/{table_id}/archivals", response={200: page_of(ArchivalOut), **ERRORS}, summary="Archivals")
def list_archivals(request: HttpRequest, table_id: int, filters: Query[Paging]) -> dict[str, Any]:
    """Newest first; `status` filters (draft: waiting for approval, rejected, approved, running,
    completed, stale, failed: the one vocabulary of every change that waits for approval)."""
    rows = selectors.archivals_of(table_of(request, table_id))
    if filters.status:
        rows = rows.filter(status=filters.status)
    return paged(rows, filters.page, filters.page_size, archival_out)


@router.post("/tables/{table_id}/archivals",
             auth=role(permissions.REQUEST_ARCHIVAL), response={202: ArchivalOut, 409: Problem, **ERRORS},
             summary="Ask for an archival")
def request_archival(request: HttpRequest, table_id: int) -> Status[dict[str, Any]]:
    """Operators and admins: the plan now is kept on the archival, which waits for an admin's
    approval (`draft`). One open archival per table: while one is waiting, approved or
    running, this answers that one. 409 when archival moves nothing now (the reason names what
    blocks it)."""
    table = table_of(request, table_id, permissions.REQUEST_ARCHIVAL)
    return Status(202, archival_out(services.archival_request(table=table, user=user_of(request))))


@router.get("/tables/{table_id}/archivals/{archival_id}", response={200: ArchivalOut, **ERRORS},
            summary="An archival")
def get_archival(request: HttpRequest, table_id: int, archival_id: int) -> dict[str, Any]:
    """Its status, the plan as requested, and once run its `result` (instants archived, the
    active timeline after, the lock decisions) or `stale_reason` / `error`."""
    return archival_out(archival_of(request, table_id, archival_id))


@router.post("/tables/{table_id}/archivals/{archival_id}/approve",
             auth=role(permissions.APPROVE_ARCHIVAL), response={202: ArchivalOut, 409: Problem, **ERRORS},
             summary="Approve an archival")
def approve_archival(request: HttpRequest, table_id: int, archival_id: int, body: ApproveIn | None = None) -> Any:
    """Admins; not its requester (CLEANLINE_APPROVER_MUST_DIFFER). A worker then archives under
    the table's lock if the timeline still gives the approved instants (`completed`), else
    `stale` with the reason and nothing written. Follow it at GET .../archivals/{id}."""
    found = archival_of(request, table_id, archival_id, permissions.APPROVE_ARCHIVAL)
    done = services.archival_approve(archival=found, user=user_of(request),
                                     writers_stopped=bool(body and body.writers_stopped),
                                     note=body.note if body else "")
    return Status(202, archival_out(done))


@router.post("/tables/{table_id}/archivals/{archival_id}/decline",
             auth=role(permissions.APPROVE_ARCHIVAL), response={200: ArchivalOut, 409: Problem, **ERRORS},
             summary="Decline an archival")
def decline_archival(request: HttpRequest, table_id: int, archival_id: int, body: DecisionIn) -> dict[str, Any]:
    found = archival_of(request, table_id, archival_id, permissions.APPROVE_ARCHIVAL)
    return archival_out(services.archival_decline(archival=found, user=user_of(request), note=body.note))


__all__ = ["router"]
