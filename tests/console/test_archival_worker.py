"""Archival on real services: a Celery worker process on Redis runs it. A copy of a real table
whose writer options keep 2 to 3 commits is registered (synced on the worker), an admin asks for
its archival, a second admin approves it, the worker archives under the table's lock: the
active timeline is shorter, the archived timeline holds the moved instants and the audit log has
each step. An approved plan that the timeline no longer gives is marked stale by the worker,
with the library's reason, and nothing is written."""

from __future__ import annotations

from pathlib import Path

from console import services
from console.models import Archival, ArchivalStatus, AuditEvent, Table, TableLock
from tests.console.helpers import person, queued_outcome, wait_for
from timeline import HudiTable

SMALL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}


def registered_on_worker(path: Path) -> Table:
    table = services.table_register(path=str(path), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    table.refresh_from_db()
    return services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                          auto_max_bytes=1000, write_options=SMALL)


def settled(archival: Archival) -> bool:
    return Archival.objects.get(pk=archival.pk).status not in (ArchivalStatus.APPROVED, ArchivalStatus.RUNNING)


def state_files(path: Path) -> dict[str, int]:
    root = path / ".hoodie"
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def test_archival_worker_request_second_admin_approves_worker_archives(start_worker, settings, tmp_path: Path,
                                                                       table_copy) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = table_copy("sample_table/cow/v9_txns_nonpart_nometa")
    start_worker()
    table = registered_on_worker(path)
    before = len(HudiTable.open(table.path).timeline)
    assert table.active_instants == before == 11 and table.archivable_instants == 9
    ada, bob = person("ada", "admin"), person("bob", "admin")
    archival = services.archival_request(table=table, user=ada)
    assert archival.status == ArchivalStatus.PENDING and archival.task_id == ""
    services.archival_approve(archival=archival, user=bob)  # queues the run on commit
    wait_for(lambda: settled(archival), 120, "the worker to run the archival")
    archival.refresh_from_db()
    assert archival.status == ArchivalStatus.COMPLETED, archival.error or archival.stale_reason
    assert archival.task_id and archival.started_at and archival.finished_at
    lake = HudiTable.open(table.path)
    assert len(lake.timeline) == before - 9 == archival.result["active_after"]
    assert {i.requested_time for i in lake.inspect.archived_instants()} >= set(archival.expected)
    table.refresh_from_db()
    assert table.active_instants == 2 and table.instants.filter(archived=True).count() == 9
    assert not TableLock.objects.filter(table=table).exists()
    audited = list(AuditEvent.objects.filter(table=table, action__startswith="archival.").order_by("pk")
                   .values_list("action", "username"))
    assert audited == [("archival.requested", "ada"), ("archival.approved", "bob"), ("archival.completed", "system")]


def test_archival_worker_marks_a_plan_the_timeline_no_longer_gives_stale(start_worker, settings, tmp_path: Path,
                                                                          table_copy) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = table_copy("sample_table/cow/v9_txns_nonpart_nometa")
    start_worker()
    table = registered_on_worker(path)
    archival = services.archival_request(table=table, user=person("ada", "admin"))
    commits = [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]
    # since the request a savepoint holds back everything after the first commit
    HudiTable.open(table.path).maintenance(options=SMALL).create_savepoint(commits[1], user="ops", comment="hold")
    files = state_files(path)
    services.archival_approve(archival=archival, user=person("bob", "admin"))
    wait_for(lambda: settled(archival), 120, "the worker to check the archival")
    archival.refresh_from_db()
    assert archival.status == ArchivalStatus.STALE and "plan it again" in archival.stale_reason
    assert state_files(path) == files, "nothing written"
    assert AuditEvent.objects.filter(table=table, action="archival.stale").count() == 1
    assert not AuditEvent.objects.filter(table=table, action="archival.completed").exists()
