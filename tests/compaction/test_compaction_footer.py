"""The record-key footer of a base file as Hudi writes it (timeline/services/bloom.py): rebuilt
from the record keys of every Hudi-written base file among the fixtures, the DYNAMIC_V0 bloom
filter equals Hudi's byte for byte; and the column stats of those files as the metadata table's
`column_stats` holds them (timeline/services/compaction_mdt.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from tests.helpers import FIXTURES, unzip_table
from timeline import HudiTable
from timeline.mdt.reader import MetadataTable
from timeline.services.bloom import BLOOM_FOOTER_KEY, DynamicBloomFilter, bloom_filter, key_footer, murmur_hash
from timeline.services.compaction_mdt import file_column_stats


def test_the_bloom_filter_and_key_range_equal_hudis_on_every_fixture_base_file(
        fixture_lake: dict[str, Path]) -> None:
    checked = 0
    for path in fixture_lake.values():
        for file in path.rglob("*.parquet"):
            footer = pq.read_metadata(file).metadata or {}
            if BLOOM_FOOTER_KEY.encode() not in footer:
                continue
            keys = pq.read_table(file, columns=["_hoodie_record_key"]).column(0).to_pylist()
            ours = key_footer(keys)
            theirs = {k.encode(): footer[k.encode()] for k in ours}
            assert {k.encode(): v.encode() for k, v in ours.items()} == theirs, file
            checked += 1
    assert checked >= 100


def test_hadoop_murmur_hash_and_the_dynamic_rows() -> None:
    # Hadoop's MurmurHash: empty input is the seed's mix; a 3-byte tail takes the signed-byte branch
    assert murmur_hash(b"", 0) == 0
    assert murmur_hash(b"\xff\xff\xff", 0) != murmur_hash(b"\x7f\xff\xff", 0)
    bloom = DynamicBloomFilter(entries=2, fpp=0.01, max_entries=5)
    for key in "abcdefg":
        bloom.add(key)
    assert len(bloom.rows) == 3 and bloom.reached_max  # rows of 2 up to 5 entries, then the last one grows
    assert bloom.serialize()[13:25] == (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + (3).to_bytes(4, "big")


def test_column_stats_of_hudi_written_files_equal_the_metadata_tables(tmp_path: Path) -> None:
    checked = 0
    for table_id in ("sample_table/mor/avro/v9_txns_simple_meta", "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
                     "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"):
        path = unzip_table(FIXTURES / f"{table_id}.zip", tmp_path / table_id)
        table = HudiTable.open(str(path))
        live = {(r.raw["ColumnStatsMetadata"]["fileName"], r.raw["ColumnStatsMetadata"]["columnName"]):
                r.raw["ColumnStatsMetadata"] for r in MetadataTable(table).records("column_stats").values()
                if not r.is_deleted}
        columns = sorted({c for _, c in live})
        for file in path.rglob("*.parquet"):
            if ".hoodie" in file.parts:
                continue
            parquet = pq.ParquetFile(file)
            for column, entry in file_column_stats(parquet.metadata, parquet.schema_arrow, os.path.basename(file),
                                                   columns, table.version, {}).items():
                theirs = live.get((file.name, column))
                if theirs is None:
                    continue
                mine = {**entry, "minValue": entry["minValue"] and entry["minValue"][1],
                        "maxValue": entry["maxValue"] and entry["maxValue"][1]}
                assert {k: mine.get(k) for k in theirs} == dict(theirs), (file.name, column)
                checked += 1
    assert checked >= 300


def test_the_vectorised_filter_equals_adding_key_by_key() -> None:
    """`bloom_filter` hashes many keys at once with Arrow; `DynamicBloomFilter.add` is the rule."""
    import random
    import string

    draw = random.Random(41)
    alphabet = string.printable + "é€😀\x80\xff"
    keys = ["".join(draw.choice(alphabet) for _ in range(draw.randint(0, 13))) for _ in range(300)]
    one_by_one = DynamicBloomFilter()
    for key in keys:
        one_by_one.add(key)
    assert bloom_filter(keys, vectorise_from=0).serialize() == one_by_one.serialize()
    small = DynamicBloomFilter(entries=3, fpp=0.05, max_entries=10)  # rows filled and the last one grown
    for key in keys[:40]:
        small.add(key)
    assert bloom_filter(keys[:40], entries=3, fpp=0.05, max_entries=10, vectorise_from=0).serialize() == \
        small.serialize()
