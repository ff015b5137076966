"""Planning and cleaning on a real Spark standalone cluster (`StandaloneCluster` of
tests/helpers.py: a master and two one-core workers on 127.0.0.1). The driver is a separate
process (as a Celery worker is): it shares nothing with the executors but the table's storage.
The cluster plans the same files, file by file with the same reasons, as the local engine; an
executor JVM killed in the middle of a clean job has its tasks retried by Spark and the clean
ends as an uninterrupted one would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.common import CleanShape, full_config, generate_clean_table
from tests.helpers import FIXTURES, unzip_table
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.clean.executor import schedule_clean

ROOT = Path(__file__).resolve().parents[2]

# The driver: plan (or run the pending clean of) one table on the cluster, print JSON lines.
DRIVER = """
import json, sys
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.spark.session import spark_session
master, path, what, config = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = spark_session(master=master, app_name="cleanline-cluster-test",
                      conf={"spark.executor.memory": "512m", "spark.task.maxFailures": "4",
                            # a Python worker per task: the job lasts long enough to kill an executor in it
                            "spark.python.worker.reuse": str(what != "run-slowly").lower()})
table = HudiTable.open(path)
services = table.maintenance(spark=spark)
if what == "plan-stored":  # into a plan store: executors write the parts, the driver gets sums
    folder = config.pop("folder")
    stored = services.plan_clean_stored(CleanConfig(policy=CleanPolicy(config.pop("policy")), **config), folder,
                                        enforce_retention=False)
    print(json.dumps({"parts": len(stored.parts), "files": stored.files}))
elif what == "plan":
    plan = services.plan_clean(CleanConfig(policy=CleanPolicy(config.pop("policy")), **config),
                               enforce_retention=False)
    print(json.dumps({"delete": sorted([d.partition, d.file_name, d.reason] for d in plan.files_to_delete),
                      "keep": sorted([k.partition, k.file_name, k.reason] for k in plan.files_kept)}))
else:
    def progress(p):
        print(json.dumps({"progress": p.files_done, "total": p.files_total}), flush=True)
    (result,) = services.run_cleans(progress=progress)
    print(json.dumps({"deleted": result.deleted, "gone": result.already_gone, "failed": result.failed,
                      "instant": result.instant.requested_time}), flush=True)
