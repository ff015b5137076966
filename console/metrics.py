"""Prometheus metrics at /metrics (prometheus_client), restricted by setting. Being built."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse


def metrics(request: HttpRequest) -> HttpResponse:
    raise Http404("not yet")
