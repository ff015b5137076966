"""Index drift (timeline/doctor/indexes.py): the metadata table's index partitions verified
against the data on every real fixture table that has them, then one planted drift per rule
found with its evidence: a wrong column-stats record written through the metadata table's
writer, a base file whose footer statistics no longer match its record, and an index partition
the table property declares complete with its folder gone."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import FIXTURES, unzip_table
from timeline import HudiTable
from timeline.doctor import diagnose
from timeline.doctor.index_keys import RecordIndexEvidence
from timeline.doctor.indexes import KIND, DefinitionEvidence, StatsEvidence
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import MdtUpdate, write_update
from timeline.metadata.mdt_payload import MetadataRecord, record_location

INDEXED = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta") or p.stem == "v8_trips_8i3u1d")
V9_COW = FIXTURES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def _findings(lake: Path) -> list:
    return diagnose(HudiTable.open(str(lake)), kinds=[KIND])


@pytest.mark.parametrize("archive", INDEXED, ids=[p.stem + "-" + p.parent.name for p in INDEXED])
def test_fixture_indexes_verify_clean(archive: Path, tmp_path: Path) -> None:
    lake = unzip_table(archive, tmp_path)
    assert _findings(lake) == []


def _a_stats_record(lake: Path) -> tuple[MetadataTable, MetadataRecord, str]:
    """A column-stats record of a latest base file's `txn_id` column."""
    table = HudiTable.open(str(lake))
    latest = {s.base_file.name: s.partition for s in table.file_system_view().latest_slices() if s.base_file}
    mdt = MetadataTable(table)
    for record in mdt.records("column_stats").values():
        stats = record.column_stats
        if stats is not None and stats[0] in latest and stats[1] == "txn_id":
            return mdt, record, latest[stats[0]]
    raise AssertionError("no txn_id record of a latest base file")


def test_wrong_min_in_column_stats_is_found(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    mdt, record, partition = _a_stats_record(lake)
    entry = dict(record.raw["ColumnStatsMetadata"])
    right = entry["minValue"]["value"]
    entry["minValue"] = {"value": "TXN-000-wrong"}
    wrong = dataclasses.replace(record, raw={**record.raw, "ColumnStatsMetadata": entry})
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate("column_stats", (wrong,))])
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, StatsEvidence) and evidence.index == "column_stats" and evidence.mismatches == 1
    [mismatch] = evidence.shown
    assert (mismatch.file, mismatch.column, mismatch.field) == (f"{partition}/{entry['fileName']}", "txn_id",
                                                                "minValue")
    assert (mismatch.recorded, mismatch.actual) == ("'TXN-000-wrong'", repr(right))
    assert finding.repairable and "cleanline index rebuild" in finding.repair


def test_footer_changed_under_its_record_is_found(tmp_path: Path) -> None:
    """The data side: a base file rewritten with one value changed (and its footer with it)."""
    lake = unzip_table(V9_COW, tmp_path)
    _, record, partition = _a_stats_record(lake)
    name = record.raw["ColumnStatsMetadata"]["fileName"]
    path = lake / partition / name
    data = pq.read_table(path)
    ids = data.column("txn_id").to_pylist()
    ids[0] = "TXN-999"  # above every id the fixture holds: the file's max moves
    data = data.set_column(data.schema.get_field_index("txn_id"), data.schema.field("txn_id"), pa.array(ids))
    pq.write_table(data, path)
    files, partitions = _findings(lake)  # the partition's range no longer holds the new max either
    assert (files.evidence.index, partitions.evidence.index) == ("column_stats", "partition_stats")
    shown = {(m.column, m.field): (m.recorded, m.actual) for m in files.evidence.shown}
    assert shown[("txn_id", "maxValue")][1] == "'TXN-999'"
    assert all(m.file == f"{partition}/{name}" for m in files.evidence.shown)
    assert [(m.file, m.column, m.field, m.actual) for m in partitions.evidence.shown] == [
        (partition, "txn_id", "maxValue", "'TXN-999'")]


