"""The clean plan read as slices and the clean's metadata joined from entries
(`timeline.metadata.planfile`): the same records as a whole decode/encode, on plans Cleanline
wrote, on plans Apache Hudi wrote (the fixtures) and on hand-made Avro with block sizes."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import fastavro
import pytest

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
from timeline.table import HudiTable

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


def _with_block_sizes(plan: dict) -> bytes:
    """The plan with its map and arrays written as Java's BlockingBinaryEncoder may write them:
    negative counts followed by the block's size in bytes (the Avro specification)."""
    schema = avro.schema("HoodieCleanerPlan")
    plain = io.BytesIO()
    fastavro.schemaless_writer(plain, schema, {**plan, "filePathsToBeDeletedPerPartition": None})
    before = io.BytesIO()
    fields = json.loads(avro.writer_schema_json("HoodieCleanerPlan"))["fields"]
    fastavro.schemaless_writer(before, fastavro.parse_schema({"type": "record", "name": "B", "fields": fields[:5]}),
                               {f["name"]: plan[f["name"]] for f in fields[:5]})
    after = io.BytesIO()
    fastavro.schemaless_writer(after, fastavro.parse_schema({"type": "record", "name": "A", "fields": fields[6:]}),
                               {f["name"]: plan[f["name"]] for f in fields[6:]})
    item = fastavro.parse_schema(fields[5]["type"][1]["values"]["items"])

    def long(n: int) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, "long", n)
        return out.getvalue()

    body = b""
    for partition, infos in plan["filePathsToBeDeletedPerPartition"].items():
        items = b""
        for info in infos:
            one = io.BytesIO()
            fastavro.schemaless_writer(one, item, info)
            items += one.getvalue()
        array = long(-len(infos)) + long(len(items)) + items + b"\x00"
        key = partition.encode()
        entry = long(len(key)) + key + array
        body += long(-1) + long(len(entry)) + entry
    datum = before.getvalue() + b"\x02" + body + b"\x00" + after.getvalue()
    return avro.container("HoodieCleanerPlan", datum)


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
