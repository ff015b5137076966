"""Table versions through the API (console/api/versions.py): the version and each target's
preflight, the preflight of one target (409 problem details for a version Cleanline does not move
tables to), a rehearsal, a request that needs it, the approval through the one workflow's
/approvals/version-change/{id}/approve, and the run's outcome."""

from __future__ import annotations

from typing import Any

import pytest

from console.models import AuditEvent
from tests.console.helpers import TokenCaller, person
from timeline import HudiTable

pytestmark = pytest.mark.django_db

TABLE = "sample_table/cow/v9_txns_simple_nometa"


def test_versions_through_the_api(table: Any) -> None:
    ada, bob = TokenCaller(person("ada", "admin")), TokenCaller(person("bob", "admin"))
    viewer = TokenCaller(person("vera", "viewer"))
    t = table.pk
    overview = viewer("GET", f"/tables/{t}/version").json()
    assert overview["current"] == 9 and [x["version"] for x in overview["targets"]] == [6, 8]
    check = viewer("GET", f"/tables/{t}/version/check?to=8").json()
    assert check["ready"] and check["steps"][0]["handler"] == "NineToEightDowngradeHandler"
    unknown = viewer("GET", f"/tables/{t}/version/check?to=7")
    assert unknown.status_code == 409 and unknown["Content-Type"] == "application/problem+json"

    assert viewer("POST", f"/tables/{t}/version/rehearsals", {"to": 8}).status_code == 403
    early = ada("POST", f"/tables/{t}/version-changes", {"to": 8})
    assert early.status_code == 409 and "rehearse it first" in early.json()["detail"]
    rehearsed = ada("POST", f"/tables/{t}/version/rehearsals", {"to": 8})
    assert rehearsed.status_code == 202
    report = viewer("GET", f"/tables/{t}/version/rehearsals/{rehearsed.json()['id']}").json()
    assert report["status"] == "passed" and report["report"]["rows"] == 12

    asked = ada("POST", f"/tables/{t}/version-changes", {"to": 8})
    assert asked.status_code == 202 and asked.json()["status"] == "draft", asked.content
    change = asked.json()["id"]
    assert asked.json()["rehearsal"]["id"] == rehearsed.json()["id"]
    refused = ada("POST", f"/approvals/version-change/{change}/approve")
    assert refused.status_code == 409 and "approver must differ" in refused.json()["detail"]
    assert bob("POST", f"/approvals/version-change/{change}/approve").status_code == 202
    done = viewer("GET", f"/tables/{t}/version-changes/{change}").json()
    assert done["status"] == "completed" and done["result"]["plan"]["target"] == 8 and done["decided_by"] == "bob"
    assert viewer("GET", f"/tables/{t}/version-changes").json()["count"] == 1
    assert AuditEvent.objects.get(action="version.requested", table=table).parameters["api_token"] == "t"
    assert HudiTable.open(table.path).version == 8
