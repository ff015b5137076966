"""Marker folders of finished instants (timeline/doctor/markers.py): left under .hoodie/.temp after
a commit, they go; a pending write's markers stay."""

from __future__ import annotations

from tests.doctor.helpers import OLD, age_tree, round_trip
from tests.helpers import fake_failed_write, rows
from timeline import HudiTable
from timeline.doctor import DoctorSettings
from timeline.doctor.markers import MarkersEvidence

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "leftover-markers"


def test_markers_of_completed_instants_are_deleted_pending_ones_kept(table_copy) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None
    leftover = path / ".hoodie" / ".temp" / last.requested_time / "region=eu"
    leftover.mkdir(parents=True)
    (leftover / "x_0-1-0_1.parquet.marker.CREATE").write_bytes(b"")
    fake_failed_write(path, OLD, markers=True)  # pending: its markers serve its rollback
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, MarkersEvidence)
    assert [(f.instant, f.finished, f.files) for f in evidence.folders] == [(last.requested_time, "completed", 1)]
    assert [(c.action, c.target.rsplit("/", 1)[-1]) for c in plan.changes] == [("delete folder", last.requested_time)]
    assert result.ok and not leftover.parent.exists()
    assert (path / ".hoodie" / ".temp" / OLD).exists()
    assert [f.kind for f in after] == ["stale-pending"]
    assert rows(path) == before
    # the pending write is stale: rolled back (its markers serve that rollback, then go), the table is healthy
    opted = DoctorSettings(include_ingestion_commits=True)  # a commit under EAGER: the operator's word
    *_, result, after = round_trip(path, "stale-pending", settings=opted)
    assert result.ok and after == []
    assert not (path / ".hoodie" / ".temp" / OLD).exists()
