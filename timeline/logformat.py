"""Hudi log files (`HoodieLogFormat` version 1): blocks, header maps, Avro data and delete content.

Byte layout of one block, as `HoodieLogFormatWriter.appendBlocks` writes it (big-endian):

    "#HUDI#" magic (6 bytes)
    int64  block length L = number of bytes after this field
    int32  log format version (1)
    int32  block type ordinal (`BlockType`)
    map    header
    int64  content length, then the content
    map    footer (always empty in practice)
    int64  reverse pointer = L + 6: the bytes from the magic up to, not including, this field

A map is an int32 entry count, then per entry an int32 key ordinal (`HeaderKey`), an int32 byte
length and the UTF-8 value. Java keeps headers in a `HashMap` whose order changes between JVM
runs, so the order read is kept and written back unchanged.

Reading follows `HoodieLogFileReader`: a block is corrupt when its length runs past the end of
the file, disagrees with its reverse pointer, or is followed by something other than another
magic or the end of the file (fewer than 6 bytes left, which are ignored). A corrupt block
becomes a CORRUPT block holding every byte after its magic up to the next magic or the end of
the file, and reading goes on from there. Java also ends a valid block that junk follows this
way. A block that passes these checks but cannot be read back byte for byte (another log format
version, an unknown block type or header key, inner lengths that do not add up), where Java
would throw, becomes a CORRUPT block of the length it declares.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final, cast

import fastavro
from fastavro.schema import SchemaParseException

from timeline.exceptions import CorruptInstantError

MAGIC: Final = b"#HUDI#"
LOG_FORMAT_VERSION: Final = 1
# `HoodieLogBlock.version`: the content version written at the start of data and delete blocks.
BLOCK_CONTENT_VERSION: Final = 3

_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_MAX_BLOCK_LENGTH: Final = 2**31 - 1  # the reader casts the length to a Java int
_NO_PATH: Final = "<log block content>"


class BlockType(IntEnum):
    """`HoodieLogBlock.HoodieLogBlockType`, written as its ordinal."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """`HoodieLogBlock.HeaderMetadataType`, written as its ordinal."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


class CommandBlockType(IntEnum):
    """`HoodieCommandBlock.HoodieCommandBlockTypeEnum`; the header holds the ordinal in decimal."""

    ROLLBACK_PREVIOUS_BLOCK = 0


# Block types a Java reader turns into blocks; a written CORRUPT ordinal is rejected by Java.
_READABLE_TYPES: Final = frozenset(int(t) for t in BlockType if t is not BlockType.CORRUPT)
_HEADER_KEYS: Final = frozenset(int(k) for k in HeaderKey)


@dataclass(frozen=True, slots=True)
class LogBlock:
    """One block of a log file, at `offset` (its magic) spanning `size` bytes (magic included).

    A CORRUPT block has an empty header and footer; its content is the bytes after its magic.
    """

    block_type: BlockType
    header: Mapping[HeaderKey, str]
    content: bytes
    footer: Mapping[HeaderKey, str]
    offset: int
    size: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "header", MappingProxyType(dict(self.header)))
        object.__setattr__(self, "footer", MappingProxyType(dict(self.footer)))


class _Malformed(Exception):
    """Bytes end early, or hold a value that cannot be represented and written back exactly."""


