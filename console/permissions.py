"""Who may do what, checked in one place: viewer < operator < admin (Django groups created
by a migration). Objects a user may not see answer 404; actions they may not take answer 403."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from console.models import Archival, CleanPlan, RoleGrant, Table

VIEW = "console.view_table"
REGISTER = "console.register_table"
SYNC = "console.plan_clean"  # operators and admins may ask for a sync
PLAN = "console.plan_clean"
APPROVE = "console.approve_clean"
CREATE_SAVEPOINT = "console.create_savepoint"
DELETE_SAVEPOINT = "console.delete_savepoint"
RESTORE = "console.restore_table"
SETTINGS = "console.change_settings"
PEOPLE = "console.manage_people"
REQUEST_REPAIR = "console.plan_clean"  # operators and admins ask for a repair of the doctor's findings
APPROVE_REPAIR = "console.approve_clean"  # admins approve it, by the two-person rule of a clean
# Archival goes as a clean does: operators and admins ask for it, an admin approves it.
REQUEST_ARCHIVAL = "console.plan_clean"
APPROVE_ARCHIVAL = "console.approve_clean"

# What the pages ask "may this user ...?" about (the `may` template filter): every action a
# button or form on a page leads to, by the name templates use.
ACTIONS = {
    "view": VIEW, "register": REGISTER, "sync": SYNC, "plan": PLAN, "approve": APPROVE, "reject": APPROVE,
    "run_pending_clean": APPROVE, "break_lock": APPROVE, "create_savepoint": CREATE_SAVEPOINT,
    "delete_savepoint": DELETE_SAVEPOINT, "restore": RESTORE, "rollback": RESTORE, "drop_metadata_table": RESTORE,
    "change_settings": SETTINGS, "manage_people": PEOPLE, "request_repair": REQUEST_REPAIR,
    "approve_repair": APPROVE_REPAIR, "request_archival": REQUEST_ARCHIVAL,
    "approve_archival": APPROVE_ARCHIVAL, "decline_archival": APPROVE_ARCHIVAL,
}


class AuthenticatedHttpRequest(HttpRequest):
    """The type of a request that passed `login_required` (or the API's token authentication):
    its user is a `User`, never anonymous. An annotation only: requests are never of this class."""

    user: User


def can_view(user: User | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.has_perm(VIEW))


def require_view(user: User | AnonymousUser) -> None:
    if not can_view(user):
        raise Http404("No such page.")


def require(user: User | AnonymousUser, permission: str) -> None:
    """404 for users who may not see tables at all, 403 for those who may not do this."""
    require_view(user)
    if not user.has_perm(permission):
        raise PermissionDenied("Your role does not allow this.")


def may(user: User | AnonymousUser, action: str) -> bool:
    """Whether `user` may take `action` (a key of ACTIONS): what a page asks before it shows a
    button; the view asks `require` again when the button is used."""
    return can_view(user) and user.has_perm(ACTIONS[action])


def approval_refusal(user: User | AnonymousUser, requester_id: int | None) -> str:
    """Why `user` may not approve a change that the user `requester_id` asked for, or "": while
    two-person approval is on (CLEANLINE_APPROVER_MUST_DIFFER), the approver is neither the
    requester nor an account the requester created or asked to make an admin (`RoleGrant`), so
    that one admin with a second account of their own cannot approve their own change. Holds
    for every change that needs approval."""
    if not settings.CLEANLINE_APPROVER_MUST_DIFFER or requester_id is None or not user.is_authenticated:
        return ""
    if requester_id == user.pk:
        return "The approver must differ from the requester (CLEANLINE_APPROVER_MUST_DIFFER)."
    if RoleGrant.objects.filter(user_id=user.pk, requested_by_id=requester_id).exists():
        return ("This account was created or given its role by the requester: another admin must approve "
                "(CLEANLINE_APPROVER_MUST_DIFFER).")
    return ""


def must_leave_approval_to_another(user: User | AnonymousUser, change: CleanPlan | Archival) -> bool:
    """Whether `approval_refusal` keeps `user` from approving `change`, a clean plan or an
    archival (their services refuse such an approval; pages show a note instead). Automatic
    plans have no requester."""
    automatic = isinstance(change, CleanPlan) and change.automatic
    return not automatic and bool(approval_refusal(user, change.requested_by_id))


def may_approve(user: User | AnonymousUser, change: CleanPlan | Archival) -> bool:
    return may(user, "approve") and not must_leave_approval_to_another(user, change)


def visible_table(user: User | AnonymousUser, pk: int) -> Table:
    require_view(user)
    return get_object_or_404(Table, pk=pk)
