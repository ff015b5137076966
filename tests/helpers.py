"""Helpers of the tests at every level (fixtures are in conftest.py; a helper only one level
uses is in that level's helpers.py). Needs no pytest: bench/ starts the same servers.

- The fixture tables of ../shared: where they are, unzipping one, proving a tree unchanged.
- Hand-made Hudi tables (`Lake`): a table created with the library's `create_table`, then
  instant files with real content (v6 JSON or v8 Avro) and data files written into any Storage.
- hudi-rs, the independent reader the tests compare with.
- Memory measured as the growth of this process's peak resident set.
- Servers on 127.0.0.1 (started by conftest.py's fixtures): the S3-protocol server (`S3Server`,
  and what the S3 tests read back through it) and a Spark standalone cluster
  (`StandaloneCluster`). ZooKeeper, used by the lock tests only, is in tests/locks/helpers.py.
"""

from __future__ import annotations

import base64
import functools
import gc
import io
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import hudi
import pyarrow as pa
import pyarrow.parquet as pq

from timeline import HudiTable, metadata
from timeline.files import base_file_name, log_file_name
from timeline.instant import COMPACTION, Instant, State
from timeline.spark.writer.create import create_table
from timeline.storage import Storage

# ----------------------------------------------------------------------------------------------
# The fixture tables of ../shared, and proving a tree unchanged