class _Cursor:
    """Reads big-endian fields from `data[pos:end]`."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def take(self, count: int) -> bytes:
        if count < 0 or self.pos + count > self.end:
            raise _Malformed
        chunk = self.data[self.pos:self.pos + count]
        self.pos += count
        return chunk

    def int32(self) -> int:
        value: int = _INT32.unpack(self.take(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack(self.take(8))[0]
        return value


def read_blocks(data: bytes, *, path: str) -> list[LogBlock]:
    """Every block of a log file's bytes, corrupt ones as CORRUPT blocks, in file order.

    An empty file, or one shorter than the magic, has no blocks (Java reads it as end of file).
    Raises `CorruptInstantError` naming `path` only when the file does not start with the magic.
    """
    if len(data) >= len(MAGIC) and not data.startswith(MAGIC):
        raise CorruptInstantError(path, "not a Hudi log file: it does not start with '#HUDI#'")
    blocks: list[LogBlock] = []
    offset = 0
    # Each block ends at the next magic, or with fewer than 6 bytes left, which Java ignores.
    while len(data) - offset >= len(MAGIC):
        block = _read_block(data, offset)
        blocks.append(block)
        offset += block.size
    return blocks


def _read_block(data: bytes, offset: int) -> LogBlock:
    length_at = offset + len(MAGIC)
    body = length_at + 8
    if body > len(data):
        return _corrupt_block(data, offset)
    length: int = _INT64.unpack_from(data, length_at)[0]
    block_length = (length + 2**31) % 2**32 - 2**31  # Java: (int) readLong()
    # A negative length would make Java read backwards; it is treated as corrupt.
    if block_length < 0 or _fails_size_check(data, body, block_length):
        return _corrupt_block(data, offset)
    end = body + block_length
    try:
        if length != block_length:
            raise _Malformed
        return _parse_block(data, offset, body, end)
    except _Malformed:
        # Java would throw here; the block's extent is known, so only it is lost.
        return LogBlock(BlockType.CORRUPT, {}, data[length_at:end], {}, offset, end - offset)


def _fails_size_check(data: bytes, body: int, block_length: int) -> bool:
    """`HoodieLogFileReader.isBlockCorrupted`: the length must stay inside the file, match the
    reverse pointer, and be followed by a magic or by fewer than 6 bytes."""
    end = body + block_length
    if end > len(data):
        return True
    if _INT64.unpack_from(data, end - 8)[0] - len(MAGIC) != block_length:
        return True
    following = data[end:end + len(MAGIC)]
    return len(following) == len(MAGIC) and following != MAGIC


def _corrupt_block(data: bytes, offset: int) -> LogBlock:
    """`HoodieLogFileReader.createCorruptBlock`: from after the magic up to the next magic."""
    start = offset + len(MAGIC)
    next_magic = data.find(MAGIC, start)
    end = len(data) if next_magic < 0 else next_magic
    return LogBlock(BlockType.CORRUPT, {}, data[start:end], {}, offset, end - offset)


def _parse_block(data: bytes, offset: int, body: int, end: int) -> LogBlock:
    cursor = _Cursor(data, body, end)
    if cursor.int32() != LOG_FORMAT_VERSION:
        raise _Malformed
    ordinal = cursor.int32()
    if ordinal not in _READABLE_TYPES:
        raise _Malformed
    header = _read_map(cursor)
    content = cursor.take(cursor.int64())
    footer = _read_map(cursor)
    cursor.int64()  # the reverse pointer, already checked against the length
    if cursor.pos != end:
        raise _Malformed
    return LogBlock(BlockType(ordinal), header, content, footer, offset, end - offset)


def _read_map(cursor: _Cursor) -> dict[HeaderKey, str]:
    entries: dict[HeaderKey, str] = {}
    count = cursor.int32()
    if count < 0:
        raise _Malformed
    for _ in range(count):
        key = cursor.int32()
        if key not in _HEADER_KEYS or HeaderKey(key) in entries:
            raise _Malformed
        # surrogateescape keeps any byte sequence, so writing the value back is exact.
        entries[HeaderKey(key)] = cursor.take(cursor.int32()).decode("utf-8", "surrogateescape")
    return entries


def encode_block(
    block_type: BlockType,
    header: Mapping[HeaderKey, str],
    content: bytes,
    footer: Mapping[HeaderKey, str] | None = None,
) -> bytes:
    """The bytes of one block, header and footer entries in the mapping's order."""
    if block_type == BlockType.CORRUPT:
        raise ValueError("Hudi never writes CORRUPT blocks; they only come from reading")
    body = b"".join((
        _INT32.pack(LOG_FORMAT_VERSION),
        _INT32.pack(int(block_type)),
        _encode_map(header),
        _INT64.pack(len(content)),
        content,
        _encode_map(footer or {}),
    ))
    block_length = len(body) + 8
    if block_length > _MAX_BLOCK_LENGTH:
        raise ValueError(f"a log block holds at most {_MAX_BLOCK_LENGTH} bytes, not {block_length}")
    reverse_pointer = len(MAGIC) + 8 + len(body)
    return b"".join((MAGIC, _INT64.pack(block_length), body, _INT64.pack(reverse_pointer)))


