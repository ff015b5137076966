"""Bearer tokens are throttled like sign-ins (console/api/common.py `TokenAuth`, on
console/signin/throttle.py): refused tokens are counted per client address, past the limit the
address is answered 429 as problem details without its token being looked up, until the
cool-off ends; the throttling is audited once, not each refused token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.utils import timezone

from console import services
from console.models import ApiToken, AuditEvent
from tests.console.helpers import person

pytestmark = pytest.mark.django_db

TABLES = "/api/v1/tables"


def bearer(secret: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_api_wrong_tokens_are_throttled_per_address_answered_429_unchecked_and_audited_once(settings) -> None:
    user = person("robot", "viewer")
    secret = services.token_create(actor=user, owner=user, name="ci")[1]
    limit = settings.AXES_FAILURE_LIMIT
    attacker = Client(REMOTE_ADDR="203.0.113.60")
    answers = [attacker.get(TABLES, **bearer(f"cl_guess{n}")) for n in range(limit - 1)]
    answers += [attacker.post(TABLES, "{}", content_type="application/json", **bearer("cl_guess")),
                attacker.get(TABLES, **bearer("not even a cl_ token"))]
    assert [a.status_code for a in answers] == [401] * (limit - 1) + [429] * 2
    for throttled in answers[-2:]:
        assert throttled["Content-Type"] == "application/problem+json"
        assert throttled.json()["status"] == 429 and "Too many refused API tokens" in throttled.json()["detail"]
        assert throttled["Retry-After"] == str(int(settings.AXES_COOLOFF_TIME.total_seconds()))

    # the right token from that address: refused without being looked up (its use not recorded)
    assert attacker.get(TABLES, **bearer(secret)).status_code == 429
    assert ApiToken.objects.get().last_used_at is None
    refused = AuditEvent.objects.filter(action="signin.refused")
    assert [(e.parameters["method"], e.parameters["ip_address"]) for e in refused] == [("api_token", "203.0.113.60")]
    assert f"{limit} refused API tokens from 203.0.113.60" in refused[0].parameters["reason"]

    # another address is not throttled; after the cool-off the address's tokens are checked again
    assert Client(REMOTE_ADDR="198.51.100.20").get(TABLES, **bearer(secret)).status_code == 200
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(minutes=1))
    assert attacker.get(TABLES, **bearer(secret)).status_code == 200
    assert attacker.get(TABLES, **bearer("cl_guess again")).status_code == 401


def test_api_tokens_refused_for_their_user_count_too(settings) -> None:
    """A live token of a local account while local sign-in is off is refused (and audited) each
    time until the limit; then the address is throttled as for wrong tokens."""
    user = person("ops", "operator")
    secret = services.token_create(actor=user, owner=user, name="ci")[1]
    settings.CLEANLINE_LOCAL_SIGNIN = False
    client = Client(REMOTE_ADDR="203.0.113.61")
    answers = [client.get(TABLES, **bearer(secret)).status_code for _ in range(settings.AXES_FAILURE_LIMIT + 2)]
    assert answers == [401] * (settings.AXES_FAILURE_LIMIT - 1) + [429] * 3
    assert AuditEvent.objects.filter(action="signin.refused").count() == settings.AXES_FAILURE_LIMIT + 1
