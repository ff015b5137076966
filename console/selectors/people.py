"""Who does what: the People page's users, waiting admin grants and identity links, the audit log."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.paginator import Page
from django.db.models import QuerySet

from console.lineage import verified_email
from console.models import AuditEvent, GrantStatus, IdentityLink, RoleGrant
from console.selectors.paging import page_of


def people_rows() -> QuerySet[User]:
    """Every user, by username, with their groups (for the role badge): the People page."""
    return User.objects.prefetch_related("groups").select_related("profile").order_by("username")


def pending_grants() -> QuerySet[RoleGrant]:
    """Admin roles waiting for a second admin's confirmation, oldest first: the People page."""
    return RoleGrant.objects.filter(status=GrantStatus.PENDING).select_related("user", "requested_by").order_by(
        "requested_at")


def identity_links() -> QuerySet[IdentityLink]:
    """Accounts linked as one person's, oldest link first: the People page."""
    return IdentityLink.objects.select_related("user", "other", "linked_by").order_by("linked_at", "pk")


def shared_emails() -> list[tuple[str, list[str]]]:
    """Verified e-mail addresses that more than one account holds, with their usernames (each
    such set is one person for the two-person rule, `console.lineage`), by address."""
    holders: dict[str, list[str]] = {}
    for username, email, source, email_verified in User.objects.values_list(
            "username", "email", "profile__source", "profile__email_verified").order_by("username"):
        address = verified_email(email, source, email_verified)
        if address:
            holders.setdefault(address, []).append(username)
    return sorted((address, names) for address, names in holders.items() if len(names) > 1)


def audit_page(*, action: str, username: str, table_id: str, page: int | str | None) -> Page[Any]:
    return page_of(audit_rows(action=action, username=username, table_id=table_id), page)


def audit_rows(*, action: str, username: str, table_id: str) -> QuerySet[AuditEvent]:
    """Audit events newest first: `action` a prefix, `username` exact, `table_id` an id."""
    rows = AuditEvent.objects.select_related("table")
    if action:
        rows = rows.filter(action__startswith=action)
    if username:
        rows = rows.filter(username=username)
    if table_id.isdigit():
        rows = rows.filter(table_id=int(table_id))
    return rows.order_by("-at", "-pk")
