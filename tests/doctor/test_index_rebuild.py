"""Index repair (timeline/doctor/index_repair.py): on every real fixture table with index
partitions nothing needs rebuilding; then on the v9 table with record index, secondary indexes,
column stats and partition stats, one planted drift per index (a wrong min/max, a column-stats
record gone, a key moved to another file group, a missing secondary value, an index emptied
while declared complete, an index folder gone) is found with its evidence, rebuilt (or dropped)
from the data with its estimate shown first, verification is clean again and hudi-rs reads the
same rows. A rebuild that crashed before completing is finished by a re-run."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, rows, unzip_table
from timeline import HudiTable
from timeline.doctor import DoctorSettings, RepairUnavailable, diagnose, plan_repair, run_repair
from timeline.doctor.index_keys import RecordIndexEvidence, SecondaryIndexEvidence, split_key
from timeline.doctor.index_repair import DROP, REBUILD, plan_drop, plan_rebuild, run_index_repair, table_indexes
from timeline.doctor.indexes import KIND, DefinitionEvidence, StatsEvidence
from timeline.mdt.reader import MetadataTable
from timeline.mdt.writer import MdtUpdate, write_routed_update, write_update
from timeline.metadata.mdt_payload import record_location

INDEXED = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta"))
V9_COW = FIXTURES / "sample_table" / "cow" / "v9_txns_simple_meta.zip"


def _findings(lake: Path, *, index_sample_keys: int = 200_000, index_full: bool = False) -> list:
    settings = DoctorSettings(index_sample_keys=index_sample_keys, index_full=index_full)
    return diagnose(HudiTable.open(str(lake)), kinds=[KIND], settings=settings)


def _mdt(lake: Path) -> MetadataTable:
    return MetadataTable(HudiTable.open(str(lake)))


def _write(lake: Path, partition: str, records: tuple = (), deletes: tuple = ()) -> None:
    mdt = _mdt(lake)
    write_update(mdt, mdt.mdt.new_instant_time(), [MdtUpdate(partition, records, deletes)])


def _rebuild(lake: Path, index: str) -> None:
    """Plan (estimate first), a dry run that changes nothing, then the rebuild; clean after."""
    table = HudiTable.open(str(lake))
    plan = plan_rebuild(table, index)
    head = plan.changes[0]
    assert (head.action, head.target) == (REBUILD, index) and head.bytes > 0
    assert plan.notes[0].startswith("estimate: ") and "bytes of memory" in plan.notes[0]
    assert all(c.action == "metadata write" for c in plan.changes[1:]) and plan.changes[1:]
    timeline_before = sorted(p.name for p in (lake / ".hoodie" / "metadata" / ".hoodie" / "timeline").iterdir())
    dry = run_index_repair(table, plan)
    assert not dry.done and len(dry.skipped) == len(plan.changes)
    assert sorted(p.name for p in (lake / ".hoodie" / "metadata" / ".hoodie" / "timeline").iterdir()) == timeline_before
    result = run_index_repair(HudiTable.open(str(lake)), plan, dry_run=False)
    assert result.ok and result.done[0] == head
    assert _findings(lake) == []
    with pytest.raises(RepairUnavailable, match="already agrees"):
        plan_rebuild(HudiTable.open(str(lake)), index)


@pytest.fixture(scope="module")
def clean_rows(tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    return rows(unzip_table(V9_COW, tmp_path_factory.mktemp("rows")))


@pytest.mark.parametrize("archive", INDEXED, ids=[p.stem + "-" + p.parent.name for p in INDEXED])
def test_fixture_indexes_need_no_rebuild(archive: Path, tmp_path: Path) -> None:
    lake = unzip_table(archive, tmp_path)
    table = HudiTable.open(str(lake))
    for index in table_indexes(table):
        with pytest.raises(RepairUnavailable, match="already agrees"):
            plan_rebuild(table, index)


def test_wrong_min_max_found_and_rebuilt_to_the_records_hudi_wrote(tmp_path: Path, clean_rows: list) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    records = _mdt(lake).records("column_stats")
    latest = {s.base_file.name for s in HudiTable.open(str(lake)).file_system_view().latest_slices() if s.base_file}
    key, record = next((k, r) for k, r in sorted(records.items())
                       if r.raw["ColumnStatsMetadata"]["columnName"] == "amount"
                       and r.raw["ColumnStatsMetadata"]["fileName"] in latest)
    entry = {**record.raw["ColumnStatsMetadata"], "minValue": {"value": b"\x7f" * 7}, "maxValue": {"value": b"\x00"}}
    _write(lake, "column_stats", (dataclasses.replace(record, raw={**record.raw, "ColumnStatsMetadata": entry}),))
    gone = next(k for k, r in sorted(records.items()) if r.raw["ColumnStatsMetadata"]["columnName"] == "txn_date"
                and r.raw["ColumnStatsMetadata"]["fileName"] in latest)
    _write(lake, "column_stats", deletes=(gone,))
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, StatsEvidence) and evidence.index == "column_stats"
    assert {(m.column, m.field) for m in evidence.shown} == {("amount", "minValue"), ("amount", "maxValue"),
                                                            ("txn_date", "record")}
    assert finding.repairable and "cleanline index rebuild" in finding.repair
    _rebuild(lake, "column_stats")
    after = _mdt(lake).records("column_stats")
    assert after[key].raw["ColumnStatsMetadata"] == record.raw["ColumnStatsMetadata"]  # what Hudi wrote, byte for byte
    assert after[gone].raw["ColumnStatsMetadata"] == records[gone].raw["ColumnStatsMetadata"] | {
        "isTightBound": after[gone].raw["ColumnStatsMetadata"]["isTightBound"]}
    assert rows(lake) == clean_rows


def test_partition_stats_narrowed_found_and_rebuilt(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    record = next(r for r in _mdt(lake).records("partition_stats").values()
                  if r.column_stats == ("region=eu", "txn_id"))
    entry = {**record.raw["ColumnStatsMetadata"], "maxValue": {"value": "TXN-000"}}
    _write(lake, "partition_stats", (dataclasses.replace(record, raw={**record.raw, "ColumnStatsMetadata": entry}),))
    [finding] = _findings(lake)
    assert finding.evidence.index == "partition_stats"
    _rebuild(lake, "partition_stats")
    rebuilt = _mdt(lake).records("partition_stats")[record.key].raw["ColumnStatsMetadata"]
    assert rebuilt["maxValue"] == record.raw["ColumnStatsMetadata"]["maxValue"]


def test_record_index_key_moved_to_another_group_found_and_rebuilt(tmp_path: Path, clean_rows: list) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    records = _mdt(lake).records("record_index")
    by_group = {}
    for key, record in sorted(records.items()):
        by_group.setdefault(record_location(record.raw["recordIndexMetadata"]), key)
    (group_a, key_a), (group_b, key_b) = list(by_group.items())[:2]
    moved = dataclasses.replace(records[key_a], raw={**records[key_a].raw,
                                                     "recordIndexMetadata": records[key_b].raw["recordIndexMetadata"]})
    _write(lake, "record_index", (moved,))
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, RecordIndexEvidence) and not evidence.sampled
    assert [(m.key, m.recorded, m.actual) for m in evidence.shown] == [(key_a, "/".join(group_b), "/".join(group_a))]
    _rebuild(lake, "record_index")
    after = _mdt(lake).records("record_index")[key_a].raw["recordIndexMetadata"]
    assert after == records[key_a].raw["recordIndexMetadata"]
    assert rows(lake) == clean_rows


def test_missing_secondary_value_found_and_rebuilt_in_its_file_group(tmp_path: Path, clean_rows: list) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    index = "secondary_index_merchant_idx"
    mdt = _mdt(lake)
    records = mdt.records(index)
    key = next(k for k in sorted(records) if k.startswith("Spotify$"))
    latest = mdt.mdt.timeline.completed().last().requested_time
    holder = next(s.file_id for s in mdt.latest_slices(index)
                  if key in mdt._slice_records(s, mdt.valid_instants(), latest))
    write_routed_update(mdt, mdt.mdt.new_instant_time(), index, {holder: ([], [key])})
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, SecondaryIndexEvidence) and evidence.column == "merchant_name"
    assert [(m.value, m.record_key, m.problem) for m in evidence.shown] == [("Spotify", split_key(key)[1], "missing")]
    _rebuild(lake, index)
    mdt = _mdt(lake)
    latest = mdt.mdt.timeline.completed().last().requested_time
    back = [s.file_id for s in mdt.latest_slices(index) if key in mdt._slice_records(s, mdt.valid_instants(), latest)]
    assert back == [holder]  # where Hudi routes the value (getSecondaryKeyToFileGroupMappingFunction)
    assert rows(lake) == clean_rows


def test_empty_index_declared_complete_found_and_rebuilt(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    index = "secondary_index_txn_date_idx"
    mdt = _mdt(lake)
    latest = mdt.mdt.timeline.completed().last().requested_time
    groups = {s.file_id: ([], sorted(mdt._slice_records(s, mdt.valid_instants(), latest)))
              for s in mdt.latest_slices(index)}
    write_routed_update(mdt, mdt.mdt.new_instant_time(), index, groups)
    [finding] = _findings(lake)
    evidence = finding.evidence
    assert isinstance(evidence, DefinitionEvidence) and (evidence.index, evidence.problem) == (index, "no record")
    _rebuild(lake, index)
    assert len(_mdt(lake).records(index)) == 12


def test_index_folder_gone_is_dropped_with_the_queries_named(tmp_path: Path, clean_rows: list) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    index = "secondary_index_merchant_idx"
    shutil.rmtree(lake / ".hoodie" / "metadata" / index)
    [finding] = _findings(lake)
    assert finding.repair.startswith("drop ") and finding.repairable
    table = HudiTable.open(str(lake))
    with pytest.raises(RepairUnavailable, match="no file group"):
        plan_rebuild(table, index)
    plan = plan_repair(table, KIND)
    assert [c.action for c in plan.changes] == ["properties update", DROP, "index definition delete"]
    assert any("secondary-index lookups" in n for n in plan.notes)
    assert run_repair(table, plan).done == ()  # a dry run
    result = run_repair(HudiTable.open(str(lake)), plan, dry_run=False)
    assert result.ok and len(result.done) == 3
    table = HudiTable.open(str(lake))
    assert index not in table.config.metadata_partitions
    assert index not in json.loads((lake / ".hoodie" / ".index_defs" / "index.json").read_text())["indexDefinitions"]
    assert _findings(lake) == []
    assert rows(lake) == clean_rows


def test_drop_of_a_healthy_index_names_what_queries_lose(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    plan = plan_drop(HudiTable.open(str(lake)), "record_index")
    assert any("record-key lookups" in n for n in plan.notes) and plan.bytes > 0
    run_index_repair(HudiTable.open(str(lake)), plan, dry_run=False)
    assert not (lake / ".hoodie" / "metadata" / "record_index").exists()
    assert "record_index" not in HudiTable.open(str(lake)).config.metadata_partitions
    assert _findings(lake) == []
    with pytest.raises(RepairUnavailable, match="files partition"):
        plan_drop(HudiTable.open(str(lake)), "files")


def test_a_rebuild_that_crashed_before_completing_is_finished_by_a_rerun(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    records = _mdt(lake).records("record_index")
    first, second = sorted(records)[:2]
    gone = first if record_location(records[first].raw["recordIndexMetadata"]) else second
    _write(lake, "record_index", deletes=(gone,))
    plan = plan_rebuild(HudiTable.open(str(lake)), "record_index")
    run_index_repair(HudiTable.open(str(lake)), plan, dry_run=False)
    timeline = lake / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    completed = max(timeline.glob("*.deltacommit"), key=lambda p: p.name)  # the rebuild's, completed last
    completed.unlink()  # as if the process died right before completing it
    crashed = completed.name.split("_")[0]
    assert [f.evidence.index for f in _findings(lake)] == ["record_index"]  # readers ignore the pending one
    result = run_index_repair(HudiTable.open(str(lake)), plan, dry_run=False)
    assert result.ok and result.done
    assert _findings(lake) == []
    assert not any(p.name.startswith(crashed + ".") for p in timeline.iterdir())  # rolled back, not left behind
    assert not [p for p in (lake / ".hoodie" / "metadata" / "record_index").iterdir() if f"_{crashed}.log" in p.name]


def test_record_index_sampled_states_size_and_confidence_full_check_on_request(tmp_path: Path) -> None:
    lake = unzip_table(V9_COW, tmp_path)
    [info] = _findings(lake, index_sample_keys=3)
    evidence = info.evidence
    assert isinstance(evidence, RecordIndexEvidence) and evidence.sampled
    assert info.severity.value == "info" and evidence.confidence == 0.95
    assert 0 < evidence.groups_checked < evidence.groups_total and evidence.undetected_fraction == pytest.approx(
        3 / evidence.keys_checked)
    assert "95% confidence" in info.summary and not info.repairable
    assert _findings(lake, index_sample_keys=3, index_full=True) == []


def test_cli_verify_rebuild_drop(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`cleanline index verify|rebuild|drop`: the indexes listed with their findings (exit 1),
    the rebuild's estimate previewed, then run (--yes) to a clean verify; a drop named."""
    from timeline.cli import main

    lake = unzip_table(V9_COW, tmp_path)
    records = _mdt(lake).records("record_index")
    key = sorted(records)[0]
    _write(lake, "record_index", deletes=(key,))
    assert main(["index", "verify", str(lake), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert {i["name"]: i["state"] for i in out["indexes"]}["record_index"] == "complete"
    [finding] = out["findings"]
    assert finding["evidence"]["shown"][0]["key"] == key and finding["repairable"]
    assert main(["index", "rebuild", str(lake), "--index", "record_index", "--preview"]) == 0
    preview = capsys.readouterr().out
    assert "note: estimate: " in preview and "index rebuild" in preview
    assert main(["index", "rebuild", str(lake), "--index", "record_index", "--yes", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["remaining"] == [] and result["result"]["done"][0]["action"] == "index rebuild"
    assert main(["index", "verify", str(lake), "--full"]) == 0
    assert "every index agrees with the data" in capsys.readouterr().out
    assert main(["index", "drop", str(lake), "--index", "secondary_index_txn_date_idx", "--yes"]) == 0
    assert "secondary-index lookups" in capsys.readouterr().out
    assert "secondary_index_txn_date_idx" not in HudiTable.open(str(lake)).config.metadata_partitions


def test_log_file_statistics_are_read_from_its_blocks(tmp_path: Path) -> None:
    """A log file's column statistics (`index_logs.log_stats`) from its Avro data blocks, written
    with the table's own schema (a decimal, a date, a timestamp): min and max as the record holds
    them (unscaled decimal, days, micros), nulls and values counted; a rollback command inside
    leaves the file unjudged."""
    from decimal import Decimal

    from timeline.doctor.index_logs import log_stats
    from timeline.logformat import avro_data_block, command_block

    lake = unzip_table(V9_COW, tmp_path)
    table = HudiTable.open(str(lake))
    schema = table.config.get("hoodie.table.create.schema")
    assert schema
    base = {f["name"]: None for f in json.loads(schema)["fields"]}
    rows_ = [base | {"txn_id": "TXN-2", "amount": Decimal("12.50"), "txn_ts": 5},
             base | {"txn_id": "TXN-1", "amount": Decimal("-3.00"), "txn_ts": 9},
             base | {"txn_id": None, "amount": Decimal("7.25")}]
    path = table.path("region=eu", ".f-0_1.log.1_0-1-1")
    table.storage.write(path, avro_data_block(rows_[:2], schema, "1") + avro_data_block(rows_[2:], schema, "2"))
    stats = log_stats(table.storage, path)
    assert stats is not None
    assert (stats["txn_id"]["minValue"], stats["txn_id"]["maxValue"], stats["txn_id"]["nullCount"],
            stats["txn_id"]["valueCount"]) == ("TXN-1", "TXN-2", 1, 3)
    assert (stats["amount"]["minValue"], stats["amount"]["maxValue"], stats["amount"]["decimal"]) == (-300, 1250, True)
    assert (stats["txn_ts"]["minValue"], stats["txn_ts"]["maxValue"], stats["txn_ts"]["nullCount"]) == (5, 9, 1)
    table.storage.write(path, avro_data_block(rows_, schema, "1") + command_block("2", "1"), overwrite=True)
    assert log_stats(table.storage, path) is None
