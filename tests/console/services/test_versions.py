"""Table version changes in the console (issue 42, `console.services.versions`): the version
page's figures read from the library (the table's version, the other versions' readers and the
preflight), a rehearsal run by its task with the report kept, a request that needs a passing
rehearsal of the very move and no blocker (refusals audited), and a run that changes the table only
after the same change rehearsed again under the lock passes. The workflow's own rules (two-person
rule, one claim, expiry, audit) are the approval contract's (test_approval_contract.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from console.models import AuditEvent
from console.models_versions import RehearsalStatus, VersionChange
from console.selectors import versions as version_selectors
from console.services import approvals, versions
from tests.console.helpers import person
from timeline import HudiTable
from timeline.versions import READERS

pytestmark = pytest.mark.django_db

TABLE = "sample_table/cow/v9_txns_simple_nometa"  # table version 9, no metadata table, 12 rows


def pending_write(table: Any) -> None:
    """An inflight commit on the table's timeline (no live writer): a preflight blocker."""
    timeline = Path(table.path.removeprefix("file:")) / ".hoodie" / "timeline"
    for name in ("20990101000000000.commit.requested", "20990101000000000.inflight"):
        (timeline / name).write_bytes(b"")


def actions(table: Any) -> list[str]:
    return list(AuditEvent.objects.filter(table=table, action__startswith="version.").order_by("pk")
                .values_list("action", flat=True))


def test_versions_overview_rehearsal_request_and_refusals(table: Any, django_capture_on_commit_callbacks: Any) -> None:
    overview = version_selectors.version_overview(table)
    assert overview.current == 9 and overview.readers == READERS[9] and not overview.error
    assert [(t.version, t.newer, t.readers, t.ready) for t in overview.targets] == [
        (6, False, READERS[6], True), (8, False, READERS[8], True)]
    assert [s["from"], s["to"]] == [9, 8] if (s := overview.targets[1].check["steps"][0]) else False

    ada = person("ada", "operator")
    with pytest.raises(ValidationError, match="rehearse it first"):
        versions.version_change_request(table=table, user=ada, target=8)
    with pytest.raises(ValidationError, match="already"):
        versions.version_rehearsal_request(table=table, user=ada, target=9)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        rehearsal = versions.version_rehearsal_request(table=table, user=ada, target=8)
    assert len(queued) == 1  # the rehearsal's task, sent once the request committed
    rehearsal.refresh_from_db()
    assert rehearsal.status == RehearsalStatus.PASSED and rehearsal.task_id
    assert rehearsal.report["passed"] and rehearsal.report["rows"] == 12 and rehearsal.report["rows_equal"]
    assert HudiTable.open(table.path).version == 9  # a rehearsal writes nothing to the table

    change = versions.version_change_request(table=table, user=ada, target=8)
    assert change.is_waiting and (change.from_version, change.target, change.rehearsal) == (9, 8, rehearsal)
    assert change.plan["steps"][0]["from"] == 9 and change.plan["check"]["ready"] and not change.approval_blocker()
    assert versions.version_change_request(table=table, user=ada, target=6).pk == change.pk  # one open per table
    approvals.approval_reject(change=change, user=ada)

    rehearsal.status = RehearsalStatus.FAILED  # a change resting on no passing rehearsal is approved by nobody
    rehearsal.save()
    change.rehearsal = rehearsal
    assert "No passing rehearsal" in change.approval_blocker()
    with pytest.raises(ValidationError, match="rehearse it first"):
        versions.version_change_request(table=table, user=ada, target=8)  # the newest rehearsal failed

    pending_write(table)
    with pytest.raises(ValidationError, match="refused now: pending write"):
        versions.version_change_request(table=table, user=ada, target=8)
    assert actions(table) == ["version.refused", "version.rehearsal.requested", "version.rehearsed",
                              "version.requested", "version.rejected", "version.refused", "version.refused"]
    assert not VersionChange.objects.filter(table=table, status="draft").exists()


def approved(table: Any, django_capture_on_commit_callbacks: Any) -> VersionChange:
    ada = person("ada", "admin")
    rehearsal = versions.version_rehearsal_request(table=table, user=ada, target=8)
    versions.version_rehearsal_run(rehearsal=rehearsal)
    return approve(versions.version_change_request(table=table, user=ada, target=8), django_capture_on_commit_callbacks)


def approve(change: VersionChange, django_capture_on_commit_callbacks: Any) -> VersionChange:
    with django_capture_on_commit_callbacks(execute=False):  # approved, its run left to the test
        return approvals.approval_approve(change=change, user=person(f"bob{change.pk}", "admin"))


def test_versions_run_changes_the_table_only_after_its_rehearsal_under_the_lock_passes(
        table: Any, django_capture_on_commit_callbacks: Any) -> None:
    change = approved(table, django_capture_on_commit_callbacks)
    pending_write(table)  # after the approval: the rehearsal under the lock refuses it
    done = versions.version_change_run(change=change)
    assert done.is_failed and "rehearsal on a copy of the table as it is now failed" in done.error
    assert done.result["rehearsal"]["passed"] is False and "plan" not in done.result
    assert HudiTable.open(table.path).version == 9
    assert actions(table)[-1] == "version.failed"

    for name in Path(table.path.removeprefix("file:")).glob(".hoodie/timeline/20990101000000000.*"):
        name.unlink()  # the blocker cleared: asked again, resting on the same passing rehearsal
    change = approve(versions.version_change_request(table=table, user=change.requested_by, target=8),
                     django_capture_on_commit_callbacks)
    done = versions.version_change_run(change=change)
    assert done.is_completed, done.error
    assert done.result["rehearsal"]["passed"] and done.result["plan"]["done"] and done.result["plan"]["target"] == 8
    assert HudiTable.open(table.path).version == 8
    assert actions(table)[-1] == "version.completed"
    assert version_selectors.version_overview(table).current == 8


def test_versions_run_of_a_table_moved_meanwhile_is_stale(table: Any, django_capture_on_commit_callbacks: Any) -> None:
    change = approved(table, django_capture_on_commit_callbacks)
    HudiTable.open(table.path).maintenance().change_version(8, dry_run=False)  # by someone else
    done = versions.version_change_run(change=change)
    assert done.is_stale and "at table version 8 now, not 9" in done.error
    assert HudiTable.open(table.path).version == 8 and actions(table)[-1] == "version.stale"
