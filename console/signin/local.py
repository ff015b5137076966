"""Local accounts: Django's password check, for local users only. With `CLEANLINE_LOCAL_SIGNIN`
off only the break-glass accounts (`CLEANLINE_BREAK_GLASS_USERS`) sign in with a password, and
the sessions of the others end (the rule: `console.services.signin.local_signin_refusal`, which
refuses their API tokens too); a refused right password is audited (`signin.refused`). Users
from OIDC or LDAP have no usable password here."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest

from console.models import UserSource
from console.services.signin import local_signin_refusal, signin_refused, source_of


def local_refusal(user: User) -> str:
    """Why `user` may not sign in with a local password, or ""."""
    if source_of(user) != UserSource.LOCAL:
        return f"{user.get_username()} signs in through {source_of(user).upper()}, not with a local password."
    return local_signin_refusal(user)


class LocalBackend(ModelBackend):
    """Django's ModelBackend for local accounts, under `CLEANLINE_LOCAL_SIGNIN`."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> User | None:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if not isinstance(user, User):
            return None
        reason = local_refusal(user)
        if reason:
            signin_refused(method="local", user=user, reason=reason)
            if request is not None:
                request.cleanline_signin_refusal = reason  # type: ignore[attr-defined]  # read by the login page
            return None
        return user

    def get_user(self, user_id: Any) -> User | None:
        """The session's user, while local sign-in is on or they are a break-glass account."""
        user = super().get_user(user_id)
        return None if user is None or local_signin_refusal(user) else user
