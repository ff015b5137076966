"""Metadata-table drift (timeline/doctor/mdt_drift.py) on a copy of a real table with a metadata
table, damaged as apache/hudi #11773 describes: a file deleted that the metadata table still
lists. The repair's deltacommit brings the files partition to storage; a file group gone while a
record index points at it is left to a Hudi writer."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.doctor.helpers import age_tree, grow_history, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.config import update_config
from timeline.doctor import RepairUnavailable, diagnose, plan_repair
from timeline.doctor.mdt_drift import DriftEvidence
from timeline.mdt.reader import metadata_table

V9_META = "sample_table/cow/v9_txns_simple_meta"
KIND = "metadata-table-drift"


def _older_version(path: Path) -> Path:
    """A base file of a file group that has a newer slice (deleting it, as a clean whose update of
    the metadata table failed did, loses no file group)."""
    view = HudiTable.open(str(path)).file_system_view()
    for group in view.all_file_groups():
        if len(group.slices) > 1 and group.slices[1].base_file is not None:
            piece = group.slices[1]
            assert piece.base_file is not None
            return (path / piece.partition if piece.partition else path) / piece.base_file.name
    raise AssertionError("no file group with two versions")


def test_mdt_drift_a_deleted_file_the_metadata_table_lists_is_synced(table_copy) -> None:
    path = table_copy(V9_META)
    before = rows(path)
    victim = _older_version(path)
    victim.unlink()
    partition = victim.parent.name
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, DriftEvidence)
    assert (evidence.only_in_metadata, evidence.only_on_storage, evidence.sizes) == (1, 0, 0)
    (drift,) = evidence.partitions
    assert (drift.partition, drift.only_in_metadata) == (partition, (victim.name,))
    assert "record_index" in evidence.metadata_partitions and finding.repairable
    # exactly one deltacommit removing the file from the listing, and its column-stats entries
    assert plan.changes[0].action == "metadata deltacommit"
    assert [(c.action, c.target) for c in plan.changes if c.action == "metadata remove"] == [
        ("metadata remove", f"{partition}/{victim.name}")]
    assert {c.action for c in plan.changes} == {"metadata deltacommit", "metadata remove",
                                                "metadata column-stats delete"}
    assert result.ok and len(result.done) == len(plan.changes)
    assert after == []
    assert HudiTable.open(str(path)).inspect.validate_metadata_table().ok
    assert rows(path) == before
    # run again: nothing to do, nothing written
    mdt = metadata_table(HudiTable.open(str(path)))
    assert mdt is not None
    instants = len(mdt.mdt.timeline)
    with pytest.raises(RepairUnavailable, match="no metadata-table-drift finding"):
        plan_repair(HudiTable.open(str(path)), KIND)
    assert len(mdt.mdt.reload().timeline) == instants


def test_mdt_drift_a_whole_file_group_gone_under_a_record_index_is_left_to_hudi(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    group = next(g for g in table.file_system_view().file_groups() if len(g.slices) == 1)
    folder = path / group.partition if group.partition else path
    for name in group.slices[0].file_names:
        (folder / name).unlink()
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert not finding.repairable and "record_index" in finding.repair and group.file_id in finding.repair
    with pytest.raises(RepairUnavailable, match="a Hudi writer must rebuild the index"):
        plan_repair(HudiTable.open(str(path)), KIND)


def test_mdt_drift_none_without_a_metadata_table_or_when_in_sync(table_copy) -> None:
    assert diagnose(HudiTable.open(str(table_copy("sample_table/cow/v9_txns_simple_nometa"))), kinds=[KIND]) == []
    assert diagnose(HudiTable.open(str(table_copy(V9_META))), kinds=[KIND]) == []


def test_mdt_drift_a_committed_file_the_metadata_table_missed_is_added(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})  # no index to rebuild
    before = rows(path)
    (time_,) = grow_history(path, 1)  # a commit whose metadata-table update was lost (apache/hudi #11773)
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    assert isinstance(finding.evidence, DriftEvidence) and finding.evidence.only_on_storage == 1
    (added,) = [c for c in plan.changes if c.action == "metadata add"]
    assert time_ in added.target and added.bytes > 0
    assert result.ok and after == [] and HudiTable.open(str(path)).inspect.validate_metadata_table().ok
    assert rows(path) == before


def test_mdt_drift_a_partition_the_metadata_table_does_not_list_is_left_to_hudi(table_copy) -> None:
    path = table_copy(V9_META)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {"hoodie.table.metadata.partitions": "files"})
    source = next(p for p in path.iterdir() if p.name.startswith("region="))
    shutil.copytree(source, path / "region=mars")  # files no instant names, in a partition the table never had
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert not finding.repairable and "region=mars" in finding.repair and "Hudi writer" in finding.repair
