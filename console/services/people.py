"""People: users of the console and their roles, managed by admins (`console.manage_people`).

A user is created with a role (viewer, operator, admin, or none) and an initial password, or a
generated one that is returned once and never stored in clear. A role change replaces the user's
role groups (other groups stay). Users are deactivated, never deleted: the audit log keeps naming
them, and their sessions and API tokens stop working at once.

At least one active admin always remains: a change that would leave none (demoting or
deactivating the last active admin, oneself included) is refused with the reason and changes
nothing. Every change is audited (`people.created`, `people.role_changed`, `people.deactivated`,
`people.reactivated`), and so is every refusal (`people.refused`, with the change, the user and
the reason).

While two-person approval is on (`CLEANLINE_APPROVER_MUST_DIFFER`), the admin role is given only
with a second admin's confirmation: creating an admin or promoting a user to admin leaves a
pending grant (`people.admin.requested`) that another admin (not its requester, not its user)
confirms (`people.admin.confirmed`) or anyone managing people declines (`people.admin.declined`).
Every role given is kept as a `RoleGrant` with who asked for it, so that an approval by an account
the change's requester created or promoted is refused (`console.permissions.approval_refusal`).

Two accounts of one person (a local break-glass account and an OIDC identity with another
e-mail address, say) are linked as one person's by an admin who is neither of them and whom the
two-person rule lets approve a change of each (`permissions.identity_link_refusal`): the rule then
counts them as one (`console.lineage`). Links and unlinks are audited (`people.identity.linked`,
`people.identity.unlinked`), refusals too (`people.refused`).

Usernames are normalised (NFKC) and one that looks like an existing user's (`аdmin` with a
Cyrillic а beside `admin`; Unicode's confusables, through the `confusable-homoglyphs` package) is
refused, and so is one holding a character that shows nothing or reorders the text
(`console.services.usernames`).
A change that meets a concurrent one (SQLite's "database is locked") is refused as a conflict,
to be tried again; nothing of it was written."""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn, TypeVar

from confusable_homoglyphs import confusables
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from console.models import GrantStatus, IdentityLink, RoleGrant
from console.permissions import PEOPLE, grant_confirmation_refusal, identity_link_refusal
from console.roles import ROLES, SOURCES, role_of, source_of
from console.services.audit import audit
from console.services.usernames import hidden_characters, shown, without_hidden

ADMIN = "admin"
T = TypeVar("T")
CONFLICT = "Another change to people was being saved at the same moment; nothing was changed. Try again."


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


def _two_person() -> bool:
    return bool(settings.CLEANLINE_APPROVER_MUST_DIFFER)


@contextmanager
def _serialised() -> Iterator[None]:
    """One people change in one transaction; a write that meets a concurrent one on SQLite
    ("database is locked") becomes a clear conflict (ValidationError), not a server error."""
    try:
        with transaction.atomic():
            yield
    except OperationalError as exc:
        if "locked" not in str(exc).lower() and "deadlock" not in str(exc).lower():
            raise
        raise ValidationError(CONFLICT) from exc


def _attempted(actor: User, change: str, username: str, work: Callable[[], T]) -> T:
    """`work` inside `_serialised`; a conflict is audited as a refusal too."""
    try:
        with _serialised():
            return work()
    except ValidationError as exc:
        if exc.messages == [CONFLICT]:
            _refuse(actor=actor, change=change, username=username, reason=CONFLICT)
        raise


def normalised_username(username: str) -> str:
    """The username as it is stored: NFKC (what Django's `normalize_username` does), trimmed."""
    return unicodedata.normalize("NFKC", username).strip()


def _skeleton(username: str) -> str:
    """What a username looks like: case-folded, then each character that Unicode's confusables
    table reads as a Latin one (a Cyrillic а, a digit 1 for l) replaced by it (UTS #39's
    skeleton, one character at a time), without the characters that show nothing."""
    chars = []
    for char in without_hidden(username).casefold():
        found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin"])
        chars.append(found[0]["homoglyphs"][0]["c"] if found else char)
    return "".join(chars)


