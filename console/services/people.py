"""People: users of the console and their roles, managed by admins (`console.manage_people`).

A user is created with a role (viewer, operator, admin, or none) and an initial password, or a
generated one that is returned once and never stored in clear. A role change replaces the user's
role groups (other groups stay). Users are deactivated, never deleted: the audit log keeps naming
them, and their sessions and API tokens stop working at once.

At least one active admin always remains: a change that would leave none (demoting or
deactivating the last active admin, oneself included) is refused with the reason and changes
nothing. Every change is audited (`people.created`, `people.role_changed`, `people.deactivated`,
`people.reactivated`), and so is every refusal (`people.refused`, with the change, the user and
the reason)."""

from __future__ import annotations

import secrets
from typing import NoReturn

from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q

from console.permissions import PEOPLE
from console.roles import ROLES, role_of
from console.services.audit import audit

ADMIN = "admin"


def generated_password() -> str:
    """A random initial password (16 URL-safe characters)."""
    return secrets.token_urlsafe(12)


def _check_actor(actor: User) -> None:
    if not (actor.is_active and actor.has_perm(PEOPLE)):
        raise PermissionDenied("Only an admin manages people.")


def _refuse(*, actor: User, change: str, username: str, reason: str) -> NoReturn:
    """Audit a refused change, then raise it: nothing was changed."""
    audit(user=actor, action="people.refused", parameters={"change": change, "username": username,
                                                           "reason": reason})
    raise ValidationError(reason)


def _role_groups(role: str) -> list[Group]:
    return [Group.objects.get(name=role)] if role else []


def _check_role(role: str) -> str:
    if role and role not in ROLES:
        return f"Unknown role {role!r}: choose {', '.join(ROLES)} or no role."
    return ""


def _is_admin(user: User) -> bool:
    return user.is_active and (user.is_superuser or user.groups.filter(name=ADMIN).exists())


def _last_admin(user: User) -> str:
    """Why `user` may not stop being an active admin, or "": they are the last one. Called in
    a transaction after locking the admin group's row, so that two admins demoting each other
    at the same moment cannot both succeed (on PostgreSQL; SQLite serialises every write)."""
    Group.objects.select_for_update().filter(name=ADMIN).first()
    if not _is_admin(user):
        return ""
    others = User.objects.filter(is_active=True).filter(Q(is_superuser=True) | Q(groups__name=ADMIN)).exclude(
        pk=user.pk)
    if others.exists():
        return ""
    return (f"{user.get_username()} is the last active admin: make another user an admin first, so that "
            f"someone can still manage people and approve plans.")


def _check_target(actor: User, user: User) -> str:
    if user.is_superuser and not actor.is_superuser:
        return f"{user.get_username()} is a superuser: only a superuser changes a superuser."
    return ""


def person_create(*, actor: User, username: str, role: str, password: str = "", first_name: str = "",
                  last_name: str = "", email: str = "") -> tuple[User, str, bool]:
    """A new active user with `role` ("" for none) and `password`, or a generated password when
    it is blank. Returns the user, the password and whether it was generated (then it is shown
    once: only its hash is kept). Refused (audited, nothing created): a taken or invalid
    username, an unknown role, an invalid e-mail address, a password the validators refuse."""
    _check_actor(actor)
    username, email = username.strip(), email.strip()
    first_name, last_name = first_name.strip(), last_name.strip()
    generated = not password
    password = password or generated_password()
    reason = _check_role(role)
    if not reason:
        try:
            if not username or len(username) > 150:
                raise ValidationError("A username has 1 to 150 characters.")
            UnicodeUsernameValidator()(username)
            if len(first_name) > 150 or len(last_name) > 150 or len(email) > 254:
                raise ValidationError("A name has at most 150 characters, an e-mail address 254.")
            if email:
                validate_email(email)
            if User.objects.filter(username__iexact=username).exists():
                raise ValidationError(f"There is already a user named {username!r}.")
            if not generated:
                validate_password(password, User(username=username, first_name=first_name, last_name=last_name,
                                                 email=email))
        except ValidationError as exc:
            reason = " ".join(exc.messages)
    if not reason:
        try:
            with transaction.atomic():
                user = User.objects.create_user(username, email=email, password=password, first_name=first_name,
                                                last_name=last_name)
                user.groups.set(_role_groups(role))
                audit(user=actor, action="people.created", parameters={
                    "username": username, "role": role or "", "password": "generated" if generated else "given"})
        except IntegrityError:  # the same username created at the same moment
            reason = f"There is already a user named {username!r}."
        else:
            return user, password, generated
    _refuse(actor=actor, change="create", username=username, reason=reason)


def person_role_change(*, actor: User, user: User, role: str) -> None:
    """Give `user` the role `role` ("" for none) in place of their role groups. Refused (audited,
    nothing changed): an unknown role, a superuser changed by a non-superuser, the last active
    admin losing the admin role."""
    _check_actor(actor)
    before = role_of(user)
    reason = _check_role(role) or _check_target(actor, user)
    if not reason:
        with transaction.atomic():
            if role != ADMIN and not user.is_superuser:  # a superuser stays one
                reason = _last_admin(user)
            if not reason:
                user.groups.remove(*Group.objects.filter(name__in=ROLES))
                user.groups.add(*_role_groups(role))
                audit(user=actor, action="people.role_changed", parameters={
                    "username": user.get_username(), "from": before, "to": role or ""})
                return
    _refuse(actor=actor, change=f"role {role or 'none'}", username=user.get_username(), reason=reason)


def person_deactivate(*, actor: User, user: User) -> None:
    """Deactivate `user`: they can no longer log in, their sessions and API tokens stop
    working; nothing of theirs is deleted. Refused (audited): the last active admin, a
    superuser deactivated by a non-superuser. Deactivating an inactive user changes nothing."""
    _check_actor(actor)
    reason = _check_target(actor, user)
    if not reason:
        with transaction.atomic():
            reason = _last_admin(user)
            if not reason:
                if User.objects.filter(pk=user.pk, is_active=True).update(is_active=False):
                    audit(user=actor, action="people.deactivated", parameters={"username": user.get_username()})
                user.is_active = False
                return
    _refuse(actor=actor, change="deactivate", username=user.get_username(), reason=reason)


def person_reactivate(*, actor: User, user: User) -> None:
    """Let a deactivated user log in again, with the role they had."""
    _check_actor(actor)
    reason = _check_target(actor, user)
    if reason:
        _refuse(actor=actor, change="reactivate", username=user.get_username(), reason=reason)
    if User.objects.filter(pk=user.pk, is_active=False).update(is_active=True):
        audit(user=actor, action="people.reactivated", parameters={"username": user.get_username()})
    user.is_active = True
