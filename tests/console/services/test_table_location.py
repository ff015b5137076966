"""A registered table whose folder is swapped for a symbolic link after registration: every run
resolves the table's location again before its first change and refuses a table that moved
(issue: hardening, round two, finding 1). The refusal is marked on the table's page and audited."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from console import services
from console.models import AuditEvent, CleanPlan, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from tests.console.helpers import SHORT_RETENTION, login, person, queued_outcome, swap_when_deleted
from tests.helpers import Lake, tree_snapshot
from timeline import HudiTable, State
from timeline.storage.arrow import LocalStorage

TABLE = "sample_table/cow/v9_txns_simple_nometa"


def swap_for_link(folder: Path, elsewhere: Path) -> None:
    """What someone who can write in the lake root does: move the table out of the roots and
    leave a symbolic link to it where it was registered."""
    elsewhere.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(folder), str(elsewhere))
    folder.symlink_to(elsewhere, target_is_directory=True)


@pytest.fixture
def layout(settings, tmp_path: Path, table_copy) -> tuple[Path, Path]:
    """A table copied under the allowed root, and where the swap will move it (outside it)."""
    root = tmp_path / "root"
    root.mkdir()
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    folder = root / "trips"
    shutil.move(str(table_copy(TABLE)), str(folder))
    return folder, tmp_path / "outside" / "trips"


def test_table_location_swapped_folder_is_never_cleaned_by_a_live_worker(layout, start_worker) -> None:
    from console.tasks import run_clean_plan

    folder, elsewhere = layout
    start_worker()
    table = services.table_register(path=str(folder), user=None)  # the worker runs the sync it queues
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)  # and the build
    assert queued_outcome(CleanPlan.objects.get(pk=plan.pk).task_id, 300) == "draft"
    plan = services.plan_approve(plan=CleanPlan.objects.get(pk=plan.pk), user=None)
    assert plan.status == ApprovalStatus.APPROVED and plan.files_to_delete > 0

    swap_for_link(folder, elsewhere)
    before = tree_snapshot(elsewhere)
    run_clean_plan.delay(plan.pk).get(timeout=300)

    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.FAILED and "now resolves to" in plan.error
    assert tree_snapshot(elsewhere) == before  # nothing outside the roots deleted (or written)
    table.refresh_from_db()
    assert str(elsewhere) in table.location_error
    event = AuditEvent.objects.get(action="table.location.refused", table=table)
    assert str(elsewhere) in event.result


def test_table_location_every_change_is_refused_after_the_swap(db, layout) -> None:
    folder, elsewhere = layout
    table = services.table_register(path=str(folder), user=None)
    services.table_sync(table=table)
    instant = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").first()
    assert instant is not None
    draft = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    assert draft.status == ApprovalStatus.DRAFT
    swap_for_link(folder, elsewhere)
    before = tree_snapshot(elsewhere)

    with pytest.raises(ValidationError, match="now resolves to"):
        services.savepoint_create(table=table, user=None, instant_time=instant.requested_time, comment="")
    with pytest.raises(ValidationError, match="now resolves to"):
        services.metadata_table_drop(table=table, user=None, confirm_name=table.name)
    job = Job.objects.create(table=table, kind=Job.Kind.RESTORE, target=instant.requested_time)
    assert services.job_run(job=job).status == JobStatus.FAILED
    with pytest.raises(ValidationError, match="now resolves to"):
        services.plan_approve(plan=draft, user=None)
    with pytest.raises(Exception, match="now resolves to"):
        services.table_sync(table=table)

    assert tree_snapshot(elsewhere) == before
    assert AuditEvent.objects.filter(action="table.location.refused", table=table).count() >= 4
    page = login("viewer").get(f"/tables/{table.pk}/").content.decode()
    assert 'id="location-moved"' in page and str(elsewhere) in page


def test_table_location_a_table_moved_back_is_unmarked(db, layout) -> None:
    folder, elsewhere = layout
    table = services.table_register(path=str(folder), user=None)
    swap_for_link(folder, elsewhere)
    with pytest.raises(Exception, match="now resolves to"):
        services.table_sync(table=table)
    folder.unlink()
    shutil.move(str(elsewhere), str(folder))
    services.table_sync(table=table)
    assert Table.objects.get(pk=table.pk).location_error == ""


def test_table_location_outside_the_roots_now_is_refused(db, settings, layout, tmp_path: Path) -> None:
    """A table registered under a root that the settings no longer allow."""
    folder, _ = layout
    table = services.table_register(path=str(folder), user=None)
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path / "another-root")]
    with pytest.raises(Exception, match="outside the allowed roots"):
        services.table_sync(table=table)



def replace_folder(folder: Path) -> None:
    """The table's folder restored from a backup: the same path and files, another folder (inode)."""
    aside = folder.with_name(folder.name + ".old")
    folder.rename(aside)
    shutil.copytree(aside, folder, symlinks=True)
    shutil.rmtree(aside)


