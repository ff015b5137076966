"""Soak: the project's Spark writer commits upserts in a loop with StorageBasedLockProvider (on
the local S3 server, and once on local disk) while Cleanline, sharing the lock, plans, approves
and runs cleans, creates and deletes savepoints and rolls back a failed write, for a bounded
number of rounds. The same writer writes the same batches to a twin table without Cleanline.

Afterwards hudi-rs reads, for every retained instant, the same rows from the table as from the
twin as of the same batch (0 rows lost), the latest rows agree, and every file a retained
instant names exists. The rounds, the conflicts seen and refused (stale plans, changes refused
because the lock was held, other refusals, lock handoffs between the writer and Cleanline and
those where one side waited for the other) and what was done are printed (`-s`) and checked:
both sides log every interval they held the lock (`timeline.transactions.intervals`), no two
intervals overlap, and the lock passed between them at least once (a run without contention
fails). Both tables have a metadata
table (`hoodie.metadata.enable`: the writer keeps its `files` partition, Cleanline's clean,
savepoint and rollback keep it too), and `cleanline mdt validate` finds both exact afterwards;
hudi-rs lists both through them."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

from tests.helpers import Intervals
from timeline import CleanConfig, CleanlineError, HudiTable, transition
from timeline.clean.executor import PlanInvalidated
from timeline.config import update_config
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, LockUnavailable
from timeline.metadata.records import CleanMetadata, CommitMetadata

ROOT = Path(__file__).resolve().parents[2]
OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
       "hoodie.write.lock.storage.validity.timeout.secs": "20",
       "hoodie.write.lock.storage.renew.interval.secs": "2",
       "hoodie.write.lock.wait_time_ms": "60000"}
COMMITS = 6
KEYS = 9
MAX_ROUNDS = 80
# Hudi's heartbeat settings (HoodieWriteConfig): a heartbeat is expired 2 x 500 ms after its last touch.
SHORT_HEARTBEAT = {"hoodie.client.heartbeat.interval_in_ms": "500", "hoodie.client.heartbeat.tolerable.misses": "2"}

WRITER = textwrap.dedent("""
    import json, logging, sys
    from timeline.spark.session import spark_session
    from timeline.spark.writer import write

    path, twin, commits, keys, options, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \\
        json.loads(sys.argv[5]), sys.argv[6]
    MDT = {"hoodie.metadata.enable": "true"}

    class Intervals(logging.Handler):
        def emit(self, record):
            if record.table.rstrip("/").endswith("/soak"):  # the twin takes no lock
                with open(log, "a") as out:
                    out.write(json.dumps({"holder": record.holder, "requested": record.requested,
                                          "acquired": record.acquired, "released": record.released}) + "\\n")

    logger = logging.getLogger("timeline.transactions.intervals")
    logger.setLevel(logging.INFO)
    logger.addHandler(Intervals())
    spark = spark_session(master="local[1]", app_name="soak-writer")
    for n in range(commits):
        rows = [(f"k{k}", n, f"p{k % 3}", f"value {n}") for k in range(keys)]
        df = spark.createDataFrame(rows, "id string, ts long, part string, value string")
        spec = dict(table_name="soak", record_key="id", precombine_field="ts", partition_by="part",
                    operation="upsert", table_version=8)
        instant = write(spark, df, path, options={**options, **MDT}, **spec)
        twin_instant = write(spark, df, twin, options=MDT, **spec)
        print(instant, n, twin_instant, flush=True)
    spark.stop()
