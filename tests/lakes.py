"""Hand-made Hudi tables for tests: a builder that creates a table with the library's
`create_table` (its `.hoodie` folders and `hoodie.properties`), then writes instant files with
real content (v6 JSON or v8 Avro) and data files into any Storage."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from timeline import HudiTable, metadata
from timeline.files import base_file_name, log_file_name
from timeline.instant import COMPACTION, Instant, State
from timeline.spark.writer.create import create_table
from timeline.storage import Storage

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

    def clean(self, time: str, earliest_retained: str, *, savepointed: Sequence[str] = ()) -> Instant:
        """A completed clean whose metadata records `earliest_retained` (and, as Hudi 1.x
        does, the savepoints that existed when it was planned)."""
        extra = {"savepointed_timestamps": ",".join(savepointed)} if savepointed else None
        plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
                "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
                "partitionsToBeDeleted": [], "extraMetadata": extra}
        self.instant_file(Instant(time, "clean", State.REQUESTED), plan)
        self.instant_file(Instant(time, "clean", State.INFLIGHT), plan)
        done = Instant(time, "clean", State.COMPLETED, time[:-3] + "997" if self.layout == 2 else None)
        self.instant_file(done, {"startCleanTime": time, "timeTakenInMillis": 1, "totalFilesDeleted": 0,
                                 "earliestCommitToRetain": earliest_retained, "lastCompletedCommitTimestamp": "",
                                 "partitionMetadata": {}, "version": 2, "extraMetadata": extra})
        return done


def huge_commit(timeline_folder: str, time_: str, partitions: Sequence[str], *, size: int) -> tuple[str, int]:
    """A completed v6 commit (with its requested and inflight files) of at least `size` bytes,
    written as Hudi's Jackson pretty printer writes commit metadata: write stats of files dealt
    round `partitions`, each with its runtime stats, then `extraMetadata` and `operationType`.
    Stat i (of file id `huge_file_id(i)`) writes i + 1 records and 1,000 + i bytes; partition p
    holds stats p, p + len(partitions), ... Returns the completed file's path and the count of stats."""
    import os

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