def _look_alike(username: str) -> str:
    """Why `username` may not be taken: an existing user's name that it equals ignoring case, or
    that it looks like (`_skeleton`); a character in it that shows nothing or reorders the text."""
    hidden = hidden_characters(username)
    if hidden:
        return (f"'{shown(username)}' holds characters that show nothing or reorder the text ({', '.join(hidden)}): "
                "it would look like another name. Choose a name without them.")
    folded, skeleton = username.casefold(), _skeleton(username)
    for existing in User.objects.values_list("username", flat=True).iterator():
        if existing.casefold() == folded:
            return f"There is already a user named {existing!r}."
        if _skeleton(existing) == skeleton:
            return (f"{username!r} looks like the existing user {existing!r}: choose a name that cannot be "
                    "mistaken for it.")
    return ""


def _grant(*, user: User, role: str, actor: User, account_created: bool = False) -> RoleGrant | None:
    """Record the role given to `user` and apply it, or, for the admin role while two-person
    approval is on, leave it pending for a second admin (returned)."""
    pending = role == ADMIN and _two_person() and not _is_admin(user)
    grant = RoleGrant.objects.create(user=user, role=role, account_created=account_created, requested_by=actor,
                                     status=GrantStatus.PENDING if pending else GrantStatus.GRANTED,
                                     decided_by=None if pending else actor,
                                     decided_at=None if pending else timezone.now())
    if pending:
        audit(user=actor, action="people.admin.requested", parameters={
            "username": user.get_username(), "grant": grant.pk, "account_created": account_created})
        return grant
    # a role given now settles an admin role still waiting: its confirmation would undo this change
    RoleGrant.objects.filter(user=user, status=GrantStatus.PENDING).exclude(pk=grant.pk).update(
        status=GrantStatus.DECLINED, decided_by=actor, decided_at=timezone.now())
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    user.groups.add(*_role_groups(role))
    return None


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


def _check_external(user: User) -> str:
    """Why `user`'s role is not changed here: their identity provider gives it at every sign-in."""
    source = source_of(user)
    if source == "local":
        return ""
    return (f"{user.get_username()} signs in through {SOURCES[source]}, which gives their role again at every "
            f"sign-in: change it at the identity provider.")


def _check_target(actor: User, user: User) -> str:
    if user.is_superuser and not actor.is_superuser:
        return f"{user.get_username()} is a superuser: only a superuser changes a superuser."
    return ""


def person_create(*, actor: User, username: str, role: str, password: str = "", first_name: str = "",
                  last_name: str = "", email: str = "") -> tuple[User, str, bool]:
    """A new active user with `role` ("" for none) and `password`, or a generated password when
    it is blank. Returns the user, the password and whether it was generated (then it is shown
    once: only its hash is kept). The admin role, while two-person approval is on, waits for a
    second admin (the user starts with no role and a pending grant). Refused (audited, nothing
    created): a taken, look-alike or invalid username, an unknown role, an invalid e-mail
    address, a password the validators refuse, a concurrent change."""
    _check_actor(actor)
    username, email = normalised_username(username), email.strip()
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
            taken = _look_alike(username)
            if taken:
                raise ValidationError(taken)
            if not generated:
                validate_password(password, User(username=username, first_name=first_name, last_name=last_name,
                                                 email=email))
        except ValidationError as exc:
            reason = " ".join(exc.messages)
    if not reason:

        def create() -> User:
            user = User.objects.create_user(username, email=email, password=password, first_name=first_name,
                                            last_name=last_name)
            pending = _grant(user=user, role=role, actor=actor, account_created=True)
            audit(user=actor, action="people.created", parameters={
                "username": username, "role": "" if pending else role or "",
                "password": "generated" if generated else "given",
                **({"pending_role": role} if pending else {})})
            return user

        try:
            return _attempted(actor, "create", username, create), password, generated
        except IntegrityError:  # the same username created at the same moment
            reason = f"There is already a user named {username!r}."
    _refuse(actor=actor, change="create", username=username, reason=reason)


