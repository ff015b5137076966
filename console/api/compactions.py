"""Compactions: schedule one (the library's plan, kept file group by file group and waiting for
approval), list them, read one (approve and reject through `/approvals/compaction/{id}/...`, the
one workflow). The same services as the Table services page: roles, one open compaction per
table, the re-planning under the table's lock, the audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from pydantic import Field

from console import permissions
from console.api.common import paged, role, user_of
from console.api.schemas import Problem, page_of
from console.api.tables import ERRORS, table_of
from console.models_compaction import Compaction
from console.services import compactions

router = Router(tags=["compactions"])


class CompactionOut(Schema):
    id: int
    table_id: int
    status: str = Field(..., description="draft (waiting for approval), approved, running, completed, failed, "
                        "stale, rejected")
    plan: dict[str, Any] = Field(..., description="the plan as requested: operations (partition, file_id, "
                                 "base_instant_time, base_file, base_file_bytes, log_files, log_bytes), bytes, "
                                 "merge_mode, ordering_field, left_out")
    engine: str
    requested_by: str | None
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str
    writers_stopped: bool
    result: dict[str, Any] = Field(..., description="the run: instant, completion_time, files (new base files), "
                                   "records, bytes")
    error: str
    started_at: datetime | None
    finished_at: datetime | None


def _name(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def compaction_out(row: Compaction) -> dict[str, Any]:
    fields = ("status", "plan", "engine", "requested_at", "decided_at", "decision_note", "writers_stopped", "result",
              "error", "started_at", "finished_at")
    return {f: getattr(row, f) for f in fields} | {"id": row.pk, "table_id": row.table_id,
                                                   "requested_by": _name(row.requested_by),
                                                   "decided_by": _name(row.decided_by)}


class Paging(Schema):
    status: str = ""
    page: int = 1
    page_size: int = 50


@router.get("/tables/{table_id}/compactions", response={200: page_of(CompactionOut), **ERRORS},
            summary="Compactions")
def list_compactions(request: HttpRequest, table_id: int, filters: Query[Paging]) -> dict[str, Any]:
    """Newest first; `status` filters (the one vocabulary of every change that waits for approval)."""
    rows = table_of(request, table_id).compactions.select_related("requested_by", "decided_by")
    if filters.status:
        rows = rows.filter(status=filters.status)
    return paged(rows, filters.page, filters.page_size, compaction_out)


@router.post("/tables/{table_id}/compactions", auth=role(permissions.REQUEST_COMPACTION),
             response={202: CompactionOut, 409: Problem, **ERRORS}, summary="Schedule a compaction")
def request_compaction(request: HttpRequest, table_id: int) -> Status[dict[str, Any]]:
    """Operators and admins: the library plans a compaction as Hudi's scheduler does with its
    default strategy (nothing written) and the plan waits for another admin's approval (`draft`;
    approve with POST /approvals/compaction/{id}/approve). Once approved a worker plans again
    under the table's lock, writes the plan only if it compacts the approved file slices (else
    `stale`) and runs it with the library's local engine. 409 when there is nothing to compact or
    the library refuses the table's merge. One open compaction per table: while one waits, is
    approved or runs, this answers that one."""
    table = table_of(request, table_id, permissions.REQUEST_COMPACTION)
    return Status(202, compaction_out(compactions.compaction_request(table=table, user=user_of(request))))


@router.get("/tables/{table_id}/compactions/{compaction_id}", response={200: CompactionOut, **ERRORS},
            summary="A compaction")
def get_compaction(request: HttpRequest, table_id: int, compaction_id: int) -> dict[str, Any]:
    return compaction_out(get_object_or_404(table_of(request, table_id).compactions, pk=compaction_id))


__all__ = ["router"]
