"""The `cleanline` command: readable and JSON output, and bad input handled cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tree_snapshot
from timeline.cli import main
from timeline.storage import MemoryStorage

CLEANLINE = Path(sys.executable).with_name("cleanline")
V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V6_REPLACE = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLEANLINE), *args], capture_output=True, text=True, timeout=120)


def test_cli_table_info_text_and_json(fixture_lake: dict[str, Path]) -> None:
    path = str(fixture_lake[V8_MOR])
    text = run("table", "info", path)
    assert text.returncode == 0 and "MERGE_ON_READ" in text.stdout and "v8_trips_8i3u1d" in text.stdout
    info = json.loads(run("table", "info", path, "--json").stdout)
    assert info["tableVersion"] == 8 and info["metadataTableEnabled"] is True
    assert info["partitionFields"] == ["city"] and info["completedInstants"] == 8


def test_cli_timeline_json_shape(fixture_lake: dict[str, Path]) -> None:
    result = run("timeline", str(fixture_lake[V8_MOR]), "--json")
    rows = json.loads(result.stdout)
    assert all(set(r) == {"requestedTime", "completionTime", "action", "state"} for r in rows)
    assert [r["action"] for r in rows].count("deltacommit") == 6
    compaction = next(r for r in rows if r["requestedTime"] == "20251220210129235")
    assert compaction == {"requestedTime": "20251220210129235", "completionTime": "20251220210129883",
                          "action": "commit", "state": "COMPLETED"}
    text = run("timeline", str(fixture_lake[V8_MOR]), "--archived")
    assert text.returncode == 0 and "20251220210129235" in text.stdout


def test_cli_fsview_json_latest_and_all_slices(fixture_lake: dict[str, Path]) -> None:
    path = str(fixture_lake[V8_MOR])
    latest = json.loads(run("fsview", path, "--json").stdout)
    assert all(set(s) == {"partition", "fileId", "baseInstantTime", "baseFile", "logFiles"} for s in latest)
    assert len(latest) == 3 and all(s["baseInstantTime"] == "20251220210129235" for s in latest)
    everything = json.loads(run("fsview", path, "--all-slices", "--json").stdout)
    assert len(everything) == 6
    chennai = [s for s in everything if s["partition"] == "city=chennai"]
    assert [s["baseInstantTime"] for s in chennai] == ["20251220210129235", "20251220210108078"]
    assert chennai[1]["logFiles"] == [
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078",
        ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210128625.log.1_0-1097-3150"]
    as_of = json.loads(run("fsview", path, "--as-of", "20251220210108078", "--json").stdout)
    assert {s["baseInstantTime"] for s in as_of} == {"20251220210108078"}


def test_cli_instant_show_decodes_content(fixture_lake: dict[str, Path]) -> None:
    result = run("instant", "show", str(fixture_lake[V6_REPLACE]), "20240707001303088")
    shown = json.loads(result.stdout)
    assert shown["instant"]["action"] == "replacecommit"
    assert shown["content"]["partitionToReplaceFileIds"]
    requested = json.loads(run("instant", "show", str(fixture_lake[V6_REPLACE]), "20240707001303088",
                               "--state", "requested").stdout)
    assert requested["content"]["operationType"] is None or "operationType" in requested["content"]


def assert_clean_failure(result: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for text in expected:
        assert text in lines[0]


def test_cli_bad_paths(tmp_path: Path) -> None:
    assert_clean_failure(run("timeline", str(tmp_path / "nope")), str(tmp_path / "nope"), "does not exist")
    (tmp_path / "plain").mkdir()
    assert_clean_failure(run("fsview", str(tmp_path / "plain")), "not a Hudi table", "no .hoodie folder")
    (tmp_path / "plain" / ".hoodie").mkdir()
    assert_clean_failure(run("table", "info", str(tmp_path / "plain")), "no .hoodie/hoodie.properties")


@pytest.mark.parametrize(("content", "message"), [
    ("hoodie.table.name=t\nhoodie.table.version=4\n", "table version 4 is not supported"),
    ("hoodie.table.name=t\nhoodie.table.version=abc\n", "not a number"),
    ("hoodie.table.version=6\n", "hoodie.table.name is missing"),
])
def test_cli_bad_properties(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "hoodie.properties").write_text(content)
    assert_clean_failure(run("timeline", str(tmp_path)), "hoodie.properties", message)


def test_cli_corrupt_instants_fail_cleanly_and_write_nothing(fixture_lake: dict[str, Path], tmp_path: Path) -> None:
    import shutil
    table = tmp_path / "t"
    shutil.copytree(fixture_lake[V6_REPLACE], table)
    replace = table / ".hoodie" / "20240707001303088.replacecommit"
    replace.write_text("{ this is not json")
    requested = table / ".hoodie" / "20240707001303088.replacecommit.requested"
    requested.write_bytes(b"Obj\x01\x00\x00broken")
    before = tree_snapshot(table)
    assert_clean_failure(run("fsview", str(table)), str(replace), "invalid JSON")
    assert_clean_failure(run("instant", "show", str(table), "20240707001303088"), str(replace))
    assert_clean_failure(run("instant", "show", str(table), "20240707001303088", "--state", "requested"),
                         str(requested))
    assert tree_snapshot(table) == before


def test_cli_unknown_instant_and_bad_as_of(fixture_lake: dict[str, Path]) -> None:
    path = str(fixture_lake[V8_MOR])
    assert_clean_failure(run("instant", "show", path, "19990101000000000"), "no instant 19990101000000000")
    assert_clean_failure(run("fsview", path, "--as-of", "yesterday"), "not an instant time")


def test_cli_permission_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    storage = MemoryStorage.named("cli-permissions")
    storage.write("/t/.hoodie/hoodie.properties", b"hoodie.table.name=t\nhoodie.table.version=6\n")
    storage.denied.add("/t/.hoodie")
    assert main(["timeline", "memory://cli-permissions/t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "/t/.hoodie/hoodie.properties: permission denied" in err[0]