def _encode_map(entries: Mapping[HeaderKey, str]) -> bytes:
    parts = [_INT32.pack(len(entries))]
    for key, value in entries.items():
        encoded = value.encode("utf-8", "surrogateescape")
        parts += (_INT32.pack(int(HeaderKey(key))), _INT32.pack(len(encoded)), encoded)
    return b"".join(parts)


def command_block(instant_time: str, target_instant_time: str) -> bytes:
    """A ROLLBACK command block, as a v6 MOR rollback appends to each log of the rolled-back
    deltacommit. Its content is empty (`HoodieCommandBlock.getContentBytes`). The header order
    is the one of a real Hudi 0.14 file; Java's own order varies between JVM runs."""
    header = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandBlockType.ROLLBACK_PREVIOUS_BLOCK)),
        HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
    }
    return encode_block(BlockType.COMMAND, header, b"")


# --- AVRO_DATA content (HoodieAvroDataBlock) -------------------------------------------------

# Raised by fastavro on bytes that do not match the schema, or by json/fastavro on a bad schema.
_AVRO_ERRORS: Final = (EOFError, ValueError, IndexError, KeyError, TypeError, OverflowError,
                       struct.error, SchemaParseException)


@lru_cache(maxsize=32)
def _parsed_schema(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


def encode_avro_records(records: Sequence[Mapping[str, Any]], schema_json: str) -> bytes:
    """AVRO_DATA content: int32 content version (3), int32 record count, then per record an
    int32 length and the Avro binary datum written with `schema_json`."""
    schema = _parsed_schema(schema_json)
    parts = [_INT32.pack(BLOCK_CONTENT_VERSION), _INT32.pack(len(records))]
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, schema, dict(record))
        datum = buffer.getvalue()
        parts += (_INT32.pack(len(datum)), datum)
    return b"".join(parts)


def decode_avro_records(content: bytes, schema_json: str, *, path: str = _NO_PATH) -> list[dict[str, Any]]:
    """The records of AVRO_DATA content, read with the block's SCHEMA header as writer schema.

    Like Java, the content version is not checked (every version has a record count), a
    negative count means no records, and bytes after the last record are ignored.
    Raises `CorruptInstantError` naming `path` when the content does not match the schema.
    """
    cursor = _Cursor(content, 0, len(content))
    try:
        schema = _parsed_schema(schema_json)
        cursor.int32()  # content version
        records: list[dict[str, Any]] = []
        for _ in range(cursor.int32()):
            record = fastavro.schemaless_reader(io.BytesIO(cursor.take(cursor.int32())), schema)
            if not isinstance(record, dict):
                raise CorruptInstantError(path, "the SCHEMA header is not an Avro record schema")
            records.append(record)
    except _Malformed:
        raise CorruptInstantError(path, "Avro data block content is truncated") from None
    except _AVRO_ERRORS as error:
        raise CorruptInstantError(path, f"Avro data block content does not match its schema: {error}") from error
    return records


def avro_data_block(records: Sequence[Mapping[str, Any]], schema_json: str, instant_time: str) -> bytes:
    """A whole AVRO_DATA block with header INSTANT_TIME and SCHEMA."""
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    return encode_block(BlockType.AVRO_DATA, header, encode_avro_records(records, schema_json))


