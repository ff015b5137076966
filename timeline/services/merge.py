"""Reading one file slice as a compaction reads it: the base file's records, then the committed
blocks of its log files in log order, merged per record key as Hudi merges them. No PySpark here
(the Spark writer's own merge shares `CommittedInstants`).

- Log blocks: blocks of instants not committed are skipped; a ROLLBACK_PREVIOUS_BLOCK command
  block drops the blocks of its target instant read before it (`AbstractHoodieLogRecordReader.
  scanInternalV1`); AVRO_DATA and PARQUET_DATA blocks carry records, DELETE blocks keys (with
  their ordering values); corrupt blocks are skipped.
- Log records of one key combine first among themselves (`HoodieMergedLogRecordScanner.
  processNextRecord` with the payload's `preCombine`; `processNextDeletedRecord`), then the
  result merges with the base file's record (`HoodieMergeHandle` with the payload's
  `combineAndGetUpdateValue`; in 1.x the file group reader's `BufferedRecordMerger`):
  - EVENT_TIME_ORDERING (`DefaultHoodieRecordPayload`): the greater ordering value wins, a tie
    goes to the later record; a delete without an ordering value (Hudi writes 0) always wins, one
    with a value loses to a record of the same type ordering higher;
  - COMMIT_TIME_ORDERING (1.x `OverwriteWithLatestAvroPayload` / commit-time merger): the later
    record or delete wins;
  - table version 6 `OverwriteWithLatestAvroPayload`: log records pre-combine by ordering value
    (`preCombine`: the older stays only if it orders strictly higher; a record after a delete
    wins), and the combined log record replaces the base record whatever its ordering
    (`combineAndGetUpdateValue`); a delete removes the base record.
  A data record whose `_hoodie_is_deleted` is true is a delete (`HoodieRecordPayload.isDeleteRecord`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from timeline.exceptions import CleanlineError
from timeline.logformat import (
    BlockType,
    CommandBlockType,
    HeaderKey,
    LogBlock,
    decode_avro_records,
    decode_delete_records,
    read_blocks,
)
from timeline.services.refusals import MergeMode, MergeRules
from timeline.table import Table

RECORD_KEY = "_hoodie_record_key"
IS_DELETED = "_hoodie_is_deleted"


@dataclass(frozen=True, slots=True)
class CommittedInstants:
    """The instants whose log blocks a reader applies: completed writes, and anything older
    than the active timeline (archived, hence completed): `HoodieTimeline.
    containsOrBeforeTimelineStarts` over the completed commits timeline."""

    completed: frozenset[str]
    start: str | None

    @classmethod
    def of(cls, table: Table) -> CommittedInstants:
        writes = table.timeline.writes()
        first = writes.first()
        return cls(frozenset(i.requested_time for i in writes.completed()), first.requested_time if first else None)

    def __contains__(self, instant: object) -> bool:
        if not isinstance(instant, str):
            return False
        return instant in self.completed or (self.start is not None and instant < self.start)


class LogMergeError(CleanlineError):
    """A log file a compaction cannot read as Hudi would (a block kind Cleanline does not merge)."""


class Deleted(NamedTuple):
    """A key deleted in the log, with the delete's ordering value (None: none given)."""

    ordering: Any


def _orders_higher(left: Any, right: Any) -> bool:
    """Java's `left.compareTo(right) > 0` for two ordering values of one type; None orders lowest;
    values of different types never order higher (`ReflectionUtils.isSameClass`)."""
    if left is None:
        return False
    if right is None:
        return True
    if type(left) is not type(right) and not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        return False
    try:
        return bool(left > right)
    except TypeError:
        return False


