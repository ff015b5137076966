"""LDAP sign-in on django-auth-ldap: the user found by a search (bound as the service account),
the password checked by binding as the user (over StartTLS or ldaps:// when configured), the
groups searched, the role from `CLEANLINE_LDAP_GROUP_ROLES` at every sign-in. A wrong password
is a failed login like a local one (django-axes counts it); a user whose groups map to no role,
or whose username a local account holds, is refused and audited (`signin.refused`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django_auth_ldap.backend import LDAPBackend

from console.models import UserSource
from console.services.signin import SignInRefused, signin_external
from console.signin.config import role_for


class LdapBackend(LDAPBackend):  # type: ignore[misc]  # django-auth-ldap ships no types
    """django-auth-ldap's backend with Cleanline's users: found by DN, created at the first
    sign-in only with a role, their role re-read from their groups at every sign-in. Roles are
    Cleanline's groups (never permissions read from LDAP)."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> User | None:
        if not settings.CLEANLINE_LDAP_ENABLED:
            return None
        user: User | None = super().authenticate(request, username=username, password=password, **kwargs)
        return user

    def get_or_build_user(self, username: str, ldap_user: Any) -> tuple[User, bool]:
        """Called once the password is checked: the user of this DN with the role their groups
        give (created now at the first sign-in), or the sign-in refused."""
        role, matched = role_for(sorted(ldap_user.group_dns), settings.CLEANLINE_LDAP_GROUP_ROLES, fold_case=True)
        attrs = ldap_user.attrs or {}

        def first(name: str) -> str:
            values = attrs.get(ldap_user.settings.USER_ATTR_MAP.get(name, ""), [])
            return str(values[0]) if values else ""

        try:
            user = signin_external(source=UserSource.LDAP, external_id=ldap_user.dn.lower(), username=username.lower(),
                                   role=role, reason="groups=" + ";".join(matched) if matched else "no mapped group",
                                   email=first("email"), first_name=first("first_name"), last_name=first("last_name"))
        except SignInRefused as refusal:
            request = getattr(ldap_user, "_request", None)
            if request is not None:
                request.cleanline_signin_refusal = str(refusal)
            raise ldap_user.AuthenticationFailed(str(refusal)) from refusal
        return user, False

    def get_group_permissions(self, user: User, obj: object = None) -> set[str]:
        return set()  # roles are Cleanline's groups, whose permissions Django's own backend reads

    def get_user(self, user_id: int) -> User | None:
        """The session's user, while active (a deactivated user's sessions end at once)."""
        user: User | None = super().get_user(user_id)
        return user if user is not None and user.is_active else None
