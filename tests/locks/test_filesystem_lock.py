"""Hudi's FileSystemBasedLockProvider (timeline/locks/filesystem.py): the lock file
`<hoodie.write.lock.filesystem.path or .hoodie>/lock`, created exclusively; a Hudi writer's file
is respected until it expires (`hoodie.write.lock.filesystem.expire` minutes from its
modification time); Cleanline deletes only a lock file whose content is still its own."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline import HudiTable
from timeline.locks import LockLost, LockUnavailable, UnsupportedLockProvider, lock_for_table
from timeline.locks.filesystem import FILESYSTEM_BASED_LOCK_PROVIDER, FileSystemBasedLock
from timeline.locks.live import LiveWriterUnlocked
from timeline.storage.arrow import LocalStorage
from timeline.storage.s3 import S3Settings, S3Storage

FS = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
      "hoodie.write.lock.provider": FILESYSTEM_BASED_LOCK_PROVIDER,
      "hoodie.write.lock.filesystem.expire": "1",
      "hoodie.write.lock.wait_time_ms": "300"}
# What Hudi's FileSystemBasedLockProvider.initLockInfo writes (LockInfo.toString, shortened).
HUDI_LOCK_INFO = b'{"lockCreateTime":"2026-11-27 08:00:00.000","lockThreadName":"main","lockStacksInfo":[]}'


def test_filesystem_lock_lives_where_hudi_puts_it(tmp_path: Path) -> None:
    default = lock_for_table(str(tmp_path), FS)
    assert default.path.endswith(f"{tmp_path}/.hoodie/lock")
    elsewhere = lock_for_table(str(tmp_path), {**FS, "hoodie.write.lock.filesystem.path": str(tmp_path / "locks")})
    assert elsewhere.path.endswith(f"{tmp_path}/locks/lock")
    with pytest.raises(UnsupportedLockProvider, match="atomic exclusive create"):
        FileSystemBasedLock(S3Storage(bucket="b", settings=S3Settings("http://127.0.0.1:9", "us-east-1")), "/b/t")


def test_filesystem_lock_respects_a_hudi_writers_lock_file_until_it_expires(tmp_path: Path) -> None:
    lock_file = tmp_path / ".hoodie" / "lock"
    lock_file.parent.mkdir(parents=True)
    lock_file.write_bytes(HUDI_LOCK_INFO)
    lock = FileSystemBasedLock.from_properties(LocalStorage(), str(tmp_path), FS)
    with pytest.raises(LockUnavailable, match="lockThreadName"):
        lock.acquire(0.1)
    assert lock_file.read_bytes() == HUDI_LOCK_INFO
    old = time.time() - 61  # past 1 minute: Hudi's checkIfExpired deletes it and takes the lock
    os.utime(lock_file, (old, old))
    lock.acquire(0.1)
    assert b"cleanline-" + lock.owner.encode() in lock_file.read_bytes()
    lock.check_held(min_remaining_seconds=0)
    lock.release()
    assert not lock_file.exists()


def test_filesystem_lock_release_leaves_another_owners_file_alone(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    lock = FileSystemBasedLock.from_properties(LocalStorage(), str(tmp_path), FS)
    lock.acquire(0.1)
    lock_file = tmp_path / ".hoodie" / "lock"
    lock_file.write_bytes(HUDI_LOCK_INFO)  # ours expired and a Hudi writer took it over
    with pytest.raises(LockLost):
        lock.check_held(min_remaining_seconds=0)
    with pytest.raises(LockLost, match="another owner"):
        lock.release()
    assert lock_file.read_bytes() == HUDI_LOCK_INFO


def test_filesystem_lock_contenders_in_threads_exclude_each_other(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    held: list[tuple[float, float]] = []

    def contend() -> None:
        lock = FileSystemBasedLock.from_properties(LocalStorage(), str(tmp_path), FS)
        lock.retry_wait_seconds = 0.01
        for _ in range(5):
            lock.acquire(20)
            start = time.monotonic()
            time.sleep(0.01)
            held.append((start, time.monotonic()))
            lock.release()

    threads = [threading.Thread(target=contend) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ordered = sorted(held)
    assert len(ordered) == 20 and all(b[0] >= a[1] for a, b in zip(ordered, ordered[1:]))


def test_filesystem_lock_is_taken_by_every_change(v9_table: Path) -> None:
    table = HudiTable.open(str(v9_table))
    older = table.timeline.writes().completed().instants[-3].requested_time
    lock_file = v9_table / ".hoodie" / "lock"
    lock_file.write_bytes(HUDI_LOCK_INFO)
    before = tree_snapshot(v9_table)
    with pytest.raises(LockUnavailable, match="lockThreadName"):
        table.maintenance(options=FS).create_savepoint(older)
    assert tree_snapshot(v9_table) == before
    lock_file.unlink()
    maintenance = table.maintenance(options=FS)
    maintenance.create_savepoint(older)
    assert maintenance.decisions[0].locked and not lock_file.exists()


def test_filesystem_in_process_lock_is_no_lock_another_process_sees(v9_table: Path) -> None:
    in_process = {**FS, "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}
    table = HudiTable.open(str(v9_table))
    found = table.inspect.lock(in_process)
    assert not found.shared and found.provider_name == "InProcessLockProvider" and "no other process" in found.detail
    beat = v9_table / ".hoodie" / ".heartbeat" / "20300101000000000"
    beat.parent.mkdir(parents=True, exist_ok=True)
    beat.write_bytes(b"")
    older = table.timeline.writes().completed().instants[-3].requested_time
    with pytest.raises(LiveWriterUnlocked, match="InProcessLockProvider"):
        table.maintenance(options=in_process).create_savepoint(older)