ROOT = Path(__file__).resolve().parents[1]
# The fixture tables beside the checkout (CLEANLINE_FIXTURES elsewhere: scripts/mutations.py runs
# the tests in a copy of the tree).
FIXTURES = Path(os.environ.get("CLEANLINE_FIXTURES")
               or ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables").resolve()


def fixture_id(archive: Path) -> str:
    return str(archive.relative_to(FIXTURES).with_suffix(""))


def unzip_table(archive: Path, dest: Path) -> Path:
    """Unpack one fixture zip (skipping macOS metadata) and return the table's base path."""
    with zipfile.ZipFile(archive) as zipped:
        members = [m for m in zipped.namelist() if not m.startswith("__MACOSX/")]
        zipped.extractall(dest, members)
    return dest / archive.stem


def fixture_readme() -> dict[str, dict[str, str]]:
    """The fixture README's table, an independent description of every zip: id -> columns."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in (FIXTURES / "README.md").read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "zip":
            header = cells
        elif header and line.startswith("| `"):
            rows[cells[0].removesuffix(".zip")] = dict(zip(header, cells))
    return rows


def tree_snapshot(path: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime ns) of every file below `path`, to prove nothing changed."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*")) if p.is_file()
    }


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


FIXTURE_ZIPS = sorted(FIXTURES.rglob("*.zip"))  # none: conftest.py stops the run, naming FIXTURES
FIXTURE_IDS = [fixture_id(z) for z in FIXTURE_ZIPS]


class Intervals(logging.Handler):
    """Cleanline's side of the lock's log: who held it, from when to when (and since when it waited)."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        with self.log.open("a") as out:
            out.write(json.dumps({"holder": record.holder, "acquired": record.acquired,  # type: ignore[attr-defined]
                                  "requested": getattr(record, "requested", record.acquired),  # type: ignore[attr-defined]
                                  "released": record.released}) + "\n")  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------------------
# Hand-made Hudi tables: `create_table`, then instant files with real content (v6 JSON or v8
# Avro) and data files, into any Storage

TOKEN = "0-1-0"


@dataclass
class Lake:
    """A table under construction. Times are strings like "20261101000000000"."""

    storage: Storage
    base: str
    version: int = 6
    table_type: str = "COPY_ON_WRITE"
    partitioned: bool = True
    extra_props: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        props = {
            "hoodie.table.name": "lake", "hoodie.database.name": "default",
            "hoodie.table.type": self.table_type, "hoodie.table.version": str(self.version),
            "hoodie.timeline.layout.version": "2" if self.version >= 8 else "1",
            "hoodie.table.partition.fields": "city" if self.partitioned else "",
            **self.extra_props,
        }
        create_table(self.storage, self.base, props, comments=["Updated by tests"])

    @property
    def layout(self) -> int:
        return 2 if self.version >= 8 else 1

    @property
    def timeline_folder(self) -> str:
        return f"{self.base}/.hoodie/timeline" if self.layout == 2 else f"{self.base}/.hoodie"

    def partition_path(self, partition: str) -> str:
        return f"{self.base}/{partition}" if partition else self.base

    def _ensure_partition(self, partition: str) -> None:
        marker = f"{self.partition_path(partition)}/.hoodie_partition_metadata"
        if not self.storage.exists(marker):
            self.storage.write(marker, b"#partition metadata\ncommitTime=0\npartitionDepth=1\n")

    def data_file(self, partition: str, name: str, size: int = 100) -> str:
        self._ensure_partition(partition)
        path = f"{self.partition_path(partition)}/{name}"
        self.storage.write(path, b"x" * size)
        return name

    def base_file(self, partition: str, file_id: str, instant: str, size: int = 100) -> str:
        return self.data_file(partition, base_file_name(file_id, TOKEN, instant), size)

    def log_file(self, partition: str, file_id: str, instant: str, version: int = 1, size: int = 10) -> str:
        return self.data_file(partition, log_file_name(file_id, instant, version, TOKEN), size)

    def instant_file(self, instant: Instant, content: Mapping | None = None) -> None:
        data = b"" if content is None else metadata.encode(
            content, action=instant.action, state=instant.state, layout=self.layout)
        self.storage.write(f"{self.timeline_folder}/{instant.file_name(self.layout)}", data)

    def commit(self, time: str, files: Mapping[str, Sequence[str]] | None = None, *,
               action: str | None = None, state: State = State.COMPLETED, completion: str | None = None,
               replaced: Mapping[str, Sequence[str]] | None = None, operation: str = "UPSERT") -> Instant:
        """Write a write instant's state files up to `state`; `files` maps partitions to the
        data file names it wrote (already created with `base_file`/`log_file`)."""
        action = action or ("deltacommit" if self.table_type == "MERGE_ON_READ" else "commit")
        if replaced is not None:
            action = "replacecommit"
        done = Instant(time, action, State.COMPLETED, completion or (time[:-3] + "999" if self.layout == 2 else None))
        for step in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            if step > state:
                break
            content = None
            if step is State.COMPLETED:
                content = self.commit_metadata(files or {}, replaced, operation, time=time)
            elif step is State.REQUESTED and action == "replacecommit":
                content = {"operationType": "INSERT_OVERWRITE"}
            self.instant_file(done.at(step, done.completion_time) if step is State.COMPLETED
                              else Instant(time, action, step), content)
        return done if state is State.COMPLETED else Instant(time, action, state)

    def commit_metadata(self, files: Mapping[str, Sequence[str]], replaced: Mapping[str, Sequence[str]] | None,
                        operation: str, *, time: str = "") -> dict:
        stats = {
            partition: [{"fileId": name.lstrip(".").split("_")[0], "path": f"{partition}/{name}" if partition else name,
                         "prevCommit": self._previous(partition, name.lstrip(".").split("_")[0], time),
                         "numWrites": 1, "partitionPath": partition, "totalWriteBytes": 100, "fileSizeInBytes": 100}
                        for name in names]
            for partition, names in files.items()
        }
        content: dict = {"partitionToWriteStats": stats, "compacted": False, "extraMetadata": {},
                         "operationType": operation}
        if replaced is not None:
            content["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in replaced.items()}
        return content

    def _previous(self, partition: str, file_id: str, time: str) -> str:
        """A write stat's prevCommit: the newest earlier base or log instant of the file group
        ("null" for a new file group), as Hudi records an update."""
        folder = self.partition_path(partition)
        earlier = []
        for status in self.storage.list(folder) if self.storage.exists(folder) else ():
            name = status.name
            stem = name.lstrip(".")
            if not stem.startswith(file_id + "_"):
                continue
            instant = (stem.split("_")[1].split(".log.")[0] if name.startswith(".")
                       else stem.rsplit("_", 1)[-1].split(".")[0])
            if instant < time:
                earlier.append(instant)
        return max(earlier) if earlier else "null"

    def schedule_compaction(self, time: str, operations: Sequence[tuple[str, str, str]],
                            state: State = State.REQUESTED) -> Instant:
        """A pending compaction plan over (partition, file id, base instant) triples."""
        plan = {"operations": [{"baseInstantTime": b, "fileId": f, "partitionPath": p,
                                "deltaFilePaths": [], "dataFilePath": None} for p, f, b in operations],
                "version": 2}
        self.instant_file(Instant(time, COMPACTION, State.REQUESTED), plan)
        if state is State.INFLIGHT:
            self.instant_file(Instant(time, COMPACTION, State.INFLIGHT))
        return Instant(time, COMPACTION, state)

    def complete_compaction(self, time: str, files: Mapping[str, Sequence[str]],
                            completion: str | None = None) -> Instant:
        done = Instant(time, "commit", State.COMPLETED, completion or (time[:-3] + "999" if self.layout == 2 else None))
        content = self.commit_metadata(files, None, "COMPACT")
        content["compacted"] = True
        self.instant_file(done, content)
        return done

    def savepoint(self, time: str, files: Mapping[str, Sequence[str]]) -> Instant:
        """A completed savepoint of `time` holding the given file names per partition."""
        content = {"savepointedBy": "tests", "savepointedAt": 0, "comments": "",
                   "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": list(names)}
                                         for p, names in files.items()}, "version": 1}
        self.instant_file(Instant(time, "savepoint", State.INFLIGHT))
        done = Instant(time, "savepoint", State.COMPLETED, time[:-3] + "998" if self.layout == 2 else None)
        self.instant_file(done, content)
        return done

    def clean(self, time: str, earliest_retained: str, *, savepointed: Sequence[str] = (),
              deleted: Mapping[str, Sequence[str]] | None = None) -> Instant:
        """A completed clean whose metadata records `earliest_retained` (and, as Hudi 1.x
        does, the savepoints that existed when it was planned) and reports `deleted` (partition
        -> file names or paths, as written in successDeleteFiles) deleted; they are deleted."""
        extra = {"savepointed_timestamps": ",".join(savepointed)} if savepointed else None
        plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
                "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
                "partitionsToBeDeleted": [], "extraMetadata": extra}
        self.instant_file(Instant(time, "clean", State.REQUESTED), plan)
        self.instant_file(Instant(time, "clean", State.INFLIGHT), plan)
        done = Instant(time, "clean", State.COMPLETED, time[:-3] + "997" if self.layout == 2 else None)
        self.instant_file(done, {"startCleanTime": time, "timeTakenInMillis": 1, "totalFilesDeleted": 0,
                                 "earliestCommitToRetain": earliest_retained, "lastCompletedCommitTimestamp": "",
                                 "partitionMetadata": {
                                     p: {"partitionPath": p, "policy": "KEEP_LATEST_COMMITS",
                                         "deletePathPatterns": list(names), "successDeleteFiles": list(names),
                                         "failedDeleteFiles": []}
                                     for p, names in (deleted or {}).items()},
                                 "version": 2, "extraMetadata": extra})
        for partition, names in (deleted or {}).items():
            for name in names:
                path = name if name.startswith(self.base + "/") else f"{self.partition_path(partition)}/{name}"
                if self.storage.exists(path):
                    self.storage.delete(path)
        return done


