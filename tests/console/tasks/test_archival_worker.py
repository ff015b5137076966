"""Archival on real services: a Celery worker process on Redis runs it. A copy of a real table
whose writer options keep 2 to 3 commits is registered (synced on the worker), an admin asks for
its archival, a second admin approves it, the worker archives under the table's lock: the
active timeline is shorter, the archived timeline holds the moved instants and the audit log has
each step. An approved plan that the timeline no longer gives is marked stale by the worker,
with the library's reason, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from console import services
from console.models import Archival, AuditEvent, Table, TableLock
from console.models_approvals import ApprovalStatus
from tests.console.helpers import (
    ARCHIVABLE_TABLE,
    KEEP_FEW,
    completed_commits,
    hoodie_files,
    person,
    queued_outcome,
    wait_for,
)
from timeline import HudiTable


@pytest.fixture
def on_worker(start_worker, settings, tmp_path: Path, table_copy) -> Table:
    """A worker, and the table registered (its first sync run by the worker) with KEEP_FEW."""
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = table_copy(ARCHIVABLE_TABLE)
    start_worker()
    table = services.table_register(path=str(path), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    table.refresh_from_db()
    return services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                          auto_max_bytes=1000, write_options=KEEP_FEW)


def settled(archival: Archival) -> Archival:
    """The archival once the worker is done with it (neither approved nor running)."""
    wait_for(lambda: Archival.objects.get(pk=archival.pk).status not in (ApprovalStatus.APPROVED,
                                                                         ApprovalStatus.RUNNING),
             120, "the worker to run the archival")
    archival.refresh_from_db()
    return archival


def test_archival_worker_request_second_admin_approves_worker_archives(on_worker: Table) -> None:
    table = on_worker
    before = len(HudiTable.open(table.path).timeline)
    assert table.active_instants == before == 11 and table.archivable_instants == 9
    ada, bob = person("ada", "admin"), person("bob", "admin")
    archival = services.archival_request(table=table, user=ada)
    assert archival.status == ApprovalStatus.DRAFT and archival.task_id == ""
    services.archival_approve(archival=archival, user=bob)  # queues the run on commit
    archival = settled(archival)
    assert archival.status == ApprovalStatus.COMPLETED, archival.error or archival.stale_reason
    assert archival.task_id and archival.started_at and archival.finished_at
    lake = HudiTable.open(table.path)
    assert len(lake.timeline) == before - 9 == archival.result["active_after"]
    assert {i.requested_time for i in lake.inspect.archived_instants()} >= set(archival.expected)
    # the worker syncs the table once the archival is recorded completed
    wait_for(lambda: Table.objects.get(pk=table.pk).active_instants == 2, 60, "the sync after the archival")
    assert table.instants.filter(archived=True).count() == 9
    assert not TableLock.objects.filter(table=table).exists()
    audited = list(AuditEvent.objects.filter(table=table, action__startswith="archival.").order_by("pk")
                   .values_list("action", "username"))
    assert audited == [("archival.requested", "ada"), ("archival.approved", "bob"), ("archival.completed", "system")]


def test_archival_worker_marks_a_plan_the_timeline_no_longer_gives_stale(on_worker: Table) -> None:
    table = on_worker
    archival = services.archival_request(table=table, user=person("ada", "admin"))
    # since the request a savepoint holds back everything after the first commit
    held = completed_commits(table)[1]
    HudiTable.open(table.path).maintenance(options=KEEP_FEW).create_savepoint(held, user="ops", comment="hold")
    files = hoodie_files(table)
    services.archival_approve(archival=archival, user=person("bob", "admin"))
    archival = settled(archival)
    assert archival.status == ApprovalStatus.STALE and "plan it again" in archival.stale_reason
    assert hoodie_files(table) == files, "nothing written"
    assert AuditEvent.objects.filter(table=table, action="archival.stale").count() == 1
    assert not AuditEvent.objects.filter(table=table, action="archival.completed").exists()
