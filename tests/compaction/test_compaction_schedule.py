"""Scheduling a compaction as Hudi's scheduler does with LogFileSizeBasedCompactionStrategy
(timeline/services/schedule.py): the plan Hudi writes (checked against the fixtures' own plans),
the strategy's order and IO bound, the log size threshold, a dry run writing nothing, and table
version 6's rule about an earlier pending write."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest

from tests.helpers import FIXTURES, tree_snapshot, unzip_table
from timeline import HudiTable
from timeline.instant import COMPACTION, State
from timeline.metadata.records import CompactionPlan
from timeline.services.schedule import (
    METRIC_ORDER,
    CompactionOperation,
    order_and_filter,
    plan_compaction,
)

V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
V9 = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"
HUDI_PLAN = "sample_table/mor/avro/v9_txns_simple_nometa"   # holds a plan Hudi 1.1 scheduled


def avro_records(path: Path) -> tuple[dict[str, object], list[str]]:
    """The one record of an Avro plan file and its writer schema's field names."""
    reader = fastavro.reader(io.BytesIO(path.read_bytes()))
    record = next(iter(reader))
    schema = reader.writer_schema
    assert isinstance(record, dict) and isinstance(schema, dict)
    return record, [f["name"] for f in schema["fields"]]


def test_the_plan_is_written_as_hudi_writes_one(tmp_path: Path) -> None:
    hudi_path = unzip_table(FIXTURES / f"{HUDI_PLAN}.zip", tmp_path / "hudi")
    theirs, their_fields = avro_records(next((hudi_path / ".hoodie" / "timeline").glob("*.compaction.requested")))
    path = unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "t")
    slices = {(s.partition, s.file_id): s for s in HudiTable.open(str(path)).file_system_view().latest_slices()}
    plan = HudiTable.open(str(path)).maintenance().compact(dry_run=False)
    assert plan.instant is not None
    requested = path / ".hoodie" / "timeline" / f"{plan.instant.requested_time}.compaction.requested"
    ours, our_fields = avro_records(requested)
    assert our_fields == their_fields
    assert {k: v for k, v in ours.items() if k != "operations"} == {
        k: v for k, v in theirs.items() if k != "operations"}  # version 2, {} extra metadata, [] missing
    our_ops, their_ops = ours["operations"], theirs["operations"]
    assert isinstance(our_ops, list) and isinstance(their_ops, list)
    assert [list(op) for op in our_ops] == [list(op) for op in their_ops][: len(our_ops)]
    assert all(list(op["metrics"]) == list(METRIC_ORDER) == list(their_ops[0]["metrics"]) for op in our_ops)
    table = HudiTable.open(str(path))
    read = table.read(plan.instant, CompactionPlan, State.REQUESTED)
    for op in read.operations:  # each a latest slice with its logs, named relative to the partition
        found = slices[(op.partition, op.file_id)]
        assert op.log_files == tuple(log.name for log in found.log_files) and "/" not in op.data_file
        sizes = sum(log.size for log in found.log_files)
        assert op.metrics["TOTAL_LOG_FILES_SIZE"] == float(sizes)
        assert op.metrics["TOTAL_LOG_FILES"] == float(len(found.log_files))


def test_a_dry_run_writes_nothing_and_returns_the_plan(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    snapshot = tree_snapshot(path)
    plan = HudiTable.open(str(path)).maintenance().compact()
    assert plan.instant is not None and not plan.scheduled and len(plan.operations) == 1
    assert tree_snapshot(path) == snapshot
    assert plan.plan(6)["missingSchedulePartitions"] is None  # Hudi 0.x plans have no such field


def operation(name: str, log_bytes: int, io_mb: int) -> CompactionOperation:
    metrics = {"TOTAL_LOG_FILES": 1.0, "TOTAL_IO_MB": float(io_mb), "TOTAL_IO_READ_MB": 0.0,
               "TOTAL_LOG_FILES_SIZE": float(log_bytes), "TOTAL_IO_WRITE_MB": 0.0}
    return CompactionOperation("p", name, "1", f"{name}.parquet", 10, (f".{name}.log.1",), log_bytes, metrics)


def test_the_strategy_orders_by_log_bytes_and_bounds_the_io() -> None:
    """LogFileSizeBasedCompactionStrategy.orderAndFilter then BoundedIOCompactionStrategy."""
    ops = [operation("a", 10, 300), operation("b", 30, 300), operation("c", 20, 300), operation("d", 5, 300)]
    chosen, left = order_and_filter(ops, threshold=0, target_io=500)
    assert [o.file_id for o in chosen] == ["b", "c"]  # 500 -> 200 -> -100: the next is left out
    assert set(left) == {("p", "a"), ("p", "d")} and "target.io" in left[("p", "a")]
    chosen, left = order_and_filter(ops, threshold=20, target_io=10_000)
    assert [o.file_id for o in chosen] == ["b", "c"] and "threshold" in left[("p", "d")]
    chosen, _ = order_and_filter([operation("x", 1, 0), operation("y", 1, 0)], threshold=0, target_io=1)
    assert [o.file_id for o in chosen] == ["x", "y"]  # 0 MB of IO never uses the bound up


def test_the_writers_settings_shape_the_plan(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "t")
    table = HudiTable.open(str(path))
    both = plan_compaction(table)
    assert len(both.operations) == 2
    largest = max(both.operations, key=lambda o: o.log_bytes)
    few = plan_compaction(table, {"hoodie.compaction.logfile.size.threshold": str(largest.log_bytes)})
    assert [o.file_id for o in few.operations] == [largest.file_id]
    assert few.missing_partitions == tuple(o.partition for o in both.operations if o is not largest)
    none = plan_compaction(table, {"hoodie.compaction.logfile.size.threshold": str(largest.log_bytes + 1)})
    assert none.instant is None and "filtered out" in none.reason


def test_table_version_6_schedules_nothing_before_an_older_pending_write(tmp_path: Path) -> None:
    """ScheduleCompactionActionExecutor.execute (Hudi 0.14/0.15): one writer, EAGER policy."""
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    table = HudiTable.open(str(path))
    pending = table.new_instant_time()
    (path / ".hoodie" / f"{pending}.deltacommit.requested").write_bytes(b"")
    plan = plan_compaction(HudiTable.open(str(path)))
    assert plan.instant is None and pending in plan.reason
    multi = plan_compaction(HudiTable.open(str(path)), {"hoodie.clean.failed.writes.policy": "LAZY"})
    assert multi.instant is not None  # with LAZY cleaning Hudi schedules around it
    assert COMPACTION not in {i.action for i in HudiTable.open(str(path)).timeline}


@pytest.mark.parametrize("key", ["hoodie.compaction.target.io", "hoodie.compaction.logfile.size.threshold"])
def test_a_setting_hudi_would_not_parse_is_refused(tmp_path: Path, key: str) -> None:
    from timeline.services.refusals import CompactionRefused

    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    with pytest.raises(CompactionRefused, match=key):
        plan_compaction(HudiTable.open(str(path)), {key: "lots"})
