"""timeline/changes.py: what changed on the active timeline since an earlier look, read from the
changed instants' state files only, equals what loading the whole timeline gives for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Lake
from timeline import CorruptInstantError, HudiTable
from timeline.changes import timeline_changes, timeline_folder_names
from timeline.instant import Instant, State
from timeline.storage.arrow import LocalStorage

TIMES = [f"202611010{i:02d}000000" for i in range(10)]


def lake_with(tmp_path: Path, version: int, commits: int) -> Lake:
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=version)
    for time_ in TIMES[:commits]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-8:-6]}", time_)]})
    return lake


def whole(lake: Lake, times: frozenset[str]) -> list[tuple[str, str, str, str | None]]:
    """The instants at `times` as a full load of the timeline gives them."""
    return [(i.requested_time, i.action, i.state.name, i.completion_time)
            for i in HudiTable.open(lake.base).timeline if i.requested_time in times]


def changed(lake: Lake, previous: frozenset[str], known: frozenset[str] = frozenset()):  # type: ignore[no-untyped-def]
    found = timeline_changes(HudiTable.open(lake.base), previous, lambda times: times & known)
    return found, [(i.requested_time, i.action, i.state.name, i.completion_time) for i in found.timeline]


@pytest.mark.parametrize("version", [6, 8])
def test_changes_new_commits_equal_a_full_load(tmp_path: Path, version: int) -> None:
    lake = lake_with(tmp_path, version, 3)
    before = timeline_folder_names(HudiTable.open(lake.base))
    for time_ in TIMES[3:6]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-8:-6]}", time_)]})
    pending = lake.commit(TIMES[6], state=State.INFLIGHT)
    found, instants = changed(lake, before, known=frozenset(TIMES[:3]))
    assert found.times == frozenset(TIMES[3:7]) and not found.removed and not found.full
    assert instants == whole(lake, found.times)
    assert ("INFLIGHT", TIMES[6]) == (instants[-1][2], pending.requested_time)
    again, _ = changed(lake, found.names)
    assert not again.changed  # nothing since


@pytest.mark.parametrize("version", [6, 8])
def test_changes_a_known_time_is_read_from_all_its_names(tmp_path: Path, version: int) -> None:
    """A pending write that completes, and a savepoint on a commit's time: the time had an
    instant already, so every name of it is read (the savepoint beside its commit)."""
    lake = lake_with(tmp_path, version, 3)
    lake.commit(TIMES[3], state=State.INFLIGHT)
    before = timeline_folder_names(HudiTable.open(lake.base))
    completion = TIMES[3][:-3] + "999" if version >= 8 else None  # the write completes
    lake.instant_file(Instant(TIMES[3], "commit", State.COMPLETED, completion),
                      lake.commit_metadata({}, None, "UPSERT", time=TIMES[3]))
    HudiTable.open(lake.base).maintenance().create_savepoint(TIMES[1], user="t", comment="")
    found, instants = changed(lake, before, known=frozenset(TIMES[:4]))
    assert found.times == {TIMES[1], TIMES[3]}
    assert instants == whole(lake, found.times)
    assert {(t, a) for t, a, _, _ in instants} == {(TIMES[1], "commit"), (TIMES[1], "savepoint"), (TIMES[3], "commit")}


def test_changes_removed_names_leave_the_instant_out(tmp_path: Path) -> None:
    lake = lake_with(tmp_path, 6, 4)
    table = HudiTable.open(lake.base)
    before = timeline_folder_names(table)
    for path in Path(table.timeline.folder).glob(f"{TIMES[3]}.*"):
        path.unlink()
    found, instants = changed(lake, before, known=frozenset(TIMES[:4]))
    assert found.times == {TIMES[3]} and len(found.removed) == 3 and instants == []


def test_changes_check_the_changed_instants_as_ensure_intact_does(tmp_path: Path) -> None:
    lake = lake_with(tmp_path, 6, 2)
    before = timeline_folder_names(HudiTable.open(lake.base))
    lake.commit(TIMES[2])
    Path(lake.timeline_folder, f"{TIMES[2]}.commit").write_bytes(b"{not json")
    with pytest.raises(CorruptInstantError, match=TIMES[2]):
        changed(lake, before)



def test_changes_a_newest_file_rewritten_in_place_is_a_change(tmp_path: Path) -> None:
    """A truncated latest commit keeps its name: its size (kept for the newest files) says it
    changed, and it is checked again."""
    lake = lake_with(tmp_path, 6, 3)
    first = timeline_changes(HudiTable.open(lake.base), None)
    latest = Path(lake.timeline_folder, f"{TIMES[2]}.commit")
    assert latest.name in first.watched
    latest.write_bytes(latest.read_bytes()[:40])
    with pytest.raises(CorruptInstantError, match=TIMES[2]):
        timeline_changes(HudiTable.open(lake.base), first.names, lambda times: times, first.watched)
    unwatched = timeline_changes(HudiTable.open(lake.base), first.names, lambda times: times)
    assert not unwatched.changed  # without the sizes kept, a same-named file is no change


def test_changes_the_newest_files_watched_are_those_of_a_full_look(tmp_path: Path) -> None:
    """The newest state files are found among the last look's newest and the names that came
    (no pass over every name), unless one of the last look's newest went: either way they are
    the ones a full look finds."""
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=6)
    times = [f"2026110{d}{h:02d}0000000" for d in range(1, 4) for h in range(10, 20)]  # 30 commits, 90 names
    for time_ in times[:25]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-12:-7]}", time_)]})
    first = timeline_changes(HudiTable.open(lake.base), None)
    assert len(first.watched) == 64
    for time_ in times[25:]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-12:-7]}", time_)]})
    grown = timeline_changes(HudiTable.open(lake.base), list(first.names), lambda found: found, first.watched)
    assert grown.watched == timeline_changes(HudiTable.open(lake.base), None).watched
    assert max(grown.watched).startswith(times[-1])
    for path in Path(lake.timeline_folder).glob(f"{times[-1]}.*"):  # the newest instant goes
        path.unlink()
    shrunk = timeline_changes(HudiTable.open(lake.base), list(grown.names), lambda found: found, grown.watched)
    assert shrunk.removed and shrunk.watched == timeline_changes(HudiTable.open(lake.base), None).watched
    assert max(shrunk.watched).startswith(times[-2]) and len(shrunk.watched) == 64
