"""Avro instant content as Hudi writes it: an Object Container File holding one record whose
schema is one of Hudi's `org.apache.hudi.avro.model` records (plans, clean/rollback/restore/
savepoint metadata, v8 commit metadata, ...).

The schemas are Hudi's own `.avsc` files (see `schemas/README.md`), loaded once in the order
of Hudi's `hudi-common/pom.xml` imports so that names defined in one file resolve in the next.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Collection, Iterator, Mapping
from functools import cache, lru_cache
from pathlib import Path
from typing import Any, BinaryIO, cast

import fastavro
from fastavro.read import SchemaResolutionError
from fastavro.schema import SchemaParseException

from timeline.exceptions import CorruptInstantError

NAMESPACE = "org.apache.hudi.avro.model"

_SCHEMA_DIR = Path(__file__).with_name("schemas")

# The avro-maven-plugin <imports> order of hudi-common/pom.xml (App. B of hudi-format.md), then
# the schemas that no other file refers to.
_FILES = (
    "HoodieCommitMetadata",
    "HoodieCompactionStrategy",
    "HoodieCompactionOperation",
    "HoodieSavePointMetadata",
    "HoodieCompactionMetadata",
    "HoodieCleanPartitionMetadata",
    "HoodieCleanMetadata",
    "HoodieCleanerPlan",
    "HoodieInstantInfo",
    "HoodieRollbackMetadata",
    "HoodieRestoreMetadata",
    "HoodieReplaceCommitMetadata",
    "HoodieSliceInfo",
    "HoodieClusteringGroup",
    "HoodieClusteringStrategy",
    "HoodieClusteringPlan",
    "HoodieRequestedReplaceMetadata",
    "HoodieIndexPartitionInfo",
    "HoodieIndexPlan",
    "HoodieIndexCommitMetadata",
    "HoodieArchivedMetaEntry",
    "HoodieRollbackPlan",
    "HoodieRestorePlan",
    "HoodieLSMTimelineInstant",
)

_MAGIC = b"Obj\x01"
_SYNC_SIZE = 16

# The container framing from the Avro specification, written with fastavro itself.
_HEADER = fastavro.parse_schema({
    "type": "record",
    "name": "org.apache.avro.file.Header",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": len(_MAGIC)}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": _SYNC_SIZE}},
    ],
})
_BLOCK = fastavro.parse_schema({
    "type": "record",
    "name": "org.apache.avro.file.Block",
    "fields": [
        {"name": "count", "type": "long"},
        {"name": "data", "type": "bytes"},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": _SYNC_SIZE}},
    ],
})

# What fastavro raises on bytes that are not a well-formed container or datum.
_DECODE_ERRORS = (ValueError, EOFError, KeyError, IndexError, TypeError, SchemaParseException)


@cache
def _named_schemas() -> dict[str, Any]:
    """Every named type of every schema file, parsed by fastavro, keyed by full name."""
    named: dict[str, Any] = {}
    for file_name in _FILES:
        text = (_SCHEMA_DIR / f"{file_name}.avsc").read_text(encoding="utf-8")
        fastavro.parse_schema(json.loads(text), named)
    return named


def _expand(node: Any, named: Mapping[str, Any], defined: set[str]) -> Any:
    """`node` with each named type written out where it is first used and referenced by name
    afterwards, as Java's `Schema.toString()` does, so the result stands on its own."""
    if isinstance(node, str):
        if node in named and node not in defined:
            return _expand(named[node], named, defined)
        return node
    if isinstance(node, list):
        return [_expand(branch, named, defined) for branch in node]
    if node.get("type") in ("record", "enum", "fixed"):
        defined.add(node["name"])
    expanded = {}
    for key, value in node.items():
        if key == "fields":
            value = [{**field, "type": _expand(field["type"], named, defined)} for field in value]
        elif key in ("items", "values"):
            value = _expand(value, named, defined)
        expanded[key] = value
    return expanded


@cache
def writer_schema_json(name: str) -> str:
    """The self-contained JSON writer schema of a Hudi record, as embedded in files we write."""
    full_name = f"{NAMESPACE}.{name}"
    named = _named_schemas()
    if full_name not in named:
        raise KeyError(f"no Hudi Avro schema named {name!r}")
    return json.dumps(_expand(full_name, named, set()), separators=(",", ":"))


@cache
def schema(name: str) -> dict[str, Any]:
    """The fastavro-parsed, self-contained schema of a Hudi record given its short name, e.g.
    `"HoodieCleanerPlan"` or a nested record such as `"HoodieWriteStat"`."""
    parsed = cast(dict[str, Any], fastavro.parse_schema(json.loads(writer_schema_json(name))))
    return parsed


