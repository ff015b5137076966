"""Discover tables: every Hudi table under an allowed root, registered several at once."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from console import permissions, selectors, services
from console.permissions import AuthenticatedHttpRequest
from timeline import CleanlineError


@login_required
@require_GET
def discover(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Admins: the tables under the chosen allowed root (name, type, version, size), those not
    registered yet to be ticked. Only CLEANLINE_ALLOWED_ROOTS are listed, nothing else."""
    permissions.require(request.user, permissions.REGISTER)
    roots = list(settings.CLEANLINE_ALLOWED_ROOTS)
    root = request.GET.get("root") or (roots[0] if roots else "")
    if root not in roots:
        messages.error(request, f"{root} is not one of the allowed roots (CLEANLINE_ALLOWED_ROOTS).")
        return redirect("console:discover")
    try:
        rows, error = selectors.discovered(root) if root else [], ""
    except CleanlineError as exc:
        rows, error = [], str(exc)
    return render(request, "console/discover.html", {"roots": roots, "root": root, "rows": rows, "error": error,
                                                     "new": sum(1 for r in rows if not r.registered)})


@login_required
@require_POST
def discover_register(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Register the ticked tables in one step; each is then synced by a worker, and the
    Discover page it goes back to shows each one's progress (its sync badge, polled until the
    sync settles)."""
    permissions.require(request.user, permissions.REGISTER)
    paths = request.POST.getlist("path")
    if not paths:
        messages.error(request, "Tick the tables to register.")
        return redirect(f"{reverse('console:discover')}?{urlencode({'root': request.POST.get('root', '')})}")
    registered, refusals = services.tables_register(paths=paths, user=request.user)
    if registered:
        messages.success(request, f"{len(registered)} table{'s' if len(registered) != 1 else ''} registered "
                                  f"({', '.join(t.name for t in registered)}); each is being synced by a worker.")
    for refusal in refusals:
        messages.error(request, refusal)
    return redirect(f"{reverse('console:discover')}?{urlencode({'root': request.POST.get('root', '')})}")
