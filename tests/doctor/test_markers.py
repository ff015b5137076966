"""Marker folders of finished instants (timeline/doctor/markers.py): left under .hoodie/.temp after
a commit, they go; a pending write's markers stay."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.doctor.helpers import OLD, age_tree, round_trip
from tests.helpers import Lake, T, fake_failed_write, rows
from timeline import HudiTable
from timeline.doctor import DoctorSettings, markers
from timeline.doctor.findings import Change, Finding, Severity
from timeline.doctor.markers import MarkerFolder, MarkersEvidence
from timeline.doctor.survey import Survey
from timeline.instant import State
from timeline.storage.arrow import LocalStorage

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "leftover-markers"
P = "city=sf"


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


def test_markers_finding_counts_every_finished_folder_past_a_pending_one(tmp_path: Path) -> None:
    """Folders in time order: a finished one, a pending write's (skipped, not the end), two
    finished ones; one vanished between the listing and its reading counts empty."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=8)
    for t in (T[0], T[2], T[3]):
        lake.commit(t, {})
    lake.commit(T[1], {}, state=State.INFLIGHT)
    temp = tmp_path / "t" / ".hoodie" / ".temp"
    for t, sizes in ((T[0], (3, 0)), (T[1], (5,)), (T[2], (7,)), (T[3], (1,))):
        (temp / t / P).mkdir(parents=True)
        for n, size in enumerate(sizes):
            (temp / t / P / f"f{n}_0-1-0_{t}.parquet.marker.CREATE").write_bytes(b"m" * size)
    survey = Survey(HudiTable.open(lake.base))
    assert sorted(survey.marker_folders) == [T[0], T[1], T[2], T[3]]
    shutil.rmtree(temp / T[3])  # gone after the listing
    (finding,) = markers.diagnose(survey)
    uri = f"file:{temp}"
    folders = (MarkerFolder(T[0], f"{uri}/{T[0]}", "completed", 2, 3),
               MarkerFolder(T[2], f"{uri}/{T[2]}", "completed", 1, 7),
               MarkerFolder(T[3], f"{uri}/{T[3]}", "completed", 0, 0))
    assert finding == Finding(
        KIND, Severity.INFO, "3 marker folder(s) of finished instants under .hoodie/.temp",
        MarkersEvidence(folders, 3, 10),
        "Markers only serve the rollback of a pending write; left behind they cost listings and storage, and a "
        "rollback by markers of a reused time would read them.",
        "delete them, as Hudi's post-commit step and archival do (WriteMarkers.quietDeleteMarkerDir)")
    assert markers.plan(survey).changes == tuple(
        Change("delete folder", f.folder, f.bytes, f"markers of {f.instant} (completed)") for f in folders)
