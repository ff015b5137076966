"""Clean plans: a table's plans, a plan's files (read from the plan store a page at a time), its CSV."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from datetime import UTC, tzinfo
from typing import Any

from django.core.paginator import Page
from django.db.models import QuerySet

from console.lake import open_stored_plan
from console.models import CleanPlan, Table
from console.selectors.paging import page_of
from console.zones import text_in_zone
from timeline.internal.plan_store import FileRow, StoredPlan


def plans_of(table: Table) -> QuerySet[CleanPlan]:
    return table.clean_plans.select_related("requested_by", "decided_by").order_by("-requested_at")


def all_plans(*, status: str = "") -> QuerySet[CleanPlan]:
    """Every table's plans, newest first, optionally of one status."""
    rows = CleanPlan.objects.select_related("requested_by", "decided_by").order_by("-requested_at", "-pk")
    return rows.filter(status=status) if status else rows


def plan_files(plan: CleanPlan, *, delete: bool | None, search: str, partition: str,
               page: int | str | None) -> Page[Any]:
    """A page of a plan's files (to delete, kept, or all), optionally in one partition and
    whose names contain `search`, read from the plan store a page at a time."""
    return page_of(plan_file_rows(plan, delete=delete, search=search, partition=partition), page)


PARTITION_CHOICES = 200  # partitions up to which the file filter offers a list to pick from


def plan_partitions(plan: CleanPlan, page: int | str | None) -> Page[Any]:
    """A page of the plan's per-partition sums, in plan order (a plan may consider 10,000
    partitions: the page never draws them all)."""
    return page_of(plan.partition_summary, page)


def partition_choices(plan: CleanPlan) -> list[str] | None:
    """The partitions the file filter lists to pick from; None when there are too many to
    list (the filter is then a text field, and each partition's row links to its files)."""
    summary = plan.partition_summary
    return None if len(summary) > PARTITION_CHOICES else [p["partition"] for p in summary]


def stored_plan(plan: CleanPlan) -> StoredPlan | None:
    """The plan's files in the plan store; None before the plan is built."""
    return open_stored_plan(plan.store) if plan.store else None


def plan_file_rows(plan: CleanPlan, *, delete: bool | None, search: str, partition: str) -> Sequence[FileRow]:
    """A plan's files (to delete, kept, or all), in one partition, names containing `search`:
    a sequence read from the plan store a slice at a time (a Paginator's object list)."""
    stored = stored_plan(plan)
    return [] if stored is None else stored.matches(delete=delete, search=search, partition=partition)


def plan_csv_rows(plan: CleanPlan, zone: tzinfo = UTC) -> Iterator[str]:
    """The plan's files as CSV lines, streamed from the plan store a part at a time; an instant
    time in a reason keeps its readable time in the reader's `zone` beside it (console/zones.py)."""
    timeline_zone = str((plan.table.properties or {}).get("hoodie.table.timeline.timezone", "LOCAL"))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["partition", "file", "bytes", "decision", "reason", "outcome", "path"])
    stored = stored_plan(plan)
    for row in stored.iter_rows() if stored is not None else ():
        writer.writerow([row.partition, row.file_name, row.size, "delete" if row.delete else "keep",
                         text_in_zone(row.reason, zone, timeline_zone),
                         row.outcome, row.path])
        if buffer.tell() > 65_536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
