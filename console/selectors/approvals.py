"""What waits for one user's decision, oldest first: the approvals queue (its page, the
dashboard's card, the header's badge, `GET /api/v1/approvals`, and for plans alone
`GET /api/v1/plans?status=awaiting`): clean plans this user may approve (drafts that delete
something), the doctor's repairs and archivals waiting for an admin (every kind of the one
approval workflow, `console.models_approvals.Approvable`), none
of them their own nor asked for by an admin who created or promoted them while two-person
approval is on, and admin roles waiting for a second admin. Restores and rollbacks wait for no
one: an admin's confirmation runs them (`permissions.RESTORE`), so they are never queued. Who may
decide is `console.permissions`' answer, never decided here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from console import permissions
from console.models import CleanPlan, GrantStatus, RoleGrant
from console.models_approvals import Approvable, ApprovalStatus


@dataclass(frozen=True, slots=True)
class Awaiting:
    """One decision waiting: what it is, since when, who asked, where it is decided."""

    kind: str  # a change's `kind_name` ("clean plan", "repair", "archival", ...) or "admin role"
    since: datetime
    requested_by: str
    what: str
    url: str
    change: Approvable | None = None
    grant: RoleGrant | None = None

    @property
    def pk(self) -> int:
        found = self.change or self.grant
        assert found is not None
        return int(found.pk)

    @property
    def table_id(self) -> int | None:
        return self.change.table_id if self.change is not None else None

    @property
    def bytes(self) -> int | None:
        """What it deletes, where it deletes files: a plan's bytes, a repair's."""
        return self.change.bytes_changed if self.change is not None else None


def awaiting_changes(user: User | AnonymousUser, model: type[Approvable]) -> list[Any]:
    """The changes of `model` waiting for approval that `user` may approve (nothing of their own
    blocks them, `Approvable.approval_blocker`, and the two-person rule lets `user` approve them,
    `permissions.change_approval_refusal`), oldest first."""
    if not permissions.may(user, "approve"):
        return []
    waiting = (model._default_manager.filter(status=ApprovalStatus.DRAFT)
               .select_related("table", "requested_by")  # type: ignore[misc]  # each kind declares its table
               .order_by("requested_at", "pk"))
    return [c for c in waiting if not c.approval_blocker() and not permissions.change_approval_refusal(user, c)]


def awaiting_plans(user: User | AnonymousUser) -> list[CleanPlan]:
    """Draft plans with something to delete that `user` may approve, oldest first."""
    plans: list[CleanPlan] = awaiting_changes(user, CleanPlan)
    return plans


def awaiting_grants(user: User | AnonymousUser) -> list[RoleGrant]:
    """Admin roles waiting for a second admin that `user` may confirm
    (`permissions.grant_confirmation_refusal`), oldest first."""
    if not permissions.may(user, "manage_people"):
        return []
    return [g for g in RoleGrant.objects.filter(status=GrantStatus.PENDING).select_related("user", "requested_by")
            .order_by("requested_at", "pk") if not permissions.grant_confirmation_refusal(user, g)]


def awaiting_decision(user: User | AnonymousUser) -> list[Awaiting]:
    """Everything waiting for `user`'s decision, oldest first: the changes of every approvable
    kind (every subclass of `Approvable` is one), and admin roles."""
    found = [Awaiting(c.kind_name, c.requested_at, c.requester_name, c.summary,
                      reverse(c.page, args=[c.table_id, c.pk]), change=c)
             for model in Approvable.__subclasses__() for c in awaiting_changes(user, model)]
    found += [Awaiting("admin role", g.requested_at, g.requested_by.get_username() if g.requested_by else "",
                       f"make {g.user.get_username()} an admin", reverse("console:people") + "#pending-grants", grant=g)
              for g in awaiting_grants(user)]
    return sorted(found, key=lambda a: (a.since, a.kind, a.pk))


class Approvals:
    """The request's queue, read once and only when a template asks (the header's badge on
    every page, the dashboard's card)."""

    def __init__(self, user: User | AnonymousUser) -> None:
        self.user = user

    @cached_property
    def items(self) -> list[Awaiting]:
        return awaiting_decision(self.user) if self.user.is_authenticated else []

    @property
    def count(self) -> int:
        return len(self.items)
