"""A clean killed part-way (SIGKILL) and re-run ends exactly as an uninterrupted run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.storage.arrow import LocalStorage

# Runs the clean and kills its own process (SIGKILL, no clean-up) right after the Nth delete.
KILLER = """
import os, signal, sys, threading
from timeline.clean.executor import run_pending_cleans
from timeline.storage.arrow import LocalStorage
from timeline import HudiTable
limit, count, lock = int(sys.argv[2]), [0], threading.Lock()
real_delete_many = LocalStorage.delete_many
def delete_many(self, paths):
    answers = {}
    for path in paths:
        answers.update(real_delete_many(self, [path]))
        with lock:
            count[0] += 1
            if count[0] >= limit:
                os.kill(os.getpid(), signal.SIGKILL)
    return answers
LocalStorage.delete_many = delete_many
run_pending_cleans(HudiTable.open(sys.argv[1]), parallelism=4)
"""


def build(base: Path) -> None:
    lake = Lake(LocalStorage(), str(base), version=8, table_type="MERGE_ON_READ")
    times = [f"202611010000{i:02d}000" for i in range(8)]
    for t in times:
        names = {p: [lake.base_file(p, f"fg{g}", t) for g in range(5)] for p in ("a=1", "a=2", "a=3")}
        lake.commit(t, names)


def final_metadata(base: Path) -> dict:
    table = HudiTable.open(str(base))
    clean = table.timeline.cleans().completed().last()
    assert clean is not None
    meta = table.read_instant(clean) or {}
    return {p: sorted(m["successDeleteFiles"]) for p, m in meta["partitionMetadata"].items()} | {
        "total": meta["totalFilesDeleted"],
        "failed": sum(len(m["failedDeleteFiles"]) for m in meta["partitionMetadata"].values())}


def schedule(base: Path) -> tuple[str, list[Path]]:
    table = HudiTable.open(str(base))
    config = CleanConfig(commits_retained=2)
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config)
    return clean.requested_time, [Path(d.path.removeprefix("file:")) for d in plan.files_to_delete]


def test_crash_killed_clean_resumes_to_the_same_result(tmp_path: Path) -> None:
    build(tmp_path / "a")
    build(tmp_path / "b")  # the same table again: plans carry absolute paths, so no copy
    clean, doomed = schedule(tmp_path / "a")
    _, doomed_b = schedule(tmp_path / "b")
    assert len(doomed) == len(doomed_b) == 75

    killed = subprocess.run([sys.executable, "-c", KILLER, str(tmp_path / "a"), str(len(doomed) // 3)],
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    interrupted = HudiTable.open(str(tmp_path / "a")).timeline.find(clean, "clean")
    assert interrupted is not None and interrupted.is_inflight
    remaining = sum(1 for path in doomed if path.exists())
    assert 0 < remaining < len(doomed)

    (resumed,) = run_pending_cleans(HudiTable.open(str(tmp_path / "a")))
    (straight,) = run_pending_cleans(HudiTable.open(str(tmp_path / "b")))
    assert resumed.already_gone == len(doomed) - remaining and resumed.deleted == remaining
    assert straight.deleted == len(doomed)
    assert final_metadata(tmp_path / "a") == final_metadata(tmp_path / "b")
    assert not any(path.exists() for path in doomed + doomed_b)