def encode(name: str, record: Mapping[str, Any]) -> bytes:
    """`record` as an Avro Object Container File laid out as Java's `DataFileWriter` writes it
    for Hudi: magic, a header holding only `avro.schema` (Java writes no `avro.codec` key when
    no codec is set), a random sync marker, then one uncompressed block with one record.

    Missing fields take their schema default; a missing field without a default or a key the
    schema does not have raises ValueError. String types are not annotated with
    `"avro.java.string": "String"` as Java's generated classes are: that property only
    steers Java's in-memory string class and readers ignore it in a writer schema."""
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, schema(name), dict(record), strict_allow_default=True)
    return container(name, datum.getvalue())


def container(name: str, datum: bytes) -> bytes:
    """One record's binary datum (a `name` record, encoded already) in the container `encode`
    writes."""
    sync = os.urandom(_SYNC_SIZE)
    out = io.BytesIO()
    header = {"magic": _MAGIC, "meta": {"avro.schema": writer_schema_json(name).encode()},
              "sync": sync}
    fastavro.schemaless_writer(out, _HEADER, header)
    fastavro.schemaless_writer(out, _BLOCK, {"count": 1, "data": datum, "sync": sync})
    return out.getvalue()


def decode(data: bytes, *, path: str, fields: Collection[str] | None = None) -> dict[str, Any]:
    """The one record of an Avro Object Container File, read with the writer schema it embeds.
    Unions holding a record yield the record's plain dict. Anything other than a valid
    container with exactly one record raises CorruptInstantError naming `path`; callers treat
    an empty file as "no content" before calling this.

    `fields` reads only those top-level fields (the rest is skipped, not built): a clean's
    metadata lists every deleted file, and often only its retained commit is wanted."""
    if not data.startswith(_MAGIC):
        raise CorruptInstantError(path, "not an Avro object container file (bad magic)")
    try:
        reader = fastavro.reader(io.BytesIO(data))
        if fields is not None:
            writer = cast(dict[str, Any], reader.writer_schema)
            projected = {**writer, "fields": [f for f in writer["fields"] if f["name"] in fields]}
            reader = fastavro.reader(io.BytesIO(data), reader_schema=projected)
        records = list(reader)
    except _DECODE_ERRORS as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc!r}") from exc
    if len(records) != 1:
        raise CorruptInstantError(path, f"expected one Avro record, found {len(records)}")
    record = records[0]
    if not isinstance(record, dict):
        raise CorruptInstantError(path, f"expected an Avro record, found {type(record).__name__}")
    return record


def decode_as(data: bytes, name: str, *, path: str) -> dict[str, Any]:
    """The one record of an Avro Object Container File read as Java reads it into Hudi's
    generated class `name` (`TimelineMetadataUtils.deserializeAvroMetadata`): the embedded
    writer schema resolved against Hudi's schema, so fields the writer lacks take their
    defaults and fields Hudi's schema lacks are dropped. Raises CorruptInstantError naming
    `path` for anything else, a record of another name included."""
    if not data.startswith(_MAGIC):
        raise CorruptInstantError(path, "not an Avro object container file (bad magic)")
    try:
        records = list(fastavro.reader(io.BytesIO(data), reader_schema=schema(name)))
    except (*_DECODE_ERRORS, SchemaResolutionError) as exc:
        raise CorruptInstantError(path, f"not a {name} Avro container: {exc!r}") from exc
    if len(records) != 1 or not isinstance(records[0], dict):
        raise CorruptInstantError(path, f"expected one {name} record, found {len(records)}")
    return records[0]


def record_name(data: bytes, *, path: str = "<avro>") -> str:
    """Full name of the record type in the writer schema embedded in an Avro container file."""
    try:
        writer_schema = cast(dict[str, Any], fastavro.reader(io.BytesIO(data)).writer_schema)
        full_name: str = writer_schema["name"]
    except _DECODE_ERRORS as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc}") from exc
    return full_name


@lru_cache(maxsize=32)
def _parsed_writer_schema(writer_schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(writer_schema_json))


def decode_datum(data: bytes, writer_schema_json: str) -> dict[str, Any]:
    """One schemaless Avro binary record (as in Hudi log data blocks) read with its writer
    schema given as JSON text."""
    record = cast(dict[str, Any], fastavro.schemaless_reader(
        io.BytesIO(data), _parsed_writer_schema(writer_schema_json)))
    return record


def _read_long(stream: BinaryIO) -> int:
    """An Avro long (zig-zag varint) read from `stream`."""
    n = shift = 0
    while True:
        byte = stream.read(1)
        if not byte:
            raise EOFError("the file ends inside a number")
        n |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (n >> 1) ^ -(n & 1)
        shift += 7


def _block_count(stream: BinaryIO) -> int:
    """An array's or map's block item count (0 ends it), past the byte size a negative count announces."""
    count = _read_long(stream)
    if count < 0:
        _read_long(stream)
        return -count
    return count


class _Compressed(Exception):
    """A container whose block is compressed: read it whole."""


