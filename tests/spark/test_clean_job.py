"""The Spark clean job on local[2]: the same plan as the local engine; executed, hudi-rs reads
of the retained instants are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.helpers import TOKEN, Lake, retained_files, rows
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import FileOutcome, Progress, Status, Target, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.files import base_file_name
from timeline.instant import CLEAN, Instant, State
from timeline.internal.plan_store import plan_clean_stored
from timeline.spark.clean import (
    batches,
    outcomes_of,
    plan_clean_spark,
    plan_clean_spark_stored,
    run_pending_cleans_spark,
)
from timeline.storage.arrow import LocalStorage

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


MDT_TABLES = ["sample_table/cow/v9_txns_simple_meta", "sample_table/mor/avro/v9_txns_complex_meta",
              "sample_table/mor/avro/v9_txns_nonpart_meta"]


@pytest.mark.parametrize("table_id", MDT_TABLES)
def test_spark_plan_through_the_metadata_table_equals_its_plan_listing_storage(
        spark: SparkSession, table_copy, table_id: str, tmp_path: Path) -> None:
    """With a valid metadata table the Spark engine lists through it by default (auto), as the
    local engine does; its plans, in memory and in a plan store, equal those listing storage and
    the local engine's by partition."""
    path = str(table_copy(table_id))
    for n, config in enumerate(CONFIGS):
        through_mdt, from_storage = plan_clean_spark(spark, path, config), plan_clean_spark(spark, path, config,
                                                                                            source="storage")
        assert (through_mdt.listing, from_storage.listing) == ("metadata", "storage")
        assert through_mdt.decisions == from_storage.decisions
        assert through_mdt == plan_clean(HudiTable.open(path), config, source="metadata")
        stored = plan_clean_spark_stored(spark, path, config, str(tmp_path / f"m{n}"))
        listed = plan_clean_spark_stored(spark, path, config, str(tmp_path / f"s{n}"), source="storage")
        local = plan_clean_stored(HudiTable.open(path), config, str(tmp_path / f"l{n}"), source="metadata")
        assert stored.listing == local.listing == "metadata" and listed.listing == "storage"
        assert list(stored.iter_rows()) == list(listed.iter_rows()) == list(local.iter_rows())
        assert stored.partitions_to_delete == listed.partitions_to_delete
        assert stored.notes == local.notes
        assert sorted(p.name for p in (tmp_path / f"m{n}").iterdir() if "listing" in p.name) == []


def test_spark_never_deletes_a_file_the_metadata_table_does_not_list(spark: SparkSession, table_copy,
                                                                    tmp_path: Path) -> None:
    """A failed write's leftover (a file group no completed write put in the metadata table,
    beside an old base file) is seen by a Spark plan listing storage, never by one through the
    metadata table."""
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    config = CleanConfig(commits_retained=1)
    old = Path(plan_clean(HudiTable.open(str(path)), config, source="storage").files_to_delete[0].path
               .removeprefix("file:"))
    file_id, _, rest = old.name.partition("_")
    stray = old.with_name(f"{file_id[:-1]}9_{rest}")
    stray.write_bytes(old.read_bytes())
    assert stray.name in {Path(d.path).name for d in plan_clean_spark(spark, str(path), config,
                                                                      source="storage").decisions}
    assert stray.name not in {Path(d.path).name for d in plan_clean_spark(spark, str(path), config).decisions}
    stored = plan_clean_spark_stored(spark, str(path), config, str(tmp_path / "store"))
    assert stored.listing == "metadata" and stray.name not in {r.file_name for r in stored.iter_rows()}


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


def test_spark_engine_from_the_cli_honours_listing(table_copy) -> None:
    """`cleanline clean plan --engine spark`: auto lists through the metadata table (Hudi's
    choice), `--listing storage` lists storage; the same files either way."""
    import json
    import os
    import subprocess
    import sys

    cleanline = str(Path(sys.executable).with_name("cleanline"))
    path = str(table_copy("sample_table/cow/v9_txns_simple_meta"))
    env = {**os.environ, "SPARK_MASTER": "local[2]"}
    short = ["--retain-commits", "1", "--allow-short-retention", "--json", "--engine", "spark"]
    runs = {listing: subprocess.run([cleanline, "clean", "plan", path, *short, "--listing", listing],
                                    capture_output=True, text=True, timeout=300, env=env)
            for listing in ("auto", "storage")}
    assert all(r.returncode == 0 for r in runs.values()), runs["auto"].stderr[-2000:]
    auto, storage = (json.loads(runs[k].stdout) for k in ("auto", "storage"))
    assert (auto["listing"], storage["listing"]) == ("metadata", "storage")
    assert auto["files"] == storage["files"] and auto["totals"]["filesToDelete"]


