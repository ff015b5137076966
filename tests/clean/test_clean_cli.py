"""`cleanline clean plan|schedule|run|show` on a real table copy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import tree_snapshot
from timeline.cli import main

CLEANLINE = Path(sys.executable).with_name("cleanline")
TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLEANLINE), *args], capture_output=True, text=True, timeout=120)


def test_clean_cli_plan_json_schedule_run_show(table_copy) -> None:
    path = str(table_copy(TABLE))
    before = tree_snapshot(Path(path))
    planned = run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    assert tree_snapshot(Path(path)) == before  # plan writes nothing
    assert plan["policy"] == "KEEP_LATEST_COMMITS" and plan["earliestInstantToRetain"]["state"] == "COMPLETED"
    assert set(plan) >= {"earliestInstantToRetain", "lastCompletedCommitTimestamp", "policy",
                         "filePathsToBeDeletedPerPartition", "partitionsToBeDeleted", "files", "totals"}
    doomed = [f for f in plan["files"] if f["delete"]]
    assert plan["totals"]["filesToDelete"] == len(doomed) > 0
    assert sum(len(v) for v in plan["filePathsToBeDeletedPerPartition"].values()) == len(doomed)
    assert all(f["reason"] and f["sizeBytes"] > 0 for f in plan["files"])
    text = run("clean", "plan", path, "--retain-commits", "1", "--allow-short-retention")
    assert "DELETE" in text.stdout and "latest version" in text.stdout

    scheduled = run("clean", "schedule", path, "--retain-commits", "1", "--allow-short-retention")
    instant = scheduled.stdout.strip()
    assert scheduled.returncode == 0 and len(instant) == 17
    ran = run("clean", "run", path)
    assert ran.returncode == 0 and f"{instant}: {len(doomed)} deleted" in ran.stdout
    assert f"{len(doomed)}/{len(doomed)} files" in ran.stderr
    shown = json.loads(run("clean", "show", path, instant, "--json").stdout)
    assert shown["metadata"]["totalFilesDeleted"] == len(doomed)
    assert run("clean", "run", path).stdout.strip() == "no pending clean"


def test_clean_cli_refusals_are_one_line(table_copy) -> None:
    path = str(table_copy("sample_table/cow/v9_txns_simple_meta"))
    refused = run("clean", "schedule", path, "--retain-commits", "1")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "retain" in refused.stderr
    nothing = run("clean", "schedule", path, "--retain-commits", "50")
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing to clean")  # requestClean: empty
    assert not [n for n in os.listdir(f"{path}/.hoodie/timeline") if ".clean" in n]
    bad = run("clean", "plan", path, "--now", "tomorrow")
    assert bad.returncode == 2 and "not an instant time" in bad.stderr
    missing = run("clean", "show", path)
    assert missing.returncode == 2 and "no completed clean" in missing.stderr


def test_clean_cli_retention_above_what_hudi_reads_is_refused_with_the_bound(table_copy, capsys) -> None:
    """`--retain-commits 10^30`: one line naming the bound (a Java int, as Hudi reads it), exit 2."""
    path = table_copy(TABLE)  # main() in this process: the code under test, not the installed command's
    assert main(["clean", "plan", str(path), "--retain-commits", str(10**30)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"cleanline: error: commits_retained={10**30} is above 2147483647, the largest value Hudi reads "
        "(a Java int: HoodieConfig.getInt)"]
