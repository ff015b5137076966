"""A user's preferences: the time zone every time is shown in."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from console import services
from console.permissions import AuthenticatedHttpRequest
from console.zones import chosen_zone, zone_names


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def preferences(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Every signed-in user sets their own zone (or the browser's); nobody else's."""
    if request.method == "POST":
        try:
            services.preference_time_zone(user=request.user, time_zone=request.POST.get("time_zone", ""))
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        else:
            messages.success(request, "Times are now shown in "
                             f"{request.POST.get('time_zone') or 'your browser’s zone'}.")
            return redirect("console:preferences")
    return render(request, "console/preferences.html", {"zones": zone_names(), "chosen": chosen_zone(request.user)},
                  status=400 if request.method == "POST" else 200)
