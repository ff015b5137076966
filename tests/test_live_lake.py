"""Sharing a table with Hudi writers (timeline/transactions.py): the table's lock taken at the
moments Hudi's table services take it, the timeline re-read under it before a plan is
published, every publish checked against it, providers Cleanline cannot take refused by name,
and failed-write rollback never touching a write whose heartbeat is alive."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.helpers import Lake, T, rewrite_history
from timeline import CleanConfig, HudiTable
from timeline.clean.executor import PlanInvalidated
from timeline.failed_writes import failed_writes, live_writes
from timeline.instant import Instant, State
from timeline.locks import (
    STORAGE_BASED_LOCK_PROVIDER,
    LockLost,
    LockUnavailable,
    UnsupportedLockProvider,
    lock_for_table,
)
from timeline.locks.live import LiveWriterUnlocked
from timeline.savepoint import create_savepoint
from timeline.storage.arrow import LocalStorage
from timeline.transactions import Transactions

OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "10",
       "hoodie.write.lock.storage.renew.interval.secs": "1",
       "hoodie.write.lock.wait_time_ms": "300"}


def occ_table(tmp_path: Path, props: dict[str, str] | None = None) -> tuple[Lake, HudiTable]:
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=8, extra_props=OCC if props is None else props)
    rewrite_history(lake, T[:6])
    return lake, HudiTable.open(str(tmp_path / "t"))


def timeline_files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir() if p.is_file())


def test_live_lake_a_clean_waits_for_the_table_lock_and_writes_nothing_while_another_holds_it(tmp_path: Path) -> None:
    _, table = occ_table(tmp_path)
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)  # reading never locks
    writer = lock_for_table(table.uri, OCC, owner="a-hudi-writer")
    writer.acquire(5)
    before = timeline_files(tmp_path)
    try:
        with pytest.raises(LockUnavailable, match="a-hudi-writer"):
            table.maintenance().schedule_clean(plan, config)
        with pytest.raises(LockUnavailable):
            table.maintenance().create_savepoint(T[5])
        assert timeline_files(tmp_path) == before
    finally:
        writer.release()
        writer.close()
    clean = table.maintenance().schedule_clean(plan, config)
    assert clean is not None
    (result,) = table.maintenance().run_cleans()
    assert result.deleted == len(plan.files_to_delete) > 0
    assert not (tmp_path / "t" / ".hoodie" / ".locks" / "table_lock.json").exists() or \
        b'"expired":true' in (tmp_path / "t" / ".hoodie" / ".locks" / "table_lock.json").read_bytes()


def test_live_lake_writer_options_choose_the_lock_when_hoodie_properties_do_not(tmp_path: Path) -> None:
    _, table = occ_table(tmp_path, props={})
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    writer = lock_for_table(table.uri, OCC, owner="a-hudi-writer")
    writer.acquire(5)
    try:
        # nothing configured: the writer's lock file on storage is found and honoured (timeline/locks/discovery.py)
        with pytest.raises(LockUnavailable, match="a-hudi-writer"):
            table.maintenance(options={"hoodie.write.lock.wait_time_ms": "300"}).schedule_clean(plan, config)
        with pytest.raises(LockUnavailable, match="a-hudi-writer"):
            table.maintenance(options=OCC).schedule_clean(plan, config)
    finally:
        writer.release()
        writer.close()


def test_live_lake_a_provider_cleanline_cannot_take_refuses_mutations_by_name(tmp_path: Path) -> None:
    dynamo = {**OCC, "hoodie.write.lock.provider": "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"}
    _, table = occ_table(tmp_path, props=dynamo)
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)  # reading still works
    assert plan.files_to_delete
    before = timeline_files(tmp_path)
    with pytest.raises(UnsupportedLockProvider, match="DynamoDBBasedLockProvider"):
        table.maintenance().schedule_clean(plan, config)
    with pytest.raises(UnsupportedLockProvider, match="DynamoDBBasedLockProvider"):
        table.maintenance().create_savepoint(T[5])
    assert timeline_files(tmp_path) == before


def test_live_lake_a_plan_invalidated_under_the_lock_is_not_published(tmp_path: Path) -> None:
    lake, table = occ_table(tmp_path)
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    doomed = plan.files_to_delete[0]
    # A writer savepoints the commit whose file the plan deletes, after the plan was made.
    lake.instant_file(Instant(doomed.base_instant_time, "savepoint", State.INFLIGHT))
    lake.instant_file(Instant(doomed.base_instant_time, "savepoint", State.COMPLETED, T[6]),
                      {"savepointedBy": "w", "savepointedAt": 0, "comments": "", "version": 1,
                       "partitionMetadata": {doomed.partition: {"partitionPath": doomed.partition,
                                                                "savepointDataFile": [doomed.file_name]}}})
    before = timeline_files(tmp_path)
    with pytest.raises(PlanInvalidated, match=f"{doomed.file_name}: savepoint"):
        table.maintenance().schedule_clean(plan, config)
    assert timeline_files(tmp_path) == before


def test_live_lake_a_rollback_after_the_plan_makes_it_stale(tmp_path: Path) -> None:
    lake, table = occ_table(tmp_path)
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    lake.instant_file(Instant("20261101009900000", "rollback", State.REQUESTED),
                      {"instantToRollback": {"commitTime": T[5], "action": "commit"}, "RollbackRequests": [],
                       "version": 1})
    with pytest.raises(PlanInvalidated, match="rollback 20261101009900000 was requested after the plan"):
        table.maintenance().schedule_clean(plan, config)


def test_live_lake_a_lease_lost_before_publishing_publishes_nothing(tmp_path: Path) -> None:
    _, table = occ_table(tmp_path)
    before = timeline_files(tmp_path)
    with pytest.raises(LockLost):  # noqa: PT012 - the publish inside the held lock is what fails
        with Transactions(table).state_change():
            lock_file = tmp_path / "t" / ".hoodie" / ".locks" / "table_lock.json"
            stolen = int(time.time() * 1000) + 60_000
            lock_file.write_bytes(f'{{"expired":false,"validUntil":{stolen},"owner":"someone-else"}}'.encode())
            create_savepoint(table, T[5])  # publishes through timeline/transition.py
    assert timeline_files(tmp_path) == before


def test_live_lake_failed_write_rollback_never_touches_a_write_whose_heartbeat_is_alive(tmp_path: Path) -> None:
    lake, table = occ_table(tmp_path, props={})  # EAGER: Hudi would take every pending write
    lake.instant_file(Instant(T[7], "commit", State.REQUESTED))
    lake.instant_file(Instant(T[7], "commit", State.INFLIGHT))
    lake.storage.write(f"{lake.base}/.hoodie/.heartbeat/{T[7]}", b"")
    table.reload()
    assert failed_writes(table) == []
    ((live, age),) = live_writes(table)
    assert live.requested_time == T[7] and age < 60
    (row,) = table.inspect.failed_writes()
    assert row.preview is None and "heartbeat is alive" in row.refusal
    stale = int(time.time() * 1000) + 121_000  # two missed intervals later it is a failed write
    assert [i.requested_time for i in failed_writes(table, now_ms=stale)] == [T[7]]


def test_live_lake_no_restore_while_a_write_it_would_roll_back_is_being_written(tmp_path: Path) -> None:
    from timeline import RestoreRefused

    lake, table = occ_table(tmp_path, props={})
    table.maintenance().create_savepoint(T[3])
    lake.instant_file(Instant(T[7], "commit", State.REQUESTED))
    lake.storage.write(f"{lake.base}/.hoodie/.heartbeat/{T[7]}", b"")
    before = timeline_files(tmp_path)
    with pytest.raises(LiveWriterUnlocked, match=f"commit {T[7]}"):  # no lock known beside a live writer
        table.maintenance().restore(T[3])
    with pytest.raises(RestoreRefused, match=f"{T[7]} is still being written"):
        table.maintenance(writers_stopped=True).restore(T[3])
    with pytest.raises(RestoreRefused, match="still being written"):
        table.inspect.restore_preview(T[3])
    assert timeline_files(tmp_path) == before


def test_live_lake_cli_takes_the_lock_its_hoodie_conf_names(tmp_path: Path) -> None:
    import subprocess
    import sys

    cleanline = Path(sys.executable).with_name("cleanline")
    occ_table(tmp_path, props={})
    path = str(tmp_path / "t")
    conf = [arg for key, value in OCC.items() for arg in ("--hoodie-conf", f"{key}={value}")]
    writer = lock_for_table(f"file:{path}", OCC, owner="a-hudi-writer")
    writer.acquire(5)
    before = timeline_files(tmp_path)
    try:
        held = subprocess.run([str(cleanline), *conf, "savepoint", "create", path, "--instant", T[5]],
                              capture_output=True, text=True, timeout=120)
        assert held.returncode == 2 and "a-hudi-writer" in held.stderr, held.stderr
        assert timeline_files(tmp_path) == before
    finally:
        writer.release()
        writer.close()
    done = subprocess.run([str(cleanline), *conf, "savepoint", "create", path, "--instant", T[5]],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    bad = subprocess.run([str(cleanline), "--hoodie-conf", "novalue", "timeline", path], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_live_lake_revalidate_gives_the_reasons_schedule_would_refuse_with(tmp_path: Path) -> None:
    lake, table = occ_table(tmp_path)
    config = CleanConfig(commits_retained=2)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    assert table.maintenance().revalidate(plan) == []
    lake.instant_file(Instant("20261101009900000", "rollback", State.REQUESTED),
                      {"instantToRollback": {"commitTime": T[5], "action": "commit"}, "RollbackRequests": [],
                       "version": 1})
    assert table.maintenance().revalidate(plan) == ["rollback 20261101009900000 was requested after the plan was made"]
