"""What every page's template may ask for: the approvals queue of the signed-in user (the
header's badge, the dashboard's card), read only when a template asks."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from console.selectors import Approvals


def approvals(request: HttpRequest) -> dict[str, Any]:
    return {"approvals": Approvals(request.user)}
