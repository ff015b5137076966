"""Each table whose merge Cleanline cannot reproduce is refused with its reason before any plan is
written (timeline/services/refusals.py), whether the setting comes from the writers' options or
from `hoodie.properties`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import FIXTURES, tree_snapshot, unzip_table
from timeline import HudiTable
from timeline.config import update_config
from timeline.services.refusals import CompactionRefused, MergeMode, merge_rules
from timeline.storage import storage_for

V6 = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
V9 = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"

# (writers' option or table property, value, what the reason names)
REFUSED_BY_OPTION = [
    ("hoodie.compaction.payload.class", "com.example.MyPayload", "com.example.MyPayload"),
    ("hoodie.record.merge.mode", "CUSTOM", "CUSTOM"),
    ("hoodie.record.merge.strategy.id", "11111111-2222-3333-4444-555555555555", "11111111-2222"),
    ("hoodie.write.record.merge.custom.implementation.classes", "com.example.Merger", "com.example.Merger"),
    ("hoodie.datasource.write.record.merger.impls", "com.example.Merger", "com.example.Merger"),
    ("hoodie.table.partial.update.mode", "FILL_UNAVAILABLE", "PartialUpdateHandler"),
    ("hoodie.merge.use.record.positions", "true", "PositionBasedFileGroupRecordBuffer"),
    ("hoodie.table.ordering.fields", "ts,fare", "several ordering fields"),
    ("hoodie.compaction.strategy", "org.apache.hudi.table.action.compact.strategy.UnBoundedCompactionStrategy",
     "UnBoundedCompactionStrategy"),
]
REFUSED_BY_TABLE = [
    ("hoodie.populate.meta.fields", "false", "hoodie.populate.meta.fields=false"),
    ("hoodie.table.base.file.format", "ORC", "ORC"),
]


def refused(path: Path, options: dict[str, str] | None = None) -> str:
    """The reason given, having checked that nothing was written."""
    snapshot = tree_snapshot(path)
    with pytest.raises(CompactionRefused) as caught:
        HudiTable.open(str(path)).maintenance(options=options).compact(dry_run=False)
    assert tree_snapshot(path) == snapshot
    return caught.value.reason


@pytest.mark.parametrize(("key", "value", "named"), REFUSED_BY_OPTION, ids=[k for k, _, _ in REFUSED_BY_OPTION])
def test_a_merge_cleanline_cannot_reproduce_is_refused_before_any_plan(tmp_path: Path, key: str, value: str,
                                                                       named: str) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    assert named in refused(path, {key: value})
    storage, base = storage_for(str(path))
    update_config(storage, base, {key: value})  # the same from hoodie.properties
    assert named in refused(path)


@pytest.mark.parametrize(("key", "value", "named"), REFUSED_BY_TABLE, ids=[k for k, _, _ in REFUSED_BY_TABLE])
def test_a_table_cleanline_cannot_compact_is_refused_before_any_plan(tmp_path: Path, key: str, value: str,
                                                                     named: str) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    storage, base = storage_for(str(path))
    update_config(storage, base, {key: value})
    assert named in refused(path)


@pytest.mark.parametrize(("partitions", "named"), [("files,expr_index_upper_rider", "expression indexes"),
                                                   ("files,bloom_filters", "bloom_filters")])
def test_metadata_table_indexes_cleanline_does_not_write_are_refused(tmp_path: Path, partitions: str,
                                                                     named: str) -> None:
    path = unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "t")
    storage, base = storage_for(str(path))
    update_config(storage, base, {"hoodie.table.metadata.partitions": partitions})
    assert named in refused(path)


def test_copy_on_write_and_lance_tables_are_refused(tmp_path: Path) -> None:
    cow = unzip_table(FIXTURES / "sample_table/cow/v6_nonpartitioned.zip", tmp_path / "cow")
    assert "only merge-on-read tables" in refused(cow)
    lance = unzip_table(FIXTURES / "quickstart_trips_table/mor/avro/v9_trips_lance.zip", tmp_path / "lance")
    assert "LANCE" in refused(lance)


def test_the_default_payloads_merge_by_their_ordering(tmp_path: Path) -> None:
    """What is not refused: v6's OverwriteWithLatestAvroPayload (commit time against the base
    file), DefaultHoodieRecordPayload and EVENT_TIME_ORDERING (the ordering field)."""
    v6 = HudiTable.open(str(unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "v6")))
    rules = merge_rules(v6)
    assert (rules.mode, rules.ordering_field, rules.legacy_payload) == (MergeMode.COMMIT_TIME, "ts", True)
    default = merge_rules(v6, {"hoodie.compaction.payload.class":
                               "org.apache.hudi.common.model.DefaultHoodieRecordPayload"})
    assert default.mode is MergeMode.EVENT_TIME
    v9 = HudiTable.open(str(unzip_table(FIXTURES / f"{V9}.zip", tmp_path / "v9")))
    assert (merge_rules(v9).mode, merge_rules(v9).ordering_field) == (MergeMode.EVENT_TIME, "txn_ts")
    assert merge_rules(v9, {"hoodie.record.merge.mode": "COMMIT_TIME_ORDERING"}).mode is MergeMode.COMMIT_TIME
