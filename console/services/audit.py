"""The append-only audit log (the database refuses changes; see migration 0008)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User

from console.models import (
    AuditEvent,
    Table,
)


def audit(*, user: User | None, action: str, table: Table | None = None,
          parameters: Mapping[str, Any] | None = None, result: str = "") -> AuditEvent:
    """Append one event to the audit log."""
    return AuditEvent.objects.create(user=user, username=user.get_username() if user else "system", action=action,
                                     table=table, parameters=dict(parameters or {}), result=result)
