"""The local engine plans partition by partition into the plan store (timeline/internal/plan_store/__init__.py,
`plan_clean_stored` over `timeline.mdt.listing.iter_listing`): listed, planned and written a
partition at a time, the stored plan is the whole-table plan file for file, on every fixture
(listing storage, and through the metadata table where there is one) and on a generated
multi-partition table whose folders' partitions interleave in partition order; a file the
metadata table does not list is never deleted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.common import CleanShape, full_config, generate_clean_table
from tests.helpers import FIXTURES, fixture_id, unzip_table
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.internal.plan_store import FileRow, StoredPlan, plan_clean_stored
from timeline.mdt.listing import iter_listing

ALL_FIXTURES = sorted(FIXTURES.rglob("*.zip"))
CONFIGS = [CleanConfig(commits_retained=1, incremental=False),
           CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)]


def rows_of(plan: CleanPlan) -> list[FileRow]:
    return sorted((FileRow(d.partition, d.file_name, d.path, d.size, d.delete, d.reason, d.file_id,
                           d.base_instant_time, d.is_bootstrap_base_file) for d in plan.decisions),
                  key=lambda r: (r.partition, r.file_name))


def assert_same(stored: StoredPlan, memory: CleanPlan) -> None:
    assert list(stored.iter_rows()) == rows_of(memory)
    assert stored.partitions_considered == memory.partitions_considered
    assert stored.partitions_to_delete == memory.partitions_to_delete
    assert (stored.earliest_instant_to_retain, stored.notes, stored.listing) == (
        memory.earliest_instant_to_retain, memory.notes, memory.listing)
    assert all(a.last < b.first for a, b in zip(stored.parts, stored.parts[1:], strict=False))


@pytest.mark.parametrize("archive", ALL_FIXTURES, ids=[fixture_id(a) for a in ALL_FIXTURES])
def test_the_plan_by_partition_equals_the_whole_table_plan_on_every_fixture(archive: Path, tmp_path: Path) -> None:
    table = HudiTable.open(str(unzip_table(archive, tmp_path)))
    sources = ["storage", "metadata"] if table.config.metadata_table_enabled else ["storage"]
    for n, config in enumerate(CONFIGS):
        for source in sources:
            memory = plan_clean(table, config, source=source)
            stored = plan_clean_stored(table, config, str(tmp_path / "store" / f"{n}-{source}"), part_rows=3,
                                       source=source)
            assert_same(stored, memory)


def test_the_plan_by_partition_equals_the_whole_table_plan_on_a_generated_table(tmp_path: Path) -> None:
    """Folders whose partitions interleave ("city=0001" and "city=0001-b"; "zone/a" below
    "zone", beside "zone-x"): each stored part still follows the partition order."""
    shape = CleanShape(partitions=30, groups=3, versions=4, trickle=2, hot=4, retained=3)
    path = tmp_path / "generated"
    generate_clean_table(str(path), shape)
    shutil.copytree(path / "city=0001", path / "city=0001-b")
    for nested in ("zone/a", "zone/b", "zone-x", "zone.y/c"):
        shutil.copytree(path / "city=0002", path / nested)
    table = HudiTable.open(str(path))
    listed = [p for p, _ in iter_listing(table, "storage")]
    assert listed == sorted(table.list_partitions().partitions) and "zone/a" in listed
    config = full_config(shape)
    memory = plan_clean(table, config)
    assert memory.files_to_delete
    for part_rows in (1, 50, 10_000):
        assert_same(plan_clean_stored(table, config, str(tmp_path / f"store-{part_rows}"), part_rows=part_rows),
                    memory)


MDT_FIXTURE = FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip"


def test_a_file_the_metadata_table_does_not_list_is_never_deleted_by_the_stored_plan(tmp_path: Path) -> None:
    """A failed write's leftover beside an old base file: storage's plan lists it, the plan by
    partition through the metadata table (auto) never sees it, so never deletes it."""
    path = unzip_table(MDT_FIXTURE, tmp_path)
    config = CleanConfig(commits_retained=1)
    table = HudiTable.open(str(path))
    old = Path(plan_clean(table, config, source="storage").files_to_delete[0].path.removeprefix("file:"))
    file_id, _, rest = old.name.partition("_")
    stray = old.with_name(f"{file_id[:-1]}9_{rest}")
    stray.write_bytes(old.read_bytes())
    table = HudiTable.open(str(path))
    from_storage = plan_clean_stored(table, config, str(tmp_path / "s"), source="storage")
    through_mdt = plan_clean_stored(table, config, str(tmp_path / "m"), source="auto")
    assert through_mdt.listing == "metadata" and any("metadata table" in n for n in through_mdt.notes)
    assert stray.name in {r.file_name for r in from_storage.iter_rows()}
    assert stray.name not in {r.file_name for r in through_mdt.iter_rows()}
    assert StoredPlan.open(through_mdt.uri).listing == "metadata"
