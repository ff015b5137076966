"""`cleanline compaction show|why` (timeline/cli_compaction.py), run in this process on real
merge-on-read fixture tables: what they print, as text and JSON, and that they change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import hudi
import pytest

from tests.helpers import tree_snapshot
from timeline.cli import main

V6_MOR = "quickstart_trips_table/mor/avro/v6_trips_8i1u"
V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_compaction_show_json_lists_the_backlog_hudi_rs_reads(fixture_lake: dict[str, Path],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_lake[V8_MOR]
    before = tree_snapshot(path)
    shown = json.loads(run(capsys, "compaction", "show", str(path), "--json"))
    assert (shown["tableType"], shown["tableVersion"], shown["pending"]) == ("MERGE_ON_READ", 8, [])
    slices = [s for s in hudi.HudiTable(str(path)).get_file_slices() if s.log_file_names]
    assert [(g["partition"], g["fileId"], g["logFiles"]) for g in shown["backlog"]["fileGroups"]] == [
        (s.partition_path, s.file_id, len(s.log_file_names)) for s in slices]
    assert shown["metadataTable"]["lastCompaction"] == "20251220210130942"
    assert shown["deltaCommitsSinceCompaction"] == 1 and shown["countedFrom"]["action"] == "commit"
    text = run(capsys, "compaction", "show", str(path), "--bytes")
    assert "backlog: 1 file groups with 1 log files" in text and "metadata table: last compaction" in text
    assert tree_snapshot(path) == before


def test_compaction_why_names_the_trigger_and_follows_the_writers_options(fixture_lake: dict[str, Path],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture_lake[V6_MOR])
    answer = json.loads(run(capsys, "--hoodie-conf", "hoodie.compact.inline=true", "compaction", "why", path, "--json"))
    assert not answer["wouldSchedule"] and answer["deltaCommitsSinceCompaction"] == 2
    (reason,) = answer["reasons"]
    assert (reason["kind"], reason["setting"], reason["rule"]) == (
        "trigger not met", "hoodie.compact.inline.max.delta.commits", "ScheduleCompactionActionExecutor.needCompact")
    assert answer["settings"]["hoodie.compact.inline"] == "true"
    due = json.loads(run(capsys, "--hoodie-conf", "hoodie.compact.inline=true", "--hoodie-conf",
                         "hoodie.compact.inline.max.delta.commits=2", "compaction", "why", path, "--json"))
    assert due["wouldSchedule"] and due["reasons"] == [] and len(due["compactable"]) == 1
    text = run(capsys, "--hoodie-conf", "hoodie.compact.inline=false", "compaction", "why", path)
    assert "? no;" in text and "- writers do not schedule:" in text and "changes with:" in text
