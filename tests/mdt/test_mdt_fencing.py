"""Every write to the metadata table is fenced by the data table's lock (timeline/mdt/reader.py
`MetadataTable.fence`, timeline/transition.py `fence`): a lease taken away just before the
metadata table's update publishes nothing there, for a clean, a rollback and a restore; one
taken away part-way through it (after its first log file) publishes nothing more. The metadata
table's new times wait out its data table's clock skew while that table's lock is held."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline import CleanConfig, HudiTable
from timeline.clean.executor import run_pending_cleans
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, LockLost
from timeline.mdt.reader import MetadataTable
from timeline.restore import restore_metadata_table
from timeline.rollback import rollback_in_metadata_table
from timeline.storage.arrow import LocalStorage
from timeline.transactions import Transactions

V9_WITH_MDT = "sample_table/cow/v9_txns_simple_meta"
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "10",
       "hoodie.write.lock.storage.renew.interval.secs": "1",
       "hoodie.write.lock.wait_time_ms": "300",
       "hoodie.time.generator.max_expected_clock_skew_ms": "400"}


def take_lease_away(base: Path) -> None:
    """Another owner's live lease over ours, as if ours had lapsed and a Hudi writer took the lock."""
    until = int(time.time() * 1000) + 60_000
    (base / ".hoodie" / ".locks" / "table_lock.json").write_bytes(
        f'{{"expired":false,"validUntil":{until},"owner":"hudi-writer-uuid"}}'.encode())


def test_mdt_fencing_a_lease_taken_away_before_a_cleans_metadata_update_writes_nothing_there(
        table_copy) -> None:  # type: ignore[no-untyped-def]
    base = table_copy(V9_WITH_MDT)
    table = HudiTable.open(str(base))
    config = CleanConfig(commits_retained=1)
    maintenance = table.maintenance(options=OCC)
    plan = maintenance.plan_clean(config, enforce_retention=False)
    clean = maintenance.schedule_clean(plan, config)
    assert clean is not None and plan.files_to_delete
    transactions = Transactions(table, OCC)
    entered = 0
    metadata_before: dict[str, tuple[int, int]] = {}

    @contextmanager
    def guard() -> Iterator[None]:  # the run's own lock; the second hold is the completion's
        nonlocal entered, metadata_before
        with transactions.state_change():
            entered += 1
            if entered == 2:
                metadata_before = tree_snapshot(base / ".hoodie" / "metadata")
                take_lease_away(base)
            yield

    with pytest.raises(LockLost, match="hudi-writer-uuid"):
        run_pending_cleans(table, guard=guard)
    assert entered == 2
    assert tree_snapshot(base / ".hoodie" / "metadata") == metadata_before
    assert not table.reload().timeline.cleans().completed().instants


def test_mdt_fencing_a_lease_taken_away_before_a_metadata_rollback_writes_nothing_there(
        table_copy) -> None:  # type: ignore[no-untyped-def]
    base = table_copy(V9_WITH_MDT)
    table = HudiTable.open(str(base))
    latest = table.timeline.writes().completed().instants[-1].requested_time
    before = tree_snapshot(base / ".hoodie" / "metadata")
    with pytest.raises(LockLost), Transactions(table, OCC).state_change():
        take_lease_away(base)
        rollback_in_metadata_table(MetadataTable(table), latest, table.new_instant_time(), {})
    assert tree_snapshot(base / ".hoodie" / "metadata") == before


def test_mdt_fencing_a_lease_taken_away_before_a_metadata_restore_changes_nothing(
        table_copy) -> None:  # type: ignore[no-untyped-def]
    base = table_copy(V9_WITH_MDT)
    table = HudiTable.open(str(base))
    older = table.timeline.writes().completed().instants[-3].requested_time
    before = tree_snapshot(base / ".hoodie")
    with pytest.raises(LockLost), Transactions(table, OCC).state_change():
        take_lease_away(base)
        before = tree_snapshot(base / ".hoodie")
        restore_metadata_table(MetadataTable(table), older, table.new_instant_time())
    assert tree_snapshot(base / ".hoodie") == before


class LeaseLostAfterFirstMdtLog(LocalStorage):
    """The local disk, where the lease is taken away right after the first log file of the
    metadata table is written (as if the renewal stalled and a Hudi writer took the lock
    between two of the update's writes); the metadata table's files are recorded then."""

    def __init__(self, base: Path) -> None:
        super().__init__()
        self.base = base
        self.first_log: str | None = None
        self.metadata_then: dict[str, tuple[int, int]] = {}

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        super().write(path, data, overwrite=overwrite)
        if self.first_log is None and "/.hoodie/metadata/" in path and ".log." in path:
            self.first_log = path
            take_lease_away(self.base)
            self.metadata_then = tree_snapshot(self.base / ".hoodie" / "metadata")


def test_mdt_fencing_a_lease_lost_part_way_through_the_metadata_update_publishes_nothing_more(
        table_copy) -> None:  # type: ignore[no-untyped-def]
    base = table_copy(V9_WITH_MDT)
    config = CleanConfig(commits_retained=1)
    planning = HudiTable.open(str(base)).maintenance(options=OCC)
    plan = planning.plan_clean(config, enforce_retention=False)
    clean = planning.schedule_clean(plan, config)
    assert clean is not None and plan.files_to_delete
    storage = LeaseLostAfterFirstMdtLog(base)
    table = HudiTable.load(storage, str(base))
    with pytest.raises(LockLost, match="hudi-writer-uuid"):
        table.maintenance(options=OCC).run_cleans()
    assert storage.first_log is not None  # the update had begun: its first log file is out
    timeline = base / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    states = sorted(p.name for p in timeline.iterdir() if p.name.startswith(clean.requested_time))
    assert states == [f"{clean.requested_time}.deltacommit.inflight", f"{clean.requested_time}.deltacommit.requested"]
    assert tree_snapshot(base / ".hoodie" / "metadata") == storage.metadata_then  # no state file, no log file more
    assert not HudiTable.open(str(base)).timeline.cleans().completed().instants


def test_mdt_fencing_metadata_times_wait_out_the_data_tables_clock_skew(table_copy) -> None:  # type: ignore[no-untyped-def]
    base = table_copy(V9_WITH_MDT)
    table = HudiTable.open(str(base))
    mdt = MetadataTable(table).mdt
    started = time.monotonic()
    mdt.new_instant_time()
    assert time.monotonic() - started < 0.4  # no lock held: no wait
    with Transactions(table, OCC).state_change():
        started = time.monotonic()
        mdt.new_instant_time()
        waited = time.monotonic() - started
    assert waited >= 0.4  # the data table's hoodie.time.generator.max_expected_clock_skew_ms
