"""The console's answers when no view answers: a 404 (JSON problem details under /api/, where a
script called)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from console.api.common import problem


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Every 404 Django raises: under /api/ an RFC 9457 problem (a mistyped path is told where
    the endpoints are listed, never handed an HTML page); elsewhere the page."""
    if request.path.startswith("/api/"):
        return problem(404, "Not Found", f"No API endpoint answers {request.method} {request.path}. The endpoints are "
                                         "listed at /api/v1/docs (the OpenAPI document: /api/v1/openapi.json).")
    return defaults.page_not_found(request, exception or Exception())
