"""Hardening seen from the console: registration checks roots before any store is touched,
hostile plans on the timeline are refused with nothing deleted, rollbacks only of failed
writes, savepoints and restores that would lose data are refused, corrupt instants stop the
work. Each test reproduces a case the hostile test of the console found."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from console import services
from console.models import AuditEvent, CleanPlan, Job, JobStatus, SyncStatus, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from tests.console.helpers import SHORT_RETENTION, login, person
from tests.helpers import fake_failed_write
from timeline import HudiTable, metadata
from timeline.instant import Instant as LakeInstant
from timeline.instant import State

pytestmark = pytest.mark.django_db


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    target = tmp_path.parent / f"{tmp_path.name}-elsewhere" / "victim.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"keep me")
    return target


def base(table: Table) -> Path:
    return Path(table.path.removeprefix("file:"))


def write_state(table: Table, instant: LakeInstant, content: dict) -> None:
    lake = HudiTable.open(table.path)
    data = metadata.encode(content, action=instant.action, state=instant.state, layout=lake.config.layout_version)
    (Path(lake.timeline.folder) / instant.file_name(lake.config.layout_version)).write_bytes(data)


# Registration (items 2 and 11)

def test_hardening_register_symlink_out_of_the_root_is_refused(settings, tmp_path: Path, table_copy) -> None:
    outside = table_copy("sample_table/cow/v9_txns_simple_nometa")
    root = tmp_path / "root"
    root.mkdir()
    (root / "trips").symlink_to(outside, target_is_directory=True)
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    with pytest.raises(ValidationError, match="outside the allowed roots"):
        services.table_register(path=str(root / "trips"), user=None)
    assert not Table.objects.exists()


def test_hardening_register_symlink_inside_the_root_is_stored_resolved(settings, tmp_path: Path, table_copy) -> None:
    real = table_copy("sample_table/cow/v9_txns_simple_nometa")
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    table = services.table_register(path=str(tmp_path / "alias"), user=None)
    assert table.path == f"file:{real.resolve()}"


@pytest.mark.parametrize("path, message", [
    ("s3://bucket/lake/trips", "outside the allowed roots"),
    ("hdfs://namenode:8020/lake/trips", "outside the allowed roots"),
    ("ftp://host/lake/trips", "unsupported scheme"),
    ("http://host/lake/trips", "unsupported scheme"),
])
def test_hardening_register_other_schemes_never_reach_a_store(settings, tmp_path: Path, no_store: list[str],
                                                               path: str, message: str) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    with pytest.raises(ValidationError, match=message):
        services.table_register(path=path, user=None)
    page = login("admin").post(reverse("console:register"), {"path": path})
    assert page.status_code == 400 and message.encode() in page.content
    assert no_store == [] and not Table.objects.exists()


# Paths from the lake (item 1)

def test_hardening_hostile_pending_clean_run_from_the_console_deletes_nothing(
        table: Table, victim: Path, django_capture_on_commit_callbacks) -> None:
    lake = HudiTable.open(table.path)
    own = next(s for s in lake.file_system_view().latest_slices() if s.base_file is not None)
    own_path = base(table) / own.partition / own.base_file.name  # type: ignore[union-attr]
    time = lake.new_instant_time()
    write_state(table, LakeInstant(time, "clean", State.REQUESTED), {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2, "extraMetadata": None,
        "filePathsToBeDeletedPerPartition": {own.partition: [
            {"filePath": f"file:{own_path}", "isBootstrapBaseFile": False},
            {"filePath": f"file:{victim}", "isBootstrapBaseFile": False}]},
        "partitionsToBeDeleted": [f"../../{victim.parent.name}"]})
    with django_capture_on_commit_callbacks(execute=True):
        login("admin").post(reverse("console:clean_run_pending", args=[table.pk, time]))
    job = Job.objects.get(kind="clean")
    assert job.status == JobStatus.FAILED and "nothing was deleted" in job.error and "victim.txt" in job.error
    assert victim.exists() and own_path.exists()


def test_hardening_hostile_pending_rollback_is_shown_and_refused(table: Table, victim: Path) -> None:
    failed = "20990101000000000"
    fake_failed_write(base(table), failed, markers=True)
    write_state(table, LakeInstant("20990101500000000", "rollback", State.REQUESTED), {
        "instantToRollback": {"commitTime": failed, "action": "commit"}, "version": 1,
        "RollbackRequests": [{"partitionPath": "", "fileId": "", "latestBaseInstant": "",
                              "filesToBeDeleted": [str(victim)], "logBlocksToBeDeleted": {}}]})
    admin = login("admin")
    page = admin.get(reverse("console:failed_writes", args=[table.pk]))
    assert page.status_code == 200 and b"cannot be rolled back" in page.content and b"victim.txt" in page.content
    admin.post(reverse("console:rollback_run", args=[table.pk]), {"target": failed, "confirm": failed})
    assert not Job.objects.exists() and victim.exists()
    assert AuditEvent.objects.filter(action="rollback.refused", table=table).exists()


# Rollback only of failed writes (item 4)

def test_hardening_rollback_of_a_completed_commit_is_refused(table: Table) -> None:
    lake = HudiTable.open(table.path)
    older = lake.timeline.commits().completed().instants[-2].requested_time
    before = sorted(p for p in base(table).rglob("*.parquet"))
    response = login("admin").post(reverse("console:rollback_run", args=[table.pk]),
                                   {"target": older, "confirm": older})
    assert response.status_code == 302 and not Job.objects.exists()
    assert sorted(p for p in base(table).rglob("*.parquet")) == before
    assert HudiTable.open(table.path).timeline.find(older).is_completed


# A savepoint between approval and run, and the restore after it (item 3)

def test_hardening_savepoint_refused_while_an_approved_clean_would_delete_its_files(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    plan = services.plan_build(plan=services.plan_request(
        table=table, user=person("op", "operator"),
        overrides={"policy": "KEEP_LATEST_FILE_VERSIONS", "file_versions_retained": 1,
                   "allow_short_retention": True}))
    doomed = next(f for f in stored_plan(plan).deletes() if not f.file_name.startswith("."))  # type: ignore[union-attr]
    assert doomed is not None
    plan = services.plan_approve(plan=plan, user=person("boss", "admin"))
    assert plan.status == ApprovalStatus.APPROVED
    with pytest.raises(ValidationError, match="would delete"):
        services.savepoint_create(table=table, user=None, instant_time=doomed.base_instant, comment="")
    assert AuditEvent.objects.filter(action="savepoint.refused").exists()
    plan = services.plan_run(plan=plan)
    assert plan.status == ApprovalStatus.COMPLETED
    assert not HudiTable.open(table.path).timeline.savepoints()


def test_hardening_restore_of_a_damaged_savepoint_is_refused_not_verified(table: Table,
                                                                           django_capture_on_commit_callbacks) -> None:
    lake = HudiTable.open(table.path)
    k = lake.timeline.commits().completed().instants[-2].requested_time
    services.savepoint_create(table=table, user=None, instant_time=k, comment="")
    held = metadata_files(table, k)
    (base(table) / held[0]).unlink()  # the damage a clean did in the hostile test
    with django_capture_on_commit_callbacks(execute=True):
        login("admin").post(reverse("console:restore_run", args=[table.pk]), {"target": k, "confirm": table.name})
    job = Job.objects.get(kind="restore")
    assert job.status == JobStatus.FAILED and "no longer exist" in job.error and job.result.get("verified") is not True


def metadata_files(table: Table, savepoint: str) -> list[str]:
    lake = HudiTable.open(table.path)
    content = lake.read_instant(lake.timeline.savepoints().find(savepoint)) or {}
    return [f"{p}/{n}" if p else n for p, m in content["partitionMetadata"].items() for n in m["savepointDataFile"]]


# Corrupt input stops the work (item 5)

def test_hardening_truncated_latest_commit_stops_planning_and_cleaning(table: Table) -> None:
    lake = HudiTable.open(table.path)
    latest = Path(lake.timeline.path_of(lake.timeline.commits().completed().last()))
    latest.write_bytes(latest.read_bytes()[:40])
    from console.tasks import build_clean_plan, sync_table

    sync_table.apply(args=[table.pk])
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.FAILED and latest.name in table.sync_error
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    build_clean_plan.apply(args=[plan.pk])
    plan = CleanPlan.objects.get(pk=plan.pk)
    assert plan.status == ApprovalStatus.FAILED and latest.name in plan.error
    assert not HudiTable.open(table.path).timeline.cleans()


def test_hardening_bad_properties_checksum_without_backup_stops_the_table(table: Table) -> None:
    props = base(table) / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    props.write_text(text.replace("hoodie.table.checksum=", "hoodie.table.checksum=1"))
    with pytest.raises(ValidationError, match="does not match"):
        services.savepoint_create(table=table, user=None,
                                  instant_time=table.instants.filter(action="commit").first().requested_time,
                                  comment="")


def test_plan_that_deletes_nothing_shows_nothing_to_clean_and_cannot_be_approved(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    plan = services.plan_build(plan=services.plan_request(table=table, user=person("op", "operator"),
                                                          overrides={"commits_retained": table.instants.count()}))
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete == 0
    page = login("admin").get(reverse("console:plan", args=[table.pk, plan.pk]))
    assert b"nothing to clean" in page.content and b"Approve and run" not in page.content
    with pytest.raises(ValidationError, match="Nothing to clean"):
        services.plan_approve(plan=plan, user=person("boss", "admin"))
    assert not HudiTable.open(table.path).timeline.cleans()