def huge_commit(timeline_folder: str, time_: str, partitions: Sequence[str], *, size: int) -> tuple[str, int]:
    """A completed v6 commit (with its requested and inflight files) of at least `size` bytes,
    written as Hudi's Jackson pretty printer writes commit metadata: write stats of files dealt
    round `partitions`, each with its runtime stats, then `extraMetadata` and `operationType`.
    Stat i (of file id `huge_file_id(i)`) writes i + 1 records and 1,000 + i bytes; partition p
    holds stats p, p + len(partitions), ... Returns the completed file's path and the count of stats."""
    fields = ['"fileId" : "{file_id}"', '"path" : "{partition}/{file_id}_0-1-0_{time}.parquet"', '"cdcStats" : null',
              '"prevCommit" : "null"', '"numWrites" : {writes}', '"numDeletes" : 0', '"numUpdateWrites" : 0',
              '"numInserts" : {writes}', '"totalWriteBytes" : {bytes}', '"totalWriteErrors" : 0', '"tempPath" : null',
              '"partitionPath" : "{partition}"', '"totalLogRecords" : 0', '"totalLogFilesCompacted" : 0',
              '"totalLogSizeCompacted" : 0', '"totalUpdatedRecordsCompacted" : 0', '"totalLogBlocks" : 0',
              '"totalCorruptLogBlock" : 0', '"totalRollbackBlocks" : 0', '"fileSizeInBytes" : {bytes}',
              '"minEventTime" : null', '"maxEventTime" : null']
    runtime = '"runtimeStats" : {{\n        "totalScanTime" : 0,\n        "totalUpsertTime" : 0,\n        ' \
              '"totalCreateTime" : 90\n      }}'
    stat = "{{\n      " + ",\n      ".join([*fields, runtime]) + "\n    }}"
    per_stat = len(stat.format(file_id="00000000-0000-0000-0000-000000000000-0", partition=partitions[0], time=time_,
                               writes=1, bytes=1000))
    count = -(-size // per_stat)
    path = f"{timeline_folder}/{time_}.commit"
    with open(path, "w", encoding="utf-8") as out:  # noqa: PTH123 - a test fixture's file, written in pieces
        out.write('{\n  "partitionToWriteStats" : {\n')
        for p, partition in enumerate(partitions):
            indices = range(p, count, len(partitions))
            out.write(f'    "{partition}" : [ ')
            for k, i in enumerate(indices):  # one stat at a time: the test process holds none of it
                out.write((", " if k else "") + stat.format(file_id=huge_file_id(i), partition=partition, time=time_,
                                                            writes=i + 1, bytes=1000 + i))
            out.write(" ]" + (",\n" if p < len(partitions) - 1 else "\n"))
        out.write('  },\n  "compacted" : false,\n  "extraMetadata" : {\n    "schema" : ""\n  },\n'
                  '  "operationType" : "INSERT"\n}')
    for name in (f"{time_}.commit.requested", f"{time_}.inflight"):
        with open(os.path.join(timeline_folder, name), "wb"):  # noqa: PTH118, PTH123
            pass
    return path, count


def huge_file_id(i: int) -> str:
    """The file id of `huge_commit`'s stat i."""
    return f"{i:08x}-0000-0000-0000-000000000000-0"


def fake_failed_write(path: Path, time: str, *, markers: bool) -> list[Path]:
    """A write that died: requested + inflight instant files, copies of real base files named
    for `time`, and (optionally) direct markers for them."""
    table = HudiTable.open(str(path))
    folder = Path(table.timeline.folder)
    (folder / f"{time}.commit.requested").write_bytes(b"")
    (folder / f"{time}.inflight").write_bytes(b"")
    written = []
    for piece in table.file_system_view().latest_slices()[:2]:
        assert piece.base_file is not None
        partition = path / piece.partition if piece.partition else path
        name = f"{piece.file_id}_9-9-9_{time}.parquet"
        shutil.copy(partition / piece.base_file.name, partition / name)
        written.append(partition / name)
        if markers:
            marker = path / ".hoodie" / ".temp" / time / piece.partition / f"{name}.marker.MERGE"
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_bytes(b"")
    return written


T = [f"2026110100{i:02d}00000" for i in range(20)]


def rewrite_history(lake: Lake, times: list[str], partition: str = "city=sf", file_id: str = "fg1") -> list[str]:
    """A COW file group rewritten by every commit in `times`."""
    names = []
    for t in times:
        names.append(lake.base_file(partition, file_id, t))
        lake.commit(t, {partition: [names[-1]]})
    return names


# A table beside a folder it must never touch: hostile plans run against it in
# tests/storage/test_containment.py and tests/test_hardening.py.

GUARDED_TIMES = [f"2026110100{i:02d}00000" for i in range(20)]
GUARDED_PARTITION = "city=sf"


def guarded_lake(root: Path, version: int) -> Lake:
    """A local table at `root`/lake with five commits rewriting one file group, beside a folder
    `elsewhere` holding files that must survive."""
    from timeline.storage.arrow import LocalStorage

    (root / "elsewhere" / "dir").mkdir(parents=True)
    (root / "elsewhere" / "victim.txt").write_bytes(b"keep me")
    (root / "elsewhere" / "dir" / "inner.txt").write_bytes(b"keep me too")
    lake = Lake(LocalStorage(), str(root / "lake"), version=version)
    for t in GUARDED_TIMES[:5]:
        lake.commit(t, {GUARDED_PARTITION: [lake.base_file(GUARDED_PARTITION, "fg1", t)]})
    return lake


def elsewhere(lake: Lake) -> list[Path]:
    """The files beside a `guarded_lake` that must survive."""
    root = Path(lake.base).parent / "elsewhere"
    return [root / "victim.txt", root / "dir" / "inner.txt"]


def table_files(lake: Lake) -> set[str]:
    """The table's data files (its .hoodie folder aside)."""
    return {str(p) for p in Path(lake.base).rglob("*") if p.is_file() and ".hoodie" not in p.parts}


def own_file(lake: Lake, t: str) -> str:
    """The `guarded_lake`'s base file written at `t`, as a plan names it."""
    return f"file:{lake.base}/{GUARDED_PARTITION}/fg1_0-1-0_{t}.parquet"


# ----------------------------------------------------------------------------------------------
# hudi-rs, the independent reader the tests compare with

def hudi_read(path: Path | str, as_of: str | None = None) -> pa.Table | None:
    """What hudi-rs reads from the table now, or as of an instant; None for no rows."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(str(path)).read(options)
    return pa.Table.from_batches(batches) if batches else None


def rows(path: Path, as_of: str | None = None) -> list[tuple]:
    """Every row hudi-rs reads (all columns but the file name), sorted."""
    table = hudi_read(path, as_of)
    if table is None:
        return []
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


def retained_files(table: HudiTable, since: str) -> list[Path]:
    """Every data file written by a completed write at or after `since`."""
    found = []
    for instant in table.timeline.writes().completed():
        if instant.requested_time >= since:
            for stats in ((table.read_instant(instant) or {}).get("partitionToWriteStats") or {}).values():
                found += [Path(table.base) / s["path"] for s in stats or () if s.get("path")]
    return found


Slice = tuple[str, str, str, str | None, tuple[str, ...]]


def ours(table: HudiTable, as_of: str | None = None, *, sizes: bool = True) -> list[Slice]:
    view = table.file_system_view(as_of=as_of, sizes=sizes)
    return sorted(
        (s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
         tuple(log.name for log in s.log_files))
        for s in view.latest_slices()
    )


def theirs(path: Path, as_of: str | None = None) -> list[Slice]:
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    return sorted(
        (s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name or None,
         tuple(s.log_file_names))
        for s in hudi.HudiTable(str(path)).get_file_slices(options)
    )


def hudi_rs_records(mdt: Path, folder: Path, name: str, data: bytes) -> list[dict[str, Any]]:
    """hudi-rs's records of an HFile, read as a base file of the metadata table."""
    scratch = folder / f"{folder.name}-9999-0_0-0-0_99999999999999999.hfile"
    target = folder / name if name.endswith(".hfile") else scratch
    if not target.exists():
        target.write_bytes(data)
    try:
        batch = hudi.HudiFileGroupReader(str(mdt)).read_file_slice_from_paths(str(target.relative_to(mdt)), [])
        return sorted(batch.to_pylist(), key=lambda r: r["key"])
    finally:
        if target.name.endswith("99999999999999999.hfile"):
            target.unlink()


# ----------------------------------------------------------------------------------------------
# Memory: the growth of this process's peak resident set (VmHWM of /proc/self/status, reset
# through /proc/self/clear_refs): what a call adds above what the process held before it

Result = TypeVar("Result")


def _status_kib(name: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{name}:"))


def peak_growth(work: Callable[[], Result]) -> tuple[Result, int]:
    """What `work` returns, and how many bytes its run added to this process's peak resident set."""
    gc.collect()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")  # the peak (VmHWM) starts again from the current resident set
    result = work()
    return result, (_status_kib("VmHWM") - before) * 1024


# ----------------------------------------------------------------------------------------------
# Servers on 127.0.0.1: a free port, stopping a server's process

def free_port() -> int:
    """A port free on 127.0.0.1 now (a server bound to it later may still lose it: start again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any] | None) -> None:
    """Stop a test server's process: terminate, then kill after 10 s."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# ----------------------------------------------------------------------------------------------
# The S3-protocol server: `moto_server` (moto[server]) in its own process, on a free port.
# `S3Server.start()` waits until it answers; `env` holds the variables that point the library,
# boto3, hudi-rs and any subprocess at it (`AWS_ENDPOINT_URL`, test credentials, region).
# `command(port)` is the server's command line: bench/s3.py overrides it to serve moto's
# application with a seeding route of its own, and so shares the start-up, the environment and
# the shutdown. `upload(folder, bucket)` copies a local table into a fresh bucket and returns its
# `s3://` URI. `recording()` counts what the server received (moto's own request recorder), so a
# test can assert how many requests an operation took without wrapping the client it tests.

REGION = "us-east-1"
# Credentials the server accepts (moto checks none); never real ones.
ACCESS_KEY = "cleanline-test-key"
SECRET_KEY = "cleanline-test-secret"

# Outside an S3 test nothing may reach a cloud endpoint: the endpoint points at a closed local
# port, the instance-metadata lookup is off and no profile or credentials file is read.
OFFLINE_ENV = {
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_REGION": REGION,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
CLEARED_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3",
               "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
               "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


def offline_aws_environment() -> None:
    """Point every AWS client of this process (and its subprocesses) away from the cloud."""
    for name in CLEARED_ENV:
        os.environ.pop(name, None)
    os.environ.update(OFFLINE_ENV)


def moto_server_command() -> str:
    found = Path(sys.executable).with_name("moto_server")
    if found.exists():
        return str(found)
    which = shutil.which("moto_server")
    if which is None:
        raise RuntimeError("moto_server not found: install the test extra (pip install -e '.[test]')")
    return which


@dataclass
class S3Server:
    """One `moto_server` process on 127.0.0.1."""

    workdir: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    _client: Any = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """What points AWS clients at this server."""
        return {**OFFLINE_ENV, "AWS_ENDPOINT_URL": self.endpoint}

    @property
    def hudi_options(self) -> dict[str, str]:
        """The same for hudi-rs (object_store's option names)."""
        return {"aws_endpoint_url": self.endpoint, "aws_allow_http": "true", "aws_access_key_id": ACCESS_KEY,
                "aws_secret_access_key": SECRET_KEY, "aws_region": REGION}

    def command(self, port: int) -> list[str]:
        """The server's command line, listening on 127.0.0.1:`port`."""
        return [moto_server_command(), "-H", "127.0.0.1", "-p", str(port)]

    def start(self, *, attempts: int = 5) -> S3Server:
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = open(self.workdir / "moto_server.log", "ab")  # noqa: SIM115 - closed with the process
        for _ in range(attempts):
            self.port = free_port()
            env = {**os.environ, "MOTO_RECORDER_FILEPATH": str(self.workdir / "requests.jsonl")}
            self.process = subprocess.Popen(self.command(self.port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            cwd=self.workdir)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):
                        log.close()
                        return self
                except OSError:
                    time.sleep(0.1)
            self.stop()  # the port was taken between the probe and the bind, or it hung: again
        log.close()
        raise RuntimeError(f"the S3 server did not start; see {self.workdir / 'moto_server.log'}")

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None

    def client(self) -> Any:
        """A boto3 S3 client for test set-up (never the client under test)."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                                        config=Config(max_pool_connections=32))
        return self._client

    def new_bucket(self, prefix: str = "lake") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def upload(self, folder: Path, bucket: str | None = None, *, key_prefix: str | None = None) -> str:
        """Copy every file below `folder` to `s3://bucket/<key_prefix or folder name>/...`
        (a fresh bucket unless given) and return that URI."""
        bucket = bucket or self.new_bucket()
        prefix = key_prefix if key_prefix is not None else folder.name
        files = [p for p in folder.rglob("*") if p.is_file()]
        client = self.client()

        def put(path: Path) -> None:
            client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(folder).as_posix()}",
                              Body=path.read_bytes())

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(put, files))
        return f"s3://{bucket}/{prefix}"

    def keys(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Key -> size of every object under a prefix."""
        found: dict[str, int] = {}
        for page in self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            found.update({o["Key"]: o["Size"] for o in page.get("Contents", ())})
        return found

    def put_many(self, bucket: str, keys: list[str], body: bytes = b"x", *, threads: int = 32) -> None:
        client = self.client()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=body), keys))

    def _moto_api(self, path: str, *, post: bool = False) -> bytes:
        request = urllib.request.Request(f"{self.endpoint}/moto-api/{path}", method="POST" if post else "GET",
                                         data=b"" if post else None)
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())

    @contextmanager
    def recording(self) -> Iterator[list[dict[str, Any]]]:
        """The requests the server receives inside the block (moto's recorder), each as
        {"method", "url", "body"} with the body decoded, filled in when the block ends."""
        requests: list[dict[str, Any]] = []
        self._moto_api("recorder/reset-recording", post=True)
        self._moto_api("recorder/start-recording", post=True)
        try:
            yield requests
        finally:
            self._moto_api("recorder/stop-recording", post=True)
            # moto's recorder appends each request and its newline in two writes from the
            # server's threads: requests answered at once can share a line
            text, decoder, pos = self._moto_api("recorder/download-recording").decode(), json.JSONDecoder(), 0
            while True:
                while pos < len(text) and text[pos].isspace():
                    pos += 1
                if pos == len(text):
                    break
                entry, pos = decoder.raw_decode(text, pos)
                body = entry.get("body") or ""
                entry["body"] = base64.b64decode(body) if entry.get("body_encoded") else body.encode()
                requests.append(entry)


