"""HFile, the key-value file format of Hudi's metadata table: its base files (`*.hfile`) and
the content of its log files' HFILE_DATA blocks are HFiles (HBase's HFile version 3 as Apache
Hudi 1.x writes it with its own writer in `hudi-io`: `org.apache.hudi.io.hfile.HFileWriterImpl`,
read by `HFileReaderImpl`).

Layout (offsets from the file start; every integer big-endian):

    data blocks          "DATABLK*", cells sorted by key, one block per `block_size` bytes of cells
    meta blocks          "METABLKc", e.g. Hudi's bloom filter ("bloomFilter")
    data root index      "IDXROOT2", per data block: offset, on-disk size, first key   <- load-on-open
    meta root index      "IDXROOT2", per meta block: offset, on-disk size, name
    file info            "FILEINF2", "PBUF" + a delimited protobuf map (Hudi's "schema", ...)
    trailer              "TRABLK\"$" + a delimited protobuf, padded to 4,096 bytes, version int

A block = a 33-byte header (magic, on-disk size without header, uncompressed size without
header, previous block offset, checksum type, bytes per checksum, on-disk data size with header)
+ the (GZ-compressed) body + 4 checksum bytes per `bytes_per_checksum` chunk (Hudi writes checksum
type NULL: zeros). A cell = int key length, int value length, key (short row length, row, family
length byte 0, timestamp Long.MAX_VALUE, type byte 4 = Put), value, one MVCC varint byte 0.

Only what Hudi's metadata table uses is supported: major version 3, codecs NONE and GZ, one or
more index levels on read. Anything else raises CorruptHFileError naming the file.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

import google_crc32c

from timeline.exceptions import CleanlineError

MAGIC_LENGTH = 8
DATA = b"DATABLK*"
ENCODED_DATA = b"DATABLKE"
LEAF_INDEX = b"IDXLEAF2"
INTERMEDIATE_INDEX = b"IDXINTE2"
ROOT_INDEX = b"IDXROOT2"
META = b"METABLKc"
FILE_INFO = b"FILEINF2"
TRAILER = b'TRABLK"$'
PBUF = b"PBUF"

HEADER = struct.Struct(">8siiqbii")  # HFileBlock header with checksum fields (33 bytes)
CELL_HEADER = struct.Struct(">ii")
TRAILER_SIZE = 4096                  # FixedFileTrailer of major version 3
MAJOR_VERSION = 3
MINOR_VERSION = 0
CHECKSUM_NULL = 0
CHECKSUM_CRC32C = 2                  # ChecksumType.CRC32C, HBase's default
MINOR_VERSION_HBASE = 3              # HBase's writer (Hudi 0.x, 1.0) writes 3.3
MAXIMUM = 255                        # KeyValue.Type.Maximum, the type of HBase's "first on row" index keys
BYTES_PER_CHECKSUM = 16 * 1024
CHECKSUM_SIZE = 4
LATEST_TIMESTAMP = (1 << 63) - 1     # HConstants.LATEST_TIMESTAMP, every Hudi cell's timestamp
PUT = 4                              # KeyValue.Type.Put
NO_PREVIOUS_BLOCK = -1
CODEC_NONE = 2                       # Compression.Algorithm ordinals: LZO 0, GZ 1, NONE 2, ...
CODEC_GZ = 1
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"


class CorruptHFileError(CleanlineError):
    """An HFile this module cannot read: not an HFile, truncated, or a feature Hudi's metadata
    table does not use."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: not a readable HFile: {reason}")
        self.path = path


@dataclass(frozen=True)
class Trailer:
    """FixedFileTrailer (`HFileTrailer` in hudi-io), protobuf fields by number."""

    file_info_offset: int = 0                 # 1
    load_on_open_offset: int = 0              # 2
    uncompressed_data_index_size: int = 0     # 3
    total_uncompressed_bytes: int | None = None  # 4 (Hudi's writer leaves it out)
    data_index_count: int = 0                 # 5
    meta_index_count: int = 0                 # 6
    entry_count: int = 0                      # 7
    data_index_levels: int = 1                # 8
    first_data_block_offset: int = 0          # 9
    last_data_block_offset: int = 0           # 10
    comparator: str = ""                      # 11
    codec: int = CODEC_NONE                   # 12
    major_version: int = MAJOR_VERSION
    minor_version: int = MINOR_VERSION


