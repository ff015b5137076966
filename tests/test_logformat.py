"""Hudi log file blocks: synthetic round trips and corruption, and real logs written by Hudi."""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Callable
from datetime import time
from decimal import Decimal
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.exceptions import CorruptInstantError
from timeline.logformat import (
    MAGIC,
    BlockType,
    CommandBlockType,
    DeleteRecord,
    HeaderKey,
    LogBlock,
    OrderingValue,
    avro_data_block,
    command_block,
    decode_avro_records,
    decode_delete_records,
    encode_avro_records,
    encode_block,
    encode_delete_records,
    read_blocks,
)

FIXTURES = Path("/work/shared/fixtures/hudi-rs-tables")
V6_TRIPS_UPDATE = FIXTURES / "quickstart_trips_table/mor/avro/v6_trips_8i1u.zip"
V6_TRIPS_DELETE = FIXTURES / "quickstart_trips_table/mor/avro/v6_trips_8i3d.zip"
V8_TRIPS = FIXTURES / "quickstart_trips_table/mor/avro/v8_trips_8i3u1d.zip"
V6_ROLLBACK = FIXTURES / "sample_table/mor/parquet/v6_nonpartitioned_rollback.zip"

SCHEMA = json.dumps({
    "type": "record",
    "name": "trips_record",
    "namespace": "hoodie.trips",
    "fields": [
        {"name": "_hoodie_commit_time", "type": ["null", "string"], "default": None},
        {"name": "_hoodie_record_key", "type": ["null", "string"], "default": None},
        {"name": "ts", "type": "long"},
        {"name": "fare", "type": "double"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "rider", "type": ["null", "string"], "default": None},
    ],
})
RECORDS = [
    {"_hoodie_commit_time": "20250101000000000", "_hoodie_record_key": "k1", "ts": 1, "fare": 19.5,
     "tags": ["a", "b"], "rider": "rider-A"},
    {"_hoodie_commit_time": "20250101000000000", "_hoodie_record_key": "k2", "ts": -7, "fare": 0.0,
     "tags": [], "rider": None},
]


def _sample_file() -> bytes:
    return b"".join((
        avro_data_block(RECORDS, SCHEMA, "20250101000000000"),
        command_block("20250102000000000", "20250101000000000"),
        encode_block(BlockType.DELETE, {HeaderKey.SCHEMA: SCHEMA, HeaderKey.INSTANT_TIME: "20250103000000000"},
                     encode_delete_records([DeleteRecord("k1", "city=x", OrderingValue("LongWrapper", 5))])),
        encode_block(BlockType.PARQUET_DATA, {HeaderKey.INSTANT_TIME: "20250104000000000"}, b"PAR1...PAR1",
                     {HeaderKey.BLOCK_IDENTIFIER: "7"}),
    ))


def _block_bytes(data: bytes, block: LogBlock) -> bytes:
    return data[block.offset:block.offset + block.size]


def _assert_tiles(data: bytes, blocks: list[LogBlock]) -> None:
    """Blocks follow one another from offset 0; fewer than 6 bytes may be left over."""
    position = 0
    for block in blocks:
        assert block.offset == position
        assert data[position:position + len(MAGIC)] == MAGIC
        position += block.size
    assert 0 <= len(data) - position < len(MAGIC)


# --- byte layout -------------------------------------------------------------------------------

def test_command_block_matches_the_java_byte_layout() -> None:
    entries = [(0, b"20250102000000000"), (3, b"0"), (1, b"20250101000000000")]
    header = struct.pack(">i", len(entries)) + b"".join(
        struct.pack(">ii", key, len(value)) + value for key, value in entries)
    body = struct.pack(">ii", 1, 0) + header + struct.pack(">q", 0) + struct.pack(">i", 0)
    expected = MAGIC + struct.pack(">q", len(body) + 8) + body + struct.pack(">q", 6 + 8 + len(body))

    assert command_block("20250102000000000", "20250101000000000") == expected