def person_role_change(*, actor: User, user: User, role: str) -> bool:
    """Give `user` the role `role` ("" for none) in place of their role groups; False when it
    waits for a second admin (the admin role while two-person approval is on). Refused
    (audited, nothing changed): an unknown role, a superuser changed by a non-superuser, the
    last active admin losing the admin role, a second pending grant, a concurrent change."""
    _check_actor(actor)
    before = role_of(user)
    reason = _check_role(role) or _check_target(actor, user) or _check_external(user)
    if not reason:

        def change() -> str | bool:
            if role != ADMIN and not user.is_superuser:  # a superuser stays one
                why = _last_admin(user)
                if why:
                    return why
            if role == ADMIN and RoleGrant.objects.filter(user=user, status=GrantStatus.PENDING).exists():
                return f"{user.get_username()} already waits for a second admin to confirm the admin role."
            pending = _grant(user=user, role=role, actor=actor)
            if pending is None:
                audit(user=actor, action="people.role_changed", parameters={
                    "username": user.get_username(), "from": before, "to": role or ""})
            return pending is None

        outcome = _attempted(actor, f"role {role or 'none'}", user.get_username(), change)
        if isinstance(outcome, bool):
            return outcome
        reason = outcome
    _refuse(actor=actor, change=f"role {role or 'none'}", username=user.get_username(), reason=reason)


def person_email_change(*, actor: User, user: User, email: str) -> str:
    """Set a local account's e-mail address (where its alert and approval e-mails go: the demo's
    and a created account's may have none). An address an admin sets is verified: accounts that
    share it are one person for the two-person rule (`console.lineage`). Adding one only joins
    accounts; changing or clearing one may part them, so that is decided as an identity link is:
    by an admin who is not the account and whom the rule lets approve a change of it
    (`permissions.identity_link_refusal`). Refused (audited, nothing changed): an invalid
    address, a superuser changed by a non-superuser, an account whose identity provider gives
    its address, the two-person rule. Returns the address now set."""
    _check_actor(actor)
    email = email.strip()
    reason = _check_target(actor, user)
    if not reason and source_of(user) != "local":
        reason = (f"{user.get_username()} signs in through {SOURCES[source_of(user)]}, which gives their e-mail "
                  "address at every sign-in: change it at the identity provider.")
    if not reason:
        try:
            if len(email) > 254:
                raise ValidationError("An e-mail address has at most 254 characters.")
            if email:
                validate_email(email)
        except ValidationError as exc:
            reason = " ".join(exc.messages)
    if not reason and user.email and user.email != email:
        reason = identity_link_refusal(actor, (user,))
    if reason:
        _refuse(actor=actor, change="e-mail", username=user.get_username(), reason=reason)
    before = user.email

    def change() -> str:
        User.objects.filter(pk=user.pk).update(email=email)
        user.email = email
        audit(user=actor, action="people.email_changed", parameters={
            "username": user.get_username(), "from": before, "to": email})
        return email

    return _attempted(actor, "e-mail", user.get_username(), change)


def person_admin_confirm(*, actor: User, grant: RoleGrant) -> None:
    """A second admin confirms a pending admin grant: the user becomes an admin. Refused
    (audited): the grant's requester or its user confirming, an admin the two-person rule keeps
    from it (`permissions.grant_confirmation_refusal`), a grant already decided."""
    _check_actor(actor)
    username = grant.user.get_username()
    decided = not RoleGrant.objects.filter(pk=grant.pk, status=GrantStatus.PENDING).exists()
    reason = "This grant was already decided." if decided else grant_confirmation_refusal(actor, grant)
    if reason:
        _refuse(actor=actor, change="confirm admin", username=username, reason=reason)

    def confirm() -> bool:
        if not RoleGrant.objects.filter(pk=grant.pk, status=GrantStatus.PENDING).update(
                status=GrantStatus.GRANTED, decided_by=actor, decided_at=timezone.now()):
            return False
        grant.user.groups.remove(*Group.objects.filter(name__in=ROLES))
        grant.user.groups.add(*_role_groups(ADMIN))
        audit(user=actor, action="people.admin.confirmed", parameters={
            "username": username, "grant": grant.pk,
            "requested_by": grant.requested_by.get_username() if grant.requested_by else None})
        return True

    if not _attempted(actor, "confirm admin", username, confirm):
        _refuse(actor=actor, change="confirm admin", username=username, reason="This grant was already decided.")