def test_table_location_a_replaced_folder_is_recorded_again_by_an_admin(db, layout) -> None:
    folder, _ = layout
    table = services.table_register(path=str(folder), user=None)
    registered = table.folder_identity
    replace_folder(folder)
    with pytest.raises(Exception, match="is not the folder registered"):
        services.table_sync(table=table)
    admin, viewer = login("admin"), login("viewer")
    assert 'id="location-rerecord"' not in viewer.get(f"/tables/{table.pk}/").content.decode()
    assert 'id="location-rerecord"' in admin.get(f"/tables/{table.pk}/").content.decode()

    response = admin.post(f"/tables/{table.pk}/location/rerecord")

    assert response.status_code == 302
    table.refresh_from_db()
    assert table.folder_identity == f"{folder.stat().st_dev}:{folder.stat().st_ino}" != registered
    assert table.location_error == ""
    event = AuditEvent.objects.get(action="table.location.rerecorded", table=table)
    assert event.parameters["before"] == registered and event.parameters["after"] == table.folder_identity
    services.table_sync(table=table)  # runs go on in the folder recorded
    assert 'id="location-rerecord"' not in admin.get(f"/tables/{table.pk}/").content.decode()


def test_table_location_a_link_or_a_folder_outside_the_roots_is_not_recorded_again(db, settings, layout,
                                                                                  tmp_path: Path) -> None:
    folder, elsewhere = layout
    table = services.table_register(path=str(folder), user=None)
    registered = table.folder_identity
    swap_for_link(folder, elsewhere)
    with pytest.raises(Exception, match="now resolves to"):
        services.table_sync(table=table)
    admin = login("admin")
    assert 'id="location-rerecord"' not in admin.get(f"/tables/{table.pk}/").content.decode()
    with pytest.raises(ValidationError, match="Nothing to record again"):
        services.table_location_rerecord(table=Table.objects.get(pk=table.pk), user=None)
    folder.unlink()
    shutil.move(str(elsewhere), str(folder))
    replace_folder(folder)  # replaced and, by the settings now, outside the roots
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path / "another-root")]
    with pytest.raises(Exception, match="outside the allowed roots"):
        services.table_sync(table=table)
    with pytest.raises(ValidationError, match="Nothing to record again"):
        services.table_location_rerecord(table=Table.objects.get(pk=table.pk), user=None)
    assert Table.objects.get(pk=table.pk).folder_identity == registered
    assert not AuditEvent.objects.filter(action="table.location.rerecorded").exists()


# A swap during a run (issue 38, finding 1): every change of the run goes through the folder it
# opened (timeline/storage/anchor.py); the swap changes nothing outside, the run fails and says why.

def big_lake(folder: Path) -> None:
    """A table whose clean (SHORT_RETENTION) deletes 4,000 files."""
    lake = Lake(LocalStorage(), str(folder), version=8)
    for t in [f"2026110100{i:02d}00000" for i in range(4)]:
        lake.commit(t, {f"p={p}": [lake.base_file(f"p={p}", f"g{g}", t, size=10) for g in range(100)]
                        for p in range(20)})


