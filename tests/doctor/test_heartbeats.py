"""Heartbeats of finished instants (timeline/doctor/heartbeats.py, apache/hudi #18903): an expired
heartbeat of a completed write goes; a fresh one, or a pending write's, stays."""

from __future__ import annotations

from tests.doctor.helpers import age_tree, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.doctor import diagnose
from timeline.doctor.heartbeats import HeartbeatsEvidence

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "leftover-heartbeats"


def test_heartbeats_of_finished_writes_are_deleted_when_expired(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    commits = list(HudiTable.open(str(path)).timeline.commits().completed())
    folder = path / ".hoodie" / ".heartbeat"
    folder.mkdir(parents=True, exist_ok=True)
    old = folder / commits[-2].requested_time
    old.write_bytes(b"")
    age_tree(path)
    fresh = folder / commits[-1].requested_time
    fresh.write_bytes(b"")  # within the heartbeat window: its writer may be finishing
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, HeartbeatsEvidence)
    assert [(h.instant, h.finished) for h in evidence.heartbeats] == [(commits[-2].requested_time, "completed")]
    assert [c.target.rsplit("/", 1)[-1] for c in plan.changes] == [commits[-2].requested_time]
    assert result.ok and not old.exists() and fresh.exists()
    assert after == [] and diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    assert rows(path) == before
