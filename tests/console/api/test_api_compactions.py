"""Compactions through the API (console/api/compactions.py): schedule one (its plan file group by
file group), the two-person rule and the approval through the one workflow's
/approvals/compaction/{id}/approve, the run's outcome, and 409 problem details when there is
nothing to compact."""

from __future__ import annotations

from typing import Any

import pytest

from tests.console.helpers import TokenCaller, person

pytestmark = pytest.mark.django_db

TABLE = "quickstart_trips_table/mor/avro/v6_trips_8i1u"


def test_compactions_through_the_api(table: Any) -> None:
    ada, bob = TokenCaller(person("ada", "admin")), TokenCaller(person("bob", "admin"))
    viewer = TokenCaller(person("vera", "viewer"))
    t = table.pk
    assert viewer("POST", f"/tables/{t}/compactions").status_code == 403
    asked = ada("POST", f"/tables/{t}/compactions")
    assert asked.status_code == 202 and asked.json()["status"] == "draft", asked.content
    [op] = asked.json()["plan"]["operations"]
    assert op["partition"] == "city=san_francisco" and len(op["log_files"]) == 1
    change = asked.json()["id"]
    refused = ada("POST", f"/approvals/compaction/{change}/approve")
    assert refused.status_code == 409 and "approver must differ" in refused.json()["detail"]
    assert bob("POST", f"/approvals/compaction/{change}/approve").status_code == 202
    done = viewer("GET", f"/tables/{t}/compactions/{change}").json()
    assert done["status"] == "completed" and done["result"]["files"][0]["file_id"] == op["file_id"]
    assert viewer("GET", f"/tables/{t}/compactions").json()["count"] == 1
    nothing = ada("POST", f"/tables/{t}/compactions")
    assert nothing.status_code == 409 and nothing["Content-Type"] == "application/problem+json"
    assert "Nothing to compact" in nothing.json()["detail"]
