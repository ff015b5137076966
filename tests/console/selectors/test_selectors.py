"""Selectors: catalog counts, timeline filters and pages, file groups."""

from __future__ import annotations

import pytest

from console import selectors
from console.models import Table

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(console_table) -> Table:
    return console_table("sample_table/mor/avro/v9_txns_simple_nometa")


def test_selectors_catalog_counts(table: Table) -> None:
    (row,) = selectors.catalog()
    assert row.instant_count == table.instants.count() and row.pending_count == 0
    assert row.savepoint_count == 0 and row.last_clean is None and row.total_bytes > 0


def test_selectors_timeline_filters_and_pages(table: Table) -> None:
    everything = selectors.timeline_page(table, selectors.TimelineFilters(), 1)
    assert everything.paginator.count == table.instants.count()
    times = [i.requested_time for i in everything]
    assert times == sorted(times, reverse=True)
    replace = selectors.timeline_page(table, selectors.TimelineFilters(action="replacecommit"), 1)
    assert {i.action for i in replace} == {"replacecommit"} and len(replace) == 2
    first = times[-1]
    search = selectors.timeline_page(table, selectors.TimelineFilters(search=first), 1)
    assert [i.requested_time for i in search] == [first]
    window = selectors.timeline_page(table, selectors.TimelineFilters(since=times[3], until=times[1]), 1)
    assert [i.requested_time for i in window] == times[1:4]
    assert selectors.timeline_page(table, selectors.TimelineFilters(state="INFLIGHT"), 1).paginator.count == 0


def test_selectors_file_groups_show_slices_and_replacements(table: Table) -> None:
    partitions, chosen, groups = selectors.file_groups(table, "region=us")
    assert chosen == "region=us" and "region=us" in partitions
    assert any(g["replaced_by"] for g in groups) and all(g["slices"] for g in groups if not g["replaced_by"])
