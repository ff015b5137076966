"""Personal API tokens: created and revoked by their user or an admin; only the SHA-256 of the
secret is stored, the secret is shown once. A token acts as its user, with that user's role,
while the user is active and, for a local account, while it may sign in
(`services.signin.local_signin_refusal`: with `CLEANLINE_LOCAL_SIGNIN` off only the break-glass
accounts' tokens work; a refused token is audited as `signin.refused`, method `api_token`)."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError
from django.utils import timezone

from console.models import ApiToken
from console.services.audit import audit
from console.services.signin import local_signin_refusal, signin_refused

PREFIX = "cl_"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _may_manage(actor: User, owner: User) -> None:
    if actor.pk != owner.pk and not actor.has_perm("console.change_settings"):
        raise PermissionDenied("Only an admin manages another user's tokens.")


def token_create(*, actor: User, owner: User, name: str) -> tuple[ApiToken, str]:
    """A new token for `owner` named `name` (unique among the owner's tokens); returns it and
    its secret, which is not stored and cannot be shown again. Only its owner creates a token
    (an admin holding another user's secret could act as them, past the two-person rule);
    admins list and revoke anyone's."""
    if actor.pk != owner.pk:
        raise PermissionDenied("A token is created by its own user; an admin may list and revoke others' tokens.")
    name = name.strip()
    if not name or len(name) > 100:
        raise ValidationError("A token needs a name of 1 to 100 characters.")
    if ApiToken.objects.filter(user=owner, name=name).exists():
        raise ValidationError(f"{owner.get_username()} already has a token named {name!r}.")
    secret = PREFIX + secrets.token_urlsafe(32)
    try:
        token = ApiToken.objects.create(user=owner, name=name, prefix=secret[:10], digest=digest(secret),
                                        created_by=actor)
    except IntegrityError:  # the same name created at the same moment
        raise ValidationError(f"{owner.get_username()} already has a token named {name!r}.") from None
    audit(user=actor, action="api_token.created", parameters={"owner": owner.get_username(), "name": name})
    return token, secret


def token_revoke(*, actor: User, token: ApiToken) -> None:
    _may_manage(actor, token.user)
    if token.revoked_at is None:
        ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=timezone.now())
        audit(user=actor, action="api_token.revoked", parameters={"owner": token.user.get_username(),
                                                                  "name": token.name})


def token_user(secret: str) -> tuple[User, ApiToken] | None:
    """The active user and live token a secret belongs to, or None (unknown, revoked, or its
    user deactivated); its last use is recorded. `SignInRefused` (audited) for a token of a
    local account that may not sign in (local sign-in off, not a break-glass account)."""
    if not secret.startswith(PREFIX):
        return None
    token = ApiToken.objects.select_related("user__profile").filter(digest=digest(secret), revoked_at=None).first()
    if token is None or not token.user.is_active:
        return None
    reason = local_signin_refusal(token.user)
    if reason:
        raise signin_refused(method="api_token", user=token.user, reason=reason, parameters={"token": token.name})
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token.user, token
