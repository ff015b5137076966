"""The archived timeline through a version change (timeline/versions/archives.py): a v6 table whose
first writes Cleanline's archiver moved to a v1 archive, and a v9 table whose first writes it
moved to the LSM history, each taken round its versions. After every step Cleanline reads the
same archived and active timelines and hudi-rs the same rows; the history is in the target's
format (LSM rows under `.hoodie/timeline/history` at 8 and 9, a `.commits_.archive` at 6) with
each archived commit's write stats; the archive converted from is kept, and converting back
writes nothing twice."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import rows
from timeline import HudiTable
from timeline.archive.archiver import archive_instants
from timeline.archived_timeline import archived_entries, lsm_file_rows
from timeline.metadata import avro
from timeline.metadata.archived import LSM_COLUMNS
from timeline.versions.change import change_version
from timeline.versions.rehearse import archived_rows, fsview_rows, timeline_rows

CASES = {"sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable": (2, (8, 9, 8, 6, 8)),
         "sample_table/cow/v9_txns_simple_nometa": (3, (8, 6, 8, 9, 8, 6))}


def _v1_files(path: Path) -> dict[str, list[str]]:
    """Each archived commit of the v1 archive with its written files' ids."""
    found: dict[str, list[str]] = {}
    for entry in archived_entries(HudiTable.open(str(path)).storage, str(path / ".hoodie" / "archived")):
        metadata = entry.get("hoodieCommitMetadata")
        if entry["actionState"] == "COMPLETED" and metadata:
            found[entry["commitTime"]] = sorted(s["fileId"] for v in metadata["partitionToWriteStats"].values()
                                                for s in v)
    return found


def _lsm_files(path: Path) -> dict[str, list[str]]:
    """Each commit of the LSM history with its written files' ids (from the row's metadata)."""
    found: dict[str, list[str]] = {}
    table = HudiTable.open(str(path))
    folder = str(path / ".hoodie" / "timeline" / "history")
    for file_path, items in lsm_file_rows(table.storage, folder, LSM_COLUMNS):
        for time, _, action, metadata, _, _ in items:
            assert action == "commit" and metadata
            decoded = avro.decode(metadata, path=file_path)
            found[time] = sorted(s["fileId"] for v in decoded["partitionToWriteStats"].values() for s in v)
    return found


@pytest.mark.parametrize("table_id", sorted(CASES))
def test_version_change_converts_the_archived_timeline_both_ways(fixture_lake: dict[str, Path], tmp_path: Path,
                                                                 table_id: str) -> None:
    archived, targets = CASES[table_id]
    path = shutil.copytree(fixture_lake[table_id], tmp_path / "t")
    table = HudiTable.open(str(path))
    archive_instants(table, table.timeline.completed().instants[:archived])
    table.reload()
    base = (archived_rows(table), timeline_rows(table), fsview_rows(table), rows(path))
    assert len(base[0]) == archived
    written = _v1_files(path) if table.version == 6 else _lsm_files(path)
    assert len(written) == archived
    for target in targets:
        frm = table.version
        plan = change_version(table, target, dry_run=False)
        (step,) = plan.ran
        assert step.archive_converted == ({frm, target} == {6, 8})
        assert (archived_rows(table), timeline_rows(table), fsview_rows(table), rows(path)) == base, (frm, target)
        if target == 6:
            assert _v1_files(path) == written
            assert len(list((path / ".hoodie" / "archived").glob(".commits_.archive.*"))) == 1  # nothing twice
        else:
            assert _lsm_files(path) == written
            assert len(list((path / ".hoodie" / "timeline" / "history").glob("*.parquet"))) == 1
