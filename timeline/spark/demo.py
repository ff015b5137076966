"""`cleanline demo PATH`: a lake worth looking at, written by the Spark writer.

- `trips_cow_v6`: partitioned copy-on-write v6, about 30 commits of inserts, upserts and
  deletes and an insert-overwrite, a savepoint, and enough file versions for a clean plan of
  hundreds of files;
- `events_mor_v6`: merge-on-read v6 with log files, a compaction and a completed clean;
- `orders_cow_v8`: copy-on-write v8 with two failed (pending) writes left behind: the newest
  write, which Hudi's rules let an admin roll back, and an older one with a commit completed
  after it, which they refuse (`validateRollbackCommitSequence`: the refusal explains the way
  forward, a savepoint before it to restore to)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import PurePosixPath
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from timeline.clean.config import CleanConfig
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.files import base_file_name
from timeline.instant import COMMIT, Instant, State
from timeline.internal.demo import DEMO_TABLES, demo_tables_to_build
from timeline.savepoint import create_savepoint
from timeline.spark.writer import compact, write
from timeline.storage import Storage, storage_for
from timeline.table import Table

CITIES = ["amsterdam", "berlin", "chennai", "delhi", "lisbon", "madrid", "nairobi", "oslo", "paris",
          "quito", "rome", "sao_paulo"]
Progress = Callable[[str], None]


def _rows(spark: SparkSession, rng: random.Random, keys: list[int], commit: int) -> DataFrame:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return spark.createDataFrame(
        [(f"trip-{k:05d}", CITIES[k % len(CITIES)], commit * 1000 + k % 1000, round(rng.uniform(3, 90), 2),
          start + timedelta(minutes=k)) for k in keys],
        "id string, city string, ts long, fare double, started timestamp")


def _trips(spark: SparkSession, path: str, rng: random.Random, say: Progress) -> None:
    common: dict[str, Any] = dict(table_name="trips_cow_v6", record_key="id", precombine_field="ts",
                                  partition_by="city", table_type="COPY_ON_WRITE", table_version=6,
                                  max_file_size=64 * 1024)
    keys = list(range(2400))
    write(spark, _rows(spark, rng, keys, 0), path, operation="insert", **common)
    for commit in range(1, 29):
        if commit % 7 == 0:
            gone = rng.sample(keys, 40)
            keys = [k for k in keys if k not in set(gone)]
            write(spark, _rows(spark, rng, gone, commit), path, operation="delete", **common)
        else:
            write(spark, _rows(spark, rng, rng.sample(keys, 300), commit), path, operation="upsert", **common)
        if commit == 20:
            create_savepoint(Table.open(path), Table.open(path).timeline.commits().completed()
                             .last().requested_time, user="demo", comment="before the lisbon backfill")  # type: ignore[union-attr]  # 20 commits written
        say(f"trips_cow_v6: commit {commit + 1} of 30")
    lisbon = [k for k in keys if CITIES[k % len(CITIES)] == "lisbon"]
    write(spark, _rows(spark, rng, lisbon, 29), path, operation="insert_overwrite", **common)


def _events(spark: SparkSession, path: str, rng: random.Random, say: Progress) -> None:
    common: dict[str, Any] = dict(table_name="events_mor_v6", record_key="id", precombine_field="ts",
                                  partition_by="city", table_type="MERGE_ON_READ", table_version=6)
    keys = list(range(600))
    write(spark, _rows(spark, rng, keys, 0), path, operation="insert", **common)
    for commit in range(1, 9):
        write(spark, _rows(spark, rng, rng.sample(keys, 80), commit), path, operation="upsert", **common)
        if commit == 4:
            compact(spark, path)
    write(spark, _rows(spark, rng, rng.sample(keys, 20), 9), path, operation="delete", **common)
    table = Table.open(path)
    config = CleanConfig(commits_retained=3)
    schedule_clean(table, plan_clean(table, config), config)
    run_pending_cleans(table)
    say("events_mor_v6: written, compacted and cleaned")


def _orders(spark: SparkSession, path: str, rng: random.Random, say: Progress) -> None:
    common: dict[str, Any] = dict(table_name="orders_cow_v8", record_key="id", precombine_field="ts",
                                  partition_by="city", table_type="COPY_ON_WRITE", table_version=8)
    keys = list(range(900))
    write(spark, _rows(spark, rng, keys, 0), path, operation="insert", **common)
    for commit in range(1, 5):
        write(spark, _rows(spark, rng, rng.sample(keys, 150), commit), path, operation="upsert", **common)
    _failed_write(Table.open(path))
    write(spark, _rows(spark, rng, rng.sample(keys, 150), 5), path, operation="upsert", **common)
    _failed_write(Table.open(path))  # the newest write: rolled back by Hudi's rules
    say("orders_cow_v8: written, with two failed writes left pending")


def _failed_write(table: Table) -> None:
    """A write that died after writing one file: requested and inflight instants, the file,
    and its marker, as a crashed Hudi writer leaves them."""
    time = table.new_instant_time()
    folder = table.timeline.folder
    layout = table.config.layout_version
    for state in (State.REQUESTED, State.INFLIGHT):
        table.storage.write(Storage.join(folder, Instant(time, COMMIT, state).file_name(layout)), b"")
    piece = table.file_system_view().latest_slices()[0]
    assert piece.base_file is not None
    name = base_file_name(piece.file_id, "0-99-999", time)
    partition_folder = table.path(piece.partition) if piece.partition else table.base
    table.storage.write(Storage.join(partition_folder, name),
                        table.storage.read(Storage.join(partition_folder, piece.base_file.name)))
    table.storage.write(table.path(".hoodie", ".temp", time, piece.partition, f"{name}.marker.MERGE"), b"")


def build_demo_lake(spark: SparkSession, root: str, *, seed: int = 7, progress: Progress | None = None) -> list[str]:
    """Write the demo tables under `root` (an existing table is left as it is); their paths."""
    say = progress or (lambda message: None)
    storage, base = storage_for(root)
    builders = {"trips_cow_v6": _trips, "events_mor_v6": _events, "orders_cow_v8": _orders}
    todo = demo_tables_to_build(root)
    paths = []
    for name in DEMO_TABLES:
        path = str(PurePosixPath(base) / name)
        if name in todo:
            # A marker beside the table while it is written: a build stopped half-way (Ctrl-C)
            # leaves it, and the next build starts that table again from nothing.
            marker = Storage.join(base, f".{name}.building")
            storage.write(marker, b"", overwrite=True)
            storage.delete_dir(path)
            say(f"{name}: building")
            builders[name](spark, storage.uri(path), random.Random(seed), say)
            storage.delete(marker)
            say(f"{name}: done")
        paths.append(path)
    return paths
