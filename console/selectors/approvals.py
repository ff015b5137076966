"""What waits for one user's decision, oldest first: the approvals queue (its page, the
dashboard's card, the header's badge, `GET /api/v1/approvals`, and for plans alone
`GET /api/v1/plans?status=awaiting`): clean plans this user may approve (drafts that delete
something), the doctor's repairs (drafts) and archivals (pending) waiting for an admin, none
of them their own nor asked for by an admin who created or promoted them while two-person
approval is on, and admin roles waiting for a second admin. Restores and rollbacks wait for no
one: an admin's confirmation runs them (`permissions.RESTORE`), so they are never queued. Who may
decide is `console.permissions`' answer, never decided here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.contrib.auth.models import AnonymousUser, User
from django.urls import reverse

from console import permissions
from console.models import Archival, CleanPlan, GrantStatus, RoleGrant
from console.models_approvals import ApprovalStatus
from console.models_health import Repair


@dataclass(frozen=True, slots=True)
class Awaiting:
    """One decision waiting: what it is, since when, who asked, where it is decided."""

    kind: str  # "clean plan", "repair", "archival" or "admin role"
    since: datetime
    requested_by: str
    what: str
    url: str
    plan: CleanPlan | None = None
    grant: RoleGrant | None = None
    repair: Repair | None = None
    archival: Archival | None = None

    @property
    def pk(self) -> int:
        found = self.plan or self.grant or self.repair or self.archival
        assert found is not None
        return found.pk

    @property
    def table_id(self) -> int | None:
        found = self.plan or self.repair or self.archival
        return found.table_id if found is not None else None

    @property
    def bytes(self) -> int | None:
        """What it deletes, where it deletes files: a plan's bytes, a repair's."""
        return self.plan.bytes_to_delete if self.plan else self.repair.bytes if self.repair else None


def awaiting_plans(user: User | AnonymousUser) -> list[CleanPlan]:
    """Draft plans with something to delete that `user` may approve, oldest first."""
    if not permissions.may(user, "approve"):
        return []
    drafts = (CleanPlan.objects.filter(status=ApprovalStatus.DRAFT).select_related("table", "requested_by")
              .order_by("requested_at", "pk"))
    return [p for p in drafts if not p.deletes_nothing and permissions.may_approve(user, p)]


def awaiting_repairs(user: User | AnonymousUser) -> list[Repair]:
    """The doctor's repairs waiting for approval that `user` may approve, oldest first."""
    if not permissions.may(user, "approve_repair"):
        return []
    drafts = (Repair.objects.filter(status=ApprovalStatus.DRAFT).select_related("table", "requested_by")
              .order_by("requested_at", "pk"))
    return [r for r in drafts if not permissions.approval_refusal(user, r.requested_by_id)]


def awaiting_archivals(user: User | AnonymousUser) -> list[Archival]:
    """Archivals waiting for approval that `user` may approve, oldest first."""
    if not permissions.may(user, "approve_archival"):
        return []
    pending = (Archival.objects.filter(status=ApprovalStatus.DRAFT).select_related("table", "requested_by")
               .order_by("requested_at", "pk"))
    return [a for a in pending if not permissions.approval_refusal(user, a.requested_by_id)]


def awaiting_grants(user: User | AnonymousUser) -> list[RoleGrant]:
    """Admin roles waiting for a second admin that `user` may confirm
    (`permissions.grant_confirmation_refusal`), oldest first."""
    if not permissions.may(user, "manage_people"):
        return []
    return [g for g in RoleGrant.objects.filter(status=GrantStatus.PENDING).select_related("user", "requested_by")
            .order_by("requested_at", "pk") if not permissions.grant_confirmation_refusal(user, g)]


def _asked(user: User | None) -> str:
    return user.get_username() if user is not None else ""


def awaiting_decision(user: User | AnonymousUser) -> list[Awaiting]:
    """Everything waiting for `user`'s decision, oldest first."""
    found = [Awaiting("clean plan", p.requested_at,
                      p.requested_by.get_username() if p.requested_by else "automatic mode",
                      f"clean {p.table.name}: {p.files_to_delete} files to delete",
                      reverse("console:plan", args=[p.table_id, p.pk]), plan=p) for p in awaiting_plans(user)]
    found += [Awaiting("repair", r.requested_at, _asked(r.requested_by),
                       f"repair {r.kind} on {r.table.name}: {r.changes} changes",
                       reverse("console:repair", args=[r.table_id, r.pk]), repair=r) for r in awaiting_repairs(user)]
    found += [Awaiting("archival", a.requested_at, _asked(a.requested_by),
                       f"archive {a.table.name}: {len(a.instants)} instants",
                       reverse("console:archival_detail", args=[a.table_id, a.pk]), archival=a)
              for a in awaiting_archivals(user)]
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
