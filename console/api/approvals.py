"""The approvals queue over the API: everything waiting for the token's user's decision, oldest
first (`console.selectors.approvals`, the same list as the Approvals page)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Query, Router, Schema

from console import selectors
from console.api.common import paged, require
from console.api.schemas import page_of
from console.api.tables import ERRORS
from console.selectors import Awaiting

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
