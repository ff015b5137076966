"""Sign-ins through an identity provider (OIDC, LDAP) and every refused sign-in.

`signin_external` finds the user an identity names (by the provider's own identifier: OIDC's
issuer and subject, LDAP's DN), creates it at the first sign-in and gives it the role the
provider's claim or groups map to, again at every sign-in: a changed claim changes the role, a
user whose claim or groups map to no role loses their role and is refused. The role given is kept
as a `RoleGrant` (asked by nobody: the provider gave it) and audited (`signin.role_changed`), and
the user's creation too (`signin.user_created`). Refused (audited as `signin.refused` with the
method and the reason; `SignInRefused` raised): no mapped role, a deactivated user, a username
that a user from elsewhere (a local account, another provider) holds or looks like, a username
holding a character that shows nothing or reorders the text (`services.usernames`), no username.
The two-person rule, API tokens and the People page then treat these users as any other.

`local_signin_refusal` is the one rule of `CLEANLINE_LOCAL_SIGNIN`: with it off a local account
that is not a break-glass account (`CLEANLINE_BREAK_GLASS_USERS`) neither signs in with its
password (`console.signin.local`) nor keeps its session or its API tokens (`services.tokens`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction
from django.utils import timezone

from console.models import GrantStatus, Profile, RoleGrant, UserSource
from console.roles import ROLES, role_name, source_of
from console.services.audit import audit
from console.services.people import _look_alike, normalised_username
from console.services.usernames import hidden_characters, shown

__all__ = ["SignInRefused", "local_signin_refusal", "signin_external", "signin_refused", "source_of"]
METHODS = {UserSource.OIDC: "oidc", UserSource.LDAP: "ldap", UserSource.LOCAL: "local"}


class SignInRefused(Exception):
    """A sign-in refused, with the reason shown on the login page (already audited)."""


def signin_refused(*, method: str, reason: str, username: str = "", user: User | None = None,
                   parameters: Mapping[str, Any] | None = None) -> SignInRefused:
    """Audit a refused sign-in (`signin.refused`) and return the exception to raise."""
    audit(user=user, action="signin.refused", parameters={
        "method": method, "username": username or (user.get_username() if user else ""), "reason": reason,
        **(parameters or {})})
    return SignInRefused(reason)


def local_signin_refusal(user: User) -> str:
    """Why the local account `user` may not act with what it holds here (its password, its
    session, its API tokens) while `CLEANLINE_LOCAL_SIGNIN` is off, or "" when it may: a
    break-glass account, local sign-in on, or a user from an identity provider (whose password
    is refused by the local backend anyway, and whose role the provider gives)."""
    if settings.CLEANLINE_LOCAL_SIGNIN or source_of(user) != UserSource.LOCAL:
        return ""
    if user.get_username() in settings.CLEANLINE_BREAK_GLASS_USERS:
        return ""
    return ("Local sign-in is off (CLEANLINE_LOCAL_SIGNIN): only the break-glass accounts sign in with a password "
            "or use their API tokens here. Sign in through your identity provider.")


def _set_role(user: User, role: str, *, method: str, reason: str) -> None:
    """Give `user` `role` ("" for none) as the provider says, when it is not the role they have."""
    before = role_name(user)
    if before == role:
        return
    RoleGrant.objects.create(user=user, role=role, status=GrantStatus.GRANTED, requested_by=None,
                             decided_by=None, decided_at=timezone.now())
    RoleGrant.objects.filter(user=user, status=GrantStatus.PENDING).update(
        status=GrantStatus.DECLINED, decided_at=timezone.now())
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    if role:
        user.groups.add(Group.objects.get(name=role))
    audit(user=user, action="signin.role_changed", parameters={
        "method": method, "username": user.get_username(), "from": before, "to": role, "reason": reason})


class _Refusal(Exception):
    def __init__(self, reason: str, *, username: str = "", user: User | None = None, identity: str = "") -> None:
        super().__init__(reason)
        self.reason, self.username, self.user, self.identity = reason, username, user, identity


def _find_or_create(*, source: UserSource, external_id: str, username: str, role: str, reason: str) -> User:
    """The user of this identity, created when it has none yet and a role; `_Refusal` otherwise."""
    method = METHODS[source]
    profile = Profile.objects.select_related("user").filter(source=source, external_id=external_id).first()
    if profile is not None:
        if not profile.user.is_active:
            raise _Refusal("Your account is deactivated in Cleanline: an admin reactivates it on the People page.",
                           user=profile.user)
        return profile.user
    if not username or len(username) > 150:
        raise _Refusal("The identity provider gave no usable username (1 to 150 characters).", username=username,
                       identity=external_id)
    hidden = hidden_characters(username)
    if hidden:
        raise _Refusal(f"The identity provider gave the username '{shown(username)}', which holds characters that "
                       f"show nothing or reorder the text ({', '.join(hidden)}): it would look like another name. "
                       "Ask an admin to change it at the provider.", username=shown(username), identity=external_id)
    taken = _look_alike(username)
    if taken:
        raise _Refusal(f"{taken} That account is not this {method.upper()} identity; an admin must rename one of "
                       "them.", username=username, identity=external_id)
    if not role:
        raise _Refusal(f"Your account has no Cleanline role: {reason or 'nothing'} maps to none. Ask an admin to "
                       "give you a role at the identity provider.", username=username, identity=external_id)
    try:
        with transaction.atomic():
            user = User.objects.create_user(username)
    except IntegrityError as exc:  # the same username created at the same moment
        raise _Refusal(f"There is already a user named {username!r}.", username=username,
                       identity=external_id) from exc
    Profile.objects.create(user=user, source=source, external_id=external_id)
    audit(user=user, action="signin.user_created", parameters={
        "method": method, "username": username, "identity": external_id})
    return user


def signin_external(*, source: UserSource, external_id: str, username: str, role: str, reason: str,
                    email: str = "", first_name: str = "", last_name: str = "", email_verified: bool = False) -> User:
    """The user the identity `external_id` of `source` names, created at its first sign-in, with
    the role `role` ("" for none) that `reason` (the claim values or groups) gave it, and the
    name and e-mail address the provider gives (`email_verified`: OIDC's claim, kept for the
    two-person rule, `console.lineage`). Refused (`SignInRefused`, audited): no role (an
    existing user's role groups are taken away first), a deactivated user, a username taken or
    looked like by another user, no username."""
    method = METHODS[source]
    try:
        with transaction.atomic():
            user = _find_or_create(source=source, external_id=external_id, username=normalised_username(username),
                                   role=role, reason=reason)
            _set_role(user, role, method=method, reason=reason)
            Profile.objects.filter(user=user).update(role_reason=reason[:1024], signed_in_at=timezone.now(),
                                                     email_verified=email_verified and bool(email))
            fields = {"email": email[:254], "first_name": first_name[:150], "last_name": last_name[:150]}
            changed = [name for name, value in fields.items() if value and getattr(user, name) != value]
            for name in changed:
                setattr(user, name, fields[name])
            if changed:
                user.save(update_fields=changed)
    except _Refusal as refusal:
        raise signin_refused(method=method, reason=refusal.reason, username=refusal.username, user=refusal.user,
                             parameters={"identity": refusal.identity} if refusal.identity else None) from refusal
    if not role:  # the role taken away stays taken away
        raise signin_refused(method=method, user=user, reason=(
            f"Your account has no Cleanline role any more: {reason or 'nothing'} maps to none. Ask an admin to "
            "give you a role at the identity provider."))
    return user
