"""Listing as a stream in partition order (timeline/mdt/listing.py `iter_listing`,
timeline/mdt/stream.py `iter_files`): the metadata table's `files` partition merged key by key
is its whole listing (`MetadataTable.files`) on every fixture with a metadata table, a partition
at a time; storage's top folders whose partitions interleave are walked together."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import FIXTURES, unzip_table
from timeline import HudiTable
from timeline.mdt.listing import folder_groups, iter_listing, table_listing
from timeline.mdt.reader import MetadataTable
from timeline.mdt.stream import iter_files

MDT_FIXTURES = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta") or p.stem == "v8_trips_8i3u1d")


@pytest.mark.parametrize("archive", MDT_FIXTURES, ids=[p.stem + "-" + p.parent.name for p in MDT_FIXTURES])
def test_the_metadata_tables_stream_is_its_listing(archive: Path, tmp_path: Path) -> None:
    table = HudiTable.open(str(unzip_table(archive, tmp_path)))
    whole = MetadataTable(table).files()
    assert whole and list(iter_files(MetadataTable(table))) == sorted(whole.items())
    some = sorted(whole)[:1] + ["no/such/partition"]
    assert dict(iter_files(MetadataTable(table), some)) == {some[0]: whole[some[0]], "no/such/partition": {}}
    assert dict(iter_listing(table, "metadata")) == table_listing(table, "metadata")[0].partitions
    assert dict(iter_listing(table, "storage")) == table_listing(table, "storage")[0].partitions


def test_top_folders_are_grouped_where_their_partitions_interleave() -> None:
    folders = ["/t/b", "/t/a", "/t/a-b", "/t/a.c", "/t/ab", "/t/a-b-c", "/t/c"]
    assert folder_groups(folders) == [["/t/a", "/t/a-b", "/t/a-b-c", "/t/a.c"], ["/t/ab"], ["/t/b"], ["/t/c"]]
