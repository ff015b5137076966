"""`cleanline demo`: the lake has what the issue promises, and hudi-rs reads all of it."""

from __future__ import annotations

from pathlib import Path

import hudi
from pyspark.sql import SparkSession

from tests.helpers import ours, rows, theirs
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.planner import plan_clean
from timeline.failed_writes import failed_writes
from timeline.spark.demo import build_demo_lake


def test_demo_lake_has_everything_worth_looking_at(spark: SparkSession, demo_lake: Path) -> None:
    trips, events, orders = (HudiTable.open(str(demo_lake / name)) for name in ("trips_cow_v6", "events_mor_v6",
                                                                                "orders_cow_v8"))
    assert (trips.version, trips.config.is_mor, events.version, events.config.is_mor, orders.version) == (
        6, False, 6, True, 8)
    actions = [i.action for i in trips.timeline.commits().completed()]
    assert len(actions) >= 30 and "replacecommit" in actions
    assert len(trips.timeline.savepoints().completed()) == 1
    assert len(plan_clean(trips, CleanConfig()).files_to_delete) >= 100
    assert events.timeline.cleans().completed() and any(
        (events.read_instant(i) or {}).get("compacted") for i in events.timeline.commits().completed()
        if i.action == "commit")
    assert any(s.log_files for s in events.file_system_view().latest_slices())
    assert [i.state.name for i in failed_writes(orders)] == ["INFLIGHT", "INFLIGHT"]
    for table in (trips, events, orders):
        assert hudi.HudiTable(table.base).read(), table.base
        assert ours(table) == theirs(Path(table.base))
    again = build_demo_lake(spark, str(demo_lake))  # existing tables are kept
    assert [HudiTable.open(p).timeline for p in again] == [trips.reload().timeline, events.reload().timeline,
                                                             orders.reload().timeline]


def test_demo_lake_newest_failed_write_rolls_back_and_the_older_one_explains_the_way_forward(
        demo_lake: Path, tmp_path: Path) -> None:
    """The rollback journey can be walked on the demo: its newest failed write goes by Hudi's
    rules (validateRollbackCommitSequence), and the older one, with a commit completed after it,
    is refused with the rule and the way forward (a savepoint before it to restore to)."""
    import shutil

    from timeline.rollback import rollback_failed_write

    shutil.copytree(demo_lake / "orders_cow_v8", tmp_path / "orders_cow_v8")
    orders = HudiTable.open(str(tmp_path / "orders_cow_v8"))
    newest, older = orders.inspect.failed_writes()
    assert newest.preview is not None and newest.preview.files_to_delete and not newest.refusal
    assert older.preview is None and "validateRollbackCommitSequence" in older.refusal
    assert "The way forward: create a savepoint of" in older.refusal
    before = rows(Path(orders.base))
    rollback_failed_write(orders, newest.instant.requested_time)
    orders.reload()
    assert [i.requested_time for i in failed_writes(orders)] == [older.instant.requested_time]
    assert rows(Path(orders.base)) == before  # a failed write's rows were never visible
    assert ours(orders) == theirs(Path(orders.base))
