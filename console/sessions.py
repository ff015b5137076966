"""A session that ends while a form is open. The form's POST meets `login_required`, which sends
the browser to the login page with `next` set to the action's URL; after signing in the
browser would GET that POST-only URL ("HTTP ERROR 405"). Instead `next` becomes the page the
form was on (the same-origin Referer) with `session_expired=1`: the login page says the
session expired and that nothing was sent, and the page the user returns to says so again.
Works with whatever login view the console uses: it only rewrites the redirect."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.utils.http import url_has_allowed_host_and_scheme

MARKER = "session_expired"

EXPIRED = ("Your session expired while a form was open, so what you sent was not saved and nothing was changed. "
           "Sign in again to go back to the page; what you typed in the form was lost, so fill it in again there.")
RETURNED = ("You are signed in again. What you sent before your session expired was not saved and nothing was "
            "changed: fill in the form and send it again.")


def page_of_form(request: HttpRequest) -> str:
    """The page the form was sent from (the Referer, when it is this site's), else the home page."""
    referer = request.headers.get("Referer", "")
    if referer and url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()},
                                                   require_https=request.is_secure()):
        parts = urlsplit(referer)
        page = parts.path + (f"?{parts.query}" if parts.query else "")
        if parts.path != resolve_url(settings.LOGIN_URL):
            return page
    return resolve_url(settings.LOGIN_REDIRECT_URL)


def with_marker(url: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{MARKER}=1"


class SessionExpiredMiddleware:
    """Rewrites the login redirect of a POST by someone no longer signed in (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (request.method == "POST" and isinstance(response, HttpResponseRedirect)
                and not request.user.is_authenticated
                and urlsplit(response.url).path == resolve_url(settings.LOGIN_URL)
                and not request.path.startswith("/api/")):
            target = with_marker(page_of_form(request))
            return HttpResponseRedirect(f"{resolve_url(settings.LOGIN_URL)}?next={quote(target)}")
        return response


def session_notice(request: HttpRequest) -> dict[str, Any]:
    """The template context's `session_notice` (base.html shows it): on the login page after a
    session expired, and on the page the user returns to once signed in again."""
    if MARKER not in request.get_full_path():
        return {}
    if not request.user.is_authenticated and f"{MARKER}=1" in request.GET.get("next", ""):
        return {"session_notice": EXPIRED}
    if request.user.is_authenticated and request.GET.get(MARKER) == "1":
        return {"session_notice": RETURNED}
    return {}