""")


def rows_of(uri: str, as_of: str | None = None, options: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    """The rows hudi-rs reads (as of an instant), sorted."""
    read = hudi.HudiReadOptions()
    if as_of is not None:
        read = read.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(uri, options or {}).read(read)
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    return sorted(zip(*(table.column(c).to_pylist() for c in ("id", "ts", "part", "value")), strict=True))


class Soak:
    """Cleanline's side: one round plans, approves (re-validates) and runs a clean, creates or
    deletes a savepoint, and injects or rolls back a failed write; what happened is counted."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.counts = {"rounds": 0, "cleans": 0, "stale plans": 0, "savepoints created": 0,
                       "savepoints deleted": 0, "failed writes injected": 0, "failed writes rolled back": 0,
                       "refused: lock held": 0, "refused": 0}
        self.refusals: list[str] = []
        self.failed: str | None = None

    def attempt(self, action: Any) -> Any:
        try:
            return action()
        except CleanlineError as exc:  # a stale plan, a lock held too long, a rollback the sequence rule defers
            kind = ("stale plans" if isinstance(exc, PlanInvalidated)
                    else "refused: lock held" if isinstance(exc, LockUnavailable) else "refused")
            self.counts[kind] += 1  # again later
            self.refusals.append(f"{type(exc).__name__}: {exc}"[:300])
            return None

    def round(self) -> None:
        self.counts["rounds"] += 1
        table = HudiTable.open(self.uri)
        maintenance = table.maintenance(options=OCC)
        config = CleanConfig(commits_retained=2)
        plan = self.attempt(lambda: maintenance.plan_clean(config, enforce_retention=False))
        if plan is not None and plan.files_to_delete:
            if maintenance.revalidate(plan):  # the approval's re-validation
                self.counts["stale plans"] += 1
            elif self.attempt(lambda: maintenance.schedule_clean(plan, config, force=True)) is not None:
                self.counts["cleans"] += len(self.attempt(maintenance.run_cleans) or [])
        time.sleep(0.3)  # a round every moment or so, not a busy loop beside the writer
        if self.counts["rounds"] % 3:
            pass  # savepoints every third round: between them the cleans have files to take
        elif savepoints := table.reload().timeline.savepoints().completed().instants:
            if self.attempt(lambda: maintenance.delete_savepoint(savepoints[0].requested_time)) is not None or \
                    not table.reload().timeline.savepoints().completed().instants:
                self.counts["savepoints deleted"] += 1
        else:
            latest = table.timeline.commits().completed().last()
            if latest is not None and self.attempt(lambda: maintenance.create_savepoint(latest.requested_time,
                                                                                        user="soak")) is not None:
                self.counts["savepoints created"] += 1
        if self.failed is None and self.counts["failed writes rolled back"] == 0 and self.counts["rounds"] >= 2:
            self.inject_failed_write(table, maintenance)
        elif self.failed is not None and self.attempt(
                lambda: maintenance.rollback_failed_write(self.failed)) is not None:
            self.counts["failed writes rolled back"] += 1
            self.failed = None

    def final_clean(self) -> None:
        """Once the writer is done: the savepoints go and one more clean runs over the whole
        history, so that the retained window checked below is the one a clean just kept."""
        maintenance = HudiTable.open(self.uri).maintenance(options=OCC)
        for savepoint in maintenance.table.timeline.savepoints().completed().instants:
            maintenance.delete_savepoint(savepoint.requested_time)
            self.counts["savepoints deleted"] += 1
        config = CleanConfig(commits_retained=2)
        plan = maintenance.plan_clean(config, enforce_retention=False)
        if plan.files_to_delete and maintenance.schedule_clean(plan, config, force=True) is not None:
            self.counts["cleans"] += len(maintenance.run_cleans())

    def inject_failed_write(self, table: HudiTable, maintenance: Any) -> None:
        """What a writer that died right after starting its commit leaves: a requested and
        inflight commit and a heartbeat file it stopped touching. The table's heartbeat interval
        is made short first (`hoodie.properties`, under the lock), so that the heartbeat expires
        within the test on every store (an object store's modification time cannot be set back)."""
        def start() -> str:
            with maintenance.transactions.state_change():
                update_config(table.storage, table.base, SHORT_HEARTBEAT)
                table.reload()
                instant = transition.request(table, "commit", None)
                transition.start(table, instant)
                beat = table.path(".hoodie", ".heartbeat", instant.requested_time)
                table.storage.write(beat, b"", overwrite=True)
            return instant.requested_time

        self.failed = self.attempt(start)
        if self.failed is not None:
            self.counts["failed writes injected"] += 1


def handoffs(held: list[dict[str, Any]], writers: list[dict[str, Any]]) -> tuple[int, int]:
    """While the writer ran (its first hold to its last): how often the lock passed between it
    and Cleanline, and how often the side taking it had been waiting while the other held it."""
    during = [r for r in held if writers[0]["acquired"] <= r["acquired"] and r["released"] <= writers[-1]["released"]]
    turns = [(a, b) for a, b in zip(during, during[1:])
             if a["holder"].startswith("cleanline-writer-") != b["holder"].startswith("cleanline-writer-")]
    return len(turns), sum(1 for a, b in turns if b["requested"] < a["released"])


@pytest.fixture(params=["s3", "local"])
def soak_paths(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, dict[str, str]]:
    """The table, its twin and hudi-rs's storage options."""
    if request.param == "local":
        return str(tmp_path / "soak"), str(tmp_path / "twin"), {}
    server = request.getfixturevalue("s3_server")
    bucket = server.new_bucket("soak")
    return f"s3://{bucket}/soak", f"s3://{bucket}/twin", server.hudi_options


