"""Clean plans: create, list, read with paged files, approve, reject, CSV. The same services as
the pages: roles, the two-person rule, the stale-plan check, the table lock, the audit log."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from ninja import Query, Router, Schema, Status
from pydantic import field_validator

from console import permissions, selectors, services
from console.api.common import paged, require, role, user_of
from console.api.filters import one_of
from console.api.schemas import ApproveIn, DecisionIn, PlanFileOut, PlanIn, PlanOut, Problem, page_of
from console.api.tables import ERRORS, table_of
from console.models import CleanPlan
from console.models_approvals import ApprovalStatus

router = Router(tags=["clean plans"])


def plan_out(plan: CleanPlan) -> dict[str, Any]:
    values = {f: getattr(plan, f) for f in PlanOut.model_fields if f not in ("id", "requested_by", "decided_by")}
    return values | {"id": plan.pk, "requested_by": plan.requested_by.get_username() if plan.requested_by else None,
                     "decided_by": plan.decided_by.get_username() if plan.decided_by else None}


def plan_of(request: HttpRequest, table_id: int, plan_id: int, permission: str = permissions.VIEW) -> CleanPlan:
    table = table_of(request, table_id, permission)
    return get_object_or_404(table.clean_plans.select_related("requested_by", "decided_by"), pk=plan_id)


class Paging(Schema):
    status: str = ""
    page: int = 1
    page_size: int = 50

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        return one_of("status", value, ApprovalStatus.values)


@router.get("/tables/{table_id}/plans", response={200: page_of(PlanOut), **ERRORS}, summary="Clean plans")
def list_plans(request: HttpRequest, table_id: int, filters: Query[Paging]) -> dict[str, Any]:
    """Newest first; `status` filters (planning, draft, stale, rejected, approved, running, completed, failed)."""
    rows = selectors.plans_of(table_of(request, table_id))
    if filters.status:
        rows = rows.filter(status=filters.status)
    return paged(rows, filters.page, filters.page_size, plan_out)


class AllPlans(Paging):
    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:  # Paging's, with "awaiting" too
        return one_of("status", value, [*ApprovalStatus.values, "awaiting"])


@router.get("/plans", response={200: page_of(PlanOut), **ERRORS}, summary="Clean plans of every table")
def list_all_plans(request: HttpRequest, filters: Query[AllPlans]) -> dict[str, Any]:
    """Every table's plans, newest first; `status` filters. `status=awaiting` is the approvals
    queue of the token's user: the draft plans they may approve (not their own while two-person
    approval is on, nothing for a role that approves nothing), oldest first."""
    user = require(request)
    rows = (selectors.awaiting_plans(user) if filters.status == "awaiting"
            else selectors.all_plans(status=filters.status))
    return paged(rows, filters.page, filters.page_size, plan_out)


@router.post("/tables/{table_id}/plans",
             auth=role(permissions.PLAN), response={202: PlanOut, 409: Problem, **ERRORS},
             summary="Ask for a clean plan")
def create_plan(request: HttpRequest, table_id: int, body: PlanIn) -> Status[dict[str, Any]]:
    """A worker builds it: follow `status` (planning, then draft) and `progress_*`."""
    table = table_of(request, table_id, permissions.PLAN)
    overrides = {k: v for k, v in body.dict().items() if v not in (None, "")}
    plan = services.plan_request(table=table, user=user_of(request), overrides=overrides)
    return Status(202, plan_out(plan))


@router.get("/tables/{table_id}/plans/{plan_id}", response={200: PlanOut, **ERRORS}, summary="A clean plan")
def get_plan(request: HttpRequest, table_id: int, plan_id: int) -> dict[str, Any]:
    return plan_out(plan_of(request, table_id, plan_id))


@router.get("/plans/{plan_id}", response={200: PlanOut, **ERRORS}, summary="A clean plan by its id")
def get_any_plan(request: HttpRequest, plan_id: int) -> dict[str, Any]:
    """The plan numbered `plan_id` whatever its table (what `cleanline --api ... plan wait ID`
    follows); 404 when there is none or the token's user may not see its table."""
    found = get_object_or_404(CleanPlan.objects.only("table_id"), pk=plan_id)
    return plan_out(plan_of(request, found.table_id, plan_id))


class FileFilters(Schema):
    show: str = "delete"
    q: str = ""
    partition: str = ""
    page: int = 1
    page_size: int = 100

    @field_validator("show")
    @classmethod
    def _show(cls, value: str) -> str:
        return one_of("show", value, ("delete", "keep", "all"))


@router.get("/tables/{table_id}/plans/{plan_id}/files", response={200: page_of(PlanFileOut), **ERRORS},
            summary="A plan's files")
def plan_files(request: HttpRequest, table_id: int, plan_id: int, filters: Query[FileFilters]) -> dict[str, Any]:
    """`show`: delete (default), keep or all; `q`: file names containing it (case-insensitive); `partition`.
    Read from the plan store a page at a time."""
    plan = plan_of(request, table_id, plan_id)
    rows = selectors.plan_file_rows(plan, delete={"delete": True, "keep": False}.get(filters.show),
                                    search=filters.q.strip(), partition=filters.partition)

    def out(row: Any) -> dict[str, Any]:
        return {f: getattr(row, f) for f in PlanFileOut.model_fields}

    return paged(rows, filters.page, filters.page_size, out)


@router.post("/tables/{table_id}/plans/{plan_id}/approve",
             auth=role(permissions.APPROVE), response={202: PlanOut, 409: Problem, **ERRORS},
             summary="Approve a draft plan")
def approve_plan(request: HttpRequest, table_id: int, plan_id: int, body: ApproveIn | None = None) -> Any:
    """Admins; not the plan's requester (CLEANLINE_APPROVER_MUST_DIFFER). The plan is claimed for
    this approval (`approving`) and a worker checks it against the table as it is now, on the
    engine that made it: when the table changed it becomes `stale` (its `stale_reasons` list the
    differences) and nothing runs; otherwise its clean is written to the timeline and runs
    (`approved`, `running`, `completed`). Follow it at GET .../plans/{id}."""
    plan = plan_of(request, table_id, plan_id, permissions.APPROVE)
    plan = services.plan_approval_request(plan=plan, user=user_of(request),
                                          writers_stopped=bool(body and body.writers_stopped),
                                          note=body.note if body else "")
    return Status(202, plan_out(plan))


@router.post("/tables/{table_id}/plans/{plan_id}/reject",
             auth=role(permissions.APPROVE), response={200: PlanOut, 409: Problem, **ERRORS},
             summary="Reject a draft plan")
def reject_plan(request: HttpRequest, table_id: int, plan_id: int, body: DecisionIn) -> dict[str, Any]:
    plan = plan_of(request, table_id, plan_id, permissions.APPROVE)
    return plan_out(services.plan_reject(plan=plan, user=user_of(request), note=body.note))


@router.get("/tables/{table_id}/plans/{plan_id}/report.csv", response={200: None, **ERRORS},
            summary="A plan's files as CSV", openapi_extra={"responses": {200: {
                "description": "partition, file, bytes, decision, reason, outcome, path",
                "content": {"text/csv": {"schema": {"type": "string"}}}}}})
def plan_csv(request: HttpRequest, table_id: int, plan_id: int) -> StreamingHttpResponse:
    plan = plan_of(request, table_id, plan_id)
    response = StreamingHttpResponse(selectors.plan_csv_rows(plan), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="clean-plan-{plan.pk}.csv"'
    return response
