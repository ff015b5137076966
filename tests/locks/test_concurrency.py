"""A live table: a Hudi writer process (the project's Spark writer, configured for optimistic
concurrency with the storage-based lock, or ZooKeeper) commits upserts in a loop while Cleanline plans,
schedules and runs cleans and takes a savepoint on the same table, sharing the lock.

Afterwards: the lock was never held by two parties at once (both sides log every interval
they held it: `timeline.transactions.intervals`), every retained committed instant reads with
hudi-rs with the rows the writer committed, and no file that a retained instant names is
missing."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import Intervals, hudi_read
from tests.locks.helpers import ZooKeeperServer
from timeline import CleanConfig, CleanlineError, HudiTable
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, ZOOKEEPER_BASED_LOCK_PROVIDER
from timeline.metadata.records import CleanMetadata, CommitMetadata

OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "30",
       "hoodie.write.lock.storage.renew.interval.secs": "2",
       "hoodie.write.lock.wait_time_ms": "120000"}


@pytest.fixture(params=["storage", "zookeeper"])
def lock_options(request: pytest.FixtureRequest) -> dict[str, str]:
    """The writer's and Cleanline's lock: Hudi's storage-based lock file, or ZooKeeper (a real
    server on 127.0.0.1, conftest.py's `zookeeper`; Curator's recipe)."""
    if request.param == "storage":
        return OCC
    server: ZooKeeperServer = request.getfixturevalue("zookeeper")
    return {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
            "hoodie.write.lock.provider": ZOOKEEPER_BASED_LOCK_PROVIDER,
            "hoodie.write.lock.zookeeper.url": server.hosts,
            "hoodie.write.lock.zookeeper.base_path": "/hudi/locks",
            "hoodie.write.lock.zookeeper.lock_key": "live",
            "hoodie.write.lock.wait_time_ms": "120000"}


COMMITS = 8
KEYS = 12

WRITER = textwrap.dedent("""
    import json, logging, sys
    from timeline.spark.session import spark_session
    from timeline.spark.writer import write

    path, log, commits, keys = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    options = json.loads(sys.argv[5])

    class Intervals(logging.Handler):
        def emit(self, record):
            with open(log, "a") as out:
                out.write(json.dumps({"holder": record.holder, "acquired": record.acquired,
                                      "released": record.released}) + "\\n")

    logger = logging.getLogger("timeline.transactions.intervals")
    logger.setLevel(logging.INFO)
    logger.addHandler(Intervals())
    spark = spark_session(master="local[1]", app_name="writer")
    for n in range(commits):
        rows = [(f"k{k}", n, f"p{k % 3}", f"value {n}") for k in range(keys)]
        df = spark.createDataFrame(rows, "id string, ts long, part string, value string")
        instant = write(spark, df, path, table_name="live", record_key="id", precombine_field="ts",
                        partition_by="part", operation="upsert", table_version=8, options=options)
        print(instant, n, flush=True)
    spark.stop()
""")


def test_concurrency_a_writer_and_cleanline_share_the_lock_and_the_table_stays_readable(
        tmp_path: Path, lock_options: dict[str, str]) -> None:
    path = tmp_path / "live"
    log = tmp_path / "intervals.jsonl"
    handler = Intervals(log)
    intervals = logging.getLogger("timeline.transactions.intervals")
    intervals.setLevel(logging.INFO)
    intervals.addHandler(handler)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(log), str(COMMITS), str(KEYS), json.dumps(lock_options)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    committed: dict[str, int] = {}
    cleans = savepoints = 0
    refused: list[str] = []
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline().split()  # the table exists once the first commit is out
        assert first, writer.stderr.read() if writer.stderr else "the writer printed nothing"
        committed[first[0]] = int(first[1])
        deadline = time.monotonic() + 900
        while (writer.poll() is None or cleans == 0) and time.monotonic() < deadline:
            table = HudiTable.open(str(path))
            maintenance = table.maintenance(options=lock_options)
            try:
                if savepoints == 0 and len(table.timeline.commits().completed()) >= 3:
                    latest = table.timeline.commits().completed().last()
                    assert latest is not None
                    maintenance.create_savepoint(latest.requested_time, user="test")
                    savepoints += 1
                config = CleanConfig(commits_retained=2)
                with maintenance.transactions.state_change():  # a slow reader holding the lock: without
                    plan = maintenance.plan_clean(config, enforce_retention=False)  # the lock, the writer's
                    time.sleep(0.4)                               # sections would fall inside this one
                if plan.files_to_delete and maintenance.schedule_clean(plan, config, force=True) is not None:
                    cleans += len(maintenance.run_cleans())
            except CleanlineError as exc:
                refused.append(str(exc))  # a plan made stale by a commit, a lock wait: plan again
            time.sleep(0.2)
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err[-3000:]
        committed.update({line.split()[0]: int(line.split()[1]) for line in out.splitlines() if line.strip()})
    finally:
        intervals.removeHandler(handler)
        if writer.poll() is None:
            writer.kill()
    assert len(committed) == COMMITS and cleans >= 1 and savepoints == 1, refused[:5]

    held = sorted((json.loads(line) for line in log.read_text().splitlines()), key=lambda r: r["acquired"])
    ours = [r for r in held if r["holder"] == f"cleanline-{os.getpid()}"]
    theirs = [r for r in held if r["holder"].startswith("cleanline-writer-")]
    assert len(theirs) == 2 * COMMITS and ours and len(ours) + len(theirs) == len(held)  # writer: start, complete
    overlaps = [(a, b) for a, b in zip(held, held[1:]) if b["acquired"] < a["released"]]
    assert overlaps == [], "the lock was held by two parties at once"

    table = HudiTable.open(str(path))
    last_clean = table.timeline.cleans().completed().last()
    assert last_clean is not None
    retained_from = table.read(last_clean, CleanMetadata).earliest_commit_to_retain
    rows = hudi_read(path)
    assert retained_from, "the last clean retained no commit window"
    assert rows is not None and rows.num_rows == KEYS
    assert set(rows.column("ts").to_pylist()) == {COMMITS - 1}
    for instant in table.timeline.commits().completed():
        if instant.requested_time < retained_from:
            continue
        as_of = hudi_read(path, instant.requested_time)
        assert as_of is not None and set(as_of.column("ts").to_pylist()) == {committed[instant.requested_time]}
        for stat in table.read(instant, CommitMetadata).stats():
            assert (path / stat.path).exists(), f"{stat.path}, written by retained {instant.requested_time}, is gone"
