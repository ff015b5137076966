"""The clean plan read as slices and the clean's metadata joined from entries
(`timeline.metadata.planfile`): the same records as a whole decode/encode, on plans Cleanline
wrote, on plans Apache Hudi wrote (the fixtures) and on hand-made Avro with block sizes."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import fastavro
import pytest

from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import FileOutcome, Status, clean_metadata
from timeline.clean.planner import plan_clean
from timeline.exceptions import CorruptInstantError
from timeline.instant import CLEAN, Instant, State
from timeline.metadata import avro
from timeline.metadata.planfile import (
    decode_files,
    decode_partition_entry,
    encode_clean_metadata,
    encode_partition_entry,
    read_slices,
)
from timeline.metadata.records import CleanerPlan

PLAN = {"earliestInstantToRetain": {"timestamp": "20261101000100000", "action": "commit", "state": "COMPLETED"},
        "lastCompletedCommitTimestamp": "20261101000300000", "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2,
        "filePathsToBeDeletedPerPartition": {
            "city=sf": [{"filePath": f"file:/t/city=sf/f{i}.parquet", "isBootstrapBaseFile": False} for i in range(3)],
            "": [{"filePath": "file:/t/x.parquet", "isBootstrapBaseFile": None}],
            "city=la": [{"filePath": "file:/t/city=la/é.parquet", "isBootstrapBaseFile": True}]},
        "partitionsToBeDeleted": ["city=old"], "extraMetadata": {"k": "v"}}


def _same(data: bytes, path: str = "plan") -> None:
    """The slices hold what a whole decode finds."""
    whole = CleanerPlan.from_raw(avro.decode(data, path=path))
    found = read_slices(data, path=path)
    assert found is not None
    header = found.header
    assert (header.earliest_instant_to_retain, header.last_completed_commit, header.policy,
            header.partitions_to_delete, dict(header.extra_metadata), header.version) == (
        whole.earliest_instant_to_retain, whole.last_completed_commit, whole.policy,
        whole.partitions_to_delete, dict(whole.extra_metadata), whole.version)
    assert [s.partition for s in found.slices] == list(whole.files)
    for piece in found.slices:
        files = decode_files(data[piece.start:piece.end])
        assert len(files) == piece.files
        assert [(p or "", bool(b)) for p, b in files] == [(i.path, i.is_bootstrap_base_file)
                                                          for i in whole.files[piece.partition]]


def test_slices_of_a_hand_made_plan() -> None:
    _same(avro.encode("HoodieCleanerPlan", PLAN))


def _long(n: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "long", n)
    return out.getvalue()


def _plan_file(plan: dict, entries: list[tuple[str, list[dict]]], *, block_sizes: bool) -> bytes:
    """A HoodieCleanerPlan file written by hand: the fields around the files' map encoded by
    fastavro, the map's `entries` (repeats allowed) in one block each, written as Java's
    BlockingBinaryEncoder may write them (`block_sizes`: negative counts followed by the
    block's size in bytes, the Avro specification) or as one plain block."""
    fields = json.loads(avro.writer_schema_json("HoodieCleanerPlan"))["fields"]

    def part(name: str, chosen: list) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema({"type": "record", "name": name, "fields": chosen}),
                                   {f["name"]: plan[f["name"]] for f in chosen})
        return out.getvalue()

    item = fastavro.parse_schema(fields[5]["type"][1]["values"]["items"])
    encoded = []
    for partition, infos in entries:
        items = b""
        for info in infos:
            one = io.BytesIO()
            fastavro.schemaless_writer(one, item, info)
            items += one.getvalue()
        array = (_long(-len(infos)) + _long(len(items)) if block_sizes else _long(len(infos))) + items + b"\x00"
        encoded.append(_long(len(partition.encode())) + partition.encode() + array)
    if block_sizes:
        body = b"".join(_long(-1) + _long(len(e)) + e for e in encoded)
    else:
        body = _long(len(encoded)) + b"".join(encoded)
    datum = part("B", fields[:5]) + b"\x02" + body + b"\x00" + part("A", fields[6:])
    return avro.container("HoodieCleanerPlan", datum)


def _with_block_sizes(plan: dict) -> bytes:
    return _plan_file(plan, list(plan["filePathsToBeDeletedPerPartition"].items()), block_sizes=True)


def test_slices_skip_blocks_written_with_their_size() -> None:
    data = _with_block_sizes(PLAN)
    assert CleanerPlan.from_raw(avro.decode(data, path="p")).files == CleanerPlan.from_raw(PLAN).files
    _same(data)


def test_a_plan_of_another_layout_is_read_whole() -> None:
    legacy = {**PLAN, "filesToBeDeletedPerPartition": {"city=sf": ["f0.parquet"]},
              "filePathsToBeDeletedPerPartition": None}
    assert read_slices(avro.encode("HoodieCleanerPlan", legacy), path="p") is None
    other = avro.encode("HoodieCleanMetadata", {"startCleanTime": "1", "timeTakenInMillis": 1, "totalFilesDeleted": 0,
                                                "earliestCommitToRetain": "", "partitionMetadata": {}})
    assert read_slices(other, path="p") is None


