"""The `cleanline` command: readable and JSON output, and bad input handled cleanly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline.cli import main
from timeline.storage import MemoryStorage

CLEANLINE = Path(sys.executable).with_name("cleanline")
V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"
V6_REPLACE = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
V9_COW = "sample_table/cow/v9_txns_simple_nometa"


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


def table_rows(text: str) -> list[list[str]]:
    """The rows of a table the CLI printed (after its header and rule), split on 2+ spaces."""
    import re

    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line and set(line) <= {"-", " "}) + 1
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start:] if line.strip()]


def test_cli_timeline_is_newest_first_and_reverse_oldest_first(fixture_lake: dict[str, Path]) -> None:
    from timeline import HudiTable

    path = str(fixture_lake[V8_MOR])
    table = HudiTable.open(path)
    oldest_first = [i.requested_time for i in table.inspect.archived_instants()]
    oldest_first += [i.requested_time for i in table.timeline]
    assert oldest_first == sorted(oldest_first) and len(oldest_first) > 2
    newest = [r[0] for r in table_rows(run("timeline", path, "--archived").stdout)]
    assert newest == oldest_first[::-1]
    assert [r[0] for r in table_rows(run("timeline", path, "--archived", "--reverse").stdout)] == oldest_first
    assert [r["requestedTime"] for r in json.loads(run("timeline", path, "--archived", "--json").stdout)] == newest
    active = [r["requestedTime"] for r in json.loads(run("timeline", path, "--reverse", "--json").stdout)]
    assert active == [i.requested_time for i in table.timeline]


def test_cli_sizes_are_readable_by_default_and_byte_counts_with_bytes(fixture_lake: dict[str, Path]) -> None:
    from timeline import HudiTable
    from timeline.cli_output import human_size

    path = str(fixture_lake[V6_REPLACE])
    slices = sorted(HudiTable.open(path).file_system_view().latest_slices(), key=lambda s: (s.partition, s.file_id))
    text = run("fsview", path)
    assert text.stdout.splitlines()[0].split()[-1] == "size"
    assert [r[-1] for r in table_rows(text.stdout)] == [human_size(s.size) for s in slices]
    assert all(r[-1].endswith(("KiB", "MiB")) for r in table_rows(text.stdout))
    raw = run("fsview", path, "--bytes")
    assert raw.stdout.splitlines()[0].split()[-1] == "bytes"
    assert [r[-1] for r in table_rows(raw.stdout)] == [str(s.size) for s in slices]

    path = str(fixture_lake[V9_COW])
    plan = json.loads(run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention", "--json").stdout)
    total = plan["totals"]["bytesToDelete"]
    assert isinstance(total, int) and total > 1024 and all(isinstance(f["sizeBytes"], int) for f in plan["files"])
    readable = run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention").stdout
    assert f"files to delete ({human_size(total)})" in readable
    assert [r[2] for r in table_rows(readable)] == [human_size(f["sizeBytes"]) for f in plan["files"]]
    counted = run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention", "--bytes").stdout
    assert f"files to delete ({total} bytes)" in counted
    assert [r[2] for r in table_rows(counted)] == [str(f["sizeBytes"]) for f in plan["files"]]


def test_cli_sizes_read_like_the_consoles() -> None:
    from console.templatetags.humanize_bytes import human_bytes
    from timeline.cli_output import human_size

    sizes = [0, 1, 1023, 1024, 1536, 10 * 1024**2 - 1, 3 * 1024**3 + 5, 7 * 1024**4, 5000 * 1024**4]
    assert [human_size(n) for n in sizes] == [human_bytes(n) for n in sizes]
    assert human_size(1536) == "1.5 KiB" and human_size(512) == "512 B"


def test_cli_clean_run_and_savepoint_list_sizes(table_copy) -> None:
    from timeline import HudiTable
    from timeline.cli_output import human_size

    path = str(table_copy(V9_COW))
    commits = [i.requested_time for i in HudiTable.open(path).timeline.commits().completed()]
    assert run("savepoint", "create", path, "--instant", commits[-1], "--user", "ada").returncode == 0
    (saved,) = HudiTable.open(path).inspect.savepoints()
    listed = run("savepoint", "list", path).stdout
    assert table_rows(listed)[0][4] == human_size(saved.bytes) and " size " in listed.splitlines()[0]
    assert table_rows(run("savepoint", "list", path, "--bytes").stdout)[0][4] == str(saved.bytes)
    assert json.loads(run("savepoint", "list", path, "--json").stdout)[0]["bytes"] == saved.bytes

    total = json.loads(run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention",
                           "--json").stdout)["totals"]["bytesToDelete"]
    assert total > 1024**2
    instant = run("clean", "schedule", path, "--retain-commits", "1", "--allow-short-retention", "--force").stdout
    ran = run("clean", "run", path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().endswith(f"0 failed, {human_size(total)} reclaimed"), (ran.stdout, instant)
    assert ran.stderr.strip().endswith(f"files, {human_size(total)}")  # the progress line's last state


def test_cli_archive_run_refuses_a_lock_file_with_an_out_of_range_lease(table_copy,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A storage-based lock file whose `validUntil` is 9e18 (year 285 million) is a refusal
    naming the file, exit 2: no traceback, nothing archived."""
    path = table_copy(V9_COW)
    lock = path / ".hoodie" / ".locks" / "table_lock.json"
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b'{"expired":false,"validUntil":9e18,"owner":"someone"}')
    before = tree_snapshot(path)
    small = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
             "--hoodie-conf", "hoodie.clean.commits.retained=1"]
    assert main([*small, "archive", "run", str(path), "--yes"]) == 2
    err = capsys.readouterr().err  # the plan it was about to run, then the refusal
    line = err.strip().splitlines()[-1]
    assert "Traceback" not in err
    assert line.startswith("cleanline: error: ") and str(lock) in line
    assert "validUntil=9e+18 is out of range" in line
    assert tree_snapshot(path) == before
