"""Every write to the metadata table is fenced by the data table's lock (timeline/mdt/reader.py
`MetadataTable.fence`, timeline/transition.py `fence`): a lease taken away just before the
metadata table's update publishes nothing there, for a clean, a rollback and a restore."""

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
from timeline.transactions import Transactions

V9_WITH_MDT = "sample_table/cow/v9_txns_simple_meta"
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "10",
       "hoodie.write.lock.storage.renew.interval.secs": "1",
       "hoodie.write.lock.wait_time_ms": "300"}


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