def test_read_blocks_round_trips_several_blocks() -> None:
    data = _sample_file()

    blocks = read_blocks(data, path="mem/.f1_100.log.1_0-1-0")

    assert [b.block_type for b in blocks] == [BlockType.AVRO_DATA, BlockType.COMMAND, BlockType.DELETE,
                                              BlockType.PARQUET_DATA]
    _assert_tiles(data, blocks)
    data_block, command, delete, parquet = blocks
    assert list(data_block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert decode_avro_records(data_block.content, data_block.header[HeaderKey.SCHEMA]) == RECORDS
    assert dict(command.header) == {HeaderKey.INSTANT_TIME: "20250102000000000",
                                    HeaderKey.TARGET_INSTANT_TIME: "20250101000000000",
                                    HeaderKey.COMMAND_BLOCK_TYPE: "0"}
    assert command.content == b""
    assert list(delete.header) == [HeaderKey.SCHEMA, HeaderKey.INSTANT_TIME]
    assert decode_delete_records(delete.content) == [DeleteRecord("k1", "city=x", OrderingValue("LongWrapper", 5))]
    assert parquet.content == b"PAR1...PAR1"
    assert dict(parquet.footer) == {HeaderKey.BLOCK_IDENTIFIER: "7"}
    for block in blocks:
        assert encode_block(block.block_type, block.header, block.content, block.footer) == _block_bytes(data, block)


def test_read_blocks_sizes_and_reverse_pointers_walk_the_file_backwards() -> None:
    data = _sample_file()
    blocks = read_blocks(data, path="mem/log")

    for block in blocks:
        (length,) = struct.unpack_from(">q", data, block.offset + 6)
        assert length == block.size - 14
    offsets = []
    end = len(data)
    while end > 0:
        (pointer,) = struct.unpack_from(">q", data, end - 8)
        offsets.append(end - 8 - pointer)
        end -= pointer + 8
    assert offsets == [b.offset for b in reversed(blocks)]


def test_log_block_header_is_read_only() -> None:
    header = {HeaderKey.INSTANT_TIME: "1"}
    block = LogBlock(BlockType.COMMAND, header, b"", {}, 0, 10)
    header[HeaderKey.SCHEMA] = "{}"

    assert dict(block.header) == {HeaderKey.INSTANT_TIME: "1"}
    with pytest.raises(TypeError):
        block.header[HeaderKey.SCHEMA] = "{}"  # type: ignore[index]


def test_encode_block_refuses_corrupt_blocks() -> None:
    with pytest.raises(ValueError):
        encode_block(BlockType.CORRUPT, {}, b"x")


# --- damaged files -----------------------------------------------------------------------------

def test_read_blocks_truncated_trailing_block_becomes_corrupt() -> None:
    first = command_block("2", "1")
    second = avro_data_block(RECORDS, SCHEMA, "3")
    data = first + second[:-10]

    blocks = read_blocks(data, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.COMMAND, BlockType.CORRUPT]
    corrupt = blocks[1]
    assert (corrupt.offset, corrupt.size) == (len(first), len(second) - 10)
    assert corrupt.content == second[6:-10]
    assert dict(corrupt.header) == {} and dict(corrupt.footer) == {}


def test_read_blocks_truncated_length_field_becomes_corrupt() -> None:
    first = command_block("2", "1")

    blocks = read_blocks(first + MAGIC + b"\x00\x00", path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.COMMAND, BlockType.CORRUPT]
    assert (blocks[1].offset, blocks[1].size, blocks[1].content) == (len(first), 8, b"\x00\x00")


def test_read_blocks_junk_between_blocks_makes_the_block_before_it_corrupt() -> None:
    # Java checks that a magic follows each block; junk after a block condemns that block.
    first = command_block("2", "1")
    second = command_block("4", "3")
    junk = b"some junk bytes"
    data = first + junk + second

    blocks = read_blocks(data, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND]
    assert (blocks[0].offset, blocks[0].size) == (0, len(first) + len(junk))
    assert blocks[0].content == (first + junk)[6:]
    assert blocks[1].offset == len(first) + len(junk)
    assert dict(blocks[1].header)[HeaderKey.TARGET_INSTANT_TIME] == "3"


def test_read_blocks_ignores_fewer_than_six_trailing_bytes() -> None:
    data = command_block("2", "1") + b"#HUD"

    blocks = read_blocks(data, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.COMMAND]
    assert blocks[0].size == len(data) - 4


def test_read_blocks_reverse_pointer_mismatch_becomes_corrupt() -> None:
    block = bytearray(command_block("2", "1"))
    block[-1] ^= 0x01
    following = command_block("4", "3")

    blocks = read_blocks(bytes(block) + following, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND]
    assert blocks[0].size == len(block)


@pytest.mark.parametrize(("field_offset", "value"), [(14, 2), (18, 2), (18, 7), (22, -1)])
def test_read_blocks_unreadable_block_inside_consistent_sizes_becomes_corrupt(field_offset: int, value: int) -> None:
    # Log format version 2, block type CORRUPT (2) or 7, or a negative header count.
    block = bytearray(command_block("2", "1"))
    struct.pack_into(">i", block, field_offset, value)
    following = command_block("4", "3")

    blocks = read_blocks(bytes(block) + following, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND]
    assert (blocks[0].size, blocks[0].content) == (len(block), bytes(block[6:]))


@pytest.mark.parametrize("new_length", [lambda length: -1, lambda length: length + 2**32], ids=["negative", "over-int"])
def test_read_blocks_length_java_cannot_use_becomes_corrupt(new_length: Callable[[int], int]) -> None:
    # A negative length, or one only right in its low 32 bits (Java's int cast).
    block = bytearray(command_block("2", "1"))
    (length,) = struct.unpack_from(">q", block, 6)
    struct.pack_into(">q", block, 6, new_length(length))
    following = command_block("4", "3")

    blocks = read_blocks(bytes(block) + following, path="mem/log")

    assert [b.block_type for b in blocks] == [BlockType.CORRUPT, BlockType.COMMAND]
    assert (blocks[0].size, blocks[0].content) == (len(block), bytes(block[6:]))


def test_read_blocks_non_log_data_names_the_path() -> None:
    with pytest.raises(CorruptInstantError) as caught:
        read_blocks(b"PAR1 this is a parquet file", path="lake/t/p/.f1_100.log.1_0-1-0")

    assert caught.value.path == "lake/t/p/.f1_100.log.1_0-1-0"
    assert "lake/t/p/.f1_100.log.1_0-1-0" in str(caught.value)


def test_read_blocks_empty_file_has_no_blocks() -> None:
    assert read_blocks(b"", path="mem/log") == []


# --- block content -----------------------------------------------------------------------------

def test_encode_avro_records_round_trips_and_writes_content_version_3() -> None:
    content = encode_avro_records(RECORDS, SCHEMA)

    assert struct.unpack_from(">ii", content) == (3, len(RECORDS))
    assert decode_avro_records(content, SCHEMA) == RECORDS


def test_decode_avro_records_reads_any_content_version_and_ignores_trailing_bytes() -> None:
    content = struct.pack(">i", 2) + encode_avro_records(RECORDS, SCHEMA)[4:] + b"\x00\x01"

    assert decode_avro_records(content, SCHEMA) == RECORDS


@pytest.mark.parametrize("content", [b"\x00\x00\x00\x03", b"\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x09abc",
                                     b"\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00\x01\x07"])
def test_decode_avro_records_bad_content_names_the_path(content: bytes) -> None:
    with pytest.raises(CorruptInstantError, match="mem/log"):
        decode_avro_records(content, SCHEMA, path="mem/log")


def test_decode_avro_records_needs_a_record_schema() -> None:
    content = struct.pack(">ii", 3, 1) + struct.pack(">i", 2) + b"\x02a"

    with pytest.raises(CorruptInstantError, match="not an Avro record schema"):
        decode_avro_records(content, '"string"', path="mem/log")


def test_encode_delete_records_round_trips_every_ordering_wrapper() -> None:
    records = [
        DeleteRecord("k0", "p", None),
        DeleteRecord(None, None, OrderingValue("BooleanWrapper", True)),
        DeleteRecord("k2", "p", OrderingValue("IntWrapper", -3)),
        DeleteRecord("k3", "p", OrderingValue("LongWrapper", 2**40)),
        DeleteRecord("k4", "p", OrderingValue("FloatWrapper", 1.5)),
        DeleteRecord("k5", "p", OrderingValue("DoubleWrapper", 2.25)),
        DeleteRecord("k6", "p", OrderingValue("BytesWrapper", b"\x00\xff")),
        DeleteRecord("k7", "p", OrderingValue("StringWrapper", "z")),
        DeleteRecord("k8", "p", OrderingValue("DateWrapper", 19000)),
        DeleteRecord("k9", "p", OrderingValue("DecimalWrapper", Decimal("12.500000000000000"))),
        DeleteRecord("k10", "p", OrderingValue("TimeMicrosWrapper", time(1, 2, 3, 4))),
        DeleteRecord("k11", "p", OrderingValue("TimestampMicrosWrapper", 1_700_000_000_000_000)),
    ]

    content = encode_delete_records(records)

    assert struct.unpack_from(">ii", content) == (3, len(content) - 8)
    assert decode_delete_records(content) == records


@pytest.mark.parametrize("version", [1, 2])
def test_decode_delete_records_refuses_kryo_versions(version: int) -> None:
    content = struct.pack(">ii", version, 3) + b"abc"

    with pytest.raises(CorruptInstantError, match="Kryo"):
        decode_delete_records(content, path="mem/log")


# --- property tests ----------------------------------------------------------------------------

@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_read_blocks_random_bytes_raise_only_corrupt_instant_error(data: bytes) -> None:
    try:
        blocks = read_blocks(data, path="mem/log")
    except CorruptInstantError as error:
        assert error.path == "mem/log"
        assert not data.startswith(MAGIC)
    else:
        _assert_tiles(data, blocks)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_read_blocks_random_bytes_after_magic_never_raise(data: bytes) -> None:
    blocks = read_blocks(MAGIC + data, path="mem/log")

    _assert_tiles(MAGIC + data, blocks)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_read_blocks_damaged_file_keeps_readable_blocks_exact(draw: st.DataObject) -> None:
    data = bytearray(_sample_file())
    for _ in range(draw.draw(st.integers(0, 4))):
        position = draw.draw(st.integers(0, len(data) - 1))
        data[position] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(0, len(data)))
    damaged = bytes(data[:cut])

    try:
        blocks = read_blocks(damaged, path="mem/log")
    except CorruptInstantError:
        assert not damaged.startswith(MAGIC)
        return
    _assert_tiles(damaged, blocks)
    for block in blocks:
        if block.block_type is BlockType.CORRUPT:
            assert block.content == _block_bytes(damaged, block)[6:]
        else:
            assert encode_block(block.block_type, block.header, block.content, block.footer) == \
                _block_bytes(damaged, block)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_decoders_random_content_raise_only_corrupt_instant_error(content: bytes) -> None:
    for decode in (lambda: decode_avro_records(content, SCHEMA, path="mem/log"),
                   lambda: decode_delete_records(content, path="mem/log")):
        try:
            decode()
        except CorruptInstantError as error:
            assert error.path == "mem/log"


