"""Archiving a table of version 8 or 9 into its LSM timeline (timeline/archive/lsm.py, through
timeline/archive/archiver.py): on copies of the real fixture tables, the Parquet file, manifest
and version file Hudi 1.x writes, read back with each moved instant's bytes, the active timeline
without them, the same rows and slices for hudi-rs and Cleanline; compaction and cleaning of the
LSM tree as `LSMTimelineWriter.compactAndClean` does them; re-runs after a crash."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.archive.helpers import expected_row, lsm_rows
from tests.helpers import Lake, S3Server, ours, rows, s3_rows, theirs, tree_snapshot
from tests.helpers import archive_instants as hand_made_history
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.archive.archiver import archive_instants
from timeline.archive.lsm import candidate_files, compacted_file_name, file_layer
from timeline.archive.settings import ArchivalSettings
from timeline.exceptions import CleanlineError
from timeline.instant import Instant
from timeline.metadata.archived import (
    LSM_COLUMNS,
    LSM_JAVA_SCHEMA,
    LsmFileEntry,
    decode_lsm_manifest,
    encode_lsm_manifest,
    lsm_arrow_schema,
)
from timeline.storage import MemoryStorage
from timeline.storage.containment import OutsideTableError

LSM_TABLES = [
    "sample_table/cow/v8_simplekeygen_nonhivestyle",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/cow/v9_txns_simple_meta",
    "sample_table/mor/avro/v9_txns_complex_meta",
    "sample_table/mor/avro/v9_nonpartitioned_rollback",
    "sample_table/cow/v9_txns_nonpart_nometa",
]
ARCHIVABLE = ("commit", "deltacommit", "replacecommit", "clean", "rollback")


def history(path: Path) -> Path:
    return path / ".hoodie" / "timeline" / "history"


def archivable(table: HudiTable) -> list[Instant]:
    return [i for i in table.timeline.completed() if i.action in ARCHIVABLE]


@pytest.mark.parametrize("table_id", LSM_TABLES)
def test_lsm_round_trip_on_real_tables(table_copy: Callable[[str], Path], table_id: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    before_rows, before_slices, before_theirs = rows(path), ours(table), theirs(path)
    candidates = archivable(table)
    moved = candidates[:max(1, len(candidates) // 2)]
    expected = [expected_row(table, i) for i in moved]
    active_before = [i for i in table.timeline if i not in moved]

    result = archive_instants(table, moved)

    name = f"{moved[0].requested_time}_{moved[-1].requested_time}_0.parquet"
    folder = history(path)
    assert result.archived == tuple(moved)
    assert result.written == (str(folder / name), str(folder / "manifest_1"), str(folder / "_version_"))
    assert (folder / "_version_").read_bytes() == b"1"
    assert decode_lsm_manifest((folder / "manifest_1").read_bytes(), path="m") == [
        LsmFileEntry(name, (folder / name).stat().st_size)]
    # every moved instant, with its completion time and the bytes Hudi stores, exactly once
    assert lsm_rows(folder) == expected
    assert list(load_archived_timeline(table)) == moved
    assert list(table.reload().timeline) == active_before
    assert table.archived_completion_times() == {i.requested_time: i.completion_time for i in moved}
    # readers see the same table
    assert rows(path) == before_rows
    assert theirs(path) == before_theirs
    assert ours(table) == before_slices


def test_lsm_file_is_written_as_parquet_avro_writes_it(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    archive_instants(table, archivable(table)[:3])
    (file,) = history(path).glob("*.parquet")
    parquet = pq.ParquetFile(file)
    # the schema parquet-avro's AvroSchemaConverter makes of HoodieLSMTimelineInstant
    columns = [(c.name, c.physical_type, c.logical_type.type, c.max_definition_level)
               for c in (parquet.schema.column(i) for i in range(len(LSM_COLUMNS)))]
    assert columns == [("instantTime", "BYTE_ARRAY", "STRING", 1), ("completionTime", "BYTE_ARRAY", "STRING", 1),
                       ("action", "BYTE_ARRAY", "STRING", 1), ("metadata", "BYTE_ARRAY", "NONE", 1),
                       ("plan", "BYTE_ARRAY", "NONE", 1), ("version", "INT32", "NONE", 0)]
    assert parquet.schema_arrow == lsm_arrow_schema()
    meta = parquet.metadata
    assert meta.metadata == {b"parquet.avro.schema": LSM_JAVA_SCHEMA.encode(), b"writer.model.name": b"avro"}
    assert json.loads(LSM_JAVA_SCHEMA)["name"] == "HoodieLSMTimelineInstant"
    assert meta.format_version == "1.0" and meta.num_row_groups == 1
    assert {meta.row_group(0).column(i).compression for i in range(len(LSM_COLUMNS))} == {"GZIP"}


def commits(lake: Lake, count: int) -> list[Instant]:
    return [lake.commit(f"2026110100{i:02d}00000", {"city=sf": [lake.base_file("city=sf", f"fg{i}",
                                                                             f"2026110100{i:02d}00000")]})
            for i in range(count)]


def test_lsm_compaction_merges_a_full_layer_and_cleaning_keeps_three_snapshots() -> None:
    """compactAndClean: the tenth layer-0 file triggers a compaction of the ten into one layer-1
    file and a snapshot that lists it instead; clean keeps the latest 3 snapshots (plus one for
    the layer compacted in the same run) and removes older manifests, then files none lists."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    instants = commits(lake, 16)
    table = HudiTable.load(lake.storage, "/t")
    folder = "/t/.hoodie/timeline/history"
    results = [archive_instants(table, [instant]) for instant in instants[:14]]
    tenth = results[9]
    l0 = [f"{i.requested_time}_{i.requested_time}_0.parquet" for i in instants[:10]]
    assert tenth.compacted == tuple(l0)
    merged = f"{instants[0].requested_time}_{instants[9].requested_time}_1.parquet"
    assert merged == compacted_file_name(l0)
    assert tenth.written[1] == f"{folder}/manifest_10"  # then manifest_11 for the compaction
    # every run cleans: the tenth keeps 11, 10, 9 and 8 (one more for the compaction), drops 7
    assert tenth.cleaned == (f"{folder}/manifest_7",)
    # the twelfth drops manifest_10, the last to list the ten compacted files, then them
    assert results[11].cleaned[0] == f"{folder}/manifest_10"
    assert sorted(results[11].cleaned[1:]) == [f"{folder}/{name}" for name in l0]
    latest = int(lake.storage.read(f"{folder}/_version_"))
    assert latest == 15  # fourteen archivals, one compaction
    files = decode_lsm_manifest(lake.storage.read(f"{folder}/manifest_{latest}"), path="m")
    assert [f.name for f in files] == [merged] + [f"{i.requested_time}_{i.requested_time}_0.parquet"
                                                  for i in instants[10:14]]
    # the ten layer-0 files went once no kept snapshot listed them
    parquet = sorted(s.name for s in lake.storage.list(folder) if s.name.endswith(".parquet"))
    assert parquet == sorted(f.name for f in files)
    assert len([s for s in lake.storage.list(folder) if s.name.startswith("manifest_")]) == 3
    assert [i.requested_time for i in load_archived_timeline(table)] == [i.requested_time for i in instants[:14]]
    assert [i.requested_time for i in table.reload().timeline] == [i.requested_time for i in instants[14:]]