def test_table_location_swap_mid_clean_on_a_live_worker_changes_nothing_outside(settings, tmp_path: Path,
                                                                                start_worker) -> None:
    from console.tasks import run_clean_plan

    root, copy = tmp_path / "root", tmp_path / "outside" / "big"
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    folder = root / "big"
    big_lake(folder)
    start_worker()
    table = services.table_register(path=str(folder), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    assert queued_outcome(CleanPlan.objects.get(pk=plan.pk).task_id, 300) == "draft"
    plan = services.plan_approve(plan=CleanPlan.objects.get(pk=plan.pk), user=None)
    doomed = [Path(f.path.removeprefix("file:")) for f in stored_plan(plan).deletes()]  # type: ignore[union-attr]
    assert len(doomed) == 4000
    shutil.copytree(folder, copy)  # the attacker's copy, outside the roots, made beforehand
    before = tree_snapshot(copy)

    watcher, moved = swap_when_deleted(doomed[::100], folder, copy)
    run_clean_plan.delay(plan.pk).get(timeout=300, propagate=False)
    watcher.join(timeout=30)
    assert moved, "the swap must happen during the run for this test to mean anything"

    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.FAILED and "the table's folder moved" in plan.error, plan.error
    assert tree_snapshot(copy) == before  # nothing deleted outside the roots, no .clean written there
    assert "the table's folder moved" in AuditEvent.objects.get(action="clean.run.failed", table=table).result
    folder.unlink()
    moved[0].rename(folder)  # the operator puts the folder back: the clean is pending there and runs again
    lake = HudiTable.open(str(folder))
    (pending,) = lake.timeline.cleans().pending()
    assert not lake.timeline.cleans().completed()
    lake.ensure_located(roots=[str(root)])
    (result,) = lake.maintenance(writers_stopped=True).run_cleans()
    assert result.failed == 0 and not any(p.exists() for p in doomed)


def test_table_location_swap_mid_rollback_on_a_live_worker_changes_nothing_outside(settings, tmp_path: Path,
                                                                                   start_worker) -> None:
    from console.tasks import run_job

    root, copy = tmp_path / "root", tmp_path / "outside" / "lake"
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    folder = root / "lake"
    lake = Lake(LocalStorage(), str(folder), version=8)
    times = ["20261101000000000", "20261101000100000"]
    lake.commit(times[0], {"p=0": [lake.base_file("p=0", f"g{g}", times[0], size=10) for g in range(10)]})
    files = {f"p={p}": [lake.base_file(f"p={p}", f"g{g}", times[1], size=10) for g in range(1000)] for p in range(4)}
    lake.commit(times[1], files, state=State.INFLIGHT)  # a failed write of 4,000 files
    written = [folder / p / name for p, names in files.items() for name in names]
    assert all(p.exists() for p in written)
    start_worker()
    table = services.table_register(path=str(folder), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    shutil.copytree(folder, copy)
    before = tree_snapshot(copy)

    watcher, moved = swap_when_deleted(written[::100], folder, copy)
    job = services.job_request(table=table, user=None, kind=Job.Kind.ROLLBACK, target=times[1],
                               confirm_name=times[1], enqueue=False)
    run_job.delay(job.pk).get(timeout=300, propagate=False)
    watcher.join(timeout=30)
    assert moved, "the swap must happen during the run for this test to mean anything"

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "the table's folder moved" in job.error, job.error
    assert tree_snapshot(copy) == before
    assert "the table's folder moved" in AuditEvent.objects.get(action="rollback.failed", table=table).result
    folder.unlink()
    moved[0].rename(folder)  # back: the write is still there to roll back, and the rollback goes on
    lake_table = HudiTable.open(str(folder))
    assert lake_table.timeline.find(times[1]) is not None
    lake_table.ensure_located(roots=[str(root)])
    lake_table.maintenance(writers_stopped=True).rollback(times[1])
    assert lake_table.reload().timeline.find(times[1]) is None and not any(p.exists() for p in written)


def test_table_location_swap_mid_orphan_repair_on_a_live_worker_changes_nothing_outside(
        settings, tmp_path: Path, start_worker) -> None:
    from console.services import health

    root, copy = tmp_path / "root", tmp_path / "outside" / "lake"
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    folder = root / "lake"
    lake = Lake(LocalStorage(), str(folder), version=8)
    lake.commit("20261101000000000", {"p=0": [lake.base_file("p=0", f"g{g}", "20261101000000000") for g in range(10)]})
    orphans = [folder / "p=0" / lake.base_file("p=0", f"orphan{k}", "20261102000000000", size=10)
               for k in range(20_000)]
    old = 1_000_000_000
    for item in folder.rglob("*"):
        os.utime(item, (old, old))
    start_worker()
    table = services.table_register(path=str(folder), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    repair = health.repair_request(table=table, user=person("operator", "operator"), kind="orphan-files")
    assert repair.changes == len(orphans)
    shutil.copytree(folder, copy)
    before = tree_snapshot(copy)

    watcher, moved = swap_when_deleted(orphans[::500], folder, copy)
    health.repair_approve(repair=repair, user=person("admin2", "admin"))  # its run is sent on commit, to the worker
    repair.refresh_from_db()
    queued_outcome(repair.task_id, 300)
    watcher.join(timeout=30)
    assert moved, "the swap must happen during the run for this test to mean anything"

    repair.refresh_from_db()
    assert repair.status == ApprovalStatus.FAILED and "the table's folder moved" in repair.error, repair.error
    assert tree_snapshot(copy) == before
    assert "the table's folder moved" in AuditEvent.objects.get(action="repair.failed", table=table).result
    folder.unlink()
    moved[0].rename(folder)
    lake_table = HudiTable.open(str(folder))
    lake_table.ensure_located(roots=[str(root)])
    maintenance = lake_table.maintenance(writers_stopped=True)
    # the rest, once the folder is back
    assert maintenance.repair(maintenance.plan_repair("orphan-files"), dry_run=False).ok
    assert not any(p.exists() for p in orphans)
