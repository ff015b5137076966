"""What waits for one user's decision, oldest first: the approvals queue (its page, the
dashboard's card, the header's badge, `GET /api/v1/plans?status=awaiting`). Today: clean
plans this user may approve (drafts that delete something; not their own, nor a plan of an
admin who created or promoted them, while two-person approval is on) and admin roles waiting
for a second admin. Who may decide is `console.permissions`' answer, never decided here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from console import permissions
from console.models import CleanPlan, GrantStatus, PlanStatus, RoleGrant


@dataclass(frozen=True, slots=True)
class Awaiting:
    """One decision waiting: what it is, since when, who asked, where it is decided."""

    kind: str  # "clean plan" or "admin role"
    since: datetime
    requested_by: str
    what: str
    url: str
    plan: CleanPlan | None = None
    grant: RoleGrant | None = None


def awaiting_plans(user: User | AnonymousUser) -> list[CleanPlan]:
    """Draft plans with something to delete that `user` may approve, oldest first."""
    if not permissions.may(user, "approve"):
        return []
    drafts = (CleanPlan.objects.filter(status=PlanStatus.DRAFT).select_related("table", "requested_by")
              .order_by("requested_at", "pk"))
    return [p for p in drafts if not p.deletes_nothing and permissions.may_approve(user, p)]


def awaiting_grants(user: User | AnonymousUser) -> list[RoleGrant]:
    """Admin roles waiting for a second admin that `user` may confirm (not their own request,
    not their own role), oldest first."""
    if not permissions.may(user, "manage_people"):
        return []
    return [g for g in RoleGrant.objects.filter(status=GrantStatus.PENDING).select_related("user", "requested_by")
            .order_by("requested_at", "pk") if g.requested_by_id != user.pk and g.user_id != user.pk]


def awaiting_decision(user: User | AnonymousUser) -> list[Awaiting]:
    found = [Awaiting("clean plan", p.requested_at,
                      p.requested_by.get_username() if p.requested_by else "automatic mode",
                      f"clean {p.table.name}: {p.files_to_delete} files to delete",
                      reverse("console:plan", args=[p.table_id, p.pk]), plan=p) for p in awaiting_plans(user)]
    found += [Awaiting("admin role", g.requested_at, g.requested_by.get_username() if g.requested_by else "",
                       f"make {g.user.get_username()} an admin", reverse("console:people") + "#pending-grants", grant=g)
              for g in awaiting_grants(user)]
    return sorted(found, key=lambda a: a.since)


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
