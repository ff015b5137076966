"""Helpers of the doctor's tests: ageing a table's files (the doctor leaves young files alone),
damaging copies of real tables as the cited Hudi issues describe, and the doctor's round trip
(diagnose, plan, run, diagnose again)."""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers import rows
from timeline import HudiTable, metadata
from timeline.doctor import DoctorSettings, Finding, RepairPlan, RepairResult, diagnose, plan_repair, run_repair
from timeline.instant import COMPACTION, Instant, State
from timeline.metadata.records import CleanMetadata
from timeline.storage import FileStatus
from timeline.storage.arrow import LocalStorage

DAY = 86_400
# Later than every fixture's instants, weeks before the tests run: stale, and older than the
# doctor's horizon once the files are aged.
OLD = "20261101000000000"


def age_tree(path: Path, days: float = 10) -> None:
    """Set every file and folder below `path` (and `path`) to `days` ago."""
    moment = time.time() - days * DAY
    for item in [path, *path.rglob("*")]:
        os.utime(item, (moment, moment), follow_symlinks=False)


LATEST = "latest"  # the key of the snapshot read (no as-of) in `reads`


def _read(path: Path, as_of: str | None) -> list[tuple] | None:
    """The rows hudi-rs reads, or None when it cannot (a damaged table may stop old instants
    reading, as the file a half-applied clean deleted does)."""
    try:
        return rows(path, as_of)
    except Exception:  # noqa: BLE001 (hudi-rs raises its own errors)
        return None


def completed_writes(path: Path) -> list[str]:
    """Every completed write (commit, delta commit, replace commit, compaction) on the active timeline."""
    return [i.requested_time for i in HudiTable.open(str(path)).timeline.writes().completed()]


def reads(path: Path, *, since: str | None = None) -> dict[str, list[tuple] | None]:
    """What hudi-rs reads as of every completed write on the active timeline (from `since`, when
    only those are retained afterwards) and of the latest snapshot (key LATEST)."""
    times = [t for t in completed_writes(path) if since is None or t >= since]
    return {t: _read(path, t) for t in times} | {LATEST: _read(path, None)}


def retained(path: Path) -> list[str]:
    """The completed writes a reader may still time-travel to: those at or after the last completed
    clean's earliest commit to retain (older ones' files may be cleaned, as Hudi allows)."""
    table = HudiTable.open(str(path))
    clean = table.timeline.cleans().completed().last()
    floor = table.read(clean, CleanMetadata).earliest_commit_to_retain if clean is not None else ""
    return [t for t in completed_writes(path) if t >= (floor or "")]


def assert_reads_the_same(path: Path, before: dict[str, list[tuple] | None], *, removed: Iterable[str] = ()) -> None:
    """hudi-rs reads the same rows as `before` at every retained completed write that it read
    then, and the latest: every retained write was recorded, none left the timeline but the
    `removed` ones, and the latest snapshot read before."""
    gone = {t for t in before if t != LATEST} - set(completed_writes(path))
    assert gone == set(removed), f"completed writes gone from the timeline: {sorted(gone)}"
    kept = [*retained(path), LATEST]
    assert not [t for t in kept if t not in before], "a retained write was not recorded before the repair"
    assert before[LATEST] is not None, "hudi-rs could not read the table before the repair: give `before`"
    readable = [t for t in kept if before[t] is not None]
    assert {t: _read(path, None if t == LATEST else t) for t in readable} == {t: before[t] for t in readable}


def round_trip(path: Path, kind: str, *, settings: DoctorSettings | None = None,
               before: dict[str, list[tuple] | None] | None = None, removed: Iterable[str] = ()
               ) -> tuple[list[Finding], RepairPlan, RepairResult, list[Finding]]:
    """The findings of `kind`, its repair plan, the repair's result and the findings after; and
    hudi-rs reads the same rows after the repair as before it, at every retained completed write
    and the latest (`before`: `reads(path)` taken by the caller, when the damage stops hudi-rs
    reading, or to record only the writes a clean will retain; `removed`: completed writes the
    repair takes off the timeline)."""
    before = reads(path) if before is None else before
    table = HudiTable.open(str(path))
    found = diagnose(table, kinds=[kind], settings=settings)
    plan = plan_repair(table, kind, settings=settings)
    result = run_repair(HudiTable.open(str(path)), plan, settings=settings, dry_run=False)
    after = diagnose(HudiTable.open(str(path)), settings=settings)
    assert_reads_the_same(path, before, removed=removed)
    return found, plan, result, after


def copy_base_file(path: Path, instant: str, *, token: str = "9-9-9") -> Path:
    """A copy of a real base file renamed for `instant` (what a task of a write at that time
    leaves: same file group, its own write token), returned as written."""
    source = sorted(path.rglob("*.parquet"), key=lambda p: str(p))
    source = [p for p in source if ".hoodie" not in p.parts]
    first = source[0]
    file_id = first.name.split("_")[0]
    target = first.with_name(f"{file_id}_{token}_{instant}.parquet")
    shutil.copy(first, target)
    return target


