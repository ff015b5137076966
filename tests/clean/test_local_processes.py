"""The local engine in several processes: a full clean plan listed and planned by forked
processes, each over a share of the table's folders, is the plan one process makes, file by
file, on every fixture table (partitioned, nested, non-partitioned), and on a table of many
partitions; the processes' errors and deaths reach the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_IDS
from tests.lakes import Lake
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.engine import fork_map, local_processes, may_fork
from timeline.exceptions import CleanlineError
from timeline.fsview import list_partitions
from timeline.storage.arrow import LocalStorage
from timeline.table import HudiTable

CONFIGS = [CleanConfig(commits_retained=1, incremental=False),
           CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1, incremental=False)]


def same(one: CleanPlan, other: CleanPlan) -> None:
    assert one.decisions == other.decisions
    assert one.partitions_to_delete == other.partitions_to_delete
    assert one.partitions_considered == other.partitions_considered
    assert one.to_record() == other.to_record()


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_local_processes_plan_every_fixture_as_one_process_does(fixture_lake: dict[str, Path], table_id: str) -> None:
    table = HudiTable.open(str(fixture_lake[table_id]))
    for config in CONFIGS:
        alone = plan_clean(table, config, processes=1)
        for processes in (2, 3):
            same(plan_clean(table, config, processes=processes), alone)


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
    path = many_partitions(tmp_path)
    storage, base = LocalStorage(), str(path)
    whole = list_partitions(storage, base).partitions
    for count in (2, 3, 5):
        shares = [list_partitions(storage, base, share=(i, count)).partitions for i in range(count)]
        assert sum(len(s) for s in shares) == len(whole)
        assert {p: files for s in shares for p, files in s.items()} == dict(whole)


def test_local_processes_plan_many_partitions_as_one_process_does(tmp_path: Path) -> None:
    table = HudiTable.open(str(many_partitions(tmp_path)))
    alone = plan_clean(table, CONFIGS[0], processes=1)
    assert alone.files_to_delete and len(alone.partitions_considered) == 23
    for processes in (2, 4, 7):
        same(plan_clean(table, CONFIGS[0], processes=processes), alone)


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
    refused = subprocess.run([cleanline, "clean", "plan", str(path), "--json"], capture_output=True, text=True,
                             env={**os.environ, "CLEANLINE_LOCAL_PROCESSES": "none"})
    assert refused.returncode == 2 and "CLEANLINE_LOCAL_PROCESSES='none'" in refused.stderr


def test_local_processes_setting() -> None:
    assert local_processes({}) == max(1, min(os.cpu_count() or 1, 8))
    assert local_processes({"CLEANLINE_LOCAL_PROCESSES": " 3 "}) == 3
    for bad in ("0", "-2", "two"):
        with pytest.raises(CleanlineError, match="CLEANLINE_LOCAL_PROCESSES"):
            local_processes({"CLEANLINE_LOCAL_PROCESSES": bad})


def test_fork_map_returns_the_shares_in_order_from_their_processes() -> None:
    assert fork_map(lambda i, n: (i, n, os.getpid()), 1) == [(0, 1, os.getpid())]
    found = fork_map(lambda i, n: (i, n, os.getpid()), 3)
    assert [(i, n) for i, n, _ in found] == [(0, 3), (1, 3), (2, 3)]
    assert found[0][2] == os.getpid() and len({pid for _, _, pid in found}) == 3


def test_fork_map_raises_a_childs_error_and_reports_a_dead_child() -> None:
    def failing(index: int, count: int) -> int:
        if index == 2:
            raise CleanlineError("share 2 cannot list its folders")
        return index

    with pytest.raises(CleanlineError, match="share 2 cannot list"):
        fork_map(failing, 3)

    def dying(index: int, count: int) -> int:
        if index == 1:
            os._exit(9)
        return index

    with pytest.raises(CleanlineError, match="ended without an answer .exit code 9"):
        fork_map(dying, 2)


def test_fork_map_stays_in_this_process_while_another_thread_runs() -> None:
    """A fork copies only the calling thread (and the locks the others hold): with another
    thread running, everything runs here as one share."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not may_fork()
        assert fork_map(lambda i, n: (i, n, os.getpid()), 3) == [(0, 1, os.getpid())]
    finally:
        stop.set()
        other.join()
    assert may_fork()
