"""Selectors: catalog counts, timeline filters and pages, file groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from console import selectors
from console.models import Table

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


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


def test_selectors_failed_writes_follow_the_tables_writer_options(console_table) -> None:
    """The failed-writes page and count use the writers' failed-writes policy: the table's
    writer options over hoodie.properties (HoodieWriteConfig), as the rollback they lead to does.
    NEVER there: the dead write is no failed write (Hudi never rolls it back by itself)."""
    from console.services import table_sync
    from tests.helpers import fake_failed_write

    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    fake_failed_write(Path(table.path.removeprefix("file:")), "20261101000000000", markers=False)
    table_sync(table=table)
    table.refresh_from_db()
    assert table.failed_writes == 1 == len(selectors.failed_write_previews(table))
    table.write_options = {"hoodie.clean.failed.writes.policy": "NEVER"}
    table.save(update_fields=["write_options"])
    assert selectors.failed_write_previews(table) == []
    table_sync(table=table)
    table.refresh_from_db()
    assert table.failed_writes == 0