def completed_file(table: HudiTable, time_: str) -> tuple[Instant, Path]:
    instant = next(i for i in table.timeline.completed() if i.requested_time == time_)
    return instant, Path(table.timeline.path_of(instant, State.COMPLETED))


def archive_commit(path: Path, time_: str) -> Instant:
    """Move a completed commit of a table-version-8+ table to its LSM history as Hudi's archiver
    writes it: a HoodieLSMTimelineInstant row holding the completed file's bytes, in a Parquet
    file a new manifest lists; its state files leave the active timeline."""
    table = HudiTable.open(str(path))
    instant, completed = completed_file(table, time_)
    history = Path(table.path(table.config.archive_folder))
    history.mkdir(parents=True, exist_ok=True)
    rows = pa.table({"instantTime": [time_], "completionTime": [instant.completion_time],
                     "action": [instant.action], "metadata": [completed.read_bytes()],
                     "plan": pa.array([None], pa.binary()), "version": [1]})
    sink = io.BytesIO()
    pq.write_table(rows, sink)
    name = f"{time_}_{time_}_0.parquet"
    (history / name).write_bytes(sink.getvalue())
    (history / "manifest_1").write_text(json.dumps({"files": [{"fileName": name, "fileLen": len(sink.getvalue())}]}))
    (history / "_version_").write_text("1")
    for status in table.timeline.files_of(instant).values():
        os.unlink(status.path)
    return instant


def commit_metadata_with(table: HudiTable, files: dict[str, list[str]]) -> bytes:
    """Commit metadata naming `files` (partition -> file names) as Hudi writes it for the table."""
    stats = {p: [{"fileId": n.split("_")[0], "path": f"{p}/{n}" if p else n, "prevCommit": "null", "numWrites": 1,
                  "partitionPath": p, "totalWriteBytes": 1, "fileSizeInBytes": 1} for n in names]
             for p, names in files.items()}
    return metadata.encode({"partitionToWriteStats": stats, "compacted": False, "extraMetadata": {},
                            "operationType": "UPSERT"}, action="commit", state=State.COMPLETED,
                           layout=table.config.layout_version)


def grow_history(path: Path, commits: int, *, start: str = OLD) -> list[str]:
    """`commits` more completed commits on a copy-on-write table, one a second from `start`,
    each rewriting one file group with a copy of its latest base file (the rows stay the same)
    and naming it in its write stats with the previous version as `prevCommit`, as an upsert
    does. Returns the commits' times."""
    from datetime import datetime, timedelta

    from timeline.instant import format_instant_time

    table = HudiTable.open(str(path))
    piece = table.file_system_view().latest_slices()[0]
    assert piece.base_file is not None
    folder = path / piece.partition if piece.partition else path
    source = folder / piece.base_file.name
    timeline = Path(table.timeline.folder)
    layout = table.config.layout_version
    moment = datetime.strptime(start[:14], "%Y%m%d%H%M%S")
    previous, times = piece.base_instant_time, []
    for k in range(commits):
        time_ = format_instant_time(moment + timedelta(seconds=k))
        name = f"{piece.file_id}_0-1-{k}_{time_}.parquet"
        shutil.copy(source, folder / name)
        stat = {"fileId": piece.file_id, "path": f"{piece.partition}/{name}" if piece.partition else name,
                "prevCommit": previous, "numWrites": 1, "numUpdateWrites": 1, "partitionPath": piece.partition,
                "totalWriteBytes": source.stat().st_size, "fileSizeInBytes": source.stat().st_size}
        content = metadata.encode({"partitionToWriteStats": {piece.partition: [stat]}, "compacted": False,
                                   "extraMetadata": _schema_of(table), "operationType": "UPSERT"},
                                  action="commit", state=State.COMPLETED, layout=layout)
        completion = f"{time_[:-3]}500" if layout >= 2 else None
        for state, data in ((State.REQUESTED, b""), (State.INFLIGHT, b""), (State.COMPLETED, content)):
            instant = Instant(time_, "commit", state, completion if state is State.COMPLETED else None)
            (timeline / instant.file_name(layout)).write_bytes(data)
        previous = time_
        times.append(time_)
    return times


def _schema_of(table: HudiTable) -> dict[str, str]:
    """The writer schema of the table's latest commit (hudi-rs reads it from there)."""
    last = table.timeline.commits().completed().last()
    assert last is not None
    extra = (table.read_instant(last) or {}).get("extraMetadata") or {}
    return {"schema": extra["schema"]} if "schema" in extra else {}


def archive_commit_v6(path: Path, time_: str) -> Instant:
    """Move a completed commit of a table-version-6 table to `.hoodie/archived` as Hudi 0.x's
    archiver writes it: HoodieArchivedMetaEntry records (requested, inflight, and completed with
    the commit metadata as Avro) in an Avro data block of `.commits_.archive.1_1-0-1`; its state
    files leave the active timeline."""
    from timeline.logformat import avro_data_block
    from timeline.metadata import avro

    table = HudiTable.open(str(path))
    instant, completed = completed_file(table, time_)
    content = table.read_instant(instant)

    def entry(state: str, **payload: object) -> dict[str, object]:
        return {"commitTime": time_, "actionType": instant.action, "actionState": state,
                "stateTransitionTime": instant.completion_time, "version": 1, **payload}

    block = avro_data_block([entry("REQUESTED"), entry("INFLIGHT"), entry("COMPLETED", hoodieCommitMetadata=content)],
                            avro.writer_schema_json("HoodieArchivedMetaEntry"), time_)
    folder = path / ".hoodie" / "archived"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".commits_.archive.1_1-0-1").write_bytes(block)
    for status in table.timeline.files_of(instant).values():
        os.unlink(status.path)
    return instant