V9_MOR = "sample_table/mor/avro/v9_txns_simple_nometa"         # logs, compaction, clustering


def bucket_and_prefix(uri: str) -> tuple[str, str]:
    """The bucket and key prefix of an `s3://bucket/prefix` URI."""
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


def s3_rows(server: S3Server, uri: str, as_of: str | None = None) -> list[tuple[Any, ...]]:
    """Every row hudi-rs reads from the S3 table (all columns but the file name), sorted."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(uri, server.hudi_options).read(options)
    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


def data_keys(server: S3Server, uri: str) -> set[str]:
    """Table-relative keys of every object outside `.hoodie/`."""
    bucket, prefix = bucket_and_prefix(uri)
    return {k[len(prefix) + 1:] for k in server.keys(bucket, prefix + "/") if "/.hoodie/" not in f"/{k}"}


def signers(requests: list[dict[str, Any]]) -> set[str]:
    """The access key ids recorded requests were signed with ("unsigned" for none)."""
    found = (re.search(r"Credential=([^/]+)/", r["headers"].get("Authorization", "")) for r in requests)
    return {m.group(1) if m else "unsigned" for m in found}


# ----------------------------------------------------------------------------------------------
# A Spark standalone cluster: a master and two workers of one core each, started with the
# `pyspark` package's own launcher (`spark-class ...deploy.master.Master` / `...deploy.worker.Worker`).
# Executors run this environment's Python (`PYSPARK_PYTHON`)

def spark_home() -> Path:
    """The `pyspark` package's folder, a Spark distribution with its launcher (`bin/spark-class`)."""
    import pyspark

    return Path(pyspark.__file__).parent