# --- real logs written by Hudi ---------------------------------------------------------------

def _unzip(archive_path: Path, target: Path) -> Path:
    with zipfile.ZipFile(archive_path) as archive:
        members = [name for name in archive.namelist() if not name.startswith("__MACOSX/")]
        archive.extractall(target, members)
    (table,) = [p for p in target.iterdir() if p.is_dir()]
    return table


def _log_files(table: Path) -> list[Path]:
    return sorted(p for p in table.rglob(".*") if p.is_file() and ".log." in p.name)


def _data_log_files(table: Path) -> list[Path]:
    return [p for p in _log_files(table) if ".hoodie" not in p.relative_to(table).parts]


def _blocks(path: Path) -> list[LogBlock]:
    return read_blocks(path.read_bytes(), path=str(path))


@pytest.mark.parametrize("archive", [V6_TRIPS_UPDATE, V6_TRIPS_DELETE, V8_TRIPS, V6_ROLLBACK], ids=lambda p: p.stem)
def test_read_blocks_real_logs_reencode_byte_for_byte(archive: Path, tmp_path: Path) -> None:
    table = _unzip(archive, tmp_path)
    logs = _log_files(table)
    assert _data_log_files(table)

    for log in logs:
        data = log.read_bytes()
        blocks = read_blocks(data, path=str(log))
        assert blocks, log
        assert all(b.block_type is not BlockType.CORRUPT for b in blocks), log
        _assert_tiles(data, blocks)
        assert len(data) == sum(b.size for b in blocks)
        for block in blocks:
            assert HeaderKey.INSTANT_TIME in block.header
            assert encode_block(block.block_type, block.header, block.content, block.footer) == \
                _block_bytes(data, block)


