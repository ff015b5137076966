"""How one file slice merges (timeline/services/merge.py), on log blocks built here with the
library's block writer: rollback command blocks, uncommitted blocks, deletes with and without
ordering values, `_hoodie_is_deleted`, and each merge mode against the base file."""

from __future__ import annotations

import json
from typing import Any

import pytest

from timeline.logformat import (
    BlockType,
    DeleteRecord,
    HeaderKey,
    OrderingValue,
    avro_data_block,
    command_block,
    encode_block,
    encode_delete_records,
)
from timeline.services.merge import Deleted, SliceMerger
from timeline.services.refusals import MergeMode, MergeRules

SCHEMA = json.dumps({"type": "record", "name": "r", "fields": [
    {"name": "_hoodie_record_key", "type": "string"}, {"name": "ts", "type": "long"},
    {"name": "v", "type": "string"}, {"name": "_hoodie_is_deleted", "type": ["null", "boolean"], "default": None}]})
EVENT = MergeRules(MergeMode.EVENT_TIME, "ts", False)
COMMIT = MergeRules(MergeMode.COMMIT_TIME, "ts", False)
LEGACY = MergeRules(MergeMode.COMMIT_TIME, "ts", True)   # v6 OverwriteWithLatestAvroPayload


def rec(key: str, ts: int, v: str, deleted: bool | None = None) -> dict[str, Any]:
    return {"_hoodie_record_key": key, "ts": ts, "v": v, "_hoodie_is_deleted": deleted}


def data(instant: str, *records: dict[str, Any]) -> bytes:
    return avro_data_block(list(records), SCHEMA, instant)


def delete(instant: str, key: str, ordering: int | None) -> bytes:
    value = None if ordering is None else OrderingValue("LongWrapper", ordering)
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant},
                        encode_delete_records([DeleteRecord(key, "", value)]))


def merged(rules: MergeRules, base: list[dict[str, Any]], *blocks: bytes,
           committed: frozenset[str] = frozenset({"1", "2", "3"})) -> dict[str, str]:
    merger = SliceMerger(rules, committed.__contains__)
    log: dict[str, dict[str, Any] | Deleted] = {}
    queue: list[Any] = []
    merger.read_log(b"".join(blocks), "log", log, queue)
    merger.apply(queue, "log", log)
    result = merger.merge_with_base({r["_hoodie_record_key"]: r for r in base}, log)
    return {k: r["v"] for k, r in result.items()}


def test_a_rollback_command_block_drops_its_target_blocks_read_before_it() -> None:
    """AbstractHoodieLogRecordReader.scanInternalV1: even a block of an instant the reader takes
    as committed (older than the active timeline) goes."""
    blocks = (data("1", rec("a", 5, "first")), data("2", rec("a", 6, "rolled back")), command_block("4", "2"))
    assert merged(EVENT, [], *blocks) == {"a": "first"}
    assert merged(EVENT, [], *blocks[:2]) == {"a": "rolled back"}


def test_blocks_of_writes_not_committed_are_skipped() -> None:
    assert merged(COMMIT, [rec("a", 1, "base")], data("9", rec("a", 2, "pending"))) == {"a": "base"}


@pytest.mark.parametrize(("rules", "expected"), [(EVENT, "base"), (COMMIT, "log"), (LEGACY, "log")])
def test_an_older_log_record_against_the_base_file(rules: MergeRules, expected: str) -> None:
    """DefaultHoodieRecordPayload.combineAndGetUpdateValue keeps a base record ordering higher;
    commit-time ordering and 0.x's OverwriteWithLatestAvroPayload take the log record."""
    assert merged(rules, [rec("a", 10, "base")], data("1", rec("a", 5, "log"))) == {"a": expected}


@pytest.mark.parametrize(("rules", "expected"), [(EVENT, "newer ts"), (COMMIT, "later"), (LEGACY, "newer ts")])
def test_log_records_of_one_key_combine(rules: MergeRules, expected: str) -> None:
    """preCombine (event time, and 0.x's payloads in the log scanner) or the later record."""
    blocks = (data("1", rec("a", 9, "newer ts")), data("2", rec("a", 3, "later")))
    assert merged(rules, [], *blocks) == {"a": expected}


def test_deletes_by_ordering_value() -> None:
    base = [rec("a", 10, "base"), rec("b", 10, "base")]
    # an ordered delete older than the base record loses under event time; a natural (0) delete wins
    assert merged(EVENT, base, delete("1", "a", 5), delete("1", "b", 0)) == {"a": "base"}
    assert merged(COMMIT, base, delete("1", "a", 5), delete("1", "b", None)) == {}
    assert merged(LEGACY, base, delete("1", "a", 5)) == {"b": "base"}  # 0.x: a delete removes the base record
    # processNextDeletedRecord: an ordered delete older than the log record it meets is dropped
    assert merged(EVENT, [], data("1", rec("c", 9, "kept")), delete("2", "c", 4)) == {"c": "kept"}
    # a record after a delete stands (0.x: preCombine of an empty payload takes the new record)
    assert merged(LEGACY, base, delete("1", "a", 50), data("2", rec("a", 1, "back"))) == {"a": "back",
                                                                                          "b": "base"}


def test_hoodie_is_deleted_marks_a_delete() -> None:
    assert merged(COMMIT, [rec("a", 1, "base")], data("1", rec("a", 2, "gone", deleted=True))) == {}


def test_the_columns_the_log_carries_are_known() -> None:
    """A compaction refuses log records with columns its base file has not (timeline/services/
    compactor.py: no schema evolution), so it must know them."""
    merger = SliceMerger(EVENT, frozenset({"1"}).__contains__)
    log: dict[str, dict[str, Any] | Deleted] = {}
    queue: list[Any] = []
    merger.read_log(data("1", rec("a", 1, "x")), "log", log, queue)
    merger.apply(queue, "log", log)
    assert merger.fields == {"_hoodie_record_key", "ts", "v", "_hoodie_is_deleted"}
