"""Unreadable instant files (timeline/doctor/unreadable.py) on copies of real tables: a pending
clean whose plan is empty or garbage is removed as Hudi CLI's `repair corrupted clean files`
does; a corrupt completed commit is reported with no repair (Hudi cannot read it either)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.helpers import OLD, age_tree, reads, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.doctor import RepairUnavailable, diagnose, plan_repair
from timeline.doctor.unreadable import UnreadableEvidence
from timeline.instant import CLEAN, Instant, State

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "unreadable-instant"


@pytest.mark.parametrize("content", [b"", b"not avro"], ids=["empty", "garbage"])
def test_unreadable_pending_clean_is_removed(table_copy, content: bytes) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    readable = reads(path)  # before the damage, in case it stops hudi-rs reading
    folder = Path(HudiTable.open(str(path)).timeline.folder)
    requested = folder / Instant(OLD, CLEAN, State.REQUESTED).file_name(2)
    inflight = folder / Instant(OLD, CLEAN, State.INFLIGHT).file_name(2)
    requested.write_bytes(content)
    inflight.write_bytes(b"")
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, before=readable)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, UnreadableEvidence)
    assert (evidence.instant, evidence.action, evidence.state, evidence.bytes) == (OLD, CLEAN, "INFLIGHT",
                                                                                    len(content))
    assert Path(evidence.file.removeprefix("file:")) == requested and finding.repairable
    assert [(c.action, Path(c.target.removeprefix("file:"))) for c in plan.changes] == [
        ("delete", inflight), ("delete", requested)]
    assert result.ok and not requested.exists() and not inflight.exists()
    assert after == []
    assert rows(path) == before


def test_unreadable_completed_commit_has_no_repair(table_copy) -> None:
    path = table_copy(V9_COW)
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    completed = Path(table.timeline.path_of(last))
    completed.write_bytes(b"Obj\x01 truncated")
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, UnreadableEvidence) and finding.evidence.instant == last.requested_time
    assert not finding.repairable and "backup" in finding.repair
    with pytest.raises(RepairUnavailable):
        plan_repair(HudiTable.open(str(path)), KIND)
    # the other checks stay careful: nothing is an orphan while a commit cannot be read
    age_tree(path)
    assert diagnose(HudiTable.open(str(path)), kinds=["orphan-files"]) == []
