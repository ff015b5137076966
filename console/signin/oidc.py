"""OIDC sign-in on mozilla-django-oidc: the authorization code flow with PKCE (S256), state and
nonce checked against the session, the ID token's signature (the provider's JWKS), issuer,
audience, authorized party (`audience_refusal`) and expiry checked, the role from a claim at every
sign-in, sign-out at the provider.

The provider's endpoints come from its discovery document (`<issuer>/.well-known/openid-
configuration`), read at the first sign-in and kept for the process: nothing reaches the
provider at start-up, and a local or LDAP sign-in never does. Every refusal (a state or nonce
that does not match, the provider's error, a failed token exchange, a bad ID token, no mapped
role, a deactivated user) is audited as `signin.refused` and the login page says why (the
provider's own error text only for a sign-in this browser started); refused callbacks are
throttled per address (`console.signin.throttle`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from console.models import UserSource
from console.services.signin import SignInRefused, signin_external, signin_refused
from console.signin import throttle
from console.signin.config import role_for

log = logging.getLogger(__name__)
METHOD = "oidc"
# mozilla-django-oidc's settings for the provider's endpoints -> the discovery document's keys.
ENDPOINTS = {"OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint", "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
             "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint", "OIDC_OP_JWKS_ENDPOINT": "jwks_uri"}


def enabled() -> bool:
    return bool(settings.CLEANLINE_OIDC_ISSUER)


@functools.lru_cache(maxsize=4)
def _discovered(issuer: str) -> dict[str, Any]:
    response = requests.get(issuer.rstrip("/") + "/.well-known/openid-configuration",
                            timeout=settings.CLEANLINE_OIDC_TIMEOUT)
    response.raise_for_status()
    document: dict[str, Any] = response.json()
    if str(document.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise ImproperlyConfigured(f"CLEANLINE_OIDC_ISSUER is {issuer!r} but its discovery document names the "
                                   f"issuer {document.get('issuer')!r}")
    missing = [key for key in ENDPOINTS.values() if not document.get(key)]
    if missing:
        raise ImproperlyConfigured(f"the OIDC provider {issuer} publishes no {', '.join(missing)}")
    return document


def discovery() -> dict[str, Any]:
    """The provider's discovery document (fetched once per process; a failure is not kept)."""
    if not enabled():
        raise Http404("OIDC sign-in is not configured.")
    return _discovered(settings.CLEANLINE_OIDC_ISSUER)


# mozilla-django-oidc's settings for the client -> Cleanline's.
CLIENT = {"OIDC_RP_CLIENT_ID": "CLEANLINE_OIDC_CLIENT_ID", "OIDC_RP_CLIENT_SECRET": "CLEANLINE_OIDC_CLIENT_SECRET"}


def oidc_setting(attr: str, *default: Any) -> Any:
    """mozilla-django-oidc's `get_settings`, with the provider's endpoints from discovery."""
    if attr in ENDPOINTS:
        return discovery()[ENDPOINTS[attr]]
    return import_from_settings(CLIENT.get(attr, attr), *default)


def audience_refusal(claims: Mapping[str, Any], client_id: str, trusted: Collection[str]) -> str:
    """Why an ID token whose `aud` holds `client_id` (checked by PyJWT) is not for this client, or
    "": OpenID Connect Core 1.0, 3.1.3.7, steps 3 to 5. Every other audience must be one this
    client trusts (`CLEANLINE_OIDC_TRUSTED_AUDIENCES`); a token for several audiences must name
    its authorized party (`azp`), and an `azp`, when present, must be this client."""
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    untrusted = sorted({str(a) for a in audiences} - {client_id} - set(trusted))
    if untrusted:
        return (f"it is also for {', '.join(map(repr, untrusted))}, an audience this client does not trust "
                "(CLEANLINE_OIDC_TRUSTED_AUDIENCES).")
    if len(audiences) > 1 and "azp" not in claims:
        return "it is for several audiences and names no authorized party (azp)."
    if "azp" in claims and claims["azp"] != client_id:
        return f"its authorized party (azp) is {claims['azp']!r}, not this client ({client_id!r})."
    return ""