def _mixed_lake(base: Path) -> Lake:
    """A table whose pending clean names deleted-to-be files in two partitions, a file already
    gone, a directory where a file should be (the store refuses it) and a bootstrap-flagged
    file inside the table."""
    lake = Lake(LocalStorage(), str(base))
    times = [f"2026110100{i:02d}00000" for i in range(4)]
    for t in times[:3]:
        lake.commit(t, {"city=sf": [lake.base_file("city=sf", "fg1", t)],
                        "city=la": [lake.base_file("city=la", "fg2", t)]})
    Path(lake.base, "city=sf", "dir.parquet").mkdir()
    files = {"city=sf": [f"file:{lake.base}/city=sf/{base_file_name('fg1', TOKEN, times[0])}",
                         f"file:{lake.base}/city=sf/{base_file_name('fg1', TOKEN, 'gone')}",
                         f"file:{lake.base}/city=sf/dir.parquet"],
             "city=la": [f"file:{lake.base}/city=la/{base_file_name('fg2', TOKEN, times[0])}",
                         f"file:{lake.base}/city=la/{base_file_name('fg2', TOKEN, times[1])}"]}
    plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": times[2],
            "policy": "KEEP_LATEST_COMMITS", "filesToBeDeletedPerPartition": {}, "version": 2,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": f, "isBootstrapBaseFile": p == "city=la" and i == 1} for i, f in enumerate(fs)]
                for p, fs in files.items()},
            "partitionsToBeDeleted": [], "extraMetadata": None}
    lake.instant_file(Instant(times[3], CLEAN, State.REQUESTED), plan)
    return lake


def test_spark_clean_reports_each_outcome_as_the_local_engine(spark: SparkSession, tmp_path: Path) -> None:
    """Deleted, already gone and failed outcomes, bootstrap flags and bytes travel back from the
    executors unchanged: the Spark run reports what the local engine reports on a twin table."""
    runs = {}
    for name in ("local", "spark"):
        lake = _mixed_lake(tmp_path / name)
        if name == "local":
            (result,) = run_pending_cleans(HudiTable.open(lake.base))
        else:
            (result,) = run_pending_cleans_spark(spark, lake.base)
        runs[name] = (sorted((o.partition, o.path.replace(lake.base, "BASE"), o.status, o.is_bootstrap, o.bytes,
                              bool(o.error)) for o in result.outcomes), result.metadata.total_files_deleted)
    outcomes, deleted = runs["spark"]
    assert runs["spark"] == runs["local"]
    assert [o[2] for o in outcomes].count(Status.DELETED) == 3
    assert deleted == 3  # Hudi's count: the regular files deleted and the one gone; the bootstrap file apart
    assert [o[2] for o in outcomes].count(Status.GONE) == 1
    assert [(o[2], o[5]) for o in outcomes].count((Status.FAILED, True)) == 1
    assert sum(o[4] for o in outcomes) == 300 and [o[3] for o in outcomes].count(True) == 1


def test_spark_batches_split_partitions_and_come_back_in_order() -> None:
    targets = [Target("a", f"file:/t/a/{i}", i == 2) for i in range(5)] + [Target("b", "file:/t/b/0")]
    work = batches(targets, {"file:/t/a/1": 7}, size=2)
    assert [(b[0], b[1]) for b in work] == [("a", ["file:/t/a/0", "file:/t/a/1"]),
                                            ("a", ["file:/t/a/2", "file:/t/a/3"]),
                                            ("a", ["file:/t/a/4"]), ("b", ["file:/t/b/0"])]
    assert work[0][2] is None and work[1][2] == [True, False] and work[0][3] == [None, 7]
    shipped = [([0, 7], None, {}), ([0, 0], ["gone", "failed"], {1: "denied"}), ([1], None, {}), ([2], None, {})]
    outcomes = [o for b, s in zip(work, shipped) for o in outcomes_of(b, s)]
    assert outcomes[1] == FileOutcome("a", "file:/t/a/1", Status.DELETED, False, 7)
    assert outcomes[2] == FileOutcome("a", "file:/t/a/2", Status.GONE, True, 0)
    assert outcomes[3] == FileOutcome("a", "file:/t/a/3", Status.FAILED, False, 0, "denied")
    assert [o.path for o in outcomes] == [t.path for t in targets]


def test_spark_clean_keeps_the_metadata_table(spark: SparkSession, table_copy) -> None:
    """The Spark job deletes on the executors; the driver writes the MDT deltacommit before
    completing the clean, as the local engine does."""
    path = table_copy("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    table = HudiTable.open(str(path))
    plan = plan_clean_spark(spark, str(path), config)
    assert plan.files_to_delete
    latest = rows(path)
    schedule_clean(table, plan, config)
    (result,) = run_pending_cleans_spark(spark, str(path))
    assert result.deleted == len(plan.files_to_delete) and result.failed == 0
    assert table.reload().inspect.validate_metadata_table().ok
    assert rows(path) == latest
