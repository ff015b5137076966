"""The archived timeline as the doctor reads it (timeline/doctor/history.py), on copies of real
table-version-9 tables whose INSERT_OVERWRITE replacecommit was cleaned around and archived
by Cleanline's LSM writer, which stores the replacecommit's non-empty inflight file (a
HoodieCommitMetadata) as the row's plan, as Hudi's `MetadataConversionUtils.createLSMTimelineInstant`
does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.archive.helpers import lsm_rows
from tests.doctor.helpers import age_tree, grow_history
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.doctor import diagnose
from timeline.doctor.history import read_archive
from timeline.mdt import drop_metadata_table

# Both hold an insert_overwrite replacecommit whose `.replacecommit.inflight` is not empty
OVERWRITTEN = ["sample_table/cow/v9_txns_simple_overwrite", "sample_table/cow/v9_txns_simple_nometa"]
ARCHIVAL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}


def _overwrite(path: Path) -> str:
    """The requested time of the table's first insert_overwrite(_table) replacecommit."""
    table = HudiTable.open(str(path))
    return next(i.requested_time for i in table.timeline.with_actions({"replacecommit"}).completed()
                if str((table.read_instant(i) or {}).get("operationType")).upper().startswith("INSERT_OVERWRITE"))


@pytest.mark.parametrize("table_id", OVERWRITTEN)
def test_history_reads_an_archived_insert_overwrite(table_copy, table_id: str) -> None:
    """A clean, then an archival that moves the insert_overwrite: the doctor reads the archived
    timeline (the replacecommit's plan is its inflight HoodieCommitMetadata, not a
    HoodieRequestedReplaceMetadata) and finds nothing, orphan detection on."""
    path = table_copy(table_id)
    drop_metadata_table(HudiTable.open(str(path)))  # grow_history does not keep a metadata table
    overwrite = _overwrite(path)
    grow_history(path, 4)
    table = HudiTable.open(str(path))
    table.maintenance(options=ARCHIVAL).clean(CleanConfig(commits_retained=1), enforce_retention=False, dry_run=False)
    outcome = HudiTable.open(str(path)).maintenance(options=ARCHIVAL).archive(dry_run=False)
    assert outcome.result is not None and overwrite in [i.requested_time for i in outcome.result.archived]
    (row,) = [r for r in lsm_rows(path / ".hoodie" / "timeline" / "history") if r["instantTime"] == overwrite]
    assert row["plan"] is not None and b"HoodieCommitMetadata" in row["plan"][:200]
    age_tree(path)
    table = HudiTable.open(str(path))
    read = read_archive(table)
    assert read.error is None and read.instants[overwrite] == "replacecommit"
    assert diagnose(table) == []
