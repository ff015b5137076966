"""Throttling of refused sign-ins, on django-axes: failed password sign-ins (local and LDAP),
refused OIDC callbacks and refused API tokens are each counted per client address, and once
`CLEANLINE_LOGIN_FAILURE_LIMIT` of them fall within `CLEANLINE_LOGIN_COOLOFF_MINUTES` the next
ones are answered 429 without being checked (`axes.middleware.AxesMiddleware`; under /api/ as
problem details, `console.api.common.ApiProblemMiddleware`).

A password sign-in counts under its username's `lockout_key` (NFKC, case folded, the characters
that show nothing removed: `Bob`, `bOb` and `ｂｏｂ` are the one name that an LDAP directory's
`caseIgnoreMatch` finds one entry for) and the client's address, whatever the backend: `username`
is django-axes' AXES_USERNAME_CALLABLE. An OIDC callback and an API token have no username; each
counts under a name of its own (`OIDC_CALLBACK`, `API_TOKEN`) and the client's address. The
refusal that reaches the limit is audited once more (`signin.refused`, saying for how long the
address is refused); the requests answered 429 meanwhile are not audited, so that the audit log
does not flood."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest

from console.services.signin import signin_refused
from console.services.usernames import lockout_key

OIDC_CALLBACK = "(oidc callback)"
API_TOKEN = "(api token)"
WHAT = {OIDC_CALLBACK: "OIDC sign-ins", API_TOKEN: "API tokens"}


def username(request: HttpRequest | None, credentials: Mapping[str, Any] | None) -> str:
    """The name django-axes counts a sign-in under (AXES_USERNAME_CALLABLE): the typed
    username's `lockout_key`, or `OIDC_CALLBACK` for the OIDC callback's `authenticate` (whose
    credentials are the session's nonce and PKCE verifier)."""
    given: Mapping[str, Any] = credentials if credentials is not None else getattr(request, "POST", {})
    typed = given.get("username")
    if typed is None and ("nonce" in given or "code_verifier" in given):
        return OIDC_CALLBACK
    return lockout_key(str(typed or ""))


def locked(request: HttpRequest, kind: str) -> bool:
    """Whether `kind` (`OIDC_CALLBACK`, `API_TOKEN`) is refused to this client for now; then
    django-axes' middleware answers the request 429, whatever the view answers."""
    if AxesProxyHandler.is_allowed(request, {"username": kind}):
        return False
    request.axes_locked_out = True  # type: ignore[attr-defined]  # read by AxesMiddleware
    return True


def failed(request: HttpRequest, kind: str, *, method: str) -> None:
    """Count one refused `kind` from this client (once per request: the OIDC callback's failed
    `authenticate` is counted by django-axes itself, through Django's `user_login_failed`); the
    refusal that reaches the limit is audited, saying for how long the address is refused."""
    if getattr(request, "axes_failures_since_start", None) is None:  # set by django-axes once it counted
        user_login_failed.send(sender=__name__, credentials={"username": kind}, request=request)
    if getattr(request, "axes_locked_out", False):
        cool_off = get_cool_off(request)
        minutes = int(cool_off.total_seconds() // 60) if cool_off else 0
        address = getattr(request, "axes_ip_address", "")
        signin_refused(method=method, reason=(
            f"{settings.AXES_FAILURE_LIMIT} refused {WHAT[kind]} from {address}: its next ones are refused without "
            f"being checked for {minutes} minutes (CLEANLINE_LOGIN_COOLOFF_MINUTES)."),
            parameters={"ip_address": address, "throttled": True})
