"""The approvals queue over the API: everything waiting for the token's user's decision, oldest
first (`console.selectors.approvals`, the same list as the Approvals page), and the decision of
any change that waits for approval, whatever its kind, through the one workflow
(`console.services.approvals`): the same rules, refusals and audit as the pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest
from django.urls import reverse
from ninja import Query, Router, Schema, Status
from pydantic import Field

from console import permissions, selectors
from console.api.common import paged, require, role, user_of
from console.api.schemas import ApproveIn, DecisionIn, Problem, page_of
from console.api.tables import ERRORS, table_of
from console.models_approvals import Approvable
from console.selectors import Awaiting
from console.services import approvals

router = Router(tags=["approvals"])


class AwaitingOut(Schema):
    kind: str  # clean plan, repair, archival, admin role
    id: int
    table_id: int | None
    since: datetime
    requested_by: str
    what: str
    bytes: int | None
    url: str


class Paging(Schema):
    page: int = 1
    page_size: int = 50


def awaiting_out(item: Awaiting) -> dict[str, Any]:
    return {"kind": item.kind, "id": item.pk, "table_id": item.table_id, "since": item.since,
            "requested_by": item.requested_by, "what": item.what, "bytes": item.bytes,
            "url": f"{settings.CLEANLINE_URL}{item.url}"}


@router.get("/approvals", response={200: page_of(AwaitingOut), **ERRORS}, summary="Waiting for your decision")
def list_approvals(request: HttpRequest, filters: Query[Paging]) -> dict[str, Any]:
    """The approvals queue of the token's user, oldest first: clean plans, the doctor's repairs and
    archivals they may approve (not their own while two-person approval is on) and admin roles
    waiting for a second admin (`kind`: `clean plan`, `repair`, `archival`, `admin role`), each with
    the console's page where it is decided (`url`). Restores and rollbacks need no approval."""
    return paged(selectors.awaiting_decision(require(request)), filters.page, filters.page_size, awaiting_out)


class ApprovalOut(Schema):
    kind: str = Field(..., description="clean-plan, archival, repair, version-change, compaction")
    id: int
    table_id: int
    status: str = Field(..., description="draft (waiting for approval), approving (a clean plan checked by a worker), "
                        "approved, running, completed, failed, stale, rejected")
    requested_by: str
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str
    what: str
    url: str


def slug(change: Approvable) -> str:
    return change.kind_name.replace(" ", "-")


def approval_out(change: Approvable) -> dict[str, Any]:
    return {"kind": slug(change), "id": change.pk, "table_id": change.table_id, "status": change.status,
            "requested_by": change.requester_name, "requested_at": change.requested_at,
            "decided_by": change.decided_by.get_username() if change.decided_by else None,
            "decided_at": change.decided_at, "decision_note": change.decision_note, "what": change.summary,
            "url": f"{settings.CLEANLINE_URL}{reverse(change.page, args=[change.table_id, change.pk])}"}


def change_of(request: HttpRequest, kind: str, change_id: int) -> Approvable:
    """The change of `kind` (a slug: clean-plan, archival, repair, version-change, compaction)
    numbered `change_id`: 404 when there is none, or the token's user may not see its table; 403
    when they may not decide."""
    try:
        model = approvals.kind_named(kind.replace("-", " ")).model
    except KeyError as exc:
        raise Http404(f"No kind of change {kind!r}: clean-plan, archival, repair, version-change or "
                      "compaction.") from exc
    change = model._default_manager.filter(pk=change_id).first()
    if change is None:
        raise Http404(f"No {kind} #{change_id}.")
    table_of(request, change.table_id, permissions.APPROVE)
    return change


@router.post("/approvals/{kind}/{change_id}/approve", auth=role(permissions.APPROVE),
             response={202: ApprovalOut, 409: Problem, **ERRORS}, summary="Approve a change")
def approve_change(request: HttpRequest, kind: str, change_id: int, body: ApproveIn | None = None) -> Any:
    """Admins approve any change waiting for approval (`kind`: clean-plan, archival, repair,
    version-change, compaction), by the one workflow: refused (409, with why, audited) to its
    requester and to accounts that share their lineage while two-person approval is on
    (CLEANLINE_APPROVER_MUST_DIFFER), and when it no longer waits; of simultaneous approvals
    exactly one wins. Its task runs once the approval is committed: a clean plan is checked by a
    worker (`approving`), any other kind runs (`approved`, `running`, `completed`, `stale` or
    `failed`). The kind's own endpoint answers the same."""
    change = change_of(request, kind, change_id)
    return Status(202, approval_out(approvals.approval_approve(change=change, user=user_of(request),
                                                              writers_stopped=bool(body and body.writers_stopped),
                                                              note=body.note if body else "")))


@router.post("/approvals/{kind}/{change_id}/reject", auth=role(permissions.APPROVE),
             response={200: ApprovalOut, 409: Problem, **ERRORS}, summary="Reject a change")
def reject_change(request: HttpRequest, kind: str, change_id: int, body: DecisionIn) -> dict[str, Any]:
    """Admins (its requester too) reject a change waiting for approval, with a note; audited
    (`<kind>.rejected`, an archival's `archival.declined`). 409 when it no longer waits."""
    change = change_of(request, kind, change_id)
    return approval_out(approvals.approval_reject(change=change, user=user_of(request), note=body.note))
