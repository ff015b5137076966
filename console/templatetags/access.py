"""What a page may offer its user, asked of `console.permissions` (the one place permissions are
checked): `{% if user|may:"restore" %}` around a button, `user|may_approve:plan` for a plan's
Approve button, `user|role` for the role badge. The views check again when a button is used."""

from __future__ import annotations

from django import template
from django.contrib.auth.models import AnonymousUser, User

from console import permissions
from console.models import RoleGrant
from console.models_approvals import Approvable
from console.roles import SOURCES, role_name, role_of, source_of

register = template.Library()


@register.filter
def may(user: User | AnonymousUser, action: str) -> bool:
    """Whether the user may take `action` (a name of `permissions.ACTIONS`)."""
    return permissions.may(user, action)


@register.filter
def may_approve(user: User | AnonymousUser, change: Approvable) -> bool:
    """Whether the user may approve `change` (any change that waits for approval): an approver, and not
    its requester while CLEANLINE_APPROVER_MUST_DIFFER is on."""
    return permissions.may_approve(user, change)


@register.filter
def leaves_approval_to_another(user: User | AnonymousUser, change: Approvable) -> bool:
    """Whether the two-person rule keeps the user from approving `change` (their own, or its
    requester's lineage or identity) and another admin must approve it."""
    return permissions.must_leave_approval_to_another(user, change)


@register.filter
def approval_refusal(user: User | AnonymousUser, change: Approvable) -> str:
    """Why the user may not approve `change`, as the two-person rule says it ("" when they may)."""
    return permissions.change_approval_refusal(user, change)


@register.filter
def may_confirm(user: User | AnonymousUser, grant: RoleGrant) -> bool:
    """Whether the user may confirm the waiting admin role `grant` (`permissions.grant_confirmation_refusal`)."""
    return not permissions.grant_confirmation_refusal(user, grant)


@register.filter
def role(user: User | AnonymousUser) -> str:
    """The user's role as the badge shows it ("superuser (all permissions)" for a superuser)."""
    return role_of(user)


@register.filter
def source(user: User | AnonymousUser) -> str:
    """Where the user comes from, as the People page shows it: local, OIDC or LDAP."""
    return SOURCES[source_of(user)]


@register.filter
def role_choice(user: User | AnonymousUser) -> str:
    """The user's role as the People page's role choice shows it ("" for none)."""
    return role_name(user)
