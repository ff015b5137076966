"""The local engine's process pool (timeline/internal/forks.py): how many processes it takes,
shares returned in order, a child's error or death reaching the caller, and no fork while another
thread runs. The planner over these processes is tested in tests/clean/test_local_processes.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import pytest

from tests.helpers import ROOT
from timeline.exceptions import CleanlineError
from timeline.internal.forks import fork_map, local_processes, may_fork


def test_forks_local_processes_setting() -> None:
    assert local_processes({}) == max(1, min(len(os.sched_getaffinity(0)), 8))
    assert local_processes({"CLEANLINE_LOCAL_PROCESSES": " 3 "}) == 3
    for bad in ("0", "-2", "two"):
        with pytest.raises(CleanlineError, match="CLEANLINE_LOCAL_PROCESSES"):
            local_processes({"CLEANLINE_LOCAL_PROCESSES": bad})


FORK_MAP = """
import json, os
from timeline.internal.forks import fork_map
from timeline.exceptions import CleanlineError, FileNotFound, StorageError

def failing(index, count):
    if index == 2:
        raise CleanlineError("share 2 cannot list its folders")
    return index

def refused(index, count):  # a library error built from (path, reason)
    if index == 1:
        raise StorageError("/lake/t/city=1", "permission denied")
    return index

def missing(index, count):
    if index == 1:
        raise FileNotFound("/lake/t/city=2")
    return index

def dying(index, count):
    if index == 1:
        os._exit(9)
    return index

errors = []
for work, processes in ((failing, 3), (refused, 2), (missing, 2), (dying, 2)):
    try:
        fork_map(work, processes)
    except CleanlineError as exc:
        errors.append(str(exc))
print(json.dumps({"one": fork_map(lambda i, n: (i, n, os.getpid()), 1),
                  "three": fork_map(lambda i, n: (i, n, os.getpid()), 3), "pid": os.getpid(), "errors": errors}))
"""


def test_fork_map_returns_shares_in_order_and_raises_what_a_child_raised_or_how_it_died() -> None:
    found = json.loads(subprocess.run([sys.executable, "-c", FORK_MAP], capture_output=True, text=True,
                                      check=True, cwd=ROOT).stdout)
    pid = found["pid"]
    assert found["one"] == [[0, 1, pid]]
    assert [(i, n) for i, n, _ in found["three"]] == [(0, 3), (1, 3), (2, 3)]
    assert found["three"][0][2] == pid and len({p for _, _, p in found["three"]}) == 3
    failed, refused, missing, died = found["errors"]
    assert "share 2 cannot list its folders" in failed
    assert refused == "/lake/t/city=1: permission denied"
    assert missing == "/lake/t/city=2: no such file or folder"
    assert "ended without an answer (exit code 9)" in died


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