def test_soak_cleanline_beside_a_live_writer_loses_no_rows(
        soak_paths: tuple[str, str, dict[str, str]], tmp_path: Path) -> None:
    uri, twin, read_options = soak_paths
    log = tmp_path / "intervals.jsonl"
    handler = Intervals(log)
    intervals = logging.getLogger("timeline.transactions.intervals")
    intervals.setLevel(logging.INFO)
    intervals.addHandler(handler)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, uri, twin, str(COMMITS), str(KEYS), json.dumps(OCC), str(log)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    committed: dict[str, tuple[int, str]] = {}
    soak = Soak(uri)
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline().split()  # the table exists once the first batch is out
        assert first, writer.stderr.read() if writer.stderr else "the writer printed nothing"
        committed[first[0]] = (int(first[1]), first[2])
        while writer.poll() is None and soak.counts["rounds"] < MAX_ROUNDS:
            soak.round()
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err[-3000:]
        committed.update({line.split()[0]: (int(line.split()[1]), line.split()[2])
                          for line in out.splitlines() if line.strip()})
        for _ in range(6):  # after the writer: until a clean ran, a savepoint came and went, the failed write went
            if soak.counts["cleans"] and soak.counts["savepoints deleted"] and soak.counts["failed writes rolled back"]:
                break
            soak.round()
        soak.final_clean()
    finally:
        intervals.removeHandler(handler)
        if writer.poll() is None:
            writer.kill()
    held = sorted((json.loads(line) for line in log.read_text().splitlines()), key=lambda r: r["acquired"])
    theirs = [r for r in held if r["holder"].startswith("cleanline-writer-")]
    assert len(theirs) == 2 * COMMITS and len(held) > len(theirs)  # the writer: start and complete
    overlaps = [(a, b) for a, b in zip(held, held[1:]) if b["acquired"] < a["released"]]
    assert overlaps == [], "the lock was held by two parties at once"
    soak.counts["lock handoffs"], soak.counts["lock waits"] = handoffs(held, theirs)
    print(f"\nsoak {uri}: {json.dumps(soak.counts)}; refusals: {soak.refusals[:5]}")
    assert soak.counts["lock handoffs"] >= 2, "Cleanline never took the lock between two of the writer's holds"
    assert len(committed) == COMMITS
    assert soak.counts["cleans"] >= 1 and soak.counts["savepoints created"] >= 1
    assert soak.counts["savepoints deleted"] >= 1 and soak.counts["failed writes rolled back"] == 1

    table = HudiTable.open(uri)
    assert not table.timeline.writes().pending(), "a write was left pending"
    last_clean = table.timeline.cleans().completed().last()
    assert last_clean is not None
    retained_from = table.read(last_clean, CleanMetadata).earliest_commit_to_retain
    assert retained_from
    # the window the cleans were asked for (2 commits retained), whatever the clean recorded
    window = [i.requested_time for i in table.timeline.commits().completed() if i.requested_time in committed][-2:]
    retained_from = min(retained_from, window[0])
    lost = 0
    checked = 0
    for instant in table.timeline.commits().completed():
        if instant.requested_time < retained_from or instant.requested_time not in committed:
            continue
        _, twin_instant = committed[instant.requested_time]
        ours = rows_of(uri, instant.requested_time, read_options)
        theirs = rows_of(twin, twin_instant, read_options)
        lost += len(set(theirs) - set(ours))
        assert ours == theirs, instant.requested_time
        checked += 1
        for stat in table.read(instant, CommitMetadata).stats():
            assert table.storage.exists(table.path(stat.path)), f"{stat.path} of retained {instant.requested_time}"
    latest = rows_of(uri, None, read_options)
    assert latest == rows_of(twin, None, read_options) and len(latest) == KEYS
    print(f"soak {uri}: {checked} retained instants read alike, {lost} rows lost")
    assert checked >= 2 and lost == 0
    assert table.config.metadata_partitions == ("files",)
    cleanline = Path(sys.executable).parent / "cleanline"
    for checked_uri in (uri, twin):  # the CLI inherits the S3 server's AWS_* variables
        validated = subprocess.run([str(cleanline), "mdt", "validate", checked_uri, "--json"], capture_output=True,
                                   text=True, timeout=300)
        assert validated.returncode == 0 and json.loads(validated.stdout)["ok"], validated.stdout + validated.stderr