def test_null_count_drift_is_found(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    mdt, record, _ = _a_stats_record(lake)
    entry = {**record.raw["ColumnStatsMetadata"], "nullCount": 7, "valueCount": 99}
    write_update(mdt, mdt.mdt.new_instant_time(),
                 [MdtUpdate("column_stats", (dataclasses.replace(record, raw={**record.raw,
                                                                             "ColumnStatsMetadata": entry}),))])
    [finding] = _findings(lake)
    assert {(m.field, m.recorded) for m in finding.evidence.shown} == {("nullCount", "7"), ("valueCount", "99")}


def test_index_declared_complete_without_its_partition_is_found(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    shutil.rmtree(lake / ".hoodie" / "metadata" / "secondary_index_merchant_idx")
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, DefinitionEvidence)
    assert (evidence.index, evidence.file_groups, evidence.problem) == ("secondary_index_merchant_idx", 0,
                                                                         "no file group")
    assert evidence.declared_in == "hoodie.table.metadata.partitions and .index_defs"


def _partition_record(lake: Path, partition: str, column: str) -> tuple[MetadataTable, MetadataRecord]:
    mdt = MetadataTable(HudiTable.open(str(lake)))
    return mdt, next(r for r in mdt.records("partition_stats").values()
                     if r.column_stats == (partition, column))


def _write_entry(mdt: MetadataTable, partition: str, record: MetadataRecord, **changes: object) -> None:
    entry = {**record.raw["ColumnStatsMetadata"], **changes}
    changed = dataclasses.replace(record, raw={**record.raw, "ColumnStatsMetadata": entry})
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate(partition, (changed,))])


def test_partition_stats_that_no_longer_cover_the_data_are_found(tmp_path: Path) -> None:
    """A range narrower than the partition's files (and a null count below theirs) makes readers
    skip a partition that holds matching rows; a wider one (Hudi merges ranges on update) is fine."""
    lake = unzip_table(V9_COW, tmp_path)
    mdt, record = _partition_record(lake, "region=eu", "txn_id")
    right = record.raw["ColumnStatsMetadata"]
    _write_entry(mdt, "partition_stats", record, minValue={"value": "TXN-000"}, valueCount=right["valueCount"] + 5,
                 isTightBound=False)
    assert _findings(lake) == []  # covers the data: no finding
    mdt, record = _partition_record(lake, "region=eu", "txn_id")
    _write_entry(mdt, "partition_stats", record, maxValue={"value": "TXN-000"}, nullCount=-1)
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, StatsEvidence) and evidence.index == "partition_stats" and evidence.files_checked > 0
    shown = {(m.file, m.column, m.field): m.recorded for m in evidence.shown}
    assert shown == {("region=eu", "txn_id", "maxValue"): "'TXN-000'", ("region=eu", "txn_id", "nullCount"): "-1"}


def test_record_index_keys_moved_or_missing_are_found(tmp_path: Path) -> None:
    """Two keys of different file groups swapped (each maps to a group that does not hold it) and
    one key deleted from the index (no group for a key the data holds)."""
    lake = unzip_table(V9_COW, tmp_path)
    mdt = MetadataTable(HudiTable.open(str(lake)))
    records = mdt.records("record_index")
    by_group: dict[tuple[str, str], str] = {}
    for key, record in sorted(records.items()):
        by_group.setdefault(record_location(record.raw["recordIndexMetadata"]), key)
    (first_group, first), (second_group, second), (third_group, third) = list(by_group.items())[:3]

    def pointed(key: str, to: str) -> MetadataRecord:
        return dataclasses.replace(records[key], raw={**records[key].raw,
                                                      "recordIndexMetadata": records[to].raw["recordIndexMetadata"]})

    swapped = (pointed(first, second), pointed(second, first))
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate("record_index", swapped, (third,))])
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, RecordIndexEvidence) and evidence.keys_checked == len(records)
    assert {(m.key, m.recorded, m.actual) for m in evidence.shown} == {
        (first, "/".join(second_group), "/".join(first_group)), (second, "/".join(first_group), "/".join(second_group)),
        (third, "none", "/".join(third_group))}


def test_a_base_file_that_does_not_read_is_skipped_not_a_crash(tmp_path: Path) -> None:
    """Readers fail on the file itself; the index check leaves it (and its partition) out."""
    lake = unzip_table(V9_COW, tmp_path)
    _, record, partition = _a_stats_record(lake)
    (lake / partition / record.raw["ColumnStatsMetadata"]["fileName"]).write_bytes(b"not parquet")
    assert _findings(lake) == []


def test_index_definitions_that_do_not_decode_are_found(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    (lake / ".hoodie" / ".index_defs" / "index.json").write_text('{"indexDefinitions": ')
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, DefinitionEvidence) and evidence.index == ".index_defs"
    assert evidence.declared_in == ".hoodie/.index_defs/index.json" and "index.json" in evidence.problem
