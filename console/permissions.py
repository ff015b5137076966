"""Who may do what, checked in one place: viewer < operator < admin (Django groups created
by a migration). Objects a user may not see answer 404; actions they may not take answer 403."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from console.lineage import Lineage
from console.models import CleanPlan, RoleGrant, Table
from console.models_approvals import Approvable

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
# A table version change goes as an archival does: operators and admins rehearse it and ask for it,
# an admin approves it.
REQUEST_VERSION_CHANGE = "console.plan_clean"
APPROVE_VERSION_CHANGE = "console.approve_clean"
# A compaction too: operators and admins schedule it (a plan waiting for approval), an admin approves it.
REQUEST_COMPACTION = "console.plan_clean"
APPROVE_COMPACTION = "console.approve_clean"

# What the pages ask "may this user ...?" about (the `may` template filter): every action a
# button or form on a page leads to, by the name templates use.
ACTIONS = {
    "view": VIEW, "register": REGISTER, "sync": SYNC, "plan": PLAN, "approve": APPROVE, "reject": APPROVE,
    "run_pending_clean": APPROVE, "break_lock": APPROVE, "create_savepoint": CREATE_SAVEPOINT,
    "delete_savepoint": DELETE_SAVEPOINT, "restore": RESTORE, "rollback": RESTORE, "drop_metadata_table": RESTORE,
    "change_settings": SETTINGS, "manage_people": PEOPLE, "request_repair": REQUEST_REPAIR,
    "approve_repair": APPROVE_REPAIR, "request_archival": REQUEST_ARCHIVAL,
    "approve_archival": APPROVE_ARCHIVAL, "decline_archival": APPROVE_ARCHIVAL,
    "request_version_change": REQUEST_VERSION_CHANGE, "approve_version_change": APPROVE_VERSION_CHANGE,
    "request_compaction": REQUEST_COMPACTION, "approve_compaction": APPROVE_COMPACTION,
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


BREAK_GLASS = ("Break-glass accounts may request but never approve (CLEANLINE_BREAK_GLASS_USERS): another admin "
               "must approve (CLEANLINE_APPROVER_MUST_DIFFER).")


def approval_refusal(user: User | AnonymousUser, requester_id: int | None, *, who: str = "the requester") -> str:
    """Why `user` may not approve a change that the user `requester_id` asked for (None: automatic
    mode's plan, asked by nobody), or "": the two-person rule, one rule for every change that
    waits for approval (clean plans, archivals, repairs, admin roles). While two-person approval
    is on (CLEANLINE_APPROVER_MUST_DIFFER): a break-glass account (CLEANLINE_BREAK_GLASS_USERS)
    never approves, and the approver is not the requester, not another account of the same
    person (a verified e-mail address in common, an identity link), and shares no lineage with
    the requester: neither created or gave a role to the other, directly or through accounts
    made in between, and both do not come from one person (`console.lineage`). The reason names
    the chain of accounts (`who` names the other account's holder); every caller audits it."""
    if not settings.CLEANLINE_APPROVER_MUST_DIFFER or not user.is_authenticated:
        return ""
    if user.get_username() in settings.CLEANLINE_BREAK_GLASS_USERS:
        return BREAK_GLASS
    if requester_id is None:
        return ""
    if requester_id == user.pk:
        return "The approver must differ from the requester (CLEANLINE_APPROVER_MUST_DIFFER)."
    return Lineage.load().refusal(approver=user.pk, other=requester_id, who=who)


def grant_confirmation_refusal(user: User | AnonymousUser, grant: RoleGrant) -> str:
    """Why `user` may not confirm the pending admin role `grant`, or "": its requester and its
    user never confirm it, and the two-person rule (`approval_refusal`) holds against both."""
    if grant.requested_by_id == user.pk:
        return "You asked for this admin role: another admin must confirm it (two-person approval)."
    if grant.user_id == user.pk:
        return "Nobody confirms their own admin role."
    return (approval_refusal(user, grant.requested_by_id)
            or approval_refusal(user, grant.user_id, who=grant.user.get_username()))


def identity_link_refusal(user: User | AnonymousUser, accounts: tuple[User, ...]) -> str:
    """Why `user` may not link (or unlink) `accounts` as one person's, or "": a link changes who
    may approve whose change, so it is decided as a change of both accounts is approved: by an
    admin who is neither of them, and whom the two-person rule (`approval_refusal`) lets approve
    a change of each."""
    if user.pk in {account.pk for account in accounts}:
        return "Nobody links or unlinks their own account: another admin does (two-person approval)."
    for account in accounts:
        refusal = approval_refusal(user, account.pk, who=account.get_username())
        if refusal:
            return refusal
    return ""


def change_approval_refusal(user: User | AnonymousUser, change: Approvable) -> str:
    """`approval_refusal` for `change`, any change that waits for approval (a clean plan, an
    archival, a repair; an automatic plan has no requester)."""
    automatic = isinstance(change, CleanPlan) and change.automatic
    return approval_refusal(user, None if automatic else change.requested_by_id)


def must_leave_approval_to_another(user: User | AnonymousUser, change: Approvable) -> bool:
    """Whether `approval_refusal` keeps `user` from approving `change`, any change that waits for
    approval (the one workflow refuses such an approval; pages show the reason instead)."""
    return bool(change_approval_refusal(user, change))


def may_approve(user: User | AnonymousUser, change: Approvable) -> bool:
    return may(user, "approve") and not must_leave_approval_to_another(user, change)


def visible_table(user: User | AnonymousUser, pk: int) -> Table:
    require_view(user)
    return get_object_or_404(Table, pk=pk)
