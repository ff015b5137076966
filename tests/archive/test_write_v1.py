"""Archiving a table of version 6 (timeline/archive/write_v1.py, through
timeline/archive/archiver.py): on copies of the real v6 fixture tables, the archive log file
Hudi 0.14/0.15 writes, read back with each moved state file's content, the active timeline
without the moved instants, and the same rows and file slices for hudi-rs and Cleanline."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Lake, ours, rows, tree_snapshot
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.archive.actions import ArchiveRefused
from timeline.archive.archiver import archive_instants
from timeline.archive.settings import ArchivalSettings
from timeline.archive.write_v1 import archive_file_name
from timeline.archived_timeline import archived_entries
from timeline.exceptions import CleanlineError
from timeline.instant import Instant, State, instant_time_from_epoch_ms, zone_of
from timeline.logformat import BlockType, HeaderKey, read_blocks
from timeline.metadata import avro, jsonmeta
from timeline.metadata.archived import ENTRY_CONTENT, ArchivedEntry, commit_metadata_avro
from timeline.storage import MemoryStorage

V6_TABLES = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle",
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/cow/v6_complexkeygen_hivestyle",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
]

# The entry field holding each kind of content, as `meta_entry` fills it.
PAYLOAD_FIELDS = ("hoodieCommitMetadata", "hoodieCleanMetadata", "hoodieRollbackMetadata", "hoodieCleanerPlan",
                  "hoodieCompactionPlan", "hoodieReplaceCommitMetadata", "hoodieRequestedReplaceMetadata",
                  "HoodieInflightReplaceMetadata")


def contains(found: Any, original: Any) -> bool:
    """Whether `found` holds everything `original` holds (records may gain defaulted fields)."""
    if isinstance(original, dict):
        return isinstance(found, dict) and all(k in found and contains(found[k], v) for k, v in original.items())
    if isinstance(original, list):
        return isinstance(found, list) and len(found) == len(original) and all(map(contains, found, original))
    return bool(found == original)


def state_files(table: HudiTable, instants: list[Instant]) -> dict[tuple[str, str, str], tuple[bytes, str]]:
    """(time, action, state) -> (bytes, state transition time) of every state file of `instants`."""
    found = {}
    zone = zone_of(table.config.timezone)
    for instant in instants:
        for state, status in table.timeline.files_of(instant).items():
            name = status.name.split(".")
            action = instant.action if state is State.COMPLETED else ("commit" if name[1] == "inflight" else name[1])
            found[(instant.requested_time, action, state.name)] = (
                table.storage.read(status.path), instant_time_from_epoch_ms(status.mtime_ms, zone))
    return found


def payload(entry: dict[str, Any]) -> Any:
    values = [entry[f] for f in PAYLOAD_FIELDS if entry[f] is not None]
    assert len(values) <= 1
    return values[0] if values else None


@pytest.mark.parametrize("table_id", V6_TABLES)
def test_write_v1_round_trip_on_real_tables(table_copy: Callable[[str], Path], table_id: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    before_rows, before_slices = rows(path), ours(table)
    completed = list(table.timeline.completed())
    moved, kept = completed[:-1], completed[-1:]
    originals = state_files(table, moved)

    result = archive_instants(table, moved)

    assert result.archived == tuple(sorted(moved, key=lambda i: i.sort_key))
    archive = path / ".hoodie" / "archived" / archive_file_name(1)
    assert result.written == (str(archive),)
    assert [i.requested_time for i in table.reload().timeline] == [i.requested_time for i in kept]
    # the archived timeline lists every moved instant, completed, with its completion time
    assert list(load_archived_timeline(table)) == moved
    # one entry per state file, each with that file's content
    entries = list(archived_entries(table.storage, str(path / ".hoodie" / "archived")))
    keyed = {(e.time, e.action, e.state): raw for raw in entries if (e := ArchivedEntry.from_raw(raw))}
    assert len(keyed) == len(entries) == len(originals)
    assert keyed.keys() == originals.keys()
    for key, (data, transition_time) in originals.items():
        entry = keyed[key]
        assert entry["stateTransitionTime"] == transition_time
        found = payload(entry)
        if (key[1], State[key[2]]) not in ENTRY_CONTENT:
            assert found is None, key  # e.g. a rollback's plan: createMetaWrapper keeps none
        elif not data:
            assert found is None or found["partitionToWriteStats"] == {}, key  # an empty requested commit
        elif data.startswith(b"Obj\x01"):
            assert contains(found, avro.decode(data, path=str(key))), key
        else:
            replace = key[1] == "replacecommit" and key[2] == "COMPLETED"
            assert found == commit_metadata_avro(jsonmeta.decode(data, path=str(key)), replace=replace), key
    # Hudi's blocks: Avro data, the single header SCHEMA, at most `hoodie.commits.archival.batch` entries
    blocks = read_blocks(archive.read_bytes(), path=str(archive))
    assert {b.block_type for b in blocks} == {BlockType.AVRO_DATA}
    assert all(list(b.header) == [HeaderKey.SCHEMA] and not b.footer for b in blocks)
    assert len(blocks) == -(-len(originals) // 10)
    # readers see the same table
    assert rows(path) == before_rows
    assert ours(table.reload()) == before_slices


def test_write_v1_next_archival_rolls_over_to_a_new_file(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/mor/parquet/v6_nonpartitioned_rollback")
    table = HudiTable.open(str(path))
    first, second, last = list(table.timeline.completed())
    archive_instants(table, [first], settings=ArchivalSettings(archival_batch=2))
    result = archive_instants(table, [second])
    assert result.written == (str(path / ".hoodie" / "archived" / archive_file_name(2)),)
    assert list(load_archived_timeline(table)) == [first, second]
    blocks = read_blocks((path / ".hoodie" / "archived" / archive_file_name(1)).read_bytes(), path="1")
    assert len(blocks) == 2  # three entries, two a block
    assert [str(i) for i in table.reload().timeline] == [str(last)]


def test_write_v1_rerun_writes_nothing_twice(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    first = table.timeline.completed().first()
    assert first is not None
    archive_instants(table, [first])
    snapshot = tree_snapshot(path)
    again = archive_instants(table, [first])
    assert again.gone == (first,) and again.written == () and again.deleted == ()
    assert tree_snapshot(path) == snapshot


def test_write_v1_rerun_after_the_archive_file_only_deletes(table_copy: Callable[[str], Path]) -> None:
    """A crash after the archive file (its instants still active): the re-run writes no entry
    again and removes the active files."""
    path = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    first = table.timeline.completed().first()
    assert first is not None
    saved = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (path / ".hoodie").glob(f"{first.requested_time}*")}
    archive_instants(table, [first])
    for file, (data, mtime) in saved.items():  # as if the deletes had not run
        file.write_bytes(data)
        os.utime(file, ns=(mtime, mtime))
    again = archive_instants(table, [first])
    assert again.already_archived == (first,) and again.written == ()
    assert len(again.deleted) == 3
    assert len(list(archived_entries(table.storage, str(path / ".hoodie" / "archived")))) == 3
    assert list(load_archived_timeline(table)) == [first]


def test_write_v1_refuses_what_hudi_never_archives(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    snapshot = tree_snapshot(path)
    with pytest.raises(ArchiveRefused, match="savepoint"):
        archive_instants(table, [Instant("20240101000000000", "savepoint", State.COMPLETED)])
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit("20260101000000000")
    pending = lake.commit("20260102000000000", state=State.INFLIGHT)
    with pytest.raises(ArchiveRefused, match="not completed"):
        archive_instants(HudiTable.load(lake.storage, "/t"), [pending])
    assert tree_snapshot(path) == snapshot


def test_write_v1_stops_when_the_lock_is_lost(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")
    table = HudiTable.open(str(path))
    snapshot = tree_snapshot(path)

    def lost() -> None:
        raise CleanlineError("lock lost")

    table.publish_check = lost
    with pytest.raises(CleanlineError, match="lock lost"):
        archive_instants(table, list(table.timeline.completed())[:1])
    assert tree_snapshot(path) == snapshot


def test_write_v1_hand_made_actions_keep_their_content() -> None:
    """A clean, a MOR compaction (pending files named `compaction`, completed as a commit) and a
    leftover marker folder, on a hand-made v6 table."""
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    lake.commit("20260101000000000", {"p1": [lake.base_file("p1", "f1", "20260101000000000")]})
    lake.schedule_compaction("20260102000000000", [("p1", "f1", "20260101000000000")], state=State.INFLIGHT)
    compacted = lake.base_file("p1", "f1", "20260102000000000")
    compaction = lake.complete_compaction("20260102000000000", {"p1": [compacted]})
    clean = lake.clean("20260103000000000", "20260102000000000")
    lake.commit("20260104000000000")
    lake.storage.write("/t/.hoodie/.temp/20260102000000000/p1/f1.marker.MERGE", b"")
    table = HudiTable.load(lake.storage, "/t")
    result = archive_instants(table, [compaction, clean])
    assert [(i.requested_time, i.action) for i in result.archived] == [
        (compaction.requested_time, "commit"), (clean.requested_time, "clean")]
    assert not lake.storage.exists("/t/.hoodie/.temp/20260102000000000")
    entries = {(e.time, e.action, e.state): raw for raw in archived_entries(lake.storage, "/t/.hoodie/archived")
               if (e := ArchivedEntry.from_raw(raw))}
    assert sorted(entries) == [
        ("20260102000000000", "commit", "COMPLETED"), ("20260102000000000", "compaction", "INFLIGHT"),
        ("20260102000000000", "compaction", "REQUESTED"), ("20260103000000000", "clean", "COMPLETED"),
        ("20260103000000000", "clean", "INFLIGHT"), ("20260103000000000", "clean", "REQUESTED")]
    plan = entries[("20260102000000000", "compaction", "REQUESTED")]["hoodieCompactionPlan"]
    assert plan["operations"][0]["fileId"] == "f1"
    assert entries[("20260103000000000", "clean", "COMPLETED")]["hoodieCleanMetadata"]["earliestCommitToRetain"] == (
        "20260102000000000")
    assert entries[("20260102000000000", "commit", "COMPLETED")]["hoodieCommitMetadata"]["operationType"] == "COMPACT"
    assert [i.requested_time for i in table.reload().timeline] == ["20260101000000000", "20260104000000000"]
