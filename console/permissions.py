"""Who may do what, checked in one place: viewer < operator < admin (Django groups created
by a migration). Objects a user may not see answer 404; actions they may not take answer 403."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from console.models import Table

VIEW = "console.view_table"
REGISTER = "console.register_table"
SYNC = "console.plan_clean"  # operators and admins may ask for a sync
PLAN = "console.plan_clean"
APPROVE = "console.approve_clean"
CREATE_SAVEPOINT = "console.create_savepoint"
DELETE_SAVEPOINT = "console.delete_savepoint"
RESTORE = "console.restore_table"
SETTINGS = "console.change_settings"


def can_view(user: AbstractBaseUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.has_perm(VIEW))


def require_view(user: AbstractBaseUser | AnonymousUser) -> None:
    if not can_view(user):
        raise Http404("No such page.")


def require(user: AbstractBaseUser | AnonymousUser, permission: str) -> None:
    """404 for users who may not see tables at all, 403 for those who may not do this."""
    require_view(user)
    if not user.has_perm(permission):
        raise PermissionDenied("Your role does not allow this.")


def visible_table(user: AbstractBaseUser | AnonymousUser, pk: int) -> Table:
    require_view(user)
    return get_object_or_404(Table, pk=pk)