def test_lsm_compaction_candidates_stop_at_the_batch_and_the_size() -> None:
    """getCandidateFiles."""
    files = [LsmFileEntry(f"{i}_{i}_0.parquet", size) for i, size in enumerate([5, 5, 50, 5, 5])]
    assert candidate_files(files, 3, 100) == ["0_0_0.parquet", "1_1_0.parquet", "2_2_0.parquet"]
    assert candidate_files(files, 10, 20) == ["0_0_0.parquet", "1_1_0.parquet", "2_2_0.parquet"]
    assert candidate_files([LsmFileEntry("1_1_0.parquet", 50), *files[:2]], 10, 20) == [
        "0_0_0.parquet", "1_1_0.parquet"]
    assert file_layer("1_2_3.parquet") == 3 and file_layer("junk.parquet") == 0


def test_lsm_appends_to_a_history_written_before_and_compacts_it() -> None:
    """A history another writer left (pyarrow's own Parquet) is kept in the next snapshot, and
    compaction reads it back with the rows of Cleanline's files."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    instants = commits(lake, 5)
    hand_made_history(lake.storage, lake.timeline_folder,
                      [(instants[0].requested_time, instants[0].completion_time or "", "commit")])
    table = HudiTable.load(lake.storage, "/t")
    result = archive_instants(table, [instants[1]], settings=ArchivalSettings(compaction_batch=2))
    assert result.written[1].endswith("manifest_2")
    assert len(result.compacted) == 2  # the other writer's file and ours, into one layer-1 file
    assert [(i.requested_time, i.completion_time) for i in load_archived_timeline(table)] == [
        (i.requested_time, i.completion_time) for i in instants[:2]]


def test_lsm_missing_version_file_takes_the_highest_manifest() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    instants = commits(lake, 4)
    table = HudiTable.load(lake.storage, "/t")
    archive_instants(table, [instants[0]])
    lake.storage.delete("/t/.hoodie/timeline/history/_version_")
    result = archive_instants(table, [instants[1]])
    assert result.written[1].endswith("manifest_2")
    assert [i.requested_time for i in load_archived_timeline(table)] == [i.requested_time for i in instants[:2]]


def test_lsm_rerun_replaces_a_file_no_snapshot_lists(table_copy: Callable[[str], Path]) -> None:
    """`write`: a file of the same name that the latest snapshot does not list (a crash before
    the manifest) is deleted and written again."""
    path = table_copy("sample_table/cow/v8_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    first = archivable(table)[0]
    history(path).mkdir(parents=True, exist_ok=True)
    leftover = history(path) / f"{first.requested_time}_{first.requested_time}_0.parquet"
    leftover.write_bytes(b"half a file")
    result = archive_instants(table, [first])
    assert result.archived == (first,)
    assert pq.read_table(leftover).num_rows == 1
    assert list(load_archived_timeline(table)) == [first]


def test_lsm_rerun_after_the_snapshot_only_deletes(table_copy: Callable[[str], Path]) -> None:
    """A crash after `_version_`, before the deletes: the re-run writes nothing and deletes."""
    path = table_copy("sample_table/cow/v8_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    first = archivable(table)[0]
    timeline = path / ".hoodie" / "timeline"
    saved = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in timeline.glob(f"{first.requested_time}*")}
    archive_instants(table, [first])
    snapshot = {p.name: p.read_bytes() for p in history(path).iterdir()}
    for file, (data, mtime) in saved.items():
        file.write_bytes(data)
        os.utime(file, ns=(mtime, mtime))
    again = archive_instants(table, [first])
    assert again.already_archived == (first,) and again.written == () and len(again.deleted) == 3
    assert {p.name: p.read_bytes() for p in history(path).iterdir()} == snapshot
    assert list(load_archived_timeline(table)) == [first]
    assert first not in list(table.reload().timeline)


def test_lsm_stops_when_the_lock_is_lost(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v8_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    snapshot = tree_snapshot(path)

    def lost() -> None:
        raise CleanlineError("lock lost")

    table.publish_check = lost
    with pytest.raises(CleanlineError, match="lock lost"):
        archive_instants(table, archivable(table)[:1])
    assert tree_snapshot(path) == snapshot


def test_lsm_archives_a_table_on_s3(s3_server: S3Server, s3_table: Any) -> None:
    uri = s3_table("sample_table/mor/avro/v9_txns_simple_nometa")
    table = HudiTable.open(uri)
    before = s3_rows(s3_server, uri)
    moved = archivable(table)[:4]
    result = archive_instants(table, moved)
    assert result.archived == tuple(moved) and len(result.deleted) == 12
    reopened = HudiTable.open(uri)
    assert list(load_archived_timeline(reopened)) == moved
    assert not set(moved) & set(reopened.timeline)
    assert s3_rows(s3_server, uri) == before
    data = reopened.storage.read(result.written[0])
    assert pq.read_table(io.BytesIO(data)).column("instantTime").to_pylist() == [i.requested_time for i in moved]


def test_lsm_manifest_naming_a_file_outside_hoodie_is_refused() -> None:
    """A manifest is data from the lake: a file name in it that leaves `.hoodie/` is refused
    before anything is written or deleted (Containment.meta_path)."""
    lake = Lake(MemoryStorage(), "/t", version=8)
    instants = commits(lake, 2)
    lake.storage.write("/t/.hoodie/timeline/history/manifest_1",
                       encode_lsm_manifest([LsmFileEntry("../../../../0_9_0.parquet", 1)]))
    lake.storage.write("/t/.hoodie/timeline/history/_version_", b"1")
    table = HudiTable.load(lake.storage, "/t")
    before = {s.path for s in lake.storage.list_recursive("/t")}
    with pytest.raises(OutsideTableError):
        archive_instants(table, instants[:1])
    assert {s.path for s in lake.storage.list_recursive("/t")} == before
