"""A table's size, layout and reclaimable figures for the dashboard and the overview, kept at sync
time without a full storage listing per sync (issue 29):

- a table with a valid metadata table (its `files` partition available, Hudi's own choice,
  `timeline.mdt.listing.ListingSource.AUTO`) is listed through it at every sync that changed
  something: totals, layout and reclaimable bytes "from the metadata table";
- any other table is listed from storage only when a full sync is asked for: its first sync, a
  "full re-sync" (the overview's button, `POST /api/v1/tables/<id>/sync` with `"full": true`) or
  a sync Cleanline queues after changing the table's files (a clean, restore or rollback). Between
  those its totals and layout stay as that listing found them, and the reclaimable figure comes
  from the newest of that listing and the table's last plan ("from plan #X at T").

The figures say where they came from: `layout_summary["source"]` (`Table.figures_source`) and
the reclaimable figure's own `source`."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.utils import timezone

from console.models import CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.services.compaction import backlog_figures
from timeline import CleanConfig, CleanlineError, CleanPolicy, FileSystemView, HudiTable
from timeline.clean.whatif import UNITS, reclaimable
from timeline.fsview import TableListing
from timeline.mdt.listing import ListingSource, resolve, table_listing

# the key of `table_figures`' answer holding the compaction backlog of the listing (not a Table field:
# the sync keeps it in `Table.services`)
BACKLOG = "compaction_backlog"

# plans whose figure stands for what a clean would free (a failed or unfinished one says nothing)
_PLANNED = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING,
            ApprovalStatus.STALE, ApprovalStatus.REJECTED, ApprovalStatus.COMPLETED)


def listing_source(lake: HudiTable) -> ListingSource:
    """Hudi's choice: the metadata table when its `files` partition is available, else storage."""
    return resolve(lake, ListingSource.AUTO)


def table_figures(table: Table, lake: HudiTable, *, full: bool) -> dict[str, Any] | None:
    """The fields of `Table` to update (total_bytes, total_files, layout_summary) and the
    compaction backlog of the same listing (under BACKLOG: None for a copy-on-write table), or
    None when the table keeps what it has but the reclaimable figure's newest source (a later
    plan)."""
    now = timezone.now().isoformat()
    if listing_source(lake) is ListingSource.METADATA:
        try:
            listing, _ = table_listing(lake, ListingSource.METADATA)
        except CleanlineError:  # being built, unreadable: storage, as Hudi falls back
            listing = None
        if listing is not None:
            return _from_listing(lake, listing, ListingSource.METADATA, {"kind": "metadata", "at": now})
    if full:
        listing, _ = table_listing(lake, ListingSource.STORAGE)
        return _from_listing(lake, listing, ListingSource.STORAGE, {"kind": "storage", "at": now})
    return None


def _from_listing(lake: HudiTable, listing: TableListing, used: ListingSource,
                  source: dict[str, Any]) -> dict[str, Any]:
    sizes = [s.size for files in listing.partitions.values() for s in files]
    view = lake.file_system_view(listing=listing)
    layout = _layout_summary(view)
    layout["reclaimable"] = _reclaimable(lake, listing, used) | {"source": source}
    layout["source"] = source
    backlog = backlog_figures(lake, view)
    return {"total_bytes": sum(sizes), "total_files": len(sizes), "layout_summary": layout,
            BACKLOG: None if backlog is None else backlog | {"source": source}}


def plan_figure(table: Table, layout: dict[str, Any]) -> dict[str, Any]:
    """`layout` with its reclaimable figure from the table's last plan when that plan is newer
    than the listing the figure came from (a completed plan's clean left nothing of what it
    found); `layout` unchanged otherwise."""
    plan = table.clean_plans.filter(status__in=_PLANNED).order_by("-requested_at", "-pk").first()
    if plan is None:
        return layout
    listed = str((layout.get("reclaimable") or {}).get("source", {}).get("at") or layout.get("source", {}).get("at")
                 or "")
    at = plan.requested_at.isoformat()
    if listed and listed >= at:
        return layout
    return {**layout, "reclaimable": _of_plan(plan, at)}


def _of_plan(plan: CleanPlan, at: str) -> dict[str, Any]:
    done = plan.status == ApprovalStatus.COMPLETED
    try:
        config = CleanConfig.from_properties(plan.settings)
        retained = {CleanPolicy.KEEP_LATEST_COMMITS: config.commits_retained,
                    CleanPolicy.KEEP_LATEST_BY_HOURS: config.hours_retained,
                    CleanPolicy.KEEP_LATEST_FILE_VERSIONS: config.file_versions_retained}[config.policy]
        policy, unit = config.policy.value, UNITS[config.policy]
    except CleanlineError:
        retained, policy, unit = 0, plan.policy, ""
    return {"files": 0 if done else plan.files_to_delete, "bytes": 0 if done else plan.bytes_to_delete,
            "policy": policy, "retained": retained, "unit": unit,
            "why_nothing": f"plan #{plan.pk}'s clean ran" if done else None,
            "source": {"kind": "plan", "plan": plan.pk, "at": at, "status": str(plan.status)}}


def _layout_summary(view: FileSystemView) -> dict[str, Any]:
    """For the overview's charts, from the sync's listing: bytes of committed slices per
    partition (largest 30) and how many file groups have how many versions."""
    per_partition: Counter[str] = Counter()
    versions: Counter[int] = Counter()
    for group in view.all_file_groups():
        versions[len(group.slices)] += 1
        for piece in group.slices:
            per_partition[group.partition or "(none)"] += piece.size
    return {"bytes_per_partition": per_partition.most_common(30), "versions": sorted(versions.items())}


def _reclaimable(lake: HudiTable, listing: TableListing, used: ListingSource) -> dict[str, Any]:
    """What a clean with the table's own settings would free now (the library's planner over
    the sync's listing), for the dashboard; why not, when the planner refuses."""
    try:
        cost = reclaimable(lake, listing=listing, source=used)
    except CleanlineError as exc:
        return {"error": str(exc)[:500]}
    return {"files": cost.files_to_delete, "bytes": cost.bytes_to_delete, "policy": cost.policy.value,
            "retained": cost.retained, "unit": cost.unit, "why_nothing": cost.why_nothing}