@pytest.mark.parametrize("cut", [10, 200, -40, -17, -1])
def test_broken_framing_is_corrupt(cut: int) -> None:
    data = avro.encode("HoodieCleanerPlan", PLAN)
    with pytest.raises(CorruptInstantError, match="plan-file"):
        read_slices(data[:cut], path="plan-file")
    with pytest.raises(CorruptInstantError):
        read_slices(b"junk" + data, path="plan-file")
    with pytest.raises(CorruptInstantError):
        read_slices(data + data[-16:], path="plan-file")  # more after the block


def test_a_bad_union_index_is_corrupt() -> None:
    data = bytearray(avro.encode("HoodieCleanerPlan", PLAN))
    found = read_slices(bytes(data), path="p")
    assert found is not None
    data[found.slices[0].start + 1] = 0x06  # the first file's filePath union index
    with pytest.raises(CorruptInstantError, match="union index"):
        read_slices(bytes(data), path="p")


def _java_flavoured(node):  # type: ignore[no-untyped-def]
    """A schema as Java's generated classes embed it: string types as
    {"type": "string", "avro.java.string": "String"}, docs on records."""
    if node == "string":
        return {"type": "string", "avro.java.string": "String"}
    if isinstance(node, list):
        return [_java_flavoured(n) for n in node]
    if isinstance(node, dict):
        out = {k: _java_flavoured(v) if k in ("items", "values") else v for k, v in node.items()}
        if "fields" in node:
            out["fields"] = [{**f, "type": _java_flavoured(f["type"])} for f in node["fields"]]
            out["doc"] = "as Hudi's schema files document it"
        return out
    return node


def test_slices_of_a_plan_with_the_schema_java_embeds() -> None:
    """No fixture holds a requested clean; Hudi's Java writer embeds the schema of its generated
    class (avro.java.string, docs), which has the same canonical form."""
    schema = _java_flavoured(json.loads(avro.writer_schema_json("HoodieCleanerPlan")))
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), [PLAN])
    data = out.getvalue()
    assert b"avro.java.string" in data
    _same(data)
    assert read_slices(data, path="p") is not None


def test_joined_metadata_is_what_a_whole_encode_writes(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_complex_nometa")
    table = HudiTable.open(str(path))
    plan = plan_clean(table, CleanConfig(commits_retained=1)).to_record()
    outcomes = [FileOutcome(i.partition, i.path, status, False, 10, "no" if status is Status.FAILED else "")
                for n, (partition, infos) in enumerate(plan.files.items())
                for i, status in zip(infos, [Status.DELETED, Status.GONE, Status.FAILED][n % 3:] * len(infos))]
    assert outcomes
    clean = Instant("20990101000000000", CLEAN, State.INFLIGHT)
    metadata = clean_metadata(clean, plan, outcomes, 0.0)
    raw = metadata.to_raw()
    entries = [encode_partition_entry(m) for m in metadata.partitions.values()]
    joined = encode_clean_metadata(metadata, entries)
    whole = avro.encode("HoodieCleanMetadata", raw)
    # the same record, byte for byte but for the random sync marker
    assert joined[:-16].replace(joined[-16:], whole[-16:]) == whole[:-16]
    assert avro.decode(joined, path="j") == avro.decode(whole, path="w")
    assert [decode_partition_entry(e) for e in entries] == list(metadata.partitions.values())
    empty = avro.decode(encode_clean_metadata(replace(metadata, partitions={}), []), path="e")
    assert empty == avro.decode(avro.encode("HoodieCleanMetadata", replace(metadata, partitions={}).to_raw()), path="w")


def test_a_repeated_partition_key_is_read_whole() -> None:
    """Readers keep the last of a repeated map key (fastavro's dict, Java's HashMap): slices
    would deliver both arrays, so the plan is read whole."""
    first = [{"filePath": "file:/t/p/a1.parquet", "isBootstrapBaseFile": False}]
    last = [{"filePath": "file:/t/p/b1.parquet", "isBootstrapBaseFile": False}]
    for block_sizes in (False, True):
        data = _plan_file(PLAN, [("p", first), ("q", last), ("p", last)], block_sizes=block_sizes)
        whole = CleanerPlan.from_raw(avro.decode(data, path="r"))
        assert [i.path for i in whole.files["p"]] == ["file:/t/p/b1.parquet"]
        assert read_slices(data, path="r") is None
        assert read_slices(_plan_file(PLAN, [("p", first), ("q", last)], block_sizes=block_sizes),
                           path="r") is not None


@pytest.mark.parametrize("bad", [b"\x02\x02\x03x\x00\x00", b"\x01\x03\x00\x00", b"\x02\x02\xff\x7fx\x00\x00"])
def test_negative_or_overlong_lengths_are_refused(bad: bytes) -> None:
    """A zig-zag odd length is negative: refused (fastavro refuses it too), never read as
    positive nor allowed to move backwards."""
    with pytest.raises((ValueError, IndexError)):
        decode_files(bad)
    from timeline.metadata.planfile import _skip_file_infos
    with pytest.raises((ValueError, IndexError)):
        _skip_file_infos(bad, 0, len(bad))
