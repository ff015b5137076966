"""`cleanline version check PATH --to N` (timeline/cli_version.py), run in this process on real
fixture tables: the text and JSON it prints, its exit codes (0 ready or nothing to do, 1 while a
blocker stands, 2 for a version it does not check) and that it writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline.cli import main

V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V6_COW = "sample_table/cow/v6_nonpartitioned"


def test_version_check_cli_blocked_downgrade_exits_1_naming_each_blocker(fixture_lake: dict[str, Path],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_lake[V8_MOR]
    before = tree_snapshot(path)
    assert main(["version", "check", str(path), "--to", "6", "--json"]) == 1
    shown = json.loads(capsys.readouterr().out)
    assert (shown["currentVersion"], shown["targetVersion"], shown["ready"], shown["blockers"]) == (8, 6, False, 2)
    (step,) = shown["steps"]
    assert (step["from"], step["to"], step["blocked"]) == (8, 6, True)
    blocking = [(b["kind"], b["instant"]["requestedTime"] if b["instant"] else None, len(b["fileGroups"]))
                for b in step["blockers"] if b["blocking"]]
    assert blocking == [("indexing action on the timeline", "20251220210117766", 0), ("log files to compact", None, 1)]
    assert main(["version", "check", str(path), "--to", "6"]) == 1
    text = capsys.readouterr().out
    assert "table version 8 -> 6: blocked (2 blocker(s))" in text
    assert "- BLOCKS: indexing action on the timeline [20251220210117766]" in text
    assert "Hudi: EightToSevenDowngradeHandler.downgradeActiveTimelineInstant (apache/hudi #13908)" in text
    assert "- note: index partition the target cannot hold" in text
    assert tree_snapshot(path) == before


def test_version_check_cli_ready_upgrade_exits_0_with_its_notes(fixture_lake: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_lake[V6_COW]
    assert main(["version", "check", str(path), "--to", "9"]) == 0
    text = capsys.readouterr().out
    assert "table version 6 -> 9: ready" in text
    assert "step 6 -> 8 (SixToSevenUpgradeHandler + SevenToEightUpgradeHandler" in text
    assert "step 8 -> 9 (EightToNineUpgradeHandler): clear" in text
    assert "- note: readers [hoodie.table.version]: Apache Hudi 0.14.x and 0.15.x" in text


def test_version_check_cli_same_version_and_unsupported_target(fixture_lake: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_lake[V6_COW]
    assert main(["version", "check", str(path), "--to", "6"]) == 0
    assert "already at table version 6: nothing to do" in capsys.readouterr().out
    assert main(["version", "check", str(path), "--to", "7"]) == 2
    assert "the target version 7 is not one Cleanline checks" in capsys.readouterr().err


def test_version_check_cli_takes_the_writers_options(fixture_lake: dict[str, Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_lake["sample_table/cow/v8_nonpartitioned"]
    assert main(["version", "check", str(path), "--to", "6"]) == 0
    capsys.readouterr()
    nbcc = "hoodie.write.concurrency.mode=NON_BLOCKING_CONCURRENCY_CONTROL"
    assert main(["--hoodie-conf", nbcc, "version", "check", str(path), "--to", "6", "--json"]) == 1
    kinds = [b["kind"] for s in json.loads(capsys.readouterr().out)["steps"] for b in s["blockers"] if b["blocking"]]
    assert kinds == ["non-blocking concurrency control"]