def _refuse(request: HttpRequest, reason: str, **parameters: Any) -> None:
    """Audit a refused OIDC sign-in once per request and keep its reason for the login page."""
    if getattr(request, "cleanline_signin_refused", False):
        return
    request.cleanline_signin_refused = True  # type: ignore[attr-defined]  # a request attribute of this module
    signin_refused(method=METHOD, reason=reason, parameters=parameters or None)
    request.session["cleanline_signin_refusal"] = reason


class OidcBackend(OIDCAuthenticationBackend):  # type: ignore[misc]  # mozilla-django-oidc ships no types
    """mozilla-django-oidc's backend, answering only the callback's `authenticate` (with the
    session's nonce and PKCE verifier): the endpoints are read lazily, and the ID token is checked
    for issuer and audience too. The user is found by issuer and subject, not by e-mail."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # no endpoint read before a callback needs one
        self.UserModel = get_user_model()

    get_settings = staticmethod(oidc_setting)

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:  # noqa: N802  (the base class's attribute names)
        return str(discovery()["token_endpoint"])

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:  # noqa: N802
        return str(discovery()["userinfo_endpoint"])

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:  # noqa: N802
        return str(discovery()["jwks_uri"])

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:  # noqa: N802
        return str(settings.CLEANLINE_OIDC_CLIENT_ID)

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:  # noqa: N802
        return str(settings.CLEANLINE_OIDC_CLIENT_SECRET)

    @property
    def OIDC_RP_SIGN_ALGO(self) -> str:  # noqa: N802
        return str(settings.OIDC_RP_SIGN_ALGO)

    OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> User | None:
        if request is None or not enabled() or "nonce" not in kwargs or "code_verifier" not in kwargs:
            return None  # a password or token sign-in: not this backend's
        user: User | None = super().authenticate(request, **kwargs)
        return user

    def _verify_jws(self, payload: bytes | str, key: Any) -> dict[str, Any]:
        """The token's signature with the provider's key and algorithm, its expiry, and (unlike the
        library, which checks neither) its issuer and audience (`audience_refusal`)."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SuspiciousOperation(f"The ID token is signed with {header.get('alg')!r}, not "
                                      f"{self.OIDC_RP_SIGN_ALGO!r} (CLEANLINE_OIDC_SIGN_ALGO).")
        try:
            claims: dict[str, Any] = jwt.decode(payload, key, algorithms=[self.OIDC_RP_SIGN_ALGO],
                                                audience=self.OIDC_RP_CLIENT_ID, issuer=discovery()["issuer"],
                                                options={"require": ["exp", "iat", "iss", "aud", "sub"]}, leeway=60)
        except jwt.PyJWTError as exc:
            raise SuspiciousOperation(f"The ID token was refused: {exc}.") from exc
        refusal = audience_refusal(claims, self.OIDC_RP_CLIENT_ID, settings.CLEANLINE_OIDC_TRUSTED_AUDIENCES)
        if refusal:
            raise SuspiciousOperation(f"The ID token was refused: {refusal}")
        return claims

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims with the userinfo endpoint's over them (the same subject only)."""
        info: dict[str, Any] = super().get_userinfo(access_token, id_token, payload)
        if info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("The userinfo endpoint answered for another subject than the ID token's.")
        return {**payload, **info}

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]) -> User | None:
        claims = self.get_userinfo(access_token, id_token, payload)
        claim = settings.CLEANLINE_OIDC_ROLE_CLAIM
        role, matched = role_for(claims.get(claim), settings.CLEANLINE_OIDC_CLAIM_ROLES)
        value = claims.get(claim)
        reason = f"{claim}={','.join(matched)}" if matched else f"{claim}={value!r}"
        username = str(claims.get(settings.CLEANLINE_OIDC_USERNAME_CLAIM) or claims.get("email") or "")
        try:
            return signin_external(
                source=UserSource.OIDC, external_id=f"{payload['iss']} {payload['sub']}", username=username,
                role=role, reason=reason, email=str(claims.get("email") or ""),
                email_verified=claims.get("email_verified") is True,
                first_name=str(claims.get("given_name") or ""), last_name=str(claims.get("family_name") or ""))
        except SignInRefused as refusal:
            self.request.cleanline_signin_refused = True
            self.request.session["cleanline_signin_refusal"] = str(refusal)
            return None

    def get_user(self, user_id: int) -> User | None:
        """The session's user, while active (a deactivated user's sessions end at once)."""
        user: User | None = super().get_user(user_id)
        return user if user is not None and user.is_active else None


