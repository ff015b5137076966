"""Alert rules per table, checked by a periodic task, delivered by e-mail and webhooks. Being built."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse


def check_alerts() -> int:
    return 0


def alerts_page(request: HttpRequest) -> HttpResponse:
    raise Http404("not yet")
