"""An incremental clean plan listed through the metadata table, on a real table written by Apache
Hudi with a metadata table, cleaned once by Cleanline (the clean's metadata-table deltacommit
written with it): Hudi's cleaner lists, through the metadata table
(`HoodieBackedTableMetadata.getAllFilesInPartitions` behind the cleaner's file-system view), only
the partitions `CleanPlanner.getPartitionPathsForIncrementalCleaning` names, those written
between the last clean's earliest commit to retain and the new one; the plan is storage's
incremental plan, and a full plan deletes the same files."""

from __future__ import annotations

from pathlib import Path

import pytest

from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import CleanPlan, plan_clean
from timeline.fsview import TableListing
from timeline.mdt.listing import table_listing

TABLE = "sample_table/mor/avro/v9_txns_simple_meta"
FIRST = CleanConfig(commits_retained=3)   # the earlier clean: deletes four files of region=eu
AFTER = CleanConfig(commits_retained=2)   # one commit on: region=apac and region=us written between the two windows
TOUCHED = ("region=apac", "region=us")
MDT_NOTE = "listed through the metadata table's `files` partition (HoodieBackedTableMetadata), as Hudi does"


@pytest.fixture
def cleaned_once(table_copy) -> HudiTable:  # type: ignore[no-untyped-def]
    """The fixture cleaned once, through its metadata table, retaining three commits."""
    path: Path = table_copy(TABLE)
    table = HudiTable.open(str(path))
    first = plan_clean(table, FIRST, source="metadata")
    assert not first.incremental and first.listing == "metadata"
    assert {d.partition for d in first.files_to_delete} == {"region=eu"} and len(first.files_to_delete) == 4
    assert schedule_clean(table, first, FIRST) is not None
    (result,) = run_pending_cleans(table)
    assert result.failed == 0 and result.metadata.earliest_commit_to_retain == "20260307162618152"
    return HudiTable.open(str(path))


def facts(plan: CleanPlan) -> tuple[object, ...]:
    return ([(d.path, d.size, d.delete, d.reason) for d in plan.decisions], plan.partitions_considered,
            plan.partitions_to_delete, plan.incremental, plan.earliest_instant_to_retain)


def test_planner_incremental_through_the_metadata_table_lists_only_the_partitions_written_since(
        cleaned_once: HudiTable) -> None:
    table = cleaned_once
    since = "incremental: partitions written since 20260307162618152"
    through_mdt = plan_clean(table, AFTER, source="metadata")
    assert through_mdt.incremental and through_mdt.listing == "metadata"
    assert through_mdt.notes == (since, MDT_NOTE)
    assert through_mdt.partitions_considered == TOUCHED
    assert {d.partition for d in through_mdt.decisions} == set(TOUCHED) and len(through_mdt.decisions) == 12
    from_storage = plan_clean(table, AFTER, source="storage")
    assert from_storage.notes == (since,) and facts(through_mdt) == facts(from_storage)
    full = plan_clean(table, AFTER.with_overrides(incremental=False), source="metadata")
    assert full.partitions_considered == ("region=apac", "region=eu", "region=us")
    assert through_mdt.files_to_delete == full.files_to_delete == []  # the first clean took region=eu's
    every = plan_clean(table, CleanConfig(commits_retained=1), source="metadata")  # written since: all three
    assert every.incremental and every.partitions_considered == full.partitions_considered
    assert [d.path for d in every.files_to_delete] == \
        [d.path for d in plan_clean(table, CleanConfig(commits_retained=1, incremental=False)).files_to_delete]


def test_planner_incremental_over_a_given_metadata_listing_plans_only_its_partitions_written_since(
        cleaned_once: HudiTable) -> None:
    """A caller's listing from the metadata table (a sync's) is narrowed to the incremental
    partitions; one of them the listing lacks (not in the metadata table: no files to Hudi) is
    considered with no files."""
    table = cleaned_once
    whole, _ = table_listing(table, "metadata")
    assert sorted(whole.partitions) == ["region=apac", "region=eu", "region=us"]
    alone = plan_clean(table, AFTER, source="metadata")
    given = plan_clean(table, AFTER, source="metadata", listing=whole)
    assert given.notes == alone.notes and given.listing == "metadata" and facts(given) == facts(alone)
    lacking = TableListing({p: files for p, files in whole.partitions.items() if p != "region=us"})
    narrowed = plan_clean(table, AFTER, source="metadata", listing=lacking)
    assert narrowed.partitions_considered == TOUCHED
    assert [d for d in narrowed.decisions if d.partition == "region=us"] == []
    assert [d for d in narrowed.decisions] == [d for d in alone.decisions if d.partition == "region=apac"]


def test_planner_incremental_through_the_metadata_table_sees_what_it_lists_not_storage(
        cleaned_once: HudiTable) -> None:
    """The incremental partitions are listed from the metadata table, not storage: a file gone
    from storage that the metadata table still lists is planned (Hudi's cleaner, listing
    through it, plans it too); storage's plan does not see it."""
    table = cleaned_once
    every = CleanConfig(commits_retained=1)
    gone = plan_clean(table, every, source="metadata").files_to_delete[0]
    Path(gone.path.removeprefix("file:")).unlink()
    through_mdt = plan_clean(HudiTable.open(table.base), every, source="metadata")
    from_storage = plan_clean(HudiTable.open(table.base), every, source="storage")
    assert through_mdt.incremental and from_storage.incremental
    assert gone.path in {d.path for d in through_mdt.files_to_delete}
    assert gone.path not in {d.path for d in from_storage.decisions}