class OidcStart(OIDCAuthenticationRequestView):  # type: ignore[misc]  # mozilla-django-oidc ships no types
    """GET /oidc/authenticate/: to the provider's authorization endpoint with a new state, nonce
    and PKCE challenge, kept in the session."""

    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("OIDC sign-in is not configured.")
        response: HttpResponse = super().get(request)
        return response


NOT_STARTED = "No sign-in was started in this browser session (no state kept for it)."


class OidcCallback(OIDCAuthenticationCallbackView):  # type: ignore[misc]  # mozilla-django-oidc ships no types
    """GET /oidc/callback/: the provider's answer. The library checks the state against the
    session (and the nonce in the ID token); every refusal is audited here and counted towards
    the address's throttling (`console.signin.throttle`: past the limit a callback is answered
    429 unread and unaudited). The provider's error text is shown only for a sign-in that this
    browser started (the answer's state is one its session keeps)."""

    get_settings = staticmethod(oidc_setting)

    @property
    def failure_url(self) -> str:
        return resolve_url("login")

    def _answer(self, request: HttpRequest) -> HttpResponse:
        response: HttpResponse = super().get(request)
        return response

    def _failure(self) -> HttpResponse:
        response: HttpResponse = self.login_failure()
        return response

    def get(self, request: HttpRequest) -> HttpResponse:
        if not enabled():
            raise Http404("OIDC sign-in is not configured.")
        if throttle.locked(request, throttle.OIDC_CALLBACK):
            return self._failure()  # answered 429 by django-axes: nothing read, nothing audited
        error, state = request.GET.get("error", ""), request.GET.get("state", "")
        # read before the library takes the state out of the session
        started = bool(state) and state in request.session.get("oidc_states", {})
        try:
            response = self._answer(request)
        except SuspiciousOperation as exc:
            _refuse(request, f"The sign-in was refused: {exc}", state=state[:64])
            response = self._failure()
        except (requests.RequestException, ImproperlyConfigured, ValueError, KeyError) as exc:
            log.warning("OIDC sign-in failed: %s", exc)
            _refuse(request, f"The identity provider could not be reached or answered wrongly: {exc}")
            response = self._failure()
        else:
            if request.user.is_authenticated:
                return response
            if error and started:
                _refuse(request, f"The identity provider answered {error}: "
                                 f"{request.GET.get('error_description', '')}".strip(": "), error=error[:64])
            elif error:  # its text is not shown: anyone can send a browser here with any words
                _refuse(request, NOT_STARTED, error=error[:64])
            elif "code" not in request.GET or "state" not in request.GET:
                _refuse(request, "The provider's answer has no code and state.")
            elif "oidc_states" not in request.session:
                _refuse(request, NOT_STARTED)
            else:
                _refuse(request, "The sign-in was refused.")
        throttle.failed(request, throttle.OIDC_CALLBACK, method=METHOD)
        return response


def logout_url(request: HttpRequest, id_token: str) -> str:
    """Where sign-out continues: the provider's end_session_endpoint (RP-initiated logout) with
    the ID token as hint and the login page to come back to, when the provider offers one; the
    login page otherwise."""
    back = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    try:
        end = discovery().get("end_session_endpoint")
    except (requests.RequestException, ImproperlyConfigured, Http404):
        end = None
    if not end or not id_token:
        return back
    query = urlencode({"id_token_hint": id_token, "post_logout_redirect_uri": back,
                       "client_id": settings.CLEANLINE_OIDC_CLIENT_ID})
    return f"{end}{'&' if '?' in end else '?'}{query}"


def redirect_to_provider_logout(request: HttpRequest, id_token: str) -> HttpResponse:
    return HttpResponseRedirect(logout_url(request, id_token))


def start_url() -> str:
    return reverse("oidc_authentication_init")
