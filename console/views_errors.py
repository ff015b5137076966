"""The console's answers when no view answers: a 404 (JSON problem details under /api/, where a
script called; the console's page with its header elsewhere) and a refused CSRF check (the
console's page, not Django's bare one)."""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render, resolve_url

from console.api.common import problem
from console.sessions import page_of_form, with_marker


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Every 404 Django raises: under /api/ an RFC 9457 problem (a mistyped path is told where
    the endpoints are listed, never handed an HTML page); elsewhere the console's page. The
    reason is not shown: an object a user may not see answers the same 404 as one that is not."""
    if request.path.startswith("/api/"):
        return problem(404, "Not Found", f"No API endpoint answers {request.method} {request.path}. The endpoints are "
                                         "listed at /api/v1/docs (the OpenAPI document: /api/v1/openapi.json).")
    return render(request, "404.html", {"path": request.path}, status=404)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form refused by the CSRF check (CSRF_FAILURE_VIEW): usually a page left open while the
    session ended or was renewed in another tab. Nothing was changed; the page says so, that
    the form's input is lost, and leads back to the form's page (through the login page when
    the session has ended)."""
    back = page_of_form(request)
    signed_in = request.user.is_authenticated
    again = back if signed_in else f"{resolve_url(settings.LOGIN_URL)}?next={quote(with_marker(back))}"
    return render(request, "403_csrf.html", {"back": back, "again": again, "signed_in": signed_in,
                                             "not_https": cookies_refused_over_http(request)}, status=403)


def cookies_refused_over_http(request: HttpRequest) -> bool:
    """The console's cookies are HTTPS-only (CLEANLINE_HTTPS) and this request came over plain
    HTTP: a browser keeps no such cookie from it, so no form (signing in first) can pass the
    CSRF check and no session can last; the page must say so, not that a session ended."""
    return not request.is_secure() and bool(settings.CSRF_COOKIE_SECURE or settings.SESSION_COOKIE_SECURE)