def test_read_blocks_v6_avro_records_carry_the_header_instant(tmp_path: Path) -> None:
    table = _unzip(V6_TRIPS_UPDATE, tmp_path)
    (log,) = _data_log_files(table)

    (block,) = _blocks(log)

    assert block.block_type is BlockType.AVRO_DATA
    schema = block.header[HeaderKey.SCHEMA]
    records = decode_avro_records(block.content, schema, path=str(log))
    assert records
    for record in records:
        assert record["_hoodie_commit_time"] == block.header[HeaderKey.INSTANT_TIME]
        assert record["_hoodie_partition_path"] == log.parent.name
    assert encode_avro_records(records, schema) == block.content
    assert (table / ".hoodie" / f"{block.header[HeaderKey.INSTANT_TIME]}.deltacommit").is_file()


def test_read_blocks_v8_logs_hold_updates_and_deletes_of_their_deltacommit(tmp_path: Path) -> None:
    table = _unzip(V8_TRIPS, tmp_path)
    seen: set[BlockType] = set()

    for log in _data_log_files(table):
        for block in _blocks(log):
            seen.add(block.block_type)
            instant = block.header[HeaderKey.INSTANT_TIME]
            # v8 names a log file after the deltacommit that wrote it.
            assert log.name.split(".log.")[0].endswith(f"_{instant}")
            if block.block_type is BlockType.AVRO_DATA:
                schema = block.header[HeaderKey.SCHEMA]
                records = decode_avro_records(block.content, schema, path=str(log))
                assert {r["_hoodie_commit_time"] for r in records} == {instant}
                assert encode_avro_records(records, schema) == block.content
            else:
                assert block.block_type is BlockType.DELETE
                deletes = decode_delete_records(block.content, path=str(log))
                assert deletes and {d.partition_path for d in deletes} == {log.parent.name}
                assert encode_delete_records(deletes) == block.content
    assert seen == {BlockType.AVRO_DATA, BlockType.DELETE}

    metadata_types = {b.block_type for log in _log_files(table / ".hoodie" / "metadata") for b in _blocks(log)}
    assert metadata_types == {BlockType.HFILE_DATA, BlockType.DELETE}


