"""The Spark clean job on local[2]: the same plan as the local engine; executed, hudi-rs reads
of the retained instants are unchanged."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.clean.test_fixture_cleans import retained_files, rows
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import Progress, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.spark.clean import plan_clean_spark, run_pending_cleans_spark
from timeline.table import HudiTable

TABLES = ["sample_table/mor/avro/v9_txns_simple_nometa", "sample_table/cow/v9_txns_complex_nometa",
          "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
          "sample_table/mor/avro/v9_txns_nonpart_nometa"]
CONFIGS = [CleanConfig(commits_retained=1), CleanConfig(commits_retained=2, incremental=False),
           CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)]


@pytest.mark.parametrize("table_id", TABLES)
def test_spark_plan_equals_local_plan(spark: SparkSession, table_copy, table_id: str) -> None:
    path = str(table_copy(table_id))
    for config in CONFIGS:
        local = plan_clean(HudiTable.open(path), config)
        distributed = plan_clean_spark(spark, path, config)
        assert distributed == local


def test_spark_clean_run_keeps_retained_reads(spark: SparkSession, table_copy) -> None:
    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    config = CleanConfig(commits_retained=1)
    table = HudiTable.open(str(path))
    plan = plan_clean_spark(spark, str(path), config)
    ectr = plan.earliest_instant_to_retain
    assert ectr is not None and plan.files_to_delete
    retained = [i.requested_time for i in table.timeline.writes().completed()
                if i.requested_time >= ectr.requested_time]
    before = {t: rows(path, t) for t in retained}
    latest = rows(path)
    schedule_clean(table, plan, config)
    seen: list[Progress] = []
    (result,) = run_pending_cleans_spark(spark, str(path), progress=seen.append)
    assert result.deleted == len(plan.files_to_delete) and result.failed == 0
    assert seen[-1].files_done == seen[-1].files_total == len(plan.files_to_delete)
    assert seen[-1].bytes_deleted == plan.bytes_to_delete
    assert result.bytes_deleted == plan.bytes_to_delete
    assert rows(path) == latest
    assert all(rows(path, t) == before[t] for t in retained)
    assert all(f.exists() for f in retained_files(HudiTable.open(str(path)), ectr.requested_time))


def test_spark_engine_from_the_cli_plans_like_the_local_engine(table_copy) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    cleanline = str(Path(sys.executable).with_name("cleanline"))
    path = str(table_copy("sample_table/cow/v9_txns_simple_nometa"))
    env = {**os.environ, "SPARK_MASTER": "local[2]"}
    short = ["--retain-commits", "1", "--allow-short-retention", "--json"]
    local = subprocess.run([cleanline, "clean", "plan", path, *short], capture_output=True, text=True, timeout=300,
                           env=env)
    spark = subprocess.run([cleanline, "clean", "plan", path, *short, "--engine", "spark"],
                           capture_output=True, text=True, timeout=300, env=env)
    assert local.returncode == spark.returncode == 0, spark.stderr[-2000:]
    assert spark.stdout == local.stdout and '"delete": true' in local.stdout
