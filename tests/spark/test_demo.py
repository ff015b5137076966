"""`cleanline demo`: the lake has what the issue promises, and hudi-rs reads all of it."""

from __future__ import annotations

from pathlib import Path

import hudi
from pyspark.sql import SparkSession

from tests.helpers import ours, theirs
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.planner import plan_clean
from timeline.rollback import failed_writes
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
    assert [i.state.name for i in failed_writes(orders)] == ["INFLIGHT"]
    for table in (trips, events, orders):
        assert hudi.HudiTable(table.base).read(), table.base
        assert ours(table) == theirs(Path(table.base))
    again = build_demo_lake(spark, str(demo_lake))  # existing tables are kept
    assert [HudiTable.open(p).timeline for p in again] == [trips.reload().timeline, events.reload().timeline,
                                                             orders.reload().timeline]
