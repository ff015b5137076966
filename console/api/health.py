"""The table doctor (issue 28): a table's health (the findings `cleanline doctor --json` prints, as
the last sync's check stored them), a repair's preview, and repairs requested, approved and run
through the same services as the pages (roles, the two-person rule, the table lock, the audit
log)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Router, Schema, Status

from console import permissions
from console.api.common import role, user_of
from console.api.schemas import ApproveIn, DecisionIn, Problem
from console.api.tables import ERRORS, table_of
from console.models_health import Repair
from console.selectors import health as selectors
from console.services import health as services

router = Router(tags=["health"])


class HealthOut(Schema):
    table_id: int
    checked_at: datetime | None
    healthy: bool | None
    worst: str | None
    error: str | None
    findings: list[dict[str, Any]]


class RepairPlanOut(Schema):
    table: str
    kind: str
    findings: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    bytes: int
    notes: list[str]


class RepairOut(Schema):
    id: int
    table_id: int
    kind: str
    status: str
    plan: dict[str, Any]
    changes: int
    bytes: int
    requested_by: str | None
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    result: dict[str, Any]
    error: str
    finished_at: datetime | None


@router.get("/tables/{table_id}/health", response={200: HealthOut, **ERRORS}, summary="A table's health")
def health(request: HttpRequest, table_id: int) -> dict[str, Any]:
    """The table doctor's findings, worst first, exactly as `cleanline doctor PATH --json` prints
    them (`kind`, `severity`, `summary`, `evidence`, `why`, `repair`, `repairable`), from the check
    made at the last sync; `healthy` is null before the first check, `error` says why the doctor
    could not look at the table."""
    return selectors.health_json(table_of(request, table_id))


class RepairPreviewOut(Schema):
    kind: str
    plan: RepairPlanOut | None
    why: str | None


@router.get("/tables/{table_id}/health/{kind}/repair", response={200: RepairPreviewOut, **ERRORS},
            summary="A repair's preview")
def repair_preview(request: HttpRequest, table_id: int, kind: str) -> dict[str, Any]:
    """The repair of every finding of `kind` as the doctor plans it now: `plan` lists exactly the
    changes it would make (`action`, `target`, `bytes`, `detail`), as `cleanline doctor --repair
    KIND --preview --json` shows them; without one (`plan` null), `why` says who must act."""
    plan, why = selectors.repair_preview(table_of(request, table_id), kind)
    return {"kind": kind, "plan": plan.to_json() if plan else None, "why": why or None}


def repair_of(request: HttpRequest, table_id: int, repair_id: int, permission: str = permissions.VIEW) -> Repair:
    table = table_of(request, table_id, permission)
    return get_object_or_404(Repair.objects.select_related("requested_by", "decided_by", "table"), table=table,
                             pk=repair_id)


@router.post("/tables/{table_id}/health/{kind}/repair", auth=role(permissions.REQUEST_REPAIR),
             response={201: RepairOut, 409: Problem, **ERRORS}, summary="Request a repair")
def request_repair(request: HttpRequest, table_id: int, kind: str) -> Status[dict[str, Any]]:
    """Operators and admins: the repair of every finding of `kind`, planned now and kept with the
    request (`plan`: exactly what will change); another admin approves it. 409 when the kind
    finds nothing, offers no repair Cleanline runs (the detail says who must act) or a repair
    of it is already open."""
    table = table_of(request, table_id, permissions.REQUEST_REPAIR)
    return Status(201, selectors.repair_json(services.repair_request(table=table, user=user_of(request), kind=kind)))


class IndexOut(Schema):
    name: str
    state: str
    file_groups: int
    records: int
    bytes: int
    defined: bool
    serves: str
    findings: list[dict[str, Any]]


class IndexesOut(Schema):
    table_id: int
    checked_at: datetime | None
    error: str | None
    indexes: list[IndexOut]


@router.get("/tables/{table_id}/indexes", response={200: IndexesOut, **ERRORS}, summary="A table's indexes")
def indexes(request: HttpRequest, table_id: int) -> dict[str, Any]:
    """The metadata table's index partitions (column stats, partition stats, record index,
    secondary indexes, ...) with their state (complete or inflight), file groups, records and
    bytes, what queries each serves, and the index-drift findings about each from the last health
    check (`checked_at`: the last verification), as `cleanline index verify --json` shows them."""
    return selectors.indexes_json(table_of(request, table_id))


@router.post("/tables/{table_id}/indexes/{index}/{action}", auth=role(permissions.REQUEST_REPAIR),
             response={201: RepairOut, 409: Problem, **ERRORS}, summary="Request an index rebuild or drop")
def request_index_repair(request: HttpRequest, table_id: int, index: str, action: str) -> Status[dict[str, Any]]:
    """Operators and admins: `action` "rebuild" (the index rebuilt from the data, the plan's notes
    carrying the estimate: file groups, records, bytes, time, memory) or "drop" (the plan's notes
    naming the queries that lose it), planned now and kept with the request as a repair of kind
    index-drift; another admin approves it and a worker runs it under the table's lock. 409 when
    nothing needs rebuilding, the index is unknown, or an index-drift repair is already open."""
    table = table_of(request, table_id, permissions.REQUEST_REPAIR)
    repair = services.repair_request(table=table, user=user_of(request), kind=selectors.INDEX_KIND, index=index,
                                     action=action)
    return Status(201, selectors.repair_json(repair))


@router.get("/tables/{table_id}/repairs", response={200: list[RepairOut], **ERRORS}, summary="Repairs")
def list_repairs(request: HttpRequest, table_id: int) -> list[dict[str, Any]]:
    """The table's repairs, newest first."""
    return [selectors.repair_json(r) for r in selectors.repairs_of(table_of(request, table_id))[:100]]


@router.get("/tables/{table_id}/repairs/{repair_id}", response={200: RepairOut, **ERRORS}, summary="A repair")
def get_repair(request: HttpRequest, table_id: int, repair_id: int) -> dict[str, Any]:
    """`status`: draft (waiting for approval), approved, running, completed, failed, stale (the
    table asked for more than the preview when checked again under the lock: `error` says what;
    nothing changed) or rejected; `result` lists the changes made, skipped and failed."""
    return selectors.repair_json(repair_of(request, table_id, repair_id))


@router.post("/tables/{table_id}/repairs/{repair_id}/approve", auth=role(permissions.APPROVE_REPAIR),
             response={202: RepairOut, 409: Problem, **ERRORS}, summary="Approve a repair")
def approve_repair(request: HttpRequest, table_id: int, repair_id: int, body: ApproveIn | None = None) -> Any:
    """Admins; not the repair's requester (CLEANLINE_APPROVER_MUST_DIFFER). A worker runs it under
    the table's lock; follow it at GET .../repairs/{id}."""
    repair = repair_of(request, table_id, repair_id, permissions.APPROVE_REPAIR)
    repair = services.repair_approve(repair=repair, user=user_of(request),
                                     writers_stopped=bool(body and body.writers_stopped),
                                     note=body.note if body else "")
    return Status(202, selectors.repair_json(repair))


@router.post("/tables/{table_id}/repairs/{repair_id}/reject", auth=role(permissions.APPROVE_REPAIR),
             response={200: RepairOut, 409: Problem, **ERRORS}, summary="Reject a repair")
def reject_repair(request: HttpRequest, table_id: int, repair_id: int, body: DecisionIn) -> dict[str, Any]:
    repair = repair_of(request, table_id, repair_id, permissions.APPROVE_REPAIR)
    return selectors.repair_json(services.repair_reject(repair=repair, user=user_of(request), note=body.note))
