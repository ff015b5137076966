"""The whole clean journey on real services: Redis, Celery worker processes and Spark, on
local[2] and on a real standalone cluster (`tests/helpers.py`'s `StandaloneCluster`: the Celery worker is the
driver, submitting to spark://127.0.0.1). Plan, approve, execute; hudi-rs reads the retained
instants as before and the report lists exactly the planned files. Then a worker killed in the
middle of a clean: Celery delivers the task again, a new worker finishes it and the plan's row
tells the truth."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from console import services
from console.models import CleanPlan, Table, TableLock
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from tests.console.helpers import SHORT_RETENTION, queued_outcome, wait_for
from tests.helpers import Lake, rows
from timeline import HudiTable
from timeline.storage.arrow import LocalStorage


def status(plan: CleanPlan) -> str:
    return CleanPlan.objects.get(pk=plan.pk).status


def registered_on_worker(path: Path) -> Table:
    """The table registered; the sync its registration queued, run by the worker."""
    table = services.table_register(path=str(path), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    table.refresh_from_db()
    return table


def drafted_on_worker(table: Table) -> CleanPlan:
    """A plan asked for; the build its request queued, run by the worker."""
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    assert queued_outcome(CleanPlan.objects.get(pk=plan.pk).task_id, 300) == "draft"
    plan.refresh_from_db()
    return plan


@pytest.fixture(params=["local", "cluster"])
def spark_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The Celery workers' Spark: local[2] in the worker, or the standalone cluster's master."""
    if request.param == "local":
        return {}
    cluster = request.getfixturevalue("spark_cluster")
    return {"SPARK_MASTER": cluster.url, "SPARK_LOCAL_IP": "127.0.0.1",
            "CLEANLINE_SPARK_CONF": "spark.executor.memory=512m"}


def test_clean_worker_plan_approve_execute_on_spark(start_worker, spark_env, settings, tmp_path: Path,
                                                    table_copy) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    settings.CLEANLINE_SPARK_MIN_FILES = 1
    from console.tasks import run_clean_plan

    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    start_worker(spark=True, **spark_env)
    table = registered_on_worker(path)
    plan = drafted_on_worker(table)
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0 and plan.engine == "spark"
    ectr = plan.earliest_retained
    retained = [i.requested_time for i in HudiTable.open(table.path).timeline.writes().completed()
                if i.requested_time >= ectr]
    before = {t: rows(path, t) for t in retained}
    plan = services.plan_approve(plan=plan, user=None)
    assert plan.status == ApprovalStatus.APPROVED
    run_clean_plan.delay(plan.pk).get(timeout=300)
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_done == plan.files_to_delete
    assert all(rows(path, t) == before[t] for t in retained)
    files = list(stored_plan(plan).iter_rows())  # type: ignore[union-attr]
    planned = {f.file_name for f in files if f.delete}
    reported = {f.file_name for f in files if f.outcome == "deleted"}
    clean = HudiTable.open(table.path).read_instant(HudiTable.open(table.path).timeline.cleans().last())  # type: ignore[arg-type]
    listed = {n for meta in (clean or {})["partitionMetadata"].values() for n in meta["successDeleteFiles"]}
    assert planned == reported == listed


def test_clean_worker_killed_mid_clean_a_new_worker_finishes_it(start_worker, spark_env, settings,
                                                                 tmp_path: Path) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    settings.CLEANLINE_SPARK_MIN_FILES = 1
    from console.tasks import run_clean_plan

    lake = Lake(LocalStorage(), str(tmp_path / "big"), version=8)
    times = [f"2026110100{i:02d}00000" for i in range(4)]
    for t in times:
        lake.commit(t, {f"p={p}": [lake.base_file(f"p={p}", f"g{g}", t, size=10) for g in range(100)]
                        for p in range(40)})
    first = start_worker(spark=True, **spark_env)
    table = registered_on_worker(tmp_path / "big")
    plan = services.plan_approve(plan=drafted_on_worker(table), user=None)
    doomed = [Path(f.path.removeprefix("file:")) for f in stored_plan(plan).deletes()]  # type: ignore[union-attr]
    assert len(doomed) == 8000
    run_clean_plan.delay(plan.pk)
    wait_for(lambda: sum(1 for p in doomed[::50] if not p.exists()) > 0, 300, "the first deletes")
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    left = sum(1 for p in doomed if p.exists())
    assert status(plan) == ApprovalStatus.RUNNING  # the row says what it knows: the worker took it and died
    assert 0 < left < len(doomed), "the worker must die part-way for this test to mean anything"
    start_worker(spark=True, **spark_env)
    wait_for(lambda: status(plan) == ApprovalStatus.COMPLETED, 300, "the clean to finish on a new worker")
    plan.refresh_from_db()
    assert plan.progress_done == len(doomed) and not any(p.exists() for p in doomed)
    # the dead worker's deletes are "already gone" to the new one; the rest it deleted itself (a
    # few more may go after `left` was counted: the dead worker's Spark executors finish their task)
    outcomes = stored_plan(plan).outcome_counts()  # type: ignore[union-attr]
    assert set(outcomes) == {"deleted", "gone"} and sum(outcomes.values()) == len(doomed)
    assert 0 < outcomes["deleted"] <= left and outcomes["gone"] >= len(doomed) - left
    assert not TableLock.objects.filter(table=table).exists()
    assert not HudiTable.open(table.path).timeline.cleans().pending()