def _natural(value: Any) -> bool:
    """A delete's ordering value that means "no ordering" (Hudi writes 0 or nothing)."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0)


class SliceMerger:
    """Merges one file slice (see the module's docstring)."""

    def __init__(self, rules: MergeRules, committed: Callable[[str], bool]) -> None:
        self.rules = rules
        self.field = rules.ordering_field
        self.committed = committed
        self.log_records = 0
        self.log_blocks = 0
        self.rollback_blocks = 0
        self.corrupt_blocks = 0
        self.fields: set[str] = set()   # the columns the log's data blocks carry

    def ordering(self, record: dict[str, Any]) -> Any:
        return record.get(self.field) if self.field else None

    # The log among itself

    def _combine_record(self, log: dict[str, dict[str, Any] | Deleted], record: dict[str, Any]) -> None:
        key = record[RECORD_KEY]
        if record.get(IS_DELETED) is True:
            self._combine_delete(log, key, self.ordering(record))
            return
        previous = log.get(key)
        if previous is None or self.rules.mode is MergeMode.COMMIT_TIME and not self.rules.legacy_payload:
            log[key] = record
        elif isinstance(previous, Deleted):
            if (self.rules.legacy_payload or self.rules.mode is MergeMode.COMMIT_TIME or _natural(previous.ordering)
                    or not _orders_higher(previous.ordering, self.ordering(record))):
                log[key] = record
        elif not _orders_higher(self.ordering(previous), self.ordering(record)):
            log[key] = record

    def _combine_delete(self, log: dict[str, dict[str, Any] | Deleted], key: str, ordering: Any) -> None:
        previous = log.get(key)
        if previous is not None and not (self.rules.mode is MergeMode.COMMIT_TIME and not self.rules.legacy_payload):
            current = previous.ordering if isinstance(previous, Deleted) else self.ordering(previous)
            if not _natural(ordering) and _orders_higher(current, ordering):
                return  # processNextDeletedRecord: choosePrev
        log[key] = Deleted(ordering)

    def read_log(self, data: bytes, path: str, log: dict[str, dict[str, Any] | Deleted],
                 queue: list[LogBlock]) -> None:
        """Queue the committed blocks of one log file (a rollback command block drops its target's
        blocks queued before it)."""
        for block in read_blocks(data, path=path):
            if block.block_type is BlockType.CORRUPT:
                self.corrupt_blocks += 1
                continue
            if block.block_type is BlockType.COMMAND:
                kind = block.header.get(HeaderKey.COMMAND_BLOCK_TYPE)
                if kind == str(int(CommandBlockType.ROLLBACK_PREVIOUS_BLOCK)):
                    target = block.header.get(HeaderKey.TARGET_INSTANT_TIME)
                    queue[:] = [b for b in queue if b.header.get(HeaderKey.INSTANT_TIME) != target]
                    self.rollback_blocks += 1
                continue
            if block.header.get(HeaderKey.COMPACTED_BLOCK_TIMES):
                raise LogMergeError(f"{path}: a log-compacted block (COMPACTED_BLOCK_TIMES); Cleanline does not merge "
                                    "log compactions' blocks (scanInternalV2)")
            if not self.committed(block.header.get(HeaderKey.INSTANT_TIME, "")):
                continue
            queue.append(block)

    def apply(self, queue: Iterable[LogBlock], path: str, log: dict[str, dict[str, Any] | Deleted]) -> None:
        for block in queue:
            if block.block_type is BlockType.AVRO_DATA:
                records: list[dict[str, Any]] = decode_avro_records(block.content, block.header[HeaderKey.SCHEMA],
                                                                    path=path)
            elif block.block_type is BlockType.PARQUET_DATA:
                records = pq.read_table(pa.BufferReader(block.content)).to_pylist()
            elif block.block_type is BlockType.DELETE:
                deletes = decode_delete_records(block.content, path=path)
                for delete in deletes:
                    value = None if delete.ordering_value is None else delete.ordering_value.value
                    self._combine_delete(log, delete.record_key or "", value)
                self.log_records += len(deletes)
                self.log_blocks += 1
                continue
            else:
                raise LogMergeError(f"{path}: a {block.block_type.name} block in a data table's log file")
            if records:
                self.fields |= set(records[0])
            for record in records:
                self._combine_record(log, record)
            self.log_records += len(records)
            self.log_blocks += 1

    # The log with the base file

    def merge_with_base(self, base: dict[str, dict[str, Any]], log: dict[str, dict[str, Any] | Deleted]
                        ) -> dict[str, dict[str, Any]]:
        """The slice's records after the log is applied to the base records."""
        merged = dict(base)
        for key, entry in log.items():
            current = merged.get(key)
            if isinstance(entry, Deleted):
                if current is None:
                    continue
                if (self.rules.mode is MergeMode.EVENT_TIME and not self.rules.legacy_payload
                        and not _natural(entry.ordering) and _orders_higher(self.ordering(current), entry.ordering)):
                    continue
                del merged[key]
            elif current is None or self.rules.mode is MergeMode.COMMIT_TIME:
                merged[key] = entry
            elif not _orders_higher(self.ordering(current), self.ordering(entry)):
                merged[key] = entry
        return merged


def read_base(data: bytes) -> pa.Table:
    return pq.read_table(pa.BufferReader(data))


def last_schema(blocks: Sequence[LogBlock]) -> str | None:
    """The SCHEMA header of the latest data block (the writer schema Hudi compacts with)."""
    for block in reversed(blocks):
        schema = block.header.get(HeaderKey.SCHEMA)
        if schema and block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            return schema
    return None


__all__ = ["CommittedInstants", "Deleted", "LogMergeError", "SliceMerger", "last_schema", "read_base"]
