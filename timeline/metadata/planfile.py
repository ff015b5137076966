"""A clean plan and a clean's metadata in slices, for executors that each take some of a
multi-million-file clean: the driver reads `<t>.clean.requested` (HoodieCleanerPlan, one Avro
record) into its header fields and, per partition, the byte range of that partition's array of
HoodieCleanFileInfo in `filePathsToBeDeletedPerPartition`, building nothing per file; an
executor decodes its ranges (`decode_files`). After the deletes, each executor encodes its
partitions' entries of the HoodieCleanMetadata `partitionMetadata` map
(`encode_partition_entry`) and the driver joins them into the completed clean's record
(`encode_clean_metadata`). The bytes are what `timeline.metadata.avro.encode` writes for the
same record: Avro's binary encoding is a record's fields one after another, and a map may be
written as one block of entries (the Avro specification, "Complex Types").

The slices apply only to a plan written with HoodieCleanerPlan's schema as Hudi 0.x/1.x
defines it (compared in Avro's Parsing Canonical Form, which leaves out docs, defaults and
`avro.java.string`), without a codec and without a version-1 `filesToBeDeletedPerPartition`;
anything else is `None` here and the caller reads the plan whole."""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import fastavro
from fastavro.schema import SchemaParseException, to_parsing_canonical_form

from timeline.exceptions import CorruptInstantError
from timeline.metadata import avro
from timeline.metadata.records import CleanerPlan, CleanMetadata, CleanPartitionMetadata

PLAN = "HoodieCleanerPlan"
METADATA = "HoodieCleanMetadata"
FILES_FIELD = "filePathsToBeDeletedPerPartition"
PARTITIONS_FIELD = "partitionMetadata"


@dataclass(frozen=True, slots=True)
class PartitionSlice:
    """One partition's files in the plan: the byte range of its array, and how many it names."""

    partition: str
    start: int
    end: int
    files: int


@dataclass(frozen=True, slots=True)
class PlanSlices:
    """A plan read as slices: its header (a CleanerPlan without files) and per partition the
    range of its files, in the plan's order."""

    header: CleanerPlan
    slices: tuple[PartitionSlice, ...]

    @property
    def files(self) -> int:
        return sum(s.files for s in self.slices)


@cache
def _layout(name: str) -> tuple[str, int, Any, Any, Any]:
    """A record's canonical form, where its map field is, and fastavro schemas of the fields
    before and after it and of the map's values."""
    writer = json.loads(avro.writer_schema_json(name))
    field = FILES_FIELD if name == PLAN else PARTITIONS_FIELD
    index = next(i for i, f in enumerate(writer["fields"]) if f["name"] == field)
    fields = writer["fields"]
    # The fields before the map define every named type the map and later fields use
    # (HoodieActionInstant) or none of them: each part stands on its own.
    # Named types are defined where first used and referred to by name after (the map's values
    # define HoodieCleanPartitionMetadata, which bootstrapPartitionMetadata names): the parts
    # are parsed in order into one set of names.
    named: dict[str, Any] = {}
    before = fastavro.parse_schema({"type": "record", "name": f"cleanline.{name}Before", "fields": fields[:index]},
                                   named)
    kind = fields[index]["type"]
    values = fastavro.parse_schema((kind[1] if isinstance(kind, list) else kind)["values"], named)
    after = fastavro.parse_schema({"type": "record", "name": f"cleanline.{name}After", "fields": fields[index + 1:]},
                                  named)
    return to_parsing_canonical_form(writer), index, before, after, values


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """An Avro long (zig-zag varint) at `pos`, and the position after it."""
    b = data[pos]
    pos += 1
    n = b & 0x7F
    shift = 7
    while b & 0x80:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos


