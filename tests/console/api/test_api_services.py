"""The table services API (issue 41): GET /tables/{id}/services and /services/why answer as
`cleanline compaction show|why --json` print, with the table's writers' options, each pending
service's heartbeat and the doctor's stuck finding; problem details for an unknown table and for
a table the library cannot read; both in the OpenAPI document."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.test import Client

from console import services
from console.services.health import health_check
from tests.console.helpers import person
from tests.doctor.helpers import OLD, age_tree, stuck_compaction
from timeline import HudiTable
from timeline.cli_compaction import show_json, why_json

pytestmark = pytest.mark.django_db

API = "/api/v1"
MOR = "sample_table/mor/parquet/v6_nonpartitioned"  # table version 6, log files


def test_api_services_and_why(console_table) -> None:
    table = console_table(MOR)
    stuck_compaction(Path(table.path.removeprefix("file:")), OLD)
    age_tree(Path(table.path.removeprefix("file:")))
    services.table_sync(table=table)
    health_check(table=table, force=True)
    viewer = person("api-viewer", "viewer")
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {services.token_create(actor=viewer, owner=viewer, name='ci')[1]}"}
    # writers' options from the table's settings: the trigger counts to 3 here, not Hudi's 5
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1, auto_max_bytes=1,
                                   write_options={"hoodie.compact.inline.max.delta.commits": "3"})

    answer = Client().get(f"{API}/tables/{table.pk}/services", **bearer)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    lake = HudiTable.open(table.path).inspect
    expected = show_json(lake.table_services())
    (pending,) = body["services"]["pending"]
    assert pending["instant"] == expected["pending"][0]["instant"] and pending["instant"]["requestedTime"] == OLD
    assert pending["heartbeat"] == "none" and pending["stuck"].startswith(f"compaction {OLD} has been inflight")
    assert body["services"]["backlog"] == expected["backlog"] and body["table_id"] == table.pk

    why = Client().get(f"{API}/tables/{table.pk}/services/why", **bearer)
    assert why.status_code == 200, why.content
    reasons = why.json()["why"]["reasons"]
    library = why_json(lake.why_not_compacting({"hoodie.compact.inline.max.delta.commits": "3"}))
    assert [r["kind"] for r in reasons] == [r["kind"] for r in library["reasons"]]
    assert why.json()["why"]["settings"]["hoodie.compact.inline.max.delta.commits"] == "3"
    trigger = next(r for r in reasons if r["kind"] == "trigger not met")
    counted = library["deltaCommitsSinceCompaction"]
    assert trigger["setting"] == "hoodie.compact.inline.max.delta.commits" and counted < 3
    assert trigger["instant"] == library["countedFrom"] and trigger["change"].startswith(f"{3 - counted} more delta")

    missing = Client().get(f"{API}/tables/{table.pk + 99}/services", **bearer)
    assert missing.status_code == 404 and missing["Content-Type"] == "application/problem+json"
    assert Client().get(f"{API}/tables/{table.pk}/services/why").status_code == 401
    shutil.rmtree(Path(table.path.removeprefix("file:")) / ".hoodie")
    gone = Client().get(f"{API}/tables/{table.pk}/services", **bearer)
    assert gone.status_code == 409 and gone["Content-Type"] == "application/problem+json"
    assert gone.json()["title"] == "Table unavailable or refused"

    document = Client().get(f"{API}/openapi.json").json()
    assert {"/api/v1/tables/{table_id}/services", "/api/v1/tables/{table_id}/services/why"} <= set(document["paths"])
