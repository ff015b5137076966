"""`make test` on several processes: a test file runs whole on one process (tests/conftest.py
`pytest_xdist_make_scheduler`, `--dist loadfile`), so its module fixtures start once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.helpers import xdist_unit

ROOT = Path(__file__).resolve().parents[1]


def test_each_test_file_runs_whole_on_one_process() -> None:
    files = ["tests/test_instant.py", "tests/test_files.py", "tests/test_changes.py"]
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile",
                          "-v", *files], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTEST_ADDOPTS": ""})
    assert run.returncode == 0, run.stdout[-3000:]
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, file in re.findall(r"^\[(gw\d)\] \[ *\d+%\] PASSED ([^:]+)::", run.stdout, re.M):
        workers[file].add(worker)
    assert set(workers) == set(files)
    assert all(len(ran_on) == 1 for ran_on in workers.values()), dict(workers)
    assert len(set().union(*workers.values())) == 2  # and the files are shared out between the processes


def test_the_files_sharing_a_costly_session_fixture_are_one_unit() -> None:
    """The demo lake (built by Spark in minutes) and the Spark standalone cluster start once a run."""
    demo = ["tests/spark/test_demo.py", "tests/console/browser/test_journey.py",
            "tests/console/browser/test_newcomer_journey.py", "tests/console/views/test_dashboard.py"]
    assert {xdist_unit(f"{file}::test_x[a]") for file in demo} == {"demo-lake"}
    cluster = ["tests/spark/test_spark_cluster.py", "tests/console/tasks/test_clean_worker.py"]
    assert {xdist_unit(f"{file}::test_x") for file in cluster} == {"spark-cluster"}
    assert xdist_unit("tests/test_files.py::test_x") == "tests/test_files.py"