@dataclass(frozen=True)
class HFile:
    """The cells of one HFile in key order (row key bytes, value bytes), its file info and
    meta blocks (by name), and its trailer."""

    cells: tuple[tuple[bytes, bytes], ...]
    file_info: Mapping[bytes, bytes] = field(default_factory=dict)
    meta: Mapping[str, bytes] = field(default_factory=dict)
    trailer: Trailer = field(default_factory=Trailer)

    def keys(self) -> list[bytes]:
        return [key for key, _ in self.cells]


# ---------------------------------------------------------------------------------------
# Protobuf wire format (the trailer and file info are two small messages; varints and
# length-delimited fields only)


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if offset >= len(data):
            raise ValueError("truncated varint")
        byte = data[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, offset
        shift += 7


def _put_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(message: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: ints for varints, bytes for the rest."""
    offset = 0
    while offset < len(message):
        key, offset = _varint(message, offset)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, offset = _varint(message, offset)
            yield number, value
        elif wire == 2:
            length, offset = _varint(message, offset)
            if offset + length > len(message):
                raise ValueError("truncated field")
            yield number, message[offset:offset + length]
            offset += length
        elif wire == 1:
            yield number, message[offset:offset + 8]
            offset += 8
        elif wire == 5:
            yield number, message[offset:offset + 4]
            offset += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def _delimited(data: bytes, offset: int = 0) -> bytes:
    length, start = _varint(data, offset)
    if start + length > len(data):
        raise ValueError("truncated message")
    return data[start:start + length]


def _int_field(number: int, value: int) -> bytes:
    return _put_varint(number << 3) + _put_varint(value)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _put_varint(number << 3 | 2) + _put_varint(len(value)) + value


# ---------------------------------------------------------------------------------------
# Hadoop's WritableUtils variable-length longs (root index key lengths)


def _read_vlong(data: bytes, offset: int) -> tuple[int, int]:
    first = struct.unpack_from(">b", data, offset)[0]
    if first >= -112:
        return first, offset + 1
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = 0
    for i in range(1, size):
        value = (value << 8) | data[offset + i]
    return (~value if negative else value), offset + size


def _write_vlong(value: int) -> bytes:
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    tmp = value
    while tmp:
        tmp >>= 8
        length -= 1
    size = (-(length + 120)) if length < -120 else (-(length + 112))
    return struct.pack(">b", length) + value.to_bytes(size, "big")


# ---------------------------------------------------------------------------------------
# Reading


def _block(data: bytes, offset: int, codec: int, path: str) -> tuple[bytes, bytes, int]:
    """(magic, uncompressed body, offset of the next block) of the block at `offset`."""
    if offset + HEADER.size > len(data):
        raise CorruptHFileError(path, f"block header at {offset} past the end")
    magic, on_disk, uncompressed, _, _, per_checksum, data_with_header = HEADER.unpack_from(data, offset)
    end = offset + HEADER.size + on_disk
    if on_disk < 0 or end > len(data) or data_with_header < HEADER.size or data_with_header > HEADER.size + on_disk:
        raise CorruptHFileError(path, f"block at {offset} claims {on_disk} bytes")
    body = data[offset + HEADER.size:offset + data_with_header]
    if codec == CODEC_GZ:
        try:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            body = inflater.decompress(body)
        except zlib.error as exc:
            raise CorruptHFileError(path, f"block at {offset}: {exc}") from exc
    elif codec != CODEC_NONE:
        raise CorruptHFileError(path, f"compression codec {codec} (only NONE and GZ are read)")
    if len(body) != uncompressed:
        raise CorruptHFileError(path, f"block at {offset}: {len(body)} bytes, header says {uncompressed}")
    return magic, body, end


def _cells(body: bytes, path: str) -> Iterator[tuple[bytes, bytes]]:
    offset = 0
    while offset < len(body):
        key_length, value_length = CELL_HEADER.unpack_from(body, offset)
        key_start = offset + CELL_HEADER.size
        row_length = struct.unpack_from(">H", body, key_start)[0]
        value_start = key_start + key_length
        if row_length + 2 > key_length or value_start + value_length >= len(body) + 1:
            raise CorruptHFileError(path, f"cell at {offset} runs past its block")
        yield body[key_start + 2:key_start + 2 + row_length], body[value_start:value_start + value_length]
        offset = value_start + value_length + 1  # the MVCC varint: Hudi writes 0 (one byte)


def read_trailer(data: bytes, *, path: str) -> Trailer:
    if len(data) < TRAILER_SIZE or data[-TRAILER_SIZE:-TRAILER_SIZE + MAGIC_LENGTH] != TRAILER:
        raise CorruptHFileError(path, "no HFile trailer")
    block = data[-TRAILER_SIZE:]
    minor, major = block[-4], int.from_bytes(block[-3:], "big")
    if major != MAJOR_VERSION:
        raise CorruptHFileError(path, f"HFile version {major}.{minor} (only 3 is read)")
    names = {1: "file_info_offset", 2: "load_on_open_offset", 3: "uncompressed_data_index_size",
             4: "total_uncompressed_bytes", 5: "data_index_count", 6: "meta_index_count", 7: "entry_count",
             8: "data_index_levels", 9: "first_data_block_offset", 10: "last_data_block_offset",
             11: "comparator", 12: "codec"}
    values: dict[str, int | str | None] = {}
    try:
        for number, value in _fields(_delimited(block, MAGIC_LENGTH)):
            if number in names:
                values[names[number]] = value.decode() if isinstance(value, bytes) else value
    except (ValueError, UnicodeDecodeError) as exc:
        raise CorruptHFileError(path, f"trailer: {exc}") from exc
    return Trailer(**values, major_version=major, minor_version=minor)  # type: ignore[arg-type]  # values typed by field number


def _root_index(body: bytes, count: int) -> list[tuple[int, int, bytes]]:
    entries, offset = [], 0
    for _ in range(count):
        block_offset, size = struct.unpack_from(">qi", body, offset)
        length, offset = _read_vlong(body, offset + 12)
        entries.append((block_offset, size, body[offset:offset + length]))
        offset += length
    return entries


def read_hfile(data: bytes, *, path: str) -> HFile:
    """Every cell of an HFile, its file info and meta blocks. The cells are read block by block
    from the first data block to the last (the trailer's offsets), and their number is checked
    against the trailer's entry count."""
    trailer = read_trailer(data, path=path)
    codec = trailer.codec
    cells: list[tuple[bytes, bytes]] = []
    if trailer.entry_count:
        offset = trailer.first_data_block_offset
        while offset <= trailer.last_data_block_offset:
            magic, body, offset = _block(data, offset, codec, path)
            if magic not in (DATA, ENCODED_DATA):
                if magic in (LEAF_INDEX, INTERMEDIATE_INDEX, META):  # inline blocks between data blocks
                    continue
                raise CorruptHFileError(path, f"unexpected {magic!r} among the data blocks")
            if magic == ENCODED_DATA:
                raise CorruptHFileError(path, "encoded data blocks are not read")
            cells.extend(_cells(body, path))
    if len(cells) != trailer.entry_count:
        raise CorruptHFileError(path, f"{len(cells)} cells read, the trailer says {trailer.entry_count}")
    offset = trailer.load_on_open_offset
    meta: dict[str, bytes] = {}
    try:
        _, _, offset = _block(data, offset, codec, path)  # the data root index
        magic, body, _ = _block(data, offset, codec, path)
        if magic != ROOT_INDEX:
            raise CorruptHFileError(path, f"expected the meta index, found {magic!r}")
        for block_offset, _, name in _root_index(body, trailer.meta_index_count):
            _, meta_body, _ = _block(data, block_offset, codec, path)
            meta[name.decode()] = meta_body
        info = _read_file_info(data, trailer.file_info_offset, codec, path)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        raise CorruptHFileError(path, str(exc)) from exc
    return HFile(tuple(cells), info, meta, trailer)


def _read_file_info(data: bytes, offset: int, codec: int, path: str) -> dict[bytes, bytes]:
    magic, body, _ = _block(data, offset, codec, path)
    if magic != FILE_INFO or not body.startswith(PBUF):
        raise CorruptHFileError(path, "no file info block")
    info: dict[bytes, bytes] = {}
    for number, entry in _fields(_delimited(body, len(PBUF))):
        if number == 1 and isinstance(entry, bytes):
            pair = dict(_fields(entry))
            first, second = pair.get(1, b""), pair.get(2, b"")
            if not isinstance(first, bytes) or not isinstance(second, bytes):
                raise ValueError("a file info entry that is not two byte strings")
            info[first] = second
    return info


def stream_hfile(reader: BinaryIO, *, path: str) -> tuple[dict[bytes, bytes], Iterator[tuple[bytes, bytes]]]:
    """An HFile's file info, and its cells read a data block at a time from a seekable reader
    (the reader stays open until the cells are read): what `read_hfile` gives, holding one
    block, not the file (a metadata table's base file of 10 million entries is about a GB)."""
    size = reader.seek(0, 2)
    reader.seek(max(0, size - TRAILER_SIZE))
    trailer = read_trailer(reader.read(TRAILER_SIZE), path=path)
    reader.seek(trailer.load_on_open_offset)
    tail = reader.read(size - trailer.load_on_open_offset)
    try:
        info = _read_file_info(tail, trailer.file_info_offset - trailer.load_on_open_offset, trailer.codec, path)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        raise CorruptHFileError(path, str(exc)) from exc
    return info, _streamed_cells(reader, trailer, path)


def _streamed_cells(reader: BinaryIO, trailer: Trailer, path: str) -> Iterator[tuple[bytes, bytes]]:
    count, offset = 0, trailer.first_data_block_offset
    while trailer.entry_count and offset <= trailer.last_data_block_offset:
        reader.seek(offset)
        head = reader.read(HEADER.size)
        if len(head) < HEADER.size:
            raise CorruptHFileError(path, f"block header at {offset} past the end")
        magic, body, length = _block(head + reader.read(HEADER.unpack_from(head)[1]), 0, trailer.codec, path)
        offset += length
        if magic in (LEAF_INDEX, INTERMEDIATE_INDEX, META):
            continue
        if magic != DATA:
            raise CorruptHFileError(path, f"unexpected {magic!r} among the data blocks")
        for cell in _cells(body, path):
            count += 1
            yield cell
    if count != trailer.entry_count:
        raise CorruptHFileError(path, f"{count} cells read, the trailer says {trailer.entry_count}")


def cell_key(row: bytes) -> bytes:
    """The full HBase key of a cell Hudi writes: row, no family or qualifier, the latest
    timestamp, type Put."""
    return struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">qB", LATEST_TIMESTAMP, PUT)


def index_key(row: bytes) -> bytes:
    """The key a root index entry names: Hudi's writer indexes the row with its length only."""
    return struct.pack(">H", len(row)) + row


# ---------------------------------------------------------------------------------------
# Writing (the file a HFILE_DATA log block holds; Hudi's writer with its metadata-table
# defaults: GZ, 16 KiB checksum chunks of type NULL, no meta blocks)

DEFAULT_BLOCK_SIZE = 1024 * 1024
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"  # java.util.zip.GZIPOutputStream's


def _gzip(body: bytes) -> bytes:
    """GZIPOutputStream's bytes: its fixed header, a default-level deflate stream, CRC-32 and size."""
    deflater = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return (_GZIP_HEADER + deflater.compress(body) + deflater.flush()
            + struct.pack("<II", zlib.crc32(body), len(body) & 0xFFFFFFFF))


def _write_block(magic: bytes, body: bytes, codec: int, previous: int = NO_PREVIOUS_BLOCK, *,
                 checksum: int = CHECKSUM_NULL) -> bytes:
    """One block: header, body (compressed with `codec`), and 4 checksum bytes per
    `BYTES_PER_CHECKSUM` chunk of the header and body: zeros for NULL (Hudi's writer), the
    chunks' CRC32C for HBase's (`ChecksumUtil.generateChecksums`)."""
    data = _gzip(body) if codec == CODEC_GZ else body
    with_header = HEADER.size + len(data)
    chunks = -(-with_header // BYTES_PER_CHECKSUM)
    header = HEADER.pack(magic, len(data) + CHECKSUM_SIZE * chunks, len(body), previous, checksum,
                         BYTES_PER_CHECKSUM, with_header)
    if checksum == CHECKSUM_NULL:
        return header + data + bytes(CHECKSUM_SIZE * chunks)
    block = header + data
    sums = b"".join(struct.pack(">I", google_crc32c.value(block[i:i + BYTES_PER_CHECKSUM]))
                    for i in range(0, len(block), BYTES_PER_CHECKSUM))
    return block + sums


def java_hashmap_order(keys: Sequence[str]) -> list[str]:
    """The iteration order of a java.util.HashMap<String, ?> filled with `keys` in this order:
    by bucket (String.hashCode spread as HashMap.hash does, modulo the table size, which
    doubles past 3/4 full), then insertion order. Hudi's writer keeps its file info so."""
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(key: str) -> int:
        h = 0
        for unit in struct.unpack(f">{len(key.encode('utf-16-be')) // 2}H", key.encode("utf-16-be")):
            h = (31 * h + unit) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket


def write_hfile(cells: Sequence[tuple[bytes, bytes]], file_info: Sequence[tuple[str, bytes]] = (), *,
                created_ms: int, block_size: int = DEFAULT_BLOCK_SIZE, codec: int = CODEC_GZ,
                hbase: bool = False) -> bytes:
    """An HFile of `cells` (row, value), rows strictly ascending (Hudi refuses duplicate keys in
    one block), with `file_info` entries (e.g. Hudi's "schema") beside the writer's own
    (`hfile.LASTKEY`, average key and value lengths, `KEY_VALUE_VERSION`, `MAX_MEMSTORE_TS_KEY`,
    `hfile.CREATE_TIME_TS` = `created_ms`).

    By default as Hudi 1.1+'s own writer (`HFileWriterImpl` in hudi-io) writes it, the writer of
    table versions 8 and 9: a cell that would take the block past `block_size` starts a new one
    (a cell alone larger than `block_size` has a block to itself); index keys are rows; file info
    in java.util.HashMap order; NULL checksums; version 3.0. Each block names the previous data
    block's offset (1.1 and 1.2 wrote the block's own offset there, apache/hudi#19083; readers
    ignore it); index key lengths are Hadoop variable-length ints, as HBase's writer and Hudi's
    since apache/hudi#18465 write them.

    With `hbase`, as HBase's `HFileWriterImpl` (shaded in Hudi 0.x and 1.0, `HoodieHFileDataBlock`)
    writes it, the writer of table version 6: a block is finished once it holds `block_size`
    bytes (`checkBlockBoundary`); index keys are whole cell keys, the first of a block after the
    first being `CellUtil.getMidpoint` of the previous block's last row and its first row; file
    info sorted by key bytes (HFileInfo's TreeMap); CRC32C checksums; the trailer's data-index
    size and total uncompressed bytes (`finishClose`); version 3.3."""
    rows = [row for row, _ in cells]
    if any(a >= b for a, b in zip(rows, rows[1:])):
        raise ValueError("HFile cells must have strictly ascending, unique keys")
    checksum = CHECKSUM_CRC32C if hbase else CHECKSUM_NULL
    out = bytearray()
    blocks = _write_data_blocks(out, cells, block_size=block_size, codec=codec, checksum=checksum, hbase=hbase)
    load_on_open = len(out)
    root = b"".join(struct.pack(">qi", o, n) + _write_vlong(len(k)) + k for o, n, k in blocks.index)
    out.extend(_write_block(ROOT_INDEX, root, codec, checksum=checksum))
    out.extend(_write_block(ROOT_INDEX, b"", codec, load_on_open if hbase else NO_PREVIOUS_BLOCK,
                            checksum=checksum))  # no meta blocks
    file_info_offset = len(out)
    info_body = _file_info(cells, file_info, created_ms=created_ms, hbase=hbase)
    out.extend(_write_block(FILE_INFO, info_body, codec, checksum=checksum))
    # HBase: data, meta-index and file-info blocks with headers, and the trailer
    total_uncompressed = blocks.total_uncompressed + HEADER.size + HEADER.size + len(info_body) + TRAILER_SIZE
    out.extend(_trailer(blocks, cells=len(cells), file_info_offset=file_info_offset, load_on_open=load_on_open,
                        root_size=len(root), total_uncompressed=total_uncompressed, codec=codec, hbase=hbase))
    return bytes(out)


@dataclass(frozen=True, slots=True)
class _DataBlocks:
    """What writing the data blocks leaves for the index and the trailer."""

    index: list[tuple[int, int, bytes]]  # per block: its offset, its size on disk, its index key
    uncompressed: int                    # the blocks' bodies before compression
    total_uncompressed: int              # the same with their headers (HBase's trailer counts these)


def _write_data_blocks(out: bytearray, cells: Sequence[tuple[bytes, bytes]], *, block_size: int, codec: int,
                       checksum: int, hbase: bool) -> _DataBlocks:
    """Append the data blocks of `cells` to `out`. Hudi's writer starts a new block when a cell
    would take it past `block_size` and indexes a block by its first row; HBase's finishes a
    block once it holds `block_size` bytes (`checkBlockBoundary`) and indexes it by a whole
    cell key, after the first block `CellUtil.getMidpoint` of the previous block's last row
    and its first row. Each block names the previous data block's offset."""
    index: list[tuple[int, int, bytes]] = []
    uncompressed = 0
    total_uncompressed = 0
    block = bytearray()
    first: bytes | None = None
    previous_last: bytes | None = None
    last_row = b""

    def close() -> None:
        nonlocal uncompressed, total_uncompressed
        if first is None:
            return
        start = len(out)
        out.extend(_write_block(DATA, bytes(block), codec, index[-1][0] if index else NO_PREVIOUS_BLOCK,
                                checksum=checksum))
        if not hbase:
            key = index_key(first)
        elif previous_last is None:
            key = cell_key(first)
        else:
            key = _first_on_row_key(_minimum_midpoint(previous_last, first))
        index.append((start, len(out) - start, key))
        uncompressed += len(block)
        total_uncompressed += HEADER.size + len(block)

    for row, value in cells:
        full = (len(block) >= block_size) if hbase else (len(block) + len(row) + len(value) + 21 > block_size)
        if first is not None and full:  # 21: a cell's framing
            close()
            block.clear()
            first = None
            previous_last = last_row
        if first is None:
            first = row
        key = cell_key(row)
        block += CELL_HEADER.pack(len(key), len(value)) + key + value + b"\x00"
        last_row = row
    close()
    return _DataBlocks(index, uncompressed, total_uncompressed)


def _file_info(cells: Sequence[tuple[bytes, bytes]], given: Sequence[tuple[str, bytes]], *, created_ms: int,
               hbase: bool) -> bytes:
    """The file info block's body: the `given` entries, then the writer's own that none of them
    names (last key, average key and value lengths, versions, creation time), in
    java.util.HashMap order (Hudi's writer) or sorted by key bytes (HBase's HFileInfo, a
    TreeMap); "PBUF" and a delimited protobuf map."""
    rows = [row for row, _ in cells]
    own: dict[str, bytes] = {
        "hfile.LASTKEY": (cell_key(rows[-1]) if hbase else index_key(rows[-1])) if rows else b"",
        "hfile.AVG_KEY_LEN": struct.pack(">i", sum(len(r) + (12 if hbase else 0) for r in rows) // len(rows)
                                         if rows else 0),  # HBase: the whole cell key's length
        "hfile.AVG_VALUE_LEN": struct.pack(">i", sum(len(v) for _, v in cells) // len(cells) if cells else 0),
        "KEY_VALUE_VERSION": struct.pack(">i", 1),
        "MAX_MEMSTORE_TS_KEY": struct.pack(">q", 0),
        "hfile.CREATE_TIME_TS": struct.pack(">q", created_ms),
    }
    entries = dict(given)
    entries.update({k: v for k, v in own.items() if k not in entries})
    order = sorted(entries, key=str.encode) if hbase else java_hashmap_order(list(entries))
    info = b"".join(_bytes_field(1, _bytes_field(1, k.encode()) + _bytes_field(2, entries[k])) for k in order)
    return PBUF + _put_varint(len(info)) + info


def _trailer(blocks: _DataBlocks, *, cells: int, file_info_offset: int, load_on_open: int, root_size: int,
             total_uncompressed: int, codec: int, hbase: bool) -> bytes:
    """The fixed file trailer (`TRAILER_SIZE` bytes, version last): offsets, counts and the
    comparator as protobuf fields by number; HBase's writer records the data index's size and
    the total uncompressed bytes (`finishClose`), Hudi's the data blocks' uncompressed size."""
    last_data = blocks.index[-1][0] if blocks.index else 0
    if hbase:
        sizes = _int_field(3, root_size) + _int_field(4, total_uncompressed)
    else:
        sizes = _int_field(3, blocks.uncompressed)
    trailer = (_int_field(1, file_info_offset) + _int_field(2, load_on_open) + sizes
               + _int_field(5, len(blocks.index)) + _int_field(6, 0) + _int_field(7, cells) + _int_field(8, 1)
               + _int_field(9, 0) + _int_field(10, last_data) + _bytes_field(11, COMPARATOR.encode())
               + _int_field(12, codec))
    block_bytes = TRAILER + _put_varint(len(trailer)) + trailer
    return (block_bytes + bytes(TRAILER_SIZE - 4 - len(block_bytes))
            + bytes([MINOR_VERSION_HBASE if hbase else MINOR_VERSION]) + MAJOR_VERSION.to_bytes(3, "big"))


def _minimum_midpoint(left: bytes, right: bytes) -> bytes:
    """`CellUtil.getMinimumMidpointArray` of two rows, left < right (bytes compared as Java's
    signed `byte`, as HBase does)."""
    common = min(len(left), len(right))
    diff = 0
    while diff < common and left[diff] == right[diff]:
        diff += 1
    if diff >= common:
        return right[:diff + 1]
    signed = left[diff] - 256 if left[diff] >= 128 else left[diff]
    if (signed & 0xFF) < 0xFF and signed + 1 < right[diff]:
        return left[:diff] + bytes([(signed + 1) & 0xFF])
    return right[:diff + 1]


def _first_on_row_key(row: bytes) -> bytes:
    """The key of `PrivateCellUtil.createFirstOnRow(row)`: no family or qualifier, the latest
    timestamp, type Maximum."""
    return struct.pack(">H", len(row)) + row + b"\x00" + struct.pack(">qB", LATEST_TIMESTAMP, MAXIMUM)


__all__ = ["HFile", "Trailer", "CorruptHFileError", "read_hfile", "read_trailer", "write_hfile", "cell_key",
           "index_key", "java_hashmap_order"]
