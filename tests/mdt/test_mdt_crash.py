"""A clean of a table with a metadata table killed (SIGKILL) between its metadata-table update and
its own completion, or in the middle of that update, then re-run: the table ends as after an
uninterrupted clean, the metadata table validates, and hudi-rs reads the same rows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, rows, unzip_table
from tests.mdt.helpers import KILLER
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.mdt.reader import MetadataTable

TABLE = "sample_table/mor/avro/v9_txns_simple_meta"


def scheduled(path: Path) -> str:
    table = HudiTable.open(str(path))
    config = CleanConfig(commits_retained=1)
    clean = schedule_clean(table, plan_clean(table, config), config)
    assert clean is not None
    return clean.requested_time


@pytest.mark.parametrize("point", ["before-clean-completes", "mid-mdt"])
def test_killed_clean_with_a_metadata_table_finishes_on_rerun(tmp_path: Path, point: str) -> None:
    killed, straight = (unzip_table(FIXTURES / f"{TABLE}.zip", tmp_path / side) for side in ("a", "b"))
    instant = scheduled(killed)
    scheduled(straight)
    run_pending_cleans(HudiTable.open(str(straight)))
    run = subprocess.run([sys.executable, "-c", KILLER, str(killed), point], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == -9, run.stderr
    table = HudiTable.open(str(killed))
    assert not table.timeline.cleans().completed()  # died before the clean completed
    mdt = MetadataTable(table)
    states = {i.state.name for i in mdt.mdt.timeline if i.requested_time == instant}
    assert states == ({"COMPLETED"} if point == "before-clean-completes" else {"INFLIGHT"})
    assert table.inspect.validate_metadata_table().uncommitted == ()  # the pending MDT update is ignored
    (result,) = run_pending_cleans(table)
    assert result.failed == 0
    assert table.reload().inspect.validate_metadata_table().ok
    deltacommits = [i for i in MetadataTable(table).mdt.timeline if i.requested_time == instant]
    assert [i.state.name for i in deltacommits] == ["COMPLETED"]
    assert rows(killed) == rows(straight)
    files = sorted(p.name for p in (killed / ".hoodie" / "metadata" / "files").glob(f".files-*_{instant}.log.*"))
    assert len(files) == 1, files  # the crashed run's log file rolled back, one written again