def _encode_long(value: int) -> bytes:
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _length(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A length or block size (a long that may not be negative) at `pos`, and the position
    after it; what it counts must end by `end`."""
    length, pos = _long(data, pos)
    if length < 0 or pos + length > end:
        raise ValueError(f"a length of {length} at byte {pos} runs past byte {end}")
    return length, pos


def _block(data: bytes, pos: int, end: int) -> tuple[int, int, int]:
    """An array's or map's block header at `pos`: its item count, the byte size written with it
    (a negative count announces one; -1 when none) and the position after them."""
    count, pos = _long(data, pos)
    if count >= 0:
        return count, -1, pos
    size, pos = _length(data, pos, end)
    return -count, size, pos


def _skip_file_infos(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """Past one array of HoodieCleanFileInfo {filePath: [null, string], isBootstrapBaseFile:
    [null, boolean]} that ends by `end`: the position after it and its item count. A block
    written with its byte size is skipped whole."""
    files = 0
    while True:
        count, size, pos = _block(data, pos, end)
        if count == 0:
            return pos, files
        files += count
        if size >= 0:
            pos += size
            continue
        for _ in range(count):
            if pos >= end:
                raise ValueError(f"the files' array runs past byte {end}")
            branch = data[pos]
            pos += 1
            if branch == 2:  # the string branch (union index 1, zig-zag 2)
                length, pos = _length(data, pos, end)
                pos += length
            elif branch != 0:
                raise ValueError(f"union index {branch} in a filePath")
            if pos >= end:
                raise ValueError(f"the files' array runs past byte {end}")
            branch = data[pos]
            pos += 1
            if branch == 2:
                pos += 1
            elif branch != 0:
                raise ValueError(f"union index {branch} in isBootstrapBaseFile")


def read_slices(data: bytes, *, path: str) -> PlanSlices | None:
    """The plan in `data` (a `<t>.clean.requested` file) as slices; None when its layout is not
    the one the slices follow (the caller reads it whole). Bytes that break the container or
    the record's framing raise CorruptInstantError naming `path`; a partition's files are
    decoded, and so checked, by whoever takes its slice."""
    if not data.startswith(b"Obj\x01"):
        raise CorruptInstantError(path, "not an Avro object container file (bad magic)")
    try:
        found = _read_slices(data)
    except (ValueError, IndexError, EOFError, KeyError, TypeError, SchemaParseException) as exc:
        raise CorruptInstantError(path, f"invalid Avro container: {exc!r}") from exc
    return found


def _read_slices(data: bytes) -> PlanSlices | None:
    stream = io.BytesIO(data)
    header = cast(dict[str, Any], fastavro.schemaless_reader(stream, avro._HEADER))
    meta = header["meta"]
    if meta.get("avro.codec", b"null") != b"null":
        return None
    canonical, _, before_schema, after_schema, _ = _layout(PLAN)
    if to_parsing_canonical_form(json.loads(meta["avro.schema"])) != canonical:
        return None
    count, pos = _long(data, stream.tell())
    size, pos = _long(data, pos)
    if count != 1:
        raise ValueError(f"expected one Avro record, found {count}")
    end = pos + size
    if size < 0 or data[end:] != header["sync"] or len(data) != end + len(header["sync"]):
        raise ValueError("the block does not end with the file's sync marker, or more follows")
    stream.seek(pos)
    before = cast(dict[str, Any], fastavro.schemaless_reader(stream, before_schema))
    if before.get("filesToBeDeletedPerPartition"):
        return None  # a version-1 plan: files named relative to their partition
    branch, pos = _long(data, stream.tell())
    slices: list[PartitionSlice] = []
    seen: set[str] = set()
    if branch == 1:
        while True:
            count, _, pos = _block(data, pos, end)
            if count == 0:
                break
            for _ in range(count):
                length, pos = _length(data, pos, end)
                partition = data[pos:pos + length].decode()
                pos += length
                if partition in seen:
                    # a reader keeps the last of a repeated key (fastavro's dict, Java's
                    # HashMap): the plan is read whole, as every reader reads it
                    return None
                seen.add(partition)
                start = pos
                pos, files = _skip_file_infos(data, pos, end)
                slices.append(PartitionSlice(partition, start, pos, files))
    elif branch != 0:
        raise ValueError(f"union index {branch} in {FILES_FIELD}")
    if pos > end:
        raise ValueError("the record runs past its block")
    stream.seek(pos)
    after = cast(dict[str, Any], fastavro.schemaless_reader(stream, after_schema))
    if stream.tell() != end:
        raise ValueError(f"the record ends at byte {stream.tell()}, its block at {end}")
    plan = CleanerPlan.from_raw({**before, FILES_FIELD: None, **after})
    return PlanSlices(plan, tuple(slices))


def digest_of(data: bytes, start: int, end: int) -> bytes:
    """What an executor compares the bytes it read for a range with: the plan file must be the
    one the driver read (a cryptographic digest: job 2 does not check its paths again)."""
    return hashlib.blake2b(memoryview(data)[start:end], digest_size=32).digest()


def decode_files(data: bytes | memoryview) -> list[tuple[str | None, bool | None]]:
    """One partition's slice (an array of HoodieCleanFileInfo): per file its `filePath` and
    `isBootstrapBaseFile` as written. Decoded here rather than by fastavro, which builds a
    dict per file at twice the cost; strings must be UTF-8 and the slice must end with the
    array. Bytes that are not such an array raise ValueError."""
    data = bytes(data)
    found: list[tuple[str | None, bool | None]] = []
    add = found.append
    pos = 0
    while True:
        count, _, pos = _block(data, pos, len(data))
        if count == 0:
            break
        for _ in range(count):
            branch = data[pos]
            if branch == 2:  # filePath: the string branch
                b = data[pos + 1]
                if b < 0x80:  # lengths below 64 take one byte, below 8192 two: inlined
                    n, pos = b, pos + 2
                elif data[pos + 2] < 0x80:
                    n, pos = (b & 0x7F) | (data[pos + 2] << 7), pos + 3
                else:
                    n = -1
                if n >= 0:
                    length = (n >> 1) ^ -(n & 1)  # zig-zag: an odd n is a negative length
                else:
                    length, pos = _long(data, pos + 1)
                if length < 0 or pos + length > len(data):
                    raise ValueError(f"a filePath of {length} bytes runs past the slice")
                path: str | None = data[pos:pos + length].decode()
                pos += length
            elif branch == 0:
                path = None
                pos += 1
            else:
                raise ValueError(f"union index {branch} in a filePath")
            branch = data[pos]
            if branch == 0:
                add((path, None))
                pos += 1
            elif branch == 2 and data[pos + 1] in (0, 1):
                add((path, data[pos + 1] == 1))
                pos += 2
            else:
                raise ValueError(f"union index {branch} (or a bad boolean) in isBootstrapBaseFile")
    if pos != len(data):
        raise ValueError(f"the files' array ends at byte {pos} of {len(data)}")
    return found


def encode_partition_entry(metadata: CleanPartitionMetadata) -> bytes:
    """One entry of HoodieCleanMetadata's `partitionMetadata` map: the partition, then its
    HoodieCleanPartitionMetadata."""
    _, _, _, _, values = _layout(METADATA)
    out = io.BytesIO()
    key = metadata.partition.encode()
    out.write(_encode_long(len(key)))
    out.write(key)
    fastavro.schemaless_writer(out, values, metadata.to_raw())
    return out.getvalue()


def decode_partition_entry(entry: bytes) -> CleanPartitionMetadata:
    """An entry `encode_partition_entry` wrote."""
    _, _, _, _, values = _layout(METADATA)
    length, pos = _long(entry, 0)
    stream = io.BytesIO(entry)
    stream.seek(pos + length)
    partition = entry[pos:pos + length].decode()
    return CleanPartitionMetadata.from_raw(partition, cast(dict[str, Any], fastavro.schemaless_reader(stream, values)))


def encode_clean_metadata(metadata: CleanMetadata, entries: Sequence[bytes]) -> bytes:
    """The completed clean's file: `metadata` (its `partitions` left out) with the
    `partitionMetadata` map made of `entries` (`encode_partition_entry`), in their order, as
    one block."""
    record = metadata.to_raw()
    _, _, before_schema, after_schema, _ = _layout(METADATA)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, before_schema, _fields_of(before_schema, record), strict_allow_default=True)
    if entries:
        out.write(_encode_long(len(entries)))
        for entry in entries:
            out.write(entry)
    out.write(b"\x00")
    fastavro.schemaless_writer(out, after_schema, _fields_of(after_schema, record), strict_allow_default=True)
    return avro.container(METADATA, out.getvalue())


def _fields_of(part: Any, record: dict[str, Any]) -> dict[str, Any]:
    names = {f["name"] for f in part["fields"]}
    return {k: v for k, v in record.items() if k in names}