def cluster_env(work: Path) -> dict[str, str]:
    """What the cluster's daemons and a driver need: this venv's Python for executors, loopback only."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(work / "logs"), "SPARK_WORKER_DIR": str(work / "work"),
            "SPARK_NO_DAEMONIZE": "1"}


@dataclass
class StandaloneCluster:
    """A master and `workers` workers of one core each on 127.0.0.1, each daemon in its own
    process group, stopped (and their executors with them) by `stop`."""

    work: Path
    workers: int = 2
    master_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def env(self) -> dict[str, str]:
        return cluster_env(self.work)

    def _daemon(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = open(self.work / f"{name}.log", "wb")  # noqa: SIM115 (kept open for the daemon's life)
        process = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        self.processes.append(process)
        return process

    def state(self) -> dict[str, object]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
            found: dict[str, object] = json.loads(response.read())
            return found

    def start(self) -> StandaloneCluster:
        self.work.mkdir(parents=True, exist_ok=True)
        self._daemon("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.master_port), "--webui-port", str(self.ui_port))
        for n in range(self.workers):
            self._daemon(f"worker{n}", "org.apache.spark.deploy.worker.Worker", self.url, "--cores", "1",
                         "--memory", "1g", "--host", "127.0.0.1", "--webui-port", str(free_port()),
                         "--work-dir", str(self.work / f"worker{n}"))
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.state().get("aliveworkers") == self.workers:
                    return self
            except (OSError, ValueError):  # not up yet, or another process's page on a port taken meanwhile
                pass
            if time.monotonic() > deadline:
                self.stop()
                logs = "\n".join((self.work / f"{p}.log").read_text(errors="replace")[-2000:]
                                 for p in ("master", "worker0"))
                raise RuntimeError(f"the Spark standalone cluster did not start within 120 s:\n{logs}")
            time.sleep(0.5)

    def executor_pids(self) -> list[int]:
        """The executor JVMs the workers launched (children of the worker JVMs)."""
        pids = []
        for worker in self.processes[1:]:
            found = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True)
            pids += [int(p) for p in found.stdout.split()]
        return pids

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        for pid in self.executor_pids():
            os.kill(pid, signal.SIGKILL)


def archive_instants(storage: Storage, timeline_folder: str, instants: list[tuple[str, str, str]]) -> None:
    """Move (requested, completion, action) instants of a v8+ timeline to its LSM history as
    Hudi's archiver does: their rows in a Parquet file named by a new manifest, their state
    files gone from the active timeline."""
    rows = pa.table({"instantTime": [r[0] for r in instants], "completionTime": [r[1] for r in instants],
                     "action": [r[2] for r in instants], "metadata": [b""] * len(instants),
                     "plan": [None] * len(instants), "version": [1] * len(instants)})
    sink = io.BytesIO()
    pq.write_table(rows, sink)
    history = f"{timeline_folder}/history"
    name = f"{instants[0][0]}_{instants[-1][0]}_0.parquet"
    storage.write(f"{history}/{name}", sink.getvalue())
    storage.write(f"{history}/manifest_1", json.dumps({"files": [{"fileName": name, "fileLen": 1}]}).encode(),
                  overwrite=True)
    storage.write(f"{history}/_version_", b"1", overwrite=True)
    times = {r[0] for r in instants}
    for status in list(storage.list(timeline_folder)):
        if not status.is_dir and status.name[:17] in times:
            storage.delete(status.path)


# ----------------------------------------------------------------------------------------
# `make test` on several processes (tests/conftest.py `pytest_xdist_make_scheduler`)

SHARED_GROUPS = {"demo_lake": "demo-lake", "spark_cluster": "spark-cluster"}


def xdist_unit(nodeid: str) -> str:
    """The unit a process runs whole: the test's file, or the group of the session fixture it uses."""
    return _file_group(nodeid.split("::", 1)[0])


@functools.cache
def _file_group(file: str) -> str:
    path = ROOT / file
    source = path.read_text(errors="replace") if path.is_file() else ""
    return next((group for fixture, group in SHARED_GROUPS.items() if fixture in source), file)
