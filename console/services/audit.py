"""The append-only audit log (the database refuses changes; see migration 0008)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.contrib.auth.models import User

from console.models import (
    AuditEvent,
    Table,
)

_TOKEN: ContextVar[str | None] = ContextVar("cleanline_api_token", default=None)


@contextmanager
def request_scope() -> Iterator[None]:
    """One request: whatever token it names is forgotten when it ends (the middleware's)."""
    reset = _TOKEN.set(None)
    try:
        yield
    finally:
        _TOKEN.reset(reset)


def acting_token(name: str) -> None:
    """From now until the request ends, every audit event names the API token that acted."""
    _TOKEN.set(name)


def audit(*, user: User | None, action: str, table: Table | None = None,
          parameters: Mapping[str, Any] | None = None, result: str = "") -> AuditEvent:
    """Append one event to the audit log (with `api_token`: the token's name, when an API
    request made it)."""
    values = dict(parameters or {})
    token = _TOKEN.get()
    if token is not None:
        values["api_token"] = token
    return AuditEvent.objects.create(user=user, username=user.get_username() if user else "system", action=action,
                                     table=table, parameters=values, result=result)
