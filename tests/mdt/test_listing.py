"""Listing a table through its metadata table (timeline/mdt/listing.py), as Hudi's cleaner and
file-system view do when the `files` partition is available: on every fixture with a metadata
table the listing, the file-system view and a clean plan equal storage's; the plan says which
listing it used; auto falls back to storage where Hudi does; a file the metadata table still lists
after it left storage is seen only through the metadata table (Hudi's cleaner sees it too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, unzip_table
from timeline import CleanConfig, HudiTable
from timeline.clean.planner import plan_clean
from timeline.cli import main
from timeline.files import PARTITION_METADATA_FILES
from timeline.mdt.listing import ListingSource, resolve, table_listing
from timeline.mdt.reader import MetadataTableMissing

MDT_FIXTURES = sorted(p for p in FIXTURES.rglob("*.zip") if p.stem.endswith("_meta") or p.stem == "v8_trips_8i3u1d")
NO_MDT = "sample_table/cow/v9_txns_simple_nometa"


@pytest.fixture(params=MDT_FIXTURES, ids=[p.stem + "-" + p.parent.name for p in MDT_FIXTURES])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return unzip_table(request.param, tmp_path)


def files_of(listing: object) -> dict[str, dict[str, int]]:
    return {p: {s.name: s.size for s in files if s.name not in PARTITION_METADATA_FILES}
            for p, files in listing.partitions.items()}  # type: ignore[attr-defined]


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> object:
    assert main([*args, "--json"]) in (0, None)
    return json.loads(capsys.readouterr().out)


def test_metadata_listing_view_and_plan_equal_storages(lake: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = HudiTable.open(str(lake))
    assert resolve(table, ListingSource.AUTO) is ListingSource.METADATA
    through_mdt, used = table_listing(table, "metadata")
    assert used is ListingSource.METADATA
    assert all(s.mtime_ms == -1 for files in through_mdt.partitions.values() for s in files), "nothing per file read"
    assert files_of(through_mdt) == files_of(table_listing(table, "storage")[0])
    config = CleanConfig(commits_retained=1)
    from_mdt, from_storage = plan_clean(table, config, source="auto"), plan_clean(table, config, source="storage")
    assert (from_mdt.listing, from_storage.listing) == ("metadata", "storage")
    assert any("metadata table" in note for note in from_mdt.notes)
    assert [(d.path, d.size, d.delete) for d in from_mdt.decisions] == \
        [(d.path, d.size, d.delete) for d in from_storage.decisions]
    assert cli_json(capsys, "fsview", str(lake), "--listing", "metadata") == \
        cli_json(capsys, "fsview", str(lake), "--listing", "storage")
    assert cli_json(capsys, "clean", "plan", str(lake), "--retain-commits", "1",
                    "--allow-short-retention")["listing"] == "metadata"  # type: ignore[index]


def test_auto_lists_storage_without_a_metadata_table_and_metadata_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = unzip_table(FIXTURES / f"{NO_MDT}.zip", tmp_path)
    table = HudiTable.open(str(path))
    assert resolve(table, "auto") is ListingSource.STORAGE
    assert plan_clean(table, CleanConfig(commits_retained=1), source="auto").listing == "storage"
    with pytest.raises(MetadataTableMissing, match="--listing storage"):
        table_listing(table, "metadata")
    assert main(["clean", "plan", str(path), "--listing", "metadata"]) == 2  # a refusal, nothing planned
    assert "--listing storage" in capsys.readouterr().err


def test_a_file_gone_from_storage_but_listed_is_seen_only_through_the_metadata_table(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path)
    table = HudiTable.open(str(path))
    old = plan_clean(table, CleanConfig(commits_retained=1), source="storage").files_to_delete[0]
    Path(old.path.removeprefix("file:")).unlink()  # gone from storage; the metadata table still lists it
    table = HudiTable.open(str(path))
    through_mdt = plan_clean(table, CleanConfig(commits_retained=1), source="metadata")
    from_storage = plan_clean(table, CleanConfig(commits_retained=1), source="storage")
    assert old.path in {d.path for d in through_mdt.files_to_delete}, "Hudi's cleaner plans it (already gone)"
    assert old.path not in {d.path for d in from_storage.decisions}


def test_a_file_the_metadata_table_does_not_list_is_never_deleted(tmp_path: Path) -> None:
    """A file on storage that no completed write put in the metadata table (a failed write's
    leftover, copied here beside an old base file) is not seen through the metadata table, so no
    plan made from it deletes it, even where storage's plan would."""
    path = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path)
    table = HudiTable.open(str(path))
    old = Path(plan_clean(table, CleanConfig(commits_retained=1), source="storage").files_to_delete[0].path
               .removeprefix("file:"))
    file_id, _, rest = old.name.partition("_")
    stray = old.with_name(f"{file_id[:-1]}9_{rest}")  # another file group, same old instant: storage would clean it
    stray.write_bytes(old.read_bytes())
    table = HudiTable.open(str(path))
    from_storage = plan_clean(table, CleanConfig(commits_retained=1), source="storage")
    through_mdt = plan_clean(table, CleanConfig(commits_retained=1), source="auto")
    assert through_mdt.listing == "metadata"
    assert stray.name not in {Path(d.path).name for d in through_mdt.decisions}
    assert stray.name in {Path(d.path).name for d in from_storage.decisions}


def test_auto_lists_storage_while_the_files_partition_is_being_built(tmp_path: Path) -> None:
    """HoodieTableConfig.isMetadataTableAvailable: a `files` partition still inflight (being
    built by a Hudi writer) is not used; auto lists storage and `metadata` is refused."""
    from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config

    path = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path)
    table = HudiTable.open(str(path))
    update_config(table.storage, table.base, {MDT_PARTITIONS: "", MDT_PARTITIONS_INFLIGHT: "files"})
    table = HudiTable.open(str(path))
    assert resolve(table, "auto") is ListingSource.STORAGE
    with pytest.raises(MetadataTableMissing):
        table_listing(table, "metadata")
