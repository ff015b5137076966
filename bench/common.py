"""What the benchmarks share, in one place; no benchmark imports from another.

- Generation: tables are created with the library's `create_table` (the `.hoodie` folders and
  `hoodie.properties` with its checksum, as Hudi writes them); everything else (instant files,
  partition metadata, data files) is written with plain `os` calls, since a generator is not
  library code. `generate_timeline` is the table with a long active timeline (bench/fsview.py,
  bench/console.py); `generate_huge_commit_table` the table with a 200 MB commit
  (bench/console.py); `CleanShape` and `generate_clean_table` are the clean table
  (bench/clean.py, bench/spark.py, bench/s3.py).
- Timing: `timed`, contenders run side by side with `interleaved`, `cprofile`; memory: `peak_growth`.
- Reporting: `machine`, `argument_parser`, `publish` (text or --json, and with --record the
  benchmark's section of RESULTS.md).
- The S3 server: `SeededS3Server`, the tests' moto server (tests/helpers.py) with a seeding route
  that loads objects straight into its store (bench/s3.py, bench/s3_scale.py).

Every benchmark is a script run from the repository root; it puts the root on `sys.path`
before importing `bench.common`.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import json
import os
import platform
import pstats
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import S3Server
from timeline import HudiTable, metadata
from timeline.clean.config import CleanConfig
from timeline.clean.executor import schedule_clean
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.instant import CLEAN, Instant, State, format_instant_time
from timeline.spark.writer.create import create_table
from timeline.storage import storage_for

RESULTS_FILE = Path(__file__).with_name("RESULTS.md")
START = dt.datetime(2026, 1, 1)
FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
BASE_BYTES = b"PAR1"    # the data files are tiny: listing never reads them
PARTITION_METADATA = ".hoodie_partition_metadata"


# ----------------------------------------------------------------------------------------
# Generation


def instant_at(minutes: float) -> str:
    return format_instant_time(START + dt.timedelta(minutes=minutes))


def write_file(path: str, data: bytes = b"") -> None:
    fd = os.open(path, FLAGS, 0o644)
    try:
        if data:
            os.write(fd, data)
    finally:
        os.close(fd)


def new_table(base: str, props: Mapping[str, str]) -> str:
    """`create_table` at the local path `base` (its `.hoodie` folders, `hoodie.properties` with
    `props` and their checksum); returns the active timeline folder."""
    storage, path = storage_for(base)
    config = create_table(storage, path, props)
    return f"{base}/{config.timeline_folder}"


def cow_v6_props(name: str) -> dict[str, str]:
    """`hoodie.properties` of a version 6 COPY_ON_WRITE table (layout 1) partitioned by `city`,
    hive style, as Hudi 0.x writes it."""
    return {
        "hoodie.table.name": name, "hoodie.database.name": "default",
        "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "6",
        "hoodie.timeline.layout.version": "1", "hoodie.table.partition.fields": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.table.recordkey.fields": "id", "hoodie.table.precombine.field": "ts",
        "hoodie.table.base.file.format": "PARQUET", "hoodie.archivelog.folder": "archived",
        "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
        "hoodie.populate.meta.fields": "true", "hoodie.table.metadata.partitions": "",
    }


def write_instant(timeline: str, time_: str, action: str, content: bytes = b"", *, layout: int,
                  completion: str | None = None) -> None:
    """A completed instant: its requested and inflight files (empty) and its completed file
    holding `content` (named with `completion` in layout 2)."""
    write_file(f"{timeline}/{Instant(time_, action, State.REQUESTED).file_name(layout)}")
    write_file(f"{timeline}/{Instant(time_, action, State.INFLIGHT).file_name(layout)}")
    write_file(f"{timeline}/{Instant(time_, action, State.COMPLETED, completion).file_name(layout)}", content)


def avro_schema(partition_fields: Sequence[str]) -> str:
    """The writer schema stored in commit metadata (`extraMetadata.schema`); hudi-rs reads it
    from the latest commit and checks that the partition fields are in it."""
    fields = [{"name": "id", "type": "string"}, {"name": "ts", "type": "long"},
              {"name": "rider", "type": ["null", "string"], "default": None},
              {"name": "fare", "type": ["null", "double"], "default": None}]
    fields += [{"name": f, "type": "string"} for f in partition_fields]
    return json.dumps({"type": "record", "name": "bench_record", "namespace": "hoodie.bench",
                       "fields": fields})


def commit_metadata(schema: str, operation: str, *, stats: Mapping[str, list[dict[str, Any]]] | None = None,
                    compacted: bool = False) -> dict[str, Any]:
    """Valid commit metadata with the writer schema and the write stats by partition (none by
    default: hudi-rs only needs the schema, and leaving the stats out keeps the file small)."""
    return {"partitionToWriteStats": dict(stats or {}), "compacted": compacted,
            "extraMetadata": {"schema": schema}, "operationType": operation}


def file_ids(partition_index: int, groups: int) -> list[str]:
    return [f"{uuid.uuid5(uuid.NAMESPACE_URL, f'bench/{partition_index}/{g}')}-0" for g in range(groups)]


def write_partition_metadata(folder: str, commit: str, depth: int) -> None:
    os.makedirs(folder, exist_ok=True)
    write_file(f"{folder}/{PARTITION_METADATA}",
               f"#partition metadata\n#{START:%c}\ncommitTime={commit}\npartitionDepth={depth}\n".encode())


def generate_timeline(base: str, instants: int, layout: int) -> None:
    """A COW table whose active timeline holds `instants` completed commits, each with its
    requested, inflight and completed file (empty: loading only lists names)."""
    timeline = new_table(base, {
        "hoodie.table.name": f"bench_timeline_{instants}", "hoodie.database.name": "default",
        "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "8" if layout == 2 else "6",
        "hoodie.timeline.layout.version": str(layout), "hoodie.table.partition.fields": "",
    })
    second = dt.timedelta(seconds=1)
    for k in range(instants):
        time_ = format_instant_time(START + k * second)
        write_instant(timeline, time_, "commit", layout=layout, completion=f"{time_[:-3]}500" if layout == 2 else None)


# ----------------------------------------------------------------------------------------
# The clean table (bench/clean.py; bench/spark.py and bench/s3.py clean it too)

CLEAN_TABLE = "clean_cow_v6"
CLEAN_LAYOUT = 1


@dataclass(frozen=True, slots=True)
class CleanShape:
    """`partitions` x `groups` file groups; `versions` backfill commits rewrite all of them,
    then `trickle` commits rewrite the groups of `hot` partitions; `new_commits` more trickle
    commits come after the first clean. The planner retains `retained` commits."""

    partitions: int = 1000
    groups: int = 10
    versions: int = 20
    trickle: int = 10
    hot: int = 10
    new_commits: int = 3
    retained: int = 10

    @property
    def commits(self) -> int:
        return self.versions + self.trickle

    @property
    def data_files(self) -> int:
        return self.partitions * self.groups * self.versions + self.hot * self.groups * self.trickle

    def hot_partitions(self) -> list[int]:
        return sorted({i * self.partitions // self.hot for i in range(self.hot)})

    def expected_full(self) -> tuple[int, int]:
        """(files deleted, files kept) by the full plan of the generated table: the earliest
        commit to retain is commit `e` (0-based); a group keeps its latest version, the latest
        one before `e` and those at or after `e`."""
        e = self.commits - self.retained
        hot_groups = len(self.hot_partitions()) * self.groups
        cold_groups = self.partitions * self.groups - hot_groups
        deleted = cold_groups * (self.versions - 1) + hot_groups * (e - 1)
        return deleted, self.data_files - deleted

    def expected_incremental(self) -> int:
        """Files the plan deletes after the first clean and `new_commits` hot commits: the
        window moved by `new_commits`, so each hot group loses as many versions."""
        return len(self.hot_partitions()) * self.groups * self.new_commits


def generate_huge_commit_table(base: str, size: int, partitions: int = 3) -> tuple[str, str, int]:
    """A v6 COW table with a small commit (one write stat per partition) and then a commit of at
    least `size` bytes (issue 33's 200 MB commit: write stats dealt round the partitions, each
    as compact JSON). Returns the small and the huge commit's times and the huge one's count of
    write stats."""
    timeline = new_table(base, cow_v6_props("bench_huge_commit"))
    schema = avro_schema(["city"])
    names = [partition_name(p) for p in range(partitions)]
    for name in names:
        write_partition_metadata(f"{base}/{name}", instant_at(0), 1)
    small, huge = instant_at(0), instant_at(1)
    stats = {name: [write_stat(name, f"{p:08x}-0", f"{p:08x}-0_0-1-0_{small}.parquet", "null")]
             for p, name in enumerate(names)}
    write_instant(timeline, small, "commit", metadata.encode(commit_metadata(schema, "INSERT", stats=stats),
                                                             action="commit", state=State.COMPLETED, layout=1),
                  layout=1)
    one = len(json.dumps(write_stat(names[0], "0" * 10, "0" * 40, "null")))
    count = -(-size // one)
    write_instant(timeline, huge, "commit", layout=1)
    with open(f"{timeline}/{Instant(huge, 'commit', State.COMPLETED).file_name(1)}", "w", encoding="utf-8") as out:
        out.write('{"partitionToWriteStats": {')
        for p, name in enumerate(names):
            out.write(("," if p else "") + json.dumps(name) + ": [")
            for k, i in enumerate(range(p, count, partitions)):  # one stat at a time: nothing held
                stat = write_stat(name, f"{i:08x}-0", f"{i:08x}-0_0-1-0_{huge}.parquet", "null")
                out.write(("," if k else "") + json.dumps(stat))
            out.write("]")
        rest = commit_metadata(schema, "INSERT")
        del rest["partitionToWriteStats"]
        out.write("}, " + json.dumps(rest)[1:])
    return small, huge, count


def partition_name(p: int) -> str:
    return f"city={p:04d}"


def base_name(file_id: str, g: int, k: int, time_: str) -> str:
    return f"{file_id}_{g}-{10 + k}-{100 * k + g}_{time_}.parquet"


def write_stat(partition: str, file_id: str, name: str, previous: str) -> dict[str, Any]:
    size = len(BASE_BYTES)
    return {"fileId": file_id, "path": f"{partition}/{name}", "prevCommit": previous, "numWrites": 1,
            "numDeletes": 0, "numUpdateWrites": 0 if previous == "null" else 1, "numInserts": 1,
            "partitionPath": partition, "totalWriteBytes": size, "fileSizeInBytes": size, "totalWriteErrors": 0}


def write_versions(base: str, timeline: str, schema: str, shape: CleanShape, partitions: Sequence[int],
                   commits: Sequence[tuple[int, str]], previous: dict[tuple[int, int], str], *,
                   layout: int = CLEAN_LAYOUT) -> None:
    """Commit after commit ((index, time) pairs), rewrite every file group of `partitions`:
    one new base file per group, and the commit's metadata naming them (v6 JSON on layout 1,
    Avro with a completion time half a minute later on layout 2). `previous` maps (partition,
    group) to its latest commit time and is updated."""
    for k, time_ in commits:
        stats: dict[str, list[dict[str, Any]]] = {}
        for p in partitions:
            partition = partition_name(p)
            folder = f"{base}/{partition}"
            written = stats[partition] = []
            for g, file_id in enumerate(file_ids(p, shape.groups)):
                name = base_name(file_id, g, k, time_)
                write_file(f"{folder}/{name}", BASE_BYTES)
                written.append(write_stat(partition, file_id, name, previous.get((p, g), "null")))
                previous[(p, g)] = time_
        content = metadata.encode(commit_metadata(schema, "UPSERT", stats=stats), action="commit",
                                  state=State.COMPLETED, layout=layout)
        write_instant(timeline, time_, "commit", content, layout=layout,
                      completion=instant_at(k + 0.5) if layout >= 2 else None)


def generate_clean_table(base: str, shape: CleanShape, *, version: int = 6) -> dict[tuple[int, int], str]:
    """Write the clean table (version 6, COPY_ON_WRITE, layout 1, hive-style partitions
    `city=NNNN`; `version=8`: layout 2, Avro metadata); returns each file group's latest commit
    time."""
    props = cow_v6_props("bench_clean_cow_v6")
    if version >= 8:
        props.update({"hoodie.table.name": f"bench_clean_cow_v{version}", "hoodie.table.version": str(version),
                      "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
                      "hoodie.timeline.history.path": "history"})
    layout = 2 if version >= 8 else CLEAN_LAYOUT
    timeline = new_table(base, props)
    schema = avro_schema(["city"])
    times = [instant_at(k) for k in range(shape.commits)]
    for p in range(shape.partitions):
        write_partition_metadata(f"{base}/{partition_name(p)}", times[0], 1)
    previous: dict[tuple[int, int], str] = {}
    every = range(shape.partitions)
    write_versions(base, timeline, schema, shape, every, list(enumerate(times))[:shape.versions], previous,
                   layout=layout)
    write_versions(base, timeline, schema, shape, shape.hot_partitions(),
                   list(enumerate(times))[shape.versions:], previous, layout=layout)
    return previous


# A minimal HoodieMetadataRecord schema (the `files` partition's fields, Hudi's names) for the
# benchmark's generated metadata table.
MDT_RECORD_SCHEMA = json.dumps({
    "type": "record", "name": "HoodieMetadataRecord", "namespace": "org.apache.hudi.avro.model", "fields": [
        {"name": "key", "type": "string"}, {"name": "type", "type": "int"},
        {"name": "filesystemMetadata", "type": ["null", {"type": "map", "values": {
            "type": "record", "name": "HoodieMetadataFileInfo",
            "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}]}}]}]})


def add_files_metadata_table(base: str) -> None:
    """Give a version 8 table a metadata table whose `files` partition lists the table as
    storage holds it (one file group, as Hudi's initialisation makes it): the MDT table, its
    initialisation deltacommit `00000000000000000` (an empty log file), then a deltacommit
    `00000000000000001` with every partition's files (`timeline.mdt.writer.write_update`)."""
    from timeline import transition
    from timeline.config import MDT_PARTITIONS, update_config
    from timeline.logformat import BlockType, HeaderKey, encode_block, encode_delete_records
    from timeline.mdt.reader import MetadataTable
    from timeline.mdt.writer import MdtUpdate, write_update
    from timeline.metadata.mdt_payload import files_record, partition_identifier, partition_list_record

    table = HudiTable.open(base)
    storage, mdt_base = table.storage, table.path(".hoodie", "metadata")
    config = create_table(storage, mdt_base, {
        "hoodie.table.name": f"{table.config.name}_metadata", "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(table.config.version), "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
        "hoodie.table.base.file.format": "HFILE", "hoodie.table.recordkey.fields": "key",
        "hoodie.populate.meta.fields": "false", "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload"})
    assert config.layout_version == 2
    write_partition_metadata(f"{mdt_base}/files", "00000000000000000", 1)
    mdt_table = HudiTable.open(mdt_base)
    init = Instant("00000000000000000", "deltacommit", State.REQUESTED)
    transition.write_state(mdt_table, init, None)
    inflight = transition.start(mdt_table, init, None)
    header = {HeaderKey.INSTANT_TIME: "00000000000000000", HeaderKey.SCHEMA: MDT_RECORD_SCHEMA}
    write_file(f"{mdt_base}/files/.files-0000-0_00000000000000000.log.1_0-0-0",
               encode_block(BlockType.DELETE, header, encode_delete_records([])))
    transition.complete(mdt_table, inflight, None)
    update_config(storage, table.base, {MDT_PARTITIONS: "files"})
    listing = table.reload().list_partitions().partitions
    records = [files_record(partition_identifier(p), added={s.name: max(s.size, 1) for s in files
                                                             if s.name != PARTITION_METADATA})
               for p, files in sorted(listing.items())]
    records.append(partition_list_record([partition_identifier(p) for p in sorted(listing)], deleted=False))
    write_update(MetadataTable(table), "00000000000000001", [MdtUpdate("files", tuple(records))])


def reset_metadata_table(base: str, instant_time: str) -> None:
    """Remove what a clean at `instant_time` wrote to the metadata table (its deltacommit's
    state files and log files), so that the next run writes it again."""
    mdt = f"{base}/.hoodie/metadata"
    for folder in (f"{mdt}/.hoodie/timeline", f"{mdt}/files"):
        for name in os.listdir(folder):
            if name.startswith(instant_time) or f"_{instant_time}.log." in name:
                os.unlink(f"{folder}/{name}")


def put_back(base: str, files: Sequence[tuple[str, str]]) -> None:
    """(Re)create data files at `base/partition/name`, as the generator wrote them."""
    made: set[str] = set()
    for partition, name in files:
        folder = f"{base}/{partition}"
        if partition not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(partition)
        write_file(f"{folder}/{name}", BASE_BYTES)


def clean_state_file(clean: Instant, state: State) -> str:
    """The file name of the clean's `state` on the clean table's timeline (layout 1)."""
    return Instant(clean.requested_time, CLEAN, state).file_name(CLEAN_LAYOUT)


def reset_to_scheduled(base: str, clean: Instant, files: Sequence[tuple[str, str]]) -> None:
    """Undo an executed clean of the local table: its inflight and completed files go (and
    its metadata-table deltacommit, when the table has one), the deleted files come back; the
    requested plan stays."""
    table = HudiTable.open(base)
    found = table.timeline.files_of(clean)
    for state in (State.INFLIGHT, State.COMPLETED):
        if state in found:
            os.unlink(found[state].path)
    if table.config.metadata_partitions:
        reset_metadata_table(base, clean.requested_time)
    put_back(base, files)


def full_config(shape: CleanShape) -> CleanConfig:
    return CleanConfig(commits_retained=shape.retained, incremental=False)


def full_plan(uri: str, shape: CleanShape) -> CleanPlan:
    return plan_clean(HudiTable.open(uri), full_config(shape))


@dataclass(frozen=True, slots=True)
class Scheduled:
    """A full plan scheduled as a requested clean: the files it deletes as (partition, name),
    their sizes by path as planned, and the earliest commit it retains."""

    clean: Instant
    files: list[tuple[str, str]]
    sizes: dict[str, int]
    earliest_commit_to_retain: str | None


def schedule_full_plan(uri: str, shape: CleanShape) -> Scheduled:
    """Plan the table at `uri` in full and schedule the plan (`schedule_clean`)."""
    table = HudiTable.open(uri)
    config = full_config(shape)
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config)
    assert clean is not None, f"{uri}: nothing to clean"
    retained = plan.earliest_instant_to_retain
    return Scheduled(clean, [(d.partition, d.file_name) for d in plan.files_to_delete],
                     {d.path: d.size for d in plan.files_to_delete}, retained.requested_time if retained else None)


