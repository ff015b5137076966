"""The active timeline: loaded from real tables it equals what the folder holds; junk is
skipped with a warning; filters and ordering match Hudi's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.helpers import FIXTURE_IDS
from timeline import HudiTable
from timeline.config import TableConfig
from timeline.instant import Instant, State, parse_file_name
from timeline.storage import MemoryStorage
from timeline.timeline import Timeline, load_active_timeline


def instant_files(folder: Path, layout: int) -> set[str]:
    names = set()
    for entry in folder.iterdir():
        if entry.is_file():
            try:
                parse_file_name(entry.name, layout)
            except ValueError:
                continue
            names.add(entry.name)
    return names


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_timeline_equals_what_the_folder_holds(fixture_lake: dict[str, Path], table_id: str) -> None:
    table = HudiTable.open(str(fixture_lake[table_id]))
    timeline = table.timeline
    layout = table.config.layout_version
    folder = Path(timeline.folder)
    on_disk = instant_files(folder, layout)
    listed = {status.name for instant in timeline for status in timeline.files_of(instant).values()}
    assert listed == on_disk
    for instant in timeline:
        files = timeline.files_of(instant)
        assert max(files) is instant.state
        if layout == 2 and instant.is_completed:
            assert files[State.COMPLETED].name == instant.file_name(2)
        assert (folder / instant.file_name(layout)).name in on_disk or instant.is_completed
    assert list(timeline) == sorted(timeline, key=lambda i: i.sort_key)


def _memory_table(names: list[str], *, layout: int = 2) -> tuple[MemoryStorage, TableConfig]:
    storage = MemoryStorage()
    version = "8" if layout == 2 else "6"
    config = TableConfig({"hoodie.table.name": "t", "hoodie.table.version": version,
                          "hoodie.timeline.layout.version": str(layout)})
    folder = "/t/.hoodie/timeline" if layout == 2 else "/t/.hoodie"
    for name in names:
        storage.write(f"{folder}/{name}", b"")
    return storage, config


def test_timeline_skips_junk_names_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    storage, config = _memory_table([
        "001.commit.requested", "20261101000000000.commit.requested", "20261101000000000.inflight",
        "20261101000000000_20261101000001000.commit", "notes.txt", "20261101000000000.commit.done",
        ".20261101000000000_20261101000001000.commit.crc", "hoodie.properties",
    ])
    storage.makedirs("/t/.hoodie/timeline/history")
    with caplog.at_level(logging.WARNING):
        timeline = load_active_timeline(storage, "/t", config)
    assert [(i.requested_time, i.action, i.state) for i in timeline] == [
        ("001", "commit", State.REQUESTED),
        ("20261101000000000", "commit", State.COMPLETED),
    ]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "notes.txt" in warned and "commit.done" in warned
    assert "hoodie.properties" not in warned and ".crc" not in warned


def test_timeline_groups_compaction_under_commit_and_keeps_highest_state() -> None:
    storage, config = _memory_table([
        "100.compaction.requested", "100.compaction.inflight", "100_150.commit",
        "200.compaction.requested", "300.clustering.requested", "300.clustering.inflight",
        "400.deltacommit.requested",
    ])
    timeline = load_active_timeline(storage, "/t", config)
    assert [str(i) for i in timeline] == [
        "[100->150__commit__COMPLETED]", "[200__compaction__REQUESTED]",
        "[300__clustering__INFLIGHT]", "[400__deltacommit__REQUESTED]",
    ]
    done = timeline.find("100")
    assert done is not None and timeline.path_of(done, State.REQUESTED).endswith("100.compaction.requested")
    assert [i.requested_time for i in timeline.pending_compactions()] == ["200"]
    assert [i.requested_time for i in timeline.completed_and_compaction()] == ["100", "200"]
    assert [i.requested_time for i in timeline.writes().pending()] == ["200", "300", "400"]


def test_timeline_layout1_completion_time_comes_from_modification_time() -> None:
    storage, config = _memory_table(["20261101000000000.commit"], layout=1)
    config = TableConfig({**config.props, "hoodie.table.timeline.timezone": "UTC"})
    storage.set_mtime("/t/.hoodie/20261101000000000.commit", 1_793_577_601_250)  # 2026-11-02 00:00:01.250Z
    (instant,) = load_active_timeline(storage, "/t", config)
    assert instant.completion_time == "20261102000001250"


def test_timeline_filters_match_hudi_action_sets() -> None:
    timeline = Timeline.of([
        Instant("1", "commit", State.COMPLETED), Instant("2", "deltacommit", State.COMPLETED),
        Instant("3", "replacecommit", State.COMPLETED), Instant("4", "compaction", State.REQUESTED),
        Instant("5", "logcompaction", State.INFLIGHT), Instant("6", "clean", State.COMPLETED),
        Instant("7", "savepoint", State.COMPLETED), Instant("8", "rollback", State.COMPLETED),
        Instant("9", "restore", State.REQUESTED), Instant("91", "clustering", State.REQUESTED),
    ])
    times = lambda t: [i.requested_time for i in t]  # noqa: E731
    assert times(timeline.commits()) == ["1", "2", "3", "91"]
    assert times(timeline.commits_and_compaction()) == ["1", "2", "3", "4", "91"]
    assert times(timeline.writes()) == ["1", "2", "3", "4", "5", "91"]
    assert times(timeline.cleans()) == ["6"] and times(timeline.savepoints()) == ["7"]
    assert times(timeline.rollbacks()) == ["8"] and times(timeline.restores()) == ["9"]
    assert times(timeline.pending()) == ["4", "5", "9", "91"]


def test_timeline_first_non_savepoint_skips_savepointed_commits_left_by_archival() -> None:
    timeline = Timeline.of([
        Instant("1", "commit", State.COMPLETED), Instant("1", "savepoint", State.COMPLETED),
        Instant("5", "commit", State.COMPLETED),
    ])
    first = timeline.first_non_savepoint()
    assert first is not None and first.requested_time == "5"
    assert timeline.is_before_start("4") and not timeline.is_before_start("5")
    assert timeline.contains_or_before_start("1")


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_timeline_state_files_found_by_name_equal_the_loaded_ones(fixture_lake: dict[str, Path], table_id: str) -> None:
    table = HudiTable.open(str(fixture_lake[table_id]))
    for instant in table.timeline:
        expected = {state: status.path for state, status in table.timeline.files_of(instant).items()}
        assert table.state_files(instant) == expected, instant
