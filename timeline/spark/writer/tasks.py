"""The tasks of a write, on the executors: one per file group, writing a new base file (CREATE),
a copy-on-write rewrite of the latest slice (MERGE) or a log file on it (APPEND), each
returning its write stat; and the index lookup reading the keys of one file slice."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from timeline.files import base_file_name, log_file_name
from timeline.fsview import FileSlice
from timeline.logformat import avro_data_block
from timeline.services.merge import CommittedInstants
from timeline.spark.writer.files import Files, Task, delete_block, file_stat, parquet, stamped
from timeline.spark.writer.merge import merge_slice, upsert
from timeline.spark.writer.model import FILE_NAME, RECORD_KEY, IOType, Operation
from timeline.spark.writer.schema import RecordSchema


@dataclass(frozen=True, slots=True)
class InstantContext:
    """What every task working for one instant needs; shipped to the executors."""

    uri: str
    instant: str
    version: int
    precombine: str
    committed: CommittedInstants


@dataclass(frozen=True, slots=True)
class WriteContext:
    instant: InstantContext
    operation: Operation
    schema: RecordSchema


@dataclass(frozen=True, slots=True)
class FileGroupJob:
    """One file group a write task writes: a new one (CREATE), a copy-on-write rewrite of its
    latest slice (MERGE) or a log file on its latest slice (APPEND)."""

    partition: str
    file_id: str
    io_type: IOType
    slice: FileSlice | None = None


def _create(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A new file group: one base file of inserts."""
    started, task = time.monotonic(), Task.current()
    files = Files(ctx.instant.uri, ctx.instant.instant)
    name = base_file_name(job.file_id, task.token, ctx.instant.instant)
    rows = stamped(records, ctx.instant.instant, task, name)
    size = files.create(job.partition, name, parquet(rows, ctx.schema.arrow, ctx.schema.avro), IOType.CREATE)
    return file_stat(job.partition, job.file_id, name, size, started, "create", num_writes=len(rows),
                     num_inserts=len(rows))


def _merge(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Copy-on-write: rewrite the latest base file with the updates or deletes merged in."""
    started, task = time.monotonic(), Task.current()
    assert job.slice is not None and job.slice.base_file is not None
    files = Files(ctx.instant.uri, ctx.instant.instant)
    current = merge_slice(files, job.partition, job.slice.base_file.name, (), ctx.instant.precombine,
                          ctx.instant.committed).records
    matched = sum(1 for record in records if record[RECORD_KEY] in current)
    name = base_file_name(job.file_id, task.token, ctx.instant.instant)
    deleting = ctx.operation is Operation.DELETE
    for record in stamped(records, ctx.instant.instant, task, name):
        if deleting:
            current.pop(record[RECORD_KEY], None)
        else:
            upsert(current, record, ctx.instant.precombine)
    rows = [{**row, FILE_NAME: name} for row in current.values()]
    size = files.create(job.partition, name, parquet(rows, ctx.schema.arrow, ctx.schema.avro), IOType.MERGE)
    return file_stat(job.partition, job.file_id, name, size, started, "upsert", prev_commit=job.slice.base_instant_time,
                     num_writes=len(rows), num_deletes=matched if deleting else 0,
                     num_update_writes=0 if deleting else matched,
                     num_inserts=0 if deleting else len(records) - matched)


def _log_target(ctx: WriteContext, slice_: FileSlice) -> tuple[str, int]:
    """The instant and version in a new log file's name: v6 the slice's base instant and the
    next version, v8 the delta commit itself and version 1."""
    if ctx.instant.version >= 8:
        return ctx.instant.instant, 1
    return slice_.base_instant_time, max((log.version for log in slice_.log_files), default=0) + 1


def _delta_fields(ctx: WriteContext, slice_: FileSlice, name: str, version: int) -> dict[str, Any]:
    """HoodieDeltaWriteStat's fields: v6 names the slice's files, v8 (as Hudi 1.x) only the new log."""
    if ctx.instant.version >= 8:
        return {"log_version": version, "log_offset": 0, "base_file": "", "log_files": [name]}
    base = slice_.base_file.name if slice_.base_file else ""
    return {"log_version": version, "log_offset": 0, "base_file": base,
            "log_files": [*(log.name for log in slice_.log_files), name], "records_stats": {"val": None}}


def _append(ctx: WriteContext, job: FileGroupJob, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Merge-on-read: a new log file on the latest slice with one data or delete block."""
    started, task = time.monotonic(), Task.current()
    assert job.slice is not None
    files = Files(ctx.instant.uri, ctx.instant.instant)
    instant, version = _log_target(ctx, job.slice)
    name = log_file_name(job.file_id, instant, version, task.token)
    deleting = ctx.operation is Operation.DELETE
    if deleting:
        block = delete_block(records, ctx.instant.instant, ctx.schema.avro)
    else:
        rows = stamped(records, ctx.instant.instant, task, job.file_id)  # log records name the file group
        block = avro_data_block(rows, ctx.schema.avro, ctx.instant.instant)
    marker = IOType.CREATE if ctx.instant.version >= 8 else IOType.APPEND  # v8 logs get CREATE markers
    size = files.create(job.partition, name, block, marker)
    prev = ctx.instant.instant if ctx.instant.version >= 8 else job.slice.base_instant_time
    writes = 0 if deleting else len(records)
    return file_stat(job.partition, job.file_id, name, size, started, "upsert", prev_commit=prev, num_writes=writes,
                     num_deletes=len(records) - writes, num_update_writes=writes,
                     **_delta_fields(ctx, job.slice, name, version))


_HANDLERS: Mapping[IOType, Callable[[WriteContext, FileGroupJob, list[dict[str, Any]]], dict[str, Any]]] = {
    IOType.CREATE: _create, IOType.MERGE: _merge, IOType.APPEND: _append,
}


def write_group(ctx: WriteContext, jobs: Sequence[FileGroupJob], index: int,
                rows: Iterable[tuple[int, tuple[Any, ...]]]) -> Iterator[dict[str, Any]]:
    """Runs on an executor: the one task of file group `jobs[index]`."""
    records = [ctx.schema.record(values) for _, values in rows]
    if records:
        job = jobs[index]
        yield _HANDLERS[job.io_type](ctx, job, records)


def keys_in_slice(ctx: InstantContext, slice_: FileSlice) -> list[tuple[str, str, str]]:
    """Runs on an executor: (partition path, record key, file id) of every live record of a slice."""
    files = Files(ctx.uri, ctx.instant)
    merged = merge_slice(files, slice_.partition, slice_.base_file.name if slice_.base_file else None,
                         [log.name for log in slice_.log_files], ctx.precombine, ctx.committed,
                         columns=[RECORD_KEY, ctx.precombine])
    return [(slice_.partition, key, slice_.file_id) for key in merged.records]


def by_job(row: Any) -> tuple[int, tuple[Any, ...]]:
    return int(row[0]), tuple(row[1:])


def identity(job: int) -> int:
    return job