def person_admin_decline(*, actor: User, grant: RoleGrant) -> None:
    """Decline (or, for its requester, withdraw) a pending admin grant: nothing changes for the user."""
    _check_actor(actor)
    if not RoleGrant.objects.filter(pk=grant.pk, status=GrantStatus.PENDING).update(
            status=GrantStatus.DECLINED, decided_by=actor, decided_at=timezone.now()):
        _refuse(actor=actor, change="decline admin", username=grant.user.get_username(),
                reason="This grant was already decided.")
    audit(user=actor, action="people.admin.declined", parameters={"username": grant.user.get_username(),
                                                                   "grant": grant.pk})


def person_deactivate(*, actor: User, user: User) -> None:
    """Deactivate `user`: they can no longer log in, their sessions and API tokens stop
    working; nothing of theirs is deleted. Refused (audited): the last active admin, a
    superuser deactivated by a non-superuser. Deactivating an inactive user changes nothing."""
    _check_actor(actor)
    reason = _check_target(actor, user)
    if not reason:

        def deactivate() -> str:
            why = _last_admin(user)
            if not why and User.objects.filter(pk=user.pk, is_active=True).update(is_active=False):
                audit(user=actor, action="people.deactivated", parameters={"username": user.get_username()})
            return why

        reason = _attempted(actor, "deactivate", user.get_username(), deactivate)
        if not reason:
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


def _account(actor: User, change: str, username: str) -> User:
    user = User.objects.filter(username=normalised_username(username)).first()
    if user is None:
        _refuse(actor=actor, change=change, username=username, reason=f"There is no user named {username!r}.")
    return user


def person_link(*, actor: User, username: str, other_username: str) -> IdentityLink:
    """Link the accounts `username` and `other_username` as one person's: the two-person rule
    counts them as one from now on. Refused (audited, nothing linked): an unknown username, one
    account twice, two accounts already linked, an actor who is one of them or whom the rule
    keeps from deciding about them (`permissions.identity_link_refusal`), a concurrent change."""
    _check_actor(actor)
    user, other = _account(actor, "link", username), _account(actor, "link", other_username)
    names = f"{user.get_username()} + {other.get_username()}"
    if user.pk == other.pk:
        _refuse(actor=actor, change="link", username=names, reason="Choose two different accounts to link.")
    low, high = sorted((user, other), key=lambda account: account.pk)
    reason = identity_link_refusal(actor, (low, high))
    if not reason and IdentityLink.objects.filter(user=low, other=high).exists():
        reason = f"{low.get_username()} and {high.get_username()} are already linked as one person."
    if reason:
        _refuse(actor=actor, change="link", username=names, reason=reason)

    def link() -> IdentityLink:
        made = IdentityLink.objects.create(user=low, other=high, linked_by=actor)
        audit(user=actor, action="people.identity.linked", parameters={
            "link": made.pk, "usernames": [low.get_username(), high.get_username()]})
        return made

    try:
        return _attempted(actor, "link", names, link)
    except IntegrityError:  # the same link made at the same moment
        _refuse(actor=actor, change="link", username=names,
                reason=f"{low.get_username()} and {high.get_username()} are already linked as one person.")


def person_unlink(*, actor: User, link: IdentityLink) -> None:
    """Undo an identity link: the two accounts count as two people again (unless their verified
    e-mail addresses say otherwise). Refused (audited) as a link is (`person_link`)."""
    _check_actor(actor)
    names = f"{link.user.get_username()} + {link.other.get_username()}"
    reason = identity_link_refusal(actor, (link.user, link.other))
    if reason:
        _refuse(actor=actor, change="unlink", username=names, reason=reason)
    if IdentityLink.objects.filter(pk=link.pk).delete()[0]:
        audit(user=actor, action="people.identity.unlinked", parameters={
            "link": link.pk, "usernames": [link.user.get_username(), link.other.get_username()],
            "linked_by": link.linked_by.get_username() if link.linked_by else None})