# ----------------------------------------------------------------------------------------
# Listing


def raw_walk(path: str) -> list[tuple[str, int]]:
    """Every file below `path` outside `.hoodie`, as (name, size): the least any listing-based
    view has to do."""
    found: list[tuple[str, int]] = []
    stack = [path]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".hoodie":
                        stack.append(entry.path)
                else:
                    found.append((entry.name, entry.stat(follow_symlinks=False).st_size))
    return found


def count_files(path: str) -> tuple[int, int]:
    """(data files, partitions) outside `.hoodie`; partition metadata files are not data."""
    files = raw_walk(path)
    partitions = sum(1 for name, _ in files if name == PARTITION_METADATA)
    return len(files) - partitions, partitions


# ----------------------------------------------------------------------------------------
# Timing


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall-clock seconds of one call (after a garbage collection), and its result."""
    gc.collect()
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


@dataclass(slots=True)
class Timing:
    runs: list[float] = field(default_factory=list)
    sizes: set[int] = field(default_factory=set)   # len() of the result of every run that has one

    @property
    def best(self) -> float:
        return min(self.runs)


def interleaved(contenders: Mapping[str, Callable[[], Any]], repeat: int, *,
                warm_up: bool = True) -> dict[str, Timing]:
    """One warm-up run of each (unless the caller has warmed them up), then `repeat`
    interleaved rounds (A B C, A B C, ...) so that background load hits all alike."""
    if warm_up:
        for fn in contenders.values():
            fn()
    timings = {name: Timing() for name in contenders}
    for _ in range(repeat):
        for name, fn in contenders.items():
            elapsed, result = timed(fn)
            timings[name].runs.append(elapsed)
            if hasattr(result, "__len__"):
                timings[name].sizes.add(len(result))
            del result
    return timings


def cprofile(fn: Callable[[], Any], top: int) -> dict[str, Any]:
    """The functions with the most own time under cProfile (and the largest cumulative ones),
    with their share of the total."""
    profiler = cProfile.Profile()
    gc.collect()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    total = stats.total_tt  # type: ignore[attr-defined]
    rows = []
    for (file_name, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file_name).name}:{line}({func})", "calls": calls,
                     "own_s": tottime, "own_share": tottime / total if total else 0.0,
                     "cumulative_s": cumtime, "cumulative_share": cumtime / total if total else 0.0})
    by_own = sorted(rows, key=lambda r: r["own_s"], reverse=True)[:top]
    by_cumulative = sorted(rows, key=lambda r: r["cumulative_s"], reverse=True)[:top]
    return {"total_s": total, "functions": by_own, "cumulative": by_cumulative}


# ----------------------------------------------------------------------------------------
# Where and on what


def peak_growth(fn: Callable[[], Any]) -> tuple[Any, int]:
    """What `fn` returns, and how many bytes its run added to this process's peak resident set
    above what it held before (VmHWM of /proc/self/status, reset through /proc/self/clear_refs)."""
    def status(field: str) -> int:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(f"{field}:"))

    gc.collect()
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")
    result = fn()
    return result, status("VmHWM") - before


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def bench_root(directory: str | None = None) -> tuple[str, bool]:
    """Where a benchmark writes its tables, and whether it created the folder: `directory`
    (`--dir`), or a fresh temp dir, on the RAM file system `/dev/shm` when there is one."""
    if directory:
        root, created = os.path.abspath(directory), not os.path.exists(directory)
        os.makedirs(root, exist_ok=True)
        return root, created
    ram = "/dev/shm"
    parent = ram if os.path.isdir(ram) and os.access(ram, os.W_OK) else None
    return tempfile.mkdtemp(prefix="cleanline-bench-", dir=parent), True


def file_system_of(path: str) -> str:
    """The mount type holding `path` (from /proc/mounts), e.g. tmpfs or ext4."""
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/mounts", encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 3 and (real == parts[1] or real.startswith(parts[1].rstrip("/") + "/")):
                    if len(parts[1]) > len(best):
                        best, kind = parts[1], parts[2]
    except OSError:
        pass
    return kind


def machine(**versions: str) -> dict[str, Any]:
    """The date, the machine and Python, and the `versions` of what a benchmark measures."""
    return {"date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"), "nproc": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(), **versions}


# ----------------------------------------------------------------------------------------
# Options and reporting


def argument_parser(doc: str | None, *, tables: str | None = None, keep: str | None = None, repeat: int = 3,
                    repeat_help: str = "timed runs per contender (best is kept)") -> argparse.ArgumentParser:
    """A benchmark's parser, described by its docstring's first paragraph, with the options
    every benchmark has: --repeat/-n, --json, --record; and, where it writes `tables`, --dir and
    --keep (`keep`: that option's help)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
    if tables is not None:
        parser.add_argument("--dir", help=f"where to write the {tables}; "
                                          "default: a fresh temp dir, on /dev/shm when available")
        parser.add_argument("--keep", action="store_true", help=keep or "keep the tables")
    parser.add_argument("--repeat", "-n", type=int, default=repeat, help=repeat_help)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--record", action="store_true", help=f"update {RESULTS_FILE.name}")
    return parser


def record_section(section: str, begin: str, end: str) -> None:
    """Replace one benchmark's section (between its markers) of RESULTS.md, or append it."""
    text = RESULTS_FILE.read_text(encoding="utf-8") if RESULTS_FILE.exists() else ""
    start, stop = text.find(begin), text.find(end)
    if start != -1 and stop != -1:
        text = text[:start] + section + text[stop + len(end):].lstrip("\n")
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    RESULTS_FILE.write_text(text, encoding="utf-8")
    progress(f"recorded in {RESULTS_FILE}")


def publish(result: dict[str, Any], args: argparse.Namespace, text: Callable[[dict[str, Any]], str],
            section: Callable[[dict[str, Any]], str], begin: str, end: str) -> None:
    """Print a benchmark's result (text or --json) and, with --record, rewrite its section."""
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print(text(result), end="")
    if args.record:
        record_section(section(result), begin, end)


def verdict(passed: bool | None) -> str:
    """A target's result: PASS, FAIL, or n/a where it could not be measured (None)."""
    return "n/a" if passed is None else "PASS" if passed else "FAIL"


def target_text(targets: list[dict[str, Any]]) -> list[str]:
    """One line per target for a text report."""
    return [f"{verdict(t['passed']):<4}  {t['target']}  ({t['value']})" for t in targets]


def target_lines(targets: list[dict[str, Any]]) -> list[str]:
    """The PASS/FAIL table of a result's targets, as Markdown lines."""
    lines = ["| target | measured | result |", "|---|---|---|"]
    return lines + [f"| {t['target']} | {t['value']} | {verdict(t['passed'])} |" for t in targets]


def profile_text(functions: list[dict[str, Any]], *, cumulative: bool = False) -> list[str]:
    """cProfile rows for a text report: by own time, or by cumulative time."""
    if cumulative:
        return [f"  {r['cumulative_share']:6.1%} cum {r['cumulative_s']:6.3f} s  own {r['own_s']:6.3f} s  "
                f"{r['calls']:>9,} calls  {r['function']}" for r in functions]
    return [f"  {r['own_share']:6.1%} own {r['own_s']:6.3f} s  cum {r['cumulative_s']:6.3f} s  "
            f"{r['calls']:>9,} calls  {r['function']}" for r in functions]


def profile_lines(functions: list[dict[str, Any]]) -> list[str]:
    """The top functions of a cProfile run, as Markdown table lines."""
    lines = ["| own share | own (s) | cumulative (s) | calls | function |", "|---:|---:|---:|---:|---|"]
    return lines + [f"| {r['own_share']:.1%} | {r['own_s']:.3f} | {r['cumulative_s']:.3f} | {r['calls']:,} "
                    f"| `{r['function']}` |" for r in functions[:10]]


# ----------------------------------------------------------------------------------------
# The S3 server with a seeding route (bench/s3.py, bench/s3_scale.py)

SEED_ROUTE = "/_bench/seed"
ROOT = Path(__file__).resolve().parents[1]


def serve_seeded_s3(port: int) -> None:
    """moto's S3 server on 127.0.0.1:port with the seeding route `POST /_bench/seed`; runs until
    killed. Every measured request goes through the S3 API; the route only makes the set-up
    affordable (moto answers about 150 PUTs a second)."""
    import logging

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    from moto.s3.models import s3_backends
    from werkzeug.serving import run_simple

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    app = DomainDispatcherApplication(create_backend_app)

    def seed(request: dict[str, Any]) -> int:
        """Put objects: the files of a local folder (`root`, `prefix`, and `files`: paths
        relative to root, all files below root when absent), or `count` objects of 4 bytes named
        `prefix/NNNN/NNNNNNN.parquet`, `per_folder` a folder (`synthetic`)."""
        backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
        prefix = request["prefix"].rstrip("/")
        if request.get("synthetic"):
            per_folder = int(request["per_folder"])
            for n in range(int(request["count"])):
                backend.put_object(request["bucket"], f"{prefix}/{n // per_folder:04d}/{n:07d}.parquet", BASE_BYTES)
            return int(request["count"])
        root = request["root"]
        files = request.get("files")
        if files is None:
            files = [os.path.relpath(os.path.join(d, n), root) for d, _, names in os.walk(root) for n in names]
        for relative in files:
            with open(os.path.join(root, relative), "rb") as handle:
                backend.put_object(request["bucket"], f"{prefix}/{relative}", handle.read())
        return len(files)

    def bench_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != SEED_ROUTE:
            return app(environ, start_response)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        count = seed(json.loads(body))
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps({"seeded": count}).encode()]

    run_simple("127.0.0.1", port, bench_app, threaded=True)


class SeededS3Server(S3Server):
    """tests/helpers.py's server (start-up, environment, request recording, shutdown) running
    `serve_seeded_s3` in a child process; `seed` and `seed_synthetic` load objects through the
    seeding route."""

    def command(self, port: int) -> list[str]:
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from bench.common import serve_seeded_s3; "
                f"serve_seeded_s3({port})")
        return [sys.executable, "-c", code]

    def _seed(self, request: dict[str, Any]) -> int:
        body = json.dumps(request).encode()
        call = urllib.request.Request(f"{self.endpoint}{SEED_ROUTE}", data=body, method="POST")
        with urllib.request.urlopen(call, timeout=3600) as response:
            return int(json.loads(response.read())["seeded"])

    def seed(self, root: str, prefix: str, files: Sequence[str] | None = None, *, bucket: str) -> int:
        return self._seed({"bucket": bucket, "root": root, "prefix": prefix,
                           "files": None if files is None else list(files)})

    def seed_synthetic(self, bucket: str, prefix: str, count: int, per_folder: int) -> int:
        return self._seed({"bucket": bucket, "prefix": prefix, "synthetic": True, "count": count,
                           "per_folder": per_folder})