class CountingStorage(LocalStorage):
    """The real local storage, counting the folders it lists (any listing method), the status
    calls it answers and its `stat_names` calls by folder: what shows a repair's work grows with
    its targets, not with them times the folder."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: Counter[str] = Counter()
        self.named: Counter[str] = Counter()  # `stat_names` calls by folder
        self.statuses = 0

    def _list(self, path: str) -> list[FileStatus]:
        self.listed[path] += 1
        return super()._list(path)

    def _list_unsized(self, path: str) -> list[FileStatus]:
        self.listed[path] += 1
        return super()._list_unsized(path)

    def _list_names(self, path: str) -> list[str]:
        self.listed[path] += 1
        return super()._list_names(path)

    def _list_only(self, path: str, names: Collection[str]) -> list[FileStatus]:
        self.listed[path] += 1
        return super()._list_only(path, names)

    def status(self, path: str) -> FileStatus:
        self.statuses += 1
        return super().status(path)

    def stat_names(self, folder: str, names: Collection[str]) -> list[os.stat_result | None] | None:
        self.named[folder] += 1
        return super().stat_names(folder, names)


class UnheldStorage(CountingStorage):
    """`CountingStorage` that asks no status through a held folder (`stat_names` answers None,
    as an object store does): a repair's re-check then takes its general path (a listing)."""

    def stat_names(self, folder: str, names: Collection[str]) -> list[os.stat_result | None] | None:
        return None


class NameOrderedStorage(LocalStorage):
    """The real local storage, listing each folder in name order (a local disk lists in an order
    of its own): a test then knows which file the rule looks at first."""

    def _list(self, path: str) -> list[FileStatus]:
        return sorted(super()._list(path), key=lambda s: s.name)

    def _list_unsized(self, path: str) -> list[FileStatus]:
        return sorted(super()._list_unsized(path), key=lambda s: s.name)


TOKEN = "0-1-0"  # the write token of files the helpers write


def stuck_compaction(path: Path, time_: str, *, action: str = COMPACTION, markers: bool = False
                      ) -> tuple[Path, list[Path]]:
    """A compaction (or log compaction) planned over the first file slice with log files, started
    (inflight) and dead after writing one base file (a log compaction: one log file); its markers
    name that file when `markers`. Returns the requested plan's file and the partial files."""
    table = HudiTable.open(str(path))
    layout = table.config.layout_version
    slices = [s for s in table.file_system_view().latest_slices() if s.base_file]
    piece = next((s for s in slices if s.log_files), slices[0])  # one with log files where the table has them
    assert piece.base_file is not None
    plan = {"operations": [{"baseInstantTime": piece.base_instant_time, "fileId": piece.file_id,
                            "partitionPath": piece.partition, "deltaFilePaths": [log.name for log in piece.log_files],
                            "dataFilePath": piece.base_file.name}], "version": 2}
    folder = Path(table.timeline.folder)
    requested = folder / Instant(time_, action, State.REQUESTED).file_name(layout)
    requested.write_bytes(metadata.encode(plan, action=action, state=State.REQUESTED, layout=layout))
    (folder / Instant(time_, action, State.INFLIGHT).file_name(layout)).write_bytes(b"")
    partition = path / piece.partition if piece.partition else path
    if action == COMPACTION:
        name = f"{piece.file_id}_{TOKEN}_{time_}.parquet"
        shutil.copy(partition / piece.base_file.name, partition / name)
    else:  # a new log file of its own time (table version 8 and later)
        name = f".{piece.file_id}_{time_}.log.1_{TOKEN}"
        shutil.copy(partition / piece.log_files[0].name, partition / name)
    if markers:
        marker = path / ".hoodie" / ".temp" / time_ / piece.partition / f"{name}.marker.CREATE"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_bytes(b"")
    return requested, [partition / name]


def clustering_plan(piece: Any) -> dict[str, Any]:
    """A HoodieRequestedReplaceMetadata of a clustering over one file slice (no log files), as
    Hudi's SparkSortAndSizeExecutionStrategy plans it."""
    return {"operationType": "cluster", "version": 1, "extraMetadata": {}, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": piece.base_file.name, "fileId": piece.file_id,
                                     "partitionPath": piece.partition, "deltaFilePaths": [], "version": 1}],
                         "metrics": {}, "numOutputFileGroups": 1, "version": 1}],
        "strategy": {"strategyClassName": "org.apache.hudi.client.clustering.run.strategy."
                                          "SparkSortAndSizeExecutionStrategy", "strategyParams": {}, "version": 1},
        "extraMetadata": {}, "version": 1, "preserveHoodieMetadata": True}}