spark.stop()
"""


def driver(cluster, path: Path, what: str, config: dict[str, object]) -> subprocess.Popen[str]:  # type: ignore[no-untyped-def]
    return subprocess.Popen([sys.executable, "-c", DRIVER, cluster.url, str(path), what, json.dumps(config)],
                            env={**cluster.env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def local_plan(path: Path, config: dict[str, object]) -> dict[str, list[list[str]]]:
    values = dict(config)
    plan = HudiTable.open(str(path)).maintenance().plan_clean(
        CleanConfig(policy=CleanPolicy(values.pop("policy")), **values), enforce_retention=False)  # type: ignore[arg-type]
    return {"delete": sorted([d.partition, d.file_name, d.reason] for d in plan.files_to_delete),
            "keep": sorted([k.partition, k.file_name, k.reason] for k in plan.files_kept)}


@pytest.mark.parametrize("name, config", [
    ("sample_table/mor/avro/v9_txns_simple_nometa", {"policy": "KEEP_LATEST_COMMITS", "commits_retained": 1}),
    ("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
     {"policy": "KEEP_LATEST_FILE_VERSIONS", "file_versions_retained": 1}),
    ("generated", {"policy": "KEEP_LATEST_COMMITS", "commits_retained": 3}),
], ids=["v9-mor", "v6-cow-replaced", "generated-400-partitions"])
def test_the_cluster_plans_the_same_files_as_the_local_engine(spark_cluster, tmp_path: Path, name: str,
                                                               config: dict[str, object]) -> None:
    if name == "generated":
        path = tmp_path / "generated"
        generate_clean_table(str(path), CleanShape(partitions=400, groups=3, versions=4, trickle=2, hot=4,
                                                    retained=3))
    else:
        path = unzip_table(FIXTURES / f"{name}.zip", tmp_path)
    run = driver(spark_cluster, path, "plan", config)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    remote = json.loads(out.strip().splitlines()[-1])
    assert remote == local_plan(path, config) and remote["delete"]


def test_the_cluster_writes_a_plan_store_and_it_holds_the_local_engine_s_plan(spark_cluster,
                                                                               tmp_path: Path) -> None:
    """Executors write their partitions' decisions into the plan store themselves (one part per
    task, the driver receives per-partition sums only): the store holds, row by row in plan order,
    what the local engine's plan holds, and pages and compares like one written locally."""
    path = tmp_path / "generated"
    shape = CleanShape(partitions=300, groups=3, versions=4, trickle=2, hot=4, retained=3)
    generate_clean_table(str(path), shape)
    folder = tmp_path / "store" / "plan-1"
    config = {"policy": "KEEP_LATEST_COMMITS", "commits_retained": 3}
    run = driver(spark_cluster, path, "plan-stored", {**config, "folder": str(folder)})
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    assert json.loads(out.strip().splitlines()[-1])["parts"] == 300 // 16 + 1  # one part per task
    from timeline.internal.plan_store import StoredPlan, compare_stored

    remote = StoredPlan.open(str(folder))
    local = HudiTable.open(str(path)).maintenance().plan_clean_stored(
        CleanConfig(policy=CleanPolicy.KEEP_LATEST_COMMITS, commits_retained=3), str(tmp_path / "local"),
        enforce_retention=False)
    assert list(remote.iter_rows()) == list(local.iter_rows()) and remote.files_to_delete > 0
    assert remote.sums == local.sums and compare_stored(remote, local) == []
    assert remote.rows(delete=True, offset=1000, limit=50) == local.rows(delete=True, offset=1000, limit=50)


def test_an_executor_killed_mid_clean_is_retried_and_the_clean_ends_as_uninterrupted(spark_cluster,
                                                                                       tmp_path: Path) -> None:
    """SIGKILL one executor JVM once the job has deleted some files but not all (watched on
    storage; each task starts its own Python worker, so the job lasts seconds): Spark re-runs its
    tasks elsewhere (files it had deleted are "already gone"), every planned file is gone, nothing
    failed, and the completed clean lists every planned file, as an uninterrupted run would."""
    shape = CleanShape(partitions=600, groups=10, versions=4, trickle=2, hot=6, retained=3)
    path = tmp_path / "big"
    generate_clean_table(str(path), shape)
    table = HudiTable.open(str(path))
    config = full_config(shape)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    clean = schedule_clean(table, plan, config, force=True)
    assert clean is not None
    planned = {(d.partition, d.file_name) for d in plan.files_to_delete}
    files = [path / p / n for p, n in sorted(planned)]
    run = driver(spark_cluster, path, "run-slowly", {})
    killed = None
    deadline = time.monotonic() + 240
    while killed is None and run.poll() is None and time.monotonic() < deadline:
        gone = sum(1 for f in files[::50] if not f.exists())
        if gone:
            executors = spark_cluster.executor_pids()
            if executors:
                os.kill(executors[0], signal.SIGKILL)
                killed = (executors[0], gone)
        time.sleep(0.02)
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert killed is not None and killed[1] < len(files[::50]), "the job ended before an executor was killed"
    assert result["failed"] == 0 and result["deleted"] + result["gone"] == len(planned)
    assert not any((path / p / n).exists() for p, n in planned)
    table.reload()
    done = table.timeline.cleans().completed().last()
    assert done is not None and done.requested_time == clean.requested_time
    from timeline.metadata.records import CleanMetadata

    metadata = table.read(done, CleanMetadata)
    assert {(p, n) for p, m in metadata.partitions.items() for n in m.success_delete_files} == planned
