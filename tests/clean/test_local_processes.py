"""The local engine in several processes: a full clean plan listed and planned by forked
processes, each over a share of the table's folders, is the plan one process makes, file by
file, on every fixture table (partitioned, nested, non-partitioned), and on a table of many
partitions; the processes' errors and deaths reach the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import FIXTURE_IDS, ROOT, Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.planner import plan_clean
from timeline.fsview import list_partitions, top_folders
from timeline.storage.arrow import LocalStorage

# Forking is refused while another thread runs (`may_fork`), and a test session has threads (an
# S3 server, a live console): each check runs in a fresh interpreter, which must fork.
PLANS_AGREE = """
import json, sys
import timeline.clean.planner as planner
from timeline.internal import forks
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline import HudiTable

forked = []
def watched(work, processes):  # the planner's call, recorded: the shares must really fork
    forked.append(forks.may_fork())
    return forks.fork_map(work, processes)
planner.fork_map = watched
configs = [CleanConfig(commits_retained=1, incremental=False),
           CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1, incremental=False)]
def facts(plan):
    return plan.decisions, plan.partitions_to_delete, plan.partitions_considered, plan.to_record()
differ = []
for path in sys.argv[1:]:
    table = HudiTable.open(path)
    for config in configs:
        alone = facts(planner.plan_clean(table, config, processes=1))
        for processes in (2, 3):
            if facts(planner.plan_clean(table, config, processes=processes)) != alone:
                differ.append([path, config.policy.value, processes])
print(json.dumps({"differ": differ, "forked": forked}))
"""


def plans_agree(paths: list[Path]) -> int:
    """In a fresh interpreter: every table's plan from 2 and 3 processes is the one-process plan
    (decisions file by file, partitions, the HoodieCleanerPlan), with the shares really forked;
    how many plans were made in shares (none for a table without an earliest commit to retain)."""
    out = subprocess.run([sys.executable, "-c", PLANS_AGREE, *map(str, paths)], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout
    found = json.loads(out)
    assert found["differ"] == []
    assert all(found["forked"])
    return len(found["forked"])


def test_local_processes_plan_every_fixture_as_one_process_does(fixture_lake: dict[str, Path]) -> None:
    shared = plans_agree([fixture_lake[table_id] for table_id in FIXTURE_IDS])
    # planned in shares: the fixtures with two folders or more under the base and a plan to make
    # (26 of 47; a non-partitioned table, or a single folder, is planned by one process)
    assert shared >= 100


def many_partitions(root: Path, partitions: int = 23) -> Path:
    """A local v6 table of nested partitions (`year=/day=`), three commits each rewriting every
    file group, and a non-partition folder beside them."""
    lake = Lake(LocalStorage(), str(root / "t"), version=6)
    names = [f"year={2020 + i % 3}/day={i:02d}" for i in range(partitions)]
    for n, instant in enumerate(("20260101000000000", "20260102000000000", "20260103000000000")):
        lake.commit(instant, {p: [lake.base_file(p, f"fg{g}", instant) for g in range(2 + n % 2)] for p in names})
    (root / "t" / "not-a-partition").mkdir()
    return root / "t"


def test_local_processes_share_the_folders_each_once(tmp_path: Path) -> None:
    """The base is listed once (`top_folders`) and its folders dealt out: the shares' listings
    are the whole listing, each partition once; a non-partitioned table has none to deal."""
    path = many_partitions(tmp_path)
    storage, base = LocalStorage(), str(path)
    whole = list_partitions(storage, base).partitions
    folders = top_folders(storage, base)
    assert folders == sorted(str(p) for p in path.iterdir() if p.is_dir() and p.name != ".hoodie")
    for count in (2, 3, 5):
        shares = [list_partitions(storage, base, within=folders[i::count]).partitions for i in range(count)]
        assert sum(len(s) for s in shares) == len(whole)
        assert {p: files for s in shares for p, files in s.items()} == dict(whole)
    flat = Lake(LocalStorage(), str(tmp_path / "flat"), version=6, partitioned=False)
    flat.commit("20260101000000000", {"": [flat.base_file("", "fg0", "20260101000000000")]})
    assert top_folders(storage, str(tmp_path / "flat")) is None


def test_local_processes_plan_many_partitions_as_one_process_does(tmp_path: Path) -> None:
    path = many_partitions(tmp_path)
    alone = plan_clean(HudiTable.open(str(path)), CleanConfig(commits_retained=1, incremental=False))
    assert alone.files_to_delete and len(alone.partitions_considered) == 23
    assert plans_agree([path]) == 4


def test_local_processes_cli_prints_the_same_plan(tmp_path: Path) -> None:
    path = many_partitions(tmp_path)
    cleanline = str(Path(sys.executable).with_name("cleanline"))

    def plan(processes: str) -> dict[str, object]:
        env = {**os.environ, "CLEANLINE_LOCAL_PROCESSES": processes}
        out = subprocess.run([cleanline, "clean", "plan", str(path), "--json", "--retain-commits", "1",
                              "--allow-short-retention"],
                             capture_output=True, text=True, env=env, check=True).stdout
        return json.loads(out)

    assert plan("3") == plan("1")
    told = subprocess.run([cleanline, "-v", "clean", "plan", str(path), "--json", "--retain-commits", "1",
                           "--allow-short-retention"], capture_output=True, text=True, check=True,
                          env={**os.environ, "CLEANLINE_LOCAL_PROCESSES": "3"}).stderr
    assert "planned 4 folders in 3 processes" in told  # year=2020..2022, not-a-partition: really forked
    refused = subprocess.run([cleanline, "clean", "plan", str(path), "--json"], capture_output=True, text=True,
                             env={**os.environ, "CLEANLINE_LOCAL_PROCESSES": "none"})
    assert refused.returncode == 2 and "CLEANLINE_LOCAL_PROCESSES='none'" in refused.stderr
