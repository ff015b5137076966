"""Index drift, log files' column statistics (issue 45): on merge-on-read tables Hudi 1.x keeps a
`column_stats` record per log file and indexed column, computed over the records the append
wrote (`HoodieAppendHandle.processAppendResult` -> `HoodieTableMetadataUtil.
collectColumnRangeMetadata`: min and max over non-null values, the null count, the value count
as the records written; total sizes 0). Each such record is compared with the log file's data
blocks, read here (`timeline/logformat.py`): the AVRO_DATA blocks decoded with their SCHEMA
header, logical types left as their underlying values (a decimal's bytes as its unscaled value,
dates and timestamps as their int and long), what the record holds.

A log file with a block other than AVRO_DATA, DELETE or a command (Parquet or HFile data blocks,
a corrupt block), or with a rollback command, is not judged; log files without a record are not
findings (which log files Hudi indexes depends on the writer's settings)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from timeline.doctor.indexes import UNREADABLE, StatsMismatch, _compare, _normal
from timeline.fsview import FileSystemView
from timeline.logformat import BlockType, HeaderKey, decode_avro_records, read_blocks
from timeline.storage import Storage


def _plain(schema: Any) -> tuple[Any, set[str]]:
    """The schema with its logical types dropped, and the fields that are decimals."""
    decimals: set[str] = set()

    def walk(node: Any, field: str) -> Any:
        if isinstance(node, list):
            return [walk(n, field) for n in node]
        if isinstance(node, Mapping):
            if node.get("logicalType") == "decimal" and field:
                decimals.add(field)
            out = {k: v for k, v in node.items() if k != "logicalType"}
            if out.get("type") == "record":
                out["fields"] = [{**f, "type": walk(f["type"], str(f["name"]) if node is schema else "")}
                                 for f in out.get("fields", [])]
            elif "type" in out and not isinstance(out["type"], str):
                out["type"] = walk(out["type"], field)
            return out
        return node

    return walk(schema, ""), decimals


def log_stats(storage: Storage, path: str) -> dict[str, dict[str, Any]] | None:
    """Per top-level column of the log file's records: min, max (comparable), null count, value
    count; None when the file is not judged here."""
    blocks = read_blocks(storage.read(path), path=path)
    rows: list[dict[str, Any]] = []
    decimal_fields: set[str] = set()
    for block in blocks:
        if block.block_type is BlockType.COMMAND:
            return None  # a rollback inside the file: what the append wrote is not what remains
        if block.block_type is BlockType.DELETE:
            continue
        if block.block_type is not BlockType.AVRO_DATA:
            return None
        plain, decimals = _plain(json.loads(block.header.get(HeaderKey.SCHEMA, "") or "null"))
        decimal_fields |= decimals
        rows += decode_avro_records(block.content, json.dumps(plain), path=path)
    if not rows:
        return None
    out: dict[str, dict[str, Any]] = {}
    for column in rows[0]:
        values = [r.get(column) for r in rows]
        present = [_normal(v, column in decimal_fields) for v in values if v is not None]
        try:
            low, high = (min(present), max(present)) if present else (None, None)
        except TypeError:
            continue  # nested values: not a column the index ranges
        out[column] = {"minValue": low, "maxValue": high, "nullCount": len(values) - len(present),
                       "valueCount": len(values), "decimal": column in decimal_fields}
    return out


def judged_logs(storage: Storage, view: FileSystemView, path_of: Callable[[str, str], str],
                recorded: Mapping[str, Mapping[str, Mapping[str, Any]]]
                ) -> Iterator[tuple[str, str, Mapping[str, Mapping[str, Any]], dict[str, dict[str, Any]]]]:
    """(partition, log file, its records by column, its blocks' statistics) of every log file of
    the live file groups' slices that the index holds records for and that is judged here."""
    for group in view.file_groups():
        for file_slice in group.slices:
            for log in file_slice.log_files:
                entries = recorded.get(log.name)
                if not entries:
                    continue
                try:
                    actual = log_stats(storage, path_of(file_slice.partition, log.name))
                except UNREADABLE:
                    actual = None
                if actual is not None:
                    yield file_slice.partition, log.name, entries, actual


def log_mismatches(storage: Storage, view: FileSystemView, path_of: Callable[[str, str], str],
                   recorded: Mapping[str, Mapping[str, Mapping[str, Any]]], indexed: set[str]
                   ) -> tuple[int, list[StatsMismatch]]:
    """(log files judged, their mismatches): min, max and counts against the blocks (`_compare`,
    exact; sizes are not compared: Hudi records 0 for log files)."""
    checked = 0
    found: list[StatsMismatch] = []
    for partition, name, entries, actual in judged_logs(storage, view, path_of, recorded):
        checked += 1
        shown = Storage.join(partition, name) if partition else name
        for column in sorted(indexed & set(entries) & set(actual)):
            found += _compare(shown, column, entries[column], actual[column], exact=True)
    return checked, found
