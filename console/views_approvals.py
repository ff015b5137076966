"""The approvals queue: everything waiting for this user's decision, oldest first."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from console import permissions, selectors
from console.permissions import AuthenticatedHttpRequest


@login_required
@require_GET
def approvals(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    return render(request, "console/approvals.html", {
        "items": selectors.awaiting_decision(request.user), "may_approve": permissions.may(request.user, "approve")})