def test_read_blocks_v6_delete_block_lists_the_deleted_keys(tmp_path: Path) -> None:
    table = _unzip(V6_TRIPS_DELETE, tmp_path)
    (log,) = _data_log_files(table)

    (block,) = _blocks(log)

    assert block.block_type is BlockType.DELETE
    deletes = decode_delete_records(block.content, path=str(log))
    assert len(deletes) == 3
    assert all(d.partition_path == log.parent.name and d.record_key for d in deletes)
    assert encode_delete_records(deletes) == block.content


def test_read_blocks_v6_rollback_appends_a_command_block_targeting_the_rolled_back_instant(tmp_path: Path) -> None:
    table = _unzip(V6_ROLLBACK, tmp_path)
    (rollback_file,) = (table / ".hoodie").glob("*.rollback")
    with rollback_file.open("rb") as stream:
        (rollback_metadata,) = list(fastavro.reader(stream))
    (rolled_back,) = rollback_metadata["commitsRollback"]
    logs = {log: _blocks(log) for log in _data_log_files(table)}

    commands = [(log, b) for log, blocks in logs.items() for b in blocks if b.block_type is BlockType.COMMAND]

    (command_log, command), = commands
    assert command.header[HeaderKey.TARGET_INSTANT_TIME] == rolled_back
    assert command.header[HeaderKey.INSTANT_TIME] == rollback_file.name.split(".")[0]
    assert command.header[HeaderKey.COMMAND_BLOCK_TYPE] == str(int(CommandBlockType.ROLLBACK_PREVIOUS_BLOCK))
    assert command.content == b""
    assert command_block(command.header[HeaderKey.INSTANT_TIME], rolled_back) == command_log.read_bytes()
    data_blocks = [b for blocks in logs.values() for b in blocks if b.block_type is BlockType.PARQUET_DATA]
    assert rolled_back in {b.header[HeaderKey.INSTANT_TIME] for b in data_blocks}
    assert all(b.content.startswith(b"PAR1") and b.content.endswith(b"PAR1") for b in data_blocks)
