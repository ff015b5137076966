"""The held-lock check before each publish keeps a margin (timeline/locks/storage_based.py
`check_held`): at least one renewal interval of lease left beyond the clock-drift buffer, so a
publish that stalls after the check still lands inside the lease; and new instant times follow
`SkewAdjustingTimeGenerator` while the lock is held (timeline/table.py `new_instant_time`)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from timeline import HudiTable
from timeline.instant import format_instant_time
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, LockLost, StorageBasedLock
from timeline.storage.arrow import LocalStorage
from timeline.transactions import Transactions

OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "10",
       "hoodie.write.lock.storage.renew.interval.secs": "1",
       "hoodie.write.lock.wait_time_ms": "300",
       "hoodie.time.generator.max_expected_clock_skew_ms": "400"}


def test_held_margin_check_held_wants_a_renewal_interval_of_lease_left(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    lock = StorageBasedLock(LocalStorage(), str(tmp_path), validity_seconds=3, renew_interval_seconds=2,
                            retry_wait_seconds=0.02)
    lock.acquire(1)
    try:
        lock.check_held()  # a fresh lease: 3 s left
        lock._heartbeat.stop()  # the renewal stalls (a long GC pause, a lost connection)
        time.sleep(1.2)  # about 1.8 s left: more than the 0.5 s drift buffer, less than it plus 2 s
        with pytest.raises(LockLost, match="nearly"):
            lock.check_held()
    finally:
        lock.close()


def test_held_margin_new_instant_times_wait_out_the_clock_skew_under_the_lock(v9_table: Path) -> None:
    table = HudiTable.open(str(v9_table))
    started = time.monotonic()
    table.new_instant_time()
    assert time.monotonic() - started < 0.4  # no lock: no wait
    with Transactions(table, OCC).state_change():
        clock = datetime.now()
        started = time.monotonic()
        t = table.new_instant_time()
        waited = time.monotonic() - started
    assert waited >= 0.4  # hoodie.time.generator.max_expected_clock_skew_ms
    # the time is the clock read before the wait (the fixture's timeline is in LOCAL time)
    assert format_instant_time(clock - timedelta(milliseconds=50)) <= t <= format_instant_time(
        clock + timedelta(milliseconds=150))