def _open_map(stream: BinaryIO, field: str, path: str) -> tuple[BinaryIO, Any, Any, bytes, str] | None:
    """`stream` read up to the entries of the map `field` of a container's one record: the
    reader positioned there, the fastavro schema of the arrays' items (None for a null map),
    that of the fields after the map, the container's sync marker and the record's name. None
    when the record has no `field`; raises _Compressed for a compressed block."""
    reader: BinaryIO = io.BufferedReader(stream, 1 << 16)  # type: ignore[type-var]  # fastavro reads a field at a time
    try:
        header = cast(dict[str, Any], fastavro.schemaless_reader(reader, _HEADER))
        if header["magic"] != _MAGIC:
            raise CorruptInstantError(path, "not an Avro object container file (bad magic)")
        writer = json.loads(header["meta"]["avro.schema"])
        fields = writer.get("fields") or []
        index = next((i for i, f in enumerate(fields) if f.get("name") == field), None)
        if index is None:
            return None
        if header["meta"].get("avro.codec", b"null") != b"null":
            raise _Compressed
        if _read_long(reader) != 1:
            raise CorruptInstantError(path, "expected one Avro record")
        _read_long(reader)  # the block's byte size
        kind = fields[index]["type"]
        kinds = kind if isinstance(kind, list) else [kind]
        found = next((k for k in kinds if isinstance(k, dict) and k.get("type") == "map"
                      and isinstance(k["values"], dict) and k["values"].get("type") == "array"), None)
        if found is None:
            raise CorruptInstantError(path, f"{field} is not a map of arrays in the writer schema")
        # named types are defined where first used: the parts are parsed in order into one set
        named: dict[str, Any] = {}
        before = fastavro.parse_schema({"type": "record", "name": "cleanline.Before", "fields": fields[:index]}, named)
        items = fastavro.parse_schema(found["values"]["items"], named)
        after = fastavro.parse_schema({"type": "record", "name": "cleanline.After", "fields": fields[index + 1:]},
                                      named)
        fastavro.schemaless_reader(reader, before)
        branch = kinds[_read_long(reader)] if isinstance(kind, list) else kind
    except _DECODE_ERRORS as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc!r}") from exc
    return reader, None if branch == "null" else items, after, header["sync"], str(writer.get("name", ""))


def map_of_arrays(stream: BinaryIO, field: str, *, path: str) -> Iterator[tuple[str, dict[str, Any] | None]] | None:
    """`jsonmeta.map_of_arrays` for an Avro Object Container File of one record: its top-level
    `field`, a map of arrays of records (or a union of null and one), read as a stream with
    the writer schema the file embeds: `(key, None)` as each key's array begins, then `(key,
    item)` for each record in it, one at a time. None when the record has no `field`. A
    compressed block (Hudi writes none) is decoded whole first. What is not a valid container
    raises CorruptInstantError naming `path`."""
    try:
        opened = _open_map(stream, field, path)
    except _Compressed:
        stream.seek(0)
        whole = decode(stream.read(), path=path, fields={field}).get(field) or {}
        return ((key, item) for key, items in whole.items()
                for item in (None, *(i for i in items or () if isinstance(i, dict))))
    if opened is None:
        return None
    reader, items, _, _, _ = opened
    return iter(()) if items is None else _entries(reader, items, path)


def check_map_of_arrays(stream: BinaryIO, field: str, *, path: str) -> str | None:
    """`decode`'s checks of a container whose one record holds the map of arrays `field`,
    read as a stream (memory stays that of one item): the map, the fields after it, the sync
    marker and the end of the file. Returns the record's full name (for the caller's check of
    which record it is), or None when the file cannot be checked so (no `field`, a compressed
    block) and is for `decode` to judge whole. Raises CorruptInstantError naming `path`."""
    try:
        opened = _open_map(stream, field, path)
    except _Compressed:
        return None
    if opened is None:
        return None
    reader, items, after, sync, name = opened
    if items is not None:
        for _ in _entries(reader, items, path):
            pass
    try:
        fastavro.schemaless_reader(reader, after)
        if reader.read(_SYNC_SIZE) != sync:
            raise CorruptInstantError(path, "invalid Avro container: the block does not end with its sync marker")
        if reader.read(1):
            raise CorruptInstantError(path, "expected one Avro record, found more")
    except _DECODE_ERRORS as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc!r}") from exc
    return name


def _entries(reader: BinaryIO, items: Any, path: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """`map_of_arrays`'s entries, from the map's first block."""
    try:
        while count := _block_count(reader):
            for _ in range(count):
                key = reader.read(_read_long(reader)).decode("utf-8")
                yield key, None
                while length := _block_count(reader):
                    for _ in range(length):
                        item = fastavro.schemaless_reader(reader, items)
                        if isinstance(item, dict):
                            yield key, item
    except (*_DECODE_ERRORS, UnicodeDecodeError) as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc!r}") from exc
