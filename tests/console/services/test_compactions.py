"""Compactions in the console (issue 41, `console.services.compactions`): "Schedule" keeps the
library's plan file group by file group and writes nothing; the approved run plans again under the
table's lock and compacts only the approved file slices (the library's local engine), or goes stale
with nothing written when the table changed; refusals audited. The workflow's own rules are the
approval contract's (test_approval_contract.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from console.models import AuditEvent
from console.models_compaction import Compaction
from console.services import approvals, compactions
from tests.console.helpers import person
from timeline import HudiTable

pytestmark = pytest.mark.django_db

TABLE = "quickstart_trips_table/mor/avro/v6_trips_8i1u"  # one file group with a log file


def actions(table: Any) -> list[str]:
    return list(AuditEvent.objects.filter(table=table, action__startswith="compaction.").order_by("pk")
                .values_list("action", flat=True))


def requested_plans(table: Any) -> list[str]:
    return sorted(p.name for p in Path(table.path.removeprefix("file:")).glob(".hoodie/*.compaction.requested"))


def approve(change: Compaction, django_capture_on_commit_callbacks: Any) -> Compaction:
    with django_capture_on_commit_callbacks(execute=False):  # approved, its run left to the test
        return approvals.approval_approve(change=change, user=person(f"bob{change.pk}", "admin"))


def test_compaction_schedule_keeps_the_plan_and_the_run_compacts_the_approved_file_groups(
        table: Any, django_capture_on_commit_callbacks: Any) -> None:
    ada = person("ada", "operator")
    (group,) = [s for s in HudiTable.open(table.path).file_system_view().latest_slices() if s.log_files]
    change = compactions.compaction_request(table=table, user=ada)
    assert change.is_waiting and change.engine == "local" and requested_plans(table) == []  # nothing written
    [op] = change.operations
    assert (op["partition"], op["file_id"], op["log_files"]) == (
        group.partition, group.file_id, [log.name for log in group.log_files])
    assert op["log_bytes"] == sum(log.size for log in group.log_files) and change.summary.endswith("1 file groups")
    assert compactions.compaction_request(table=table, user=ada).pk == change.pk  # one open per table

    done = compactions.compaction_run(compaction=approve(change, django_capture_on_commit_callbacks))
    assert done.is_completed, done.error
    [new] = done.result["files"]
    assert (new["partition"], new["file_id"], new["log_files"]) == (group.partition, group.file_id, 1)
    lake = HudiTable.open(table.path)
    compacted = [i for i in lake.timeline if i.requested_time == done.result["instant"]]
    assert [(i.action, i.state.name) for i in compacted] == [("commit", "COMPLETED")]
    assert not [s for s in lake.file_system_view().latest_slices() if s.log_files]

    with pytest.raises(ValidationError, match="Nothing to compact"):
        compactions.compaction_request(table=table, user=ada)
    assert actions(table) == ["compaction.requested", "compaction.approved", "compaction.completed",
                              "compaction.refused"]


def test_compaction_of_a_table_compacted_meanwhile_is_stale_and_writes_nothing(
        table: Any, django_capture_on_commit_callbacks: Any) -> None:
    change = approve(compactions.compaction_request(table=table, user=person("ada", "operator")),
                     django_capture_on_commit_callbacks)
    maintenance = HudiTable.open(table.path).maintenance()  # a Hudi writer compacts it first
    written = maintenance.compact(dry_run=False)
    assert written.instant is not None
    maintenance.run_compaction(instant=written.instant.requested_time)
    before = sorted(p.name for p in Path(table.path.removeprefix("file:")).glob(".hoodie/*"))
    done = compactions.compaction_run(compaction=change)
    assert done.is_stale and "changed since the compaction was planned" in done.error
    assert sorted(p.name for p in Path(table.path.removeprefix("file:")).glob(".hoodie/*")) == before
    assert actions(table)[-1] == "compaction.stale"


def test_compaction_whose_file_slice_gained_a_log_file_is_stale_and_writes_no_plan(
        table: Any, django_capture_on_commit_callbacks: Any) -> None:
    change = compactions.compaction_request(table=table, user=person("ada", "operator"))
    # as if approved before the file group's last log file was written: the plan now compacts another slice
    Compaction.objects.filter(pk=change.pk).update(plan={**change.plan, "operations": [
        {**op, "log_files": op["log_files"][:-1]} for op in change.operations]})
    change.refresh_from_db()
    done = compactions.compaction_run(compaction=approve(change, django_capture_on_commit_callbacks))
    assert done.is_stale and "changed since the compaction was planned" in done.error
    assert requested_plans(table) == [] and not HudiTable.open(table.path).timeline.pending_compactions()
