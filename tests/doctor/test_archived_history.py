"""The archived timeline's broken pieces (timeline/doctor/archived.py) on a copy of a real table
whose oldest commit was archived into the LSM timeline: a leftover manifest (and its Parquet
file) of an archiver that crashed before the version file, and a version file naming a manifest
that is not there."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.doctor.helpers import age_tree, archive_commit, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.doctor import RepairUnavailable, diagnose, plan_repair
from timeline.doctor.archived import ArchivedEvidence

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "archived-timeline"


def _archived(path: Path) -> tuple[Path, str]:
    first = HudiTable.open(str(path)).timeline.commits().completed().first()
    assert first is not None
    archive_commit(path, first.requested_time)
    return path / ".hoodie" / "timeline" / "history", first.requested_time


def test_archived_leftover_manifest_and_file_are_deleted(table_copy) -> None:
    path = table_copy(V9_COW)
    history, first = _archived(path)
    before = rows(path)
    # an archiver wrote its Parquet file and manifest_2, then died before `_version_`
    sink = io.BytesIO()
    pq.write_table(pa.table({"instantTime": ["20261101000000000"], "action": ["commit"]}), sink)
    (history / "20261101000000000_20261101000000000_0.parquet").write_bytes(sink.getvalue())
    manifest = json.loads((history / "manifest_1").read_text())
    manifest["files"].append({"fileName": "20261101000000000_20261101000000000_0.parquet", "fileLen": 1})
    (history / "manifest_2").write_text(json.dumps(manifest)[:-7])  # cut short, as a crash leaves it
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, ArchivedEvidence) and finding.severity.value == "info"
    assert (evidence.problem, evidence.version, evidence.manifests) == ("leftover", 1, (1, 2))
    assert evidence.leftover_manifests == ("manifest_2",)
    assert evidence.leftover_files == ("20261101000000000_20261101000000000_0.parquet",)
    assert sorted(c.target.rsplit("/", 1)[-1] for c in plan.changes) == [
        "20261101000000000_20261101000000000_0.parquet", "manifest_2"]
    assert result.ok and not (history / "manifest_2").exists()
    assert after == []
    assert [i.requested_time for i in load_archived_timeline(HudiTable.open(str(path)))] == [first]
    assert rows(path) == before


def test_archived_missing_manifest_falls_back_to_the_highest_whole_one(table_copy) -> None:
    path = table_copy(V9_COW)
    history, first = _archived(path)
    before = rows(path)
    (history / "_version_").write_text("2")  # names manifest_2, which is not there
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, ArchivedEvidence) and finding.severity.value == "error"
    assert (evidence.problem, evidence.version, evidence.fallback_manifest) == ("missing manifest", 2, 1)
    assert [c.target.rsplit("/", 1)[-1] for c in plan.changes] == ["_version_"]
    assert result.ok and not (history / "_version_").exists() and after == []
    assert [i.requested_time for i in load_archived_timeline(HudiTable.open(str(path)))] == [first]
    assert rows(path) == before


def test_archived_unreadable_manifest_has_no_repair(table_copy) -> None:
    path = table_copy(V9_COW)
    history, _ = _archived(path)
    shutil.copy(history / "manifest_1", history / "manifest_1.bak")
    (history / "manifest_1").write_text("{not json")
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, ArchivedEvidence) and finding.evidence.problem == "unreadable"
    with pytest.raises(RepairUnavailable):
        plan_repair(HudiTable.open(str(path)), KIND)
