"""`cleanline compaction schedule|run` (timeline/cli_compaction.py), run in this process: a dry
run by default, --yes writes the plan, run compacts it; refusals exit 2 with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, rows, tree_snapshot, unzip_table
from timeline.cli import main

V6 = "quickstart_trips_table/mor/avro/v6_trips_8i3d"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_schedule_is_a_dry_run_until_yes_then_run_compacts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    before, snapshot = rows(path), tree_snapshot(path)
    dry = json.loads(run(capsys, "compaction", "schedule", str(path), "--json"))
    assert dry["dryRun"] is True and dry["scheduled"] is False and len(dry["operations"]) == 1
    assert dry["operations"][0]["metrics"]["TOTAL_LOG_FILES"] == 1.0
    text = run(capsys, "compaction", "schedule", str(path), "--dry-run")
    assert "would schedule (dry run" in text and dry["operations"][0]["fileId"] in text
    assert tree_snapshot(path) == snapshot
    done = json.loads(run(capsys, "compaction", "schedule", str(path), "--yes", "--json"))
    assert done["scheduled"] is True and (path / ".hoodie" / f"{done['instant']['requestedTime']}.compaction.requested"
                                          ).exists()
    ran = run(capsys, "compaction", "run", str(path), "--instant", done["instant"]["requestedTime"])
    assert f"compaction {done['instant']['requestedTime']} completed: 1 new base files" in ran
    assert rows(path) == before
    assert main(["compaction", "run", str(path)]) == 2
    assert "no pending compaction" in capsys.readouterr().err


def test_a_refusal_exits_2_naming_the_setting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = unzip_table(FIXTURES / f"{V6}.zip", tmp_path / "t")
    assert main(["--hoodie-conf", "hoodie.record.merge.mode=CUSTOM", "compaction", "schedule", str(path),
                 "--yes"]) == 2
    assert "hoodie.record.merge.mode=CUSTOM" in capsys.readouterr().err