# --- DELETE content (HoodieDeleteBlock, content version 3: Avro HoodieDeleteRecordList) ------

_WRAPPER_NAMESPACE: Final = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: str | dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": _WRAPPER_NAMESPACE,
            "fields": [{"name": "value", "type": value_type}]}


# The ordering value union of Hudi 0.14 to 1.0 (wrappers as defined in HoodieMetadata.avsc).
_ORDERING_WRAPPERS: Final = (
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
    _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long"),
)

_DELETE_RECORD_LIST_SCHEMA: Final = fastavro.parse_schema({
    "type": "record",
    "name": "HoodieDeleteRecordList",
    "namespace": _WRAPPER_NAMESPACE,
    "fields": [{
        "name": "deleteRecordList",
        "type": {"type": "array", "items": {
            "type": "record",
            "name": "HoodieDeleteRecord",
            "fields": [
                {"name": "recordKey", "type": ["null", "string"], "default": None},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "orderingVal", "type": ["null", *_ORDERING_WRAPPERS], "default": None},
            ],
        }},
    }],
})


@dataclass(frozen=True, slots=True)
class OrderingValue:
    """A delete's ordering (precombine) value and the Avro wrapper record holding it,
    e.g. `OrderingValue("IntWrapper", 0)`; decimals are `Decimal`, time-micros `datetime.time`."""

    wrapper: str
    value: Any


@dataclass(frozen=True, slots=True)
class DeleteRecord:
    """One key of a DELETE block (`org.apache.hudi.common.model.DeleteRecord`)."""

    record_key: str | None
    partition_path: str | None
    ordering_value: OrderingValue | None = None


def encode_delete_records(records: Sequence[DeleteRecord]) -> bytes:
    """DELETE content: int32 content version (3), int32 byte length, Avro HoodieDeleteRecordList."""
    datum = {"deleteRecordList": [
        {
            "recordKey": record.record_key,
            "partitionPath": record.partition_path,
            "orderingVal": None if record.ordering_value is None else (
                f"{_WRAPPER_NAMESPACE}.{record.ordering_value.wrapper}",
                {"value": record.ordering_value.value},
            ),
        }
        for record in records
    ]}
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _DELETE_RECORD_LIST_SCHEMA, datum)
    data = buffer.getvalue()
    return _INT32.pack(BLOCK_CONTENT_VERSION) + _INT32.pack(len(data)) + data


def decode_delete_records(content: bytes, *, path: str = _NO_PATH) -> list[DeleteRecord]:
    """The keys of DELETE content. Versions 1 and 2 hold Kryo-serialized Java objects, which
    are not supported; every other version is Avro, as in Java. Raises `CorruptInstantError`."""
    cursor = _Cursor(content, 0, len(content))
    try:
        version = cursor.int32()
        if version in (1, 2):
            raise CorruptInstantError(path, f"delete block content version {version} is Kryo-serialized, "
                                            "which is not supported")
        data = cursor.take(cursor.int32())
        datum = cast(dict[str, Any], fastavro.schemaless_reader(
            io.BytesIO(data), _DELETE_RECORD_LIST_SCHEMA, return_record_name=True))
    except _Malformed:
        raise CorruptInstantError(path, "delete block content is truncated") from None
    except _AVRO_ERRORS as error:
        raise CorruptInstantError(path, f"delete block content is not a HoodieDeleteRecordList: {error}") from error
    return [
        DeleteRecord(
            record_key=entry["recordKey"],
            partition_path=entry["partitionPath"],
            ordering_value=None if entry["orderingVal"] is None else OrderingValue(
                wrapper=entry["orderingVal"][0].rpartition(".")[2],
                value=entry["orderingVal"][1]["value"],
            ),
        )
        for entry in datum["deleteRecordList"]
    ]
