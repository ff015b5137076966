"""The table doctor end to end on a real Celery worker (console/services/health.py, the run_repair
task): a damaged copy of a real table (a marker folder of a completed commit left under
`.hoodie/.temp`, as a crash after the commit leaves it) is found by the sync the registration
queues, previewed, requested by an operator, approved by a second admin, repaired by the worker
under the table's lock, and the next sync reports the table healthy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.models import AuditEvent, Table
from console.models_approvals import ApprovalStatus
from console.models_health import TableHealth
from console.selectors import health as selectors
from console.services import health, table_register, table_sync_request
from tests.console.helpers import leave_markers, person, queued_outcome
from tests.helpers import FIXTURES, unzip_table
from timeline.cli import main

V9_COW = "sample_table/cow/v9_txns_simple_nometa"


def test_health_worker_finds_previews_repairs_and_syncs_healthy(start_worker, settings, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    start_worker(CLEANLINE_HEALTH_INTERVAL_SECONDS="0")  # every sync runs the doctor
    path = unzip_table(FIXTURES / f"{V9_COW}.zip", tmp_path / "lake")
    instant = leave_markers(path)
    operator, admin = person("operator", "operator"), person("admin2", "admin")

    table = table_register(path=str(path), user=admin)  # its first sync is queued on commit: the worker's
    queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 120)
    found = TableHealth.objects.get(table=table)
    assert main(["doctor", str(path), "--json"]) == 1
    assert found.findings == json.loads(capsys.readouterr().out)  # the CLI's findings, as stored
    assert [(f["kind"], f["severity"], f["repairable"]) for f in found.findings] == [("leftover-markers", "info", True)]

    plan, why = selectors.repair_preview(table, "leftover-markers")
    assert plan is not None and not why
    assert [(c.action, c.target.rsplit("/", 1)[-1]) for c in plan.changes] == [("delete folder", instant)]
    repair = health.repair_request(table=table, user=operator, kind="leftover-markers")
    assert repair.plan["changes"] == [c.to_json() for c in plan.changes]
    health.repair_approve(repair=repair, user=admin)  # its run is sent on commit, to the worker
    repair.refresh_from_db()
    assert queued_outcome(repair.task_id, 120) == "completed"
    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.COMPLETED and repair.run_token
    assert [c["target"].rsplit("/", 1)[-1] for c in repair.result["done"]] == [instant]
    assert not (path / ".hoodie" / ".temp" / instant).exists()

    before = TableHealth.objects.get(table=table).checked_at
    table_sync_request(table=table, user=operator)  # the next sync, on the worker
    queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 120)
    after = TableHealth.objects.get(table=table)
    assert after.checked_at > before and after.findings == [] and after.worst == "" and not after.error
    assert main(["doctor", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert list(AuditEvent.objects.filter(table=table, action__startswith="repair.").order_by("pk").values_list(
        "action", flat=True)) == ["repair.requested", "repair.approved", "repair.completed"]
