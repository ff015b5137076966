"""What both archived-timeline writers share (timeline/archive/actions.py): which instants may be
archived, each action's state files, left-over markers, and the order in which Hudi's
`deleteArchivedInstants` removes the archived state files."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.archive.actions import ArchiveRefused, LeftoverMarkers, active_actions, delete_archived_instants
from timeline.instant import Instant, State
from timeline.storage import MemoryStorage


class RecordingStorage(MemoryStorage):
    """Memory storage that records the names of the files it deletes, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    def delete(self, path: str) -> bool:
        self.deleted.append(path.rsplit("/", 1)[-1])
        return super().delete(path)


@pytest.mark.parametrize("version", [6, 8])
def test_actions_pending_files_go_first_then_completed_files_oldest_first(version: int) -> None:
    """deleteArchivedInstants: requested and inflight files of every action before any completed
    file (a completed file removed first would make its action look pending), then the
    completed files in timeline order (no hole in the timeline at any moment, HUDI-7207)."""
    storage = RecordingStorage()
    lake = Lake(storage, "/t", version=version)
    done = [lake.commit(f"2026110100{i:02d}00000") for i in range(4)]
    table = HudiTable.load(storage, "/t")
    actions, gone = active_actions(table, reversed(done[:3]))
    assert gone == [] and [a.instant.requested_time for a in actions] == [i.requested_time for i in done[:3]]
    storage.deleted.clear()
    deleted = delete_archived_instants(table, actions)
    names = storage.deleted
    assert len(deleted) == len(names) == 9
    assert all(not name.endswith(("requested", "inflight")) for name in names[6:])
    assert [name[:17] for name in names[6:]] == [i.requested_time for i in done[:3]]
    assert [i.requested_time for i in table.reload().timeline] == [done[3].requested_time]


def test_actions_pending_compaction_files_belong_to_the_completed_commit() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    lake.schedule_compaction("20261101000000000", [], state=State.INFLIGHT)
    done = lake.complete_compaction("20261101000000000", {})
    (action,), _ = active_actions(HudiTable.load(lake.storage, "/t"), [done])
    assert action.pending_action() == "compaction"
    assert [(i.action, s) for s, (i, _) in sorted(action.files.items())] == [
        ("compaction", State.REQUESTED), ("compaction", State.INFLIGHT), ("commit", State.COMPLETED)]


def test_actions_refuse_pending_instants_and_actions_hudi_never_archives() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit("20261101000000000")
    pending = lake.commit("20261102000000000", state=State.INFLIGHT)
    savepoint = lake.savepoint("20261101000000000", {})
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(ArchiveRefused, match="not completed"):
        active_actions(table, [pending.at(State.COMPLETED)])
    with pytest.raises(ArchiveRefused, match="savepoint"):
        active_actions(table, [savepoint])
    actions, gone = active_actions(table, [Instant("20250101000000000", "commit", State.COMPLETED)])
    assert actions == [] and [g.requested_time for g in gone] == ["20250101000000000"]


def test_actions_leftover_markers_are_removed_inside_hoodie_only() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.storage.write("/t/.hoodie/.temp/20261101000000000/p/f.parquet.marker.CREATE", b"")
    markers = LeftoverMarkers(HudiTable.load(lake.storage, "/t"))
    assert markers.delete("20261101000000000")
    assert not lake.storage.exists("/t/.hoodie/.temp/20261101000000000")
    assert not markers.delete("20261102000000000")
    assert not LeftoverMarkers(HudiTable.load(lake.storage, "/t")).delete("20261101000000000")
