"""The table's indexes in the console (issue 45; console/selectors/health.py `indexes_json`,
console/api/health.py, console/metrics_health.py): each index partition with its state, size,
last verification and findings; a drifted index's rebuild requested with its estimate,
approved by a second admin and run through the repair workflow under the table's lock; a drop
requested with the queries that lose the index named."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, TestCase

from console import services
from console.metrics_health import health_metrics
from console.models import Table
from console.models_approvals import ApprovalStatus
from console.models_health import Repair, TableHealth
from console.tasks import sync_table
from tests.console.helpers import login, person
from timeline import HudiTable
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import MdtUpdate, write_update

pytestmark = pytest.mark.django_db

V9_META = "sample_table/cow/v9_txns_simple_meta"


@pytest.fixture(autouse=True)
def every_sync_checks(settings) -> None:
    settings.CLEANLINE_HEALTH_INTERVAL_SECONDS = 0


CALLS = itertools.count()  # a fresh token name per call


def api(user: Any, method: str, path: str) -> Any:
    secret = services.token_create(actor=user, owner=user, name=f"t{next(CALLS)}-{method}-{path}"[:90])[1]
    client, headers = Client(), {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        if method == "GET":
            return client.get("/api/v1" + path, **headers)
        return client.post("/api/v1" + path, "{}", content_type="application/json", **headers)


def synced(table: Table) -> TableHealth:
    sync_table.apply(args=[table.pk])
    return TableHealth.objects.get(table=table)


def test_index_drift_shown_rebuilt_through_the_approval_flow_and_counted(console_table, settings) -> None:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    table = console_table(V9_META)
    assert synced(table).findings == []
    lake = Path(table.path.removeprefix("file:"))
    mdt = MetadataTable(HudiTable.open(str(lake)))
    key = sorted(mdt.records("record_index"))[0]
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate("record_index", (), (key,))])
    assert [f["kind"] for f in synced(table).findings] == ["index-drift"]
    viewer, operator, admin = person("v", "viewer"), person("op", "operator"), person("a", "admin")
    shown = api(viewer, "GET", f"/tables/{table.pk}/indexes").json()
    rows = {i["name"]: i for i in shown["indexes"]}
    assert shown["checked_at"] and rows["record_index"]["state"] == "complete" and rows["record_index"]["bytes"] > 0
    [finding] = rows["record_index"]["findings"]
    assert finding["evidence"]["shown"][0]["key"] == key and rows["column_stats"]["findings"] == []
    counted = {tuple(s.labels.values()): s.value for m in health_metrics() if m.name == "cleanline_index_findings"
               for s in m.samples}
    assert counted == {(str(table.pk), table.name, "record_index"): 1}
    assert api(viewer, "POST", f"/tables/{table.pk}/indexes/record_index/rebuild").status_code == 403
    asked = api(operator, "POST", f"/tables/{table.pk}/indexes/record_index/rebuild")
    assert asked.status_code == 201, asked.content
    repair = Repair.objects.get(pk=asked.json()["id"])
    assert repair.kind == "index-drift" and repair.status == ApprovalStatus.DRAFT
    assert repair.plan["notes"][0].startswith("estimate: ") and repair.plan["changes"][0]["action"] == "index rebuild"
    done = api(admin, "POST", f"/tables/{table.pk}/repairs/{repair.pk}/approve")  # run eagerly on commit
    assert done.status_code == 202, done.content
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.COMPLETED, repair.error
    assert TableHealth.objects.get(table=table).findings == []
    assert all(i["findings"] == [] for i in api(viewer, "GET", f"/tables/{table.pk}/indexes").json()["indexes"])
    again = api(operator, "POST", f"/tables/{table.pk}/indexes/record_index/rebuild")
    assert again.status_code == 409 and "already agrees" in again.json()["detail"]
    dropped = api(operator, "POST", f"/tables/{table.pk}/indexes/secondary_index_txn_date_idx/drop")
    assert dropped.status_code == 201, dropped.content
    assert any("secondary-index lookups" in n for n in dropped.json()["plan"]["notes"])
    assert json.loads(json.dumps(dropped.json()["plan"]["changes"]))[1]["action"] == "index drop"


def test_index_page_lists_the_indexes_and_requests_a_rebuild(console_table) -> None:
    table = console_table(V9_META)
    lake = Path(table.path.removeprefix("file:"))
    mdt = MetadataTable(HudiTable.open(str(lake)))
    key = sorted(mdt.records("record_index"))[0]
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate("record_index", (), (key,))])
    synced(table)
    viewer = login("viewer")
    overview = viewer.get(f"/tables/{table.pk}/").content.decode()
    assert f"/tables/{table.pk}/indexes" in overview
    page = viewer.get(f"/tables/{table.pk}/indexes").content.decode()
    row = page.split('id="index-record_index"')[1].split("</tr>")[0]
    assert "record key(s) map to the wrong file group or to none" in row and "complete" in row
    assert "agrees with the data" in page.split('id="index-column_stats"')[1].split("</tr>")[0]
    assert "Rebuild</button>" not in page  # viewers see, do not request
    operator = login("operator")
    assert "Rebuild</button>" in operator.get(f"/tables/{table.pk}/indexes").content.decode()
    answer = operator.post(f"/tables/{table.pk}/indexes/record_index/rebuild")
    repair = Repair.objects.get(table=table)
    assert answer.status_code == 302 and answer["Location"].endswith(f"/repairs/{repair.pk}")
    assert repair.plan["changes"][0]["target"] == "record_index"
