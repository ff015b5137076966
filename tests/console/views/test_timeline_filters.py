"""The timeline's filters: From and To take dates (the date pickers') in the viewer's zone, or
an instant time's leading digits as before; the instant-time search finds digits anywhere in
the requested or completion time; refused filters list nothing."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse

from console import selectors, services
from console.models import Instant, Table
from tests.console.helpers import login, person
from timeline.instant import moment_of

pytestmark = pytest.mark.django_db

# (requested, completed): around the turn of 2024-01-05 in UTC, one 14-digit time among them.
TIMES = [("20240104183000000", "20240104183001000"), ("20240104230000000", "20240104230004500"),
         ("20240105000000", ""), ("20240105120000500", "20240105120230500"),
         ("20240105235959999", "20240106000000100"), ("20240106000000000", "20240106000001000"),
         ("20240106093000123", "20240106093015123")]


@pytest.fixture
def table() -> Table:
    """A table row written in UTC with the instants above (only the database: the timeline
    page and its filters read the sync's mirror, never the lake)."""
    table = Table.objects.create(path="/nowhere/t", name="t", table_type="COPY_ON_WRITE", table_version=8,
                                 layout_version=2, properties={"hoodie.table.timeline.timezone": "UTC"})
    for requested, completed in TIMES:
        Instant.objects.create(table=table, requested_time=requested, completion_time=completed, action="commit",
                               state="COMPLETED" if completed else "INFLIGHT")
    return table


def local_day(instant_time: str, zone: str) -> date:
    """The day an instant time falls on in `zone` (the table writes UTC)."""
    return moment_of(instant_time, "UTC").astimezone(ZoneInfo(zone)).date()


def found(table: Table, **filters: str) -> list[str]:
    return [i.requested_time for i in selectors.timeline_rows(table, selectors.TimelineFilters(**filters))]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/Los_Angeles"])
def test_timeline_filters_dates_are_whole_days_in_the_viewers_zone(table: Table, zone: str) -> None:
    newest_first = [r for r, _ in reversed(TIMES)]
    for day in (date(2024, 1, 4), date(2024, 1, 5), date(2024, 1, 6)):
        typed = day.isoformat()
        assert found(table, since=typed, zone=zone) == [t for t in newest_first if local_day(t, zone) >= day]
        assert found(table, until=typed, zone=zone) == [t for t in newest_first if local_day(t, zone) <= day]
        assert found(table, since=typed, until=typed, zone=zone) == [
            t for t in newest_first if local_day(t, zone) == day]


def test_timeline_filters_times_digits_and_the_consoles_zone(table: Table) -> None:
    assert found(table, since="2024-01-05") == found(table, since="2024-01-05", zone="UTC")  # TIME_ZONE is UTC
    assert found(table, since="2024-01-05", zone="Not/AZone") == found(table, since="2024-01-05", zone="UTC")
    assert found(table, since="2024-01-05T12:00", until="2024-01-05 23:59", zone="UTC") == [
        "20240105235959999", "20240105120000500"]  # To names a minute: all of it
    assert found(table, until="2024-01-05T12:00:00", zone="UTC") == [
        "20240105120000500", "20240105000000", "20240104230000000", "20240104183000000"]
    assert found(table, since="2024010600", until="202401060930") == ["20240106093000123", "20240106000000000"]
    assert found(table, since="20240105000000000") == found(table, since="2024-01-05", zone="UTC")


def test_timeline_filters_search_finds_digits_anywhere_in_either_time(table: Table) -> None:
    assert found(table, search="0000500") == ["20240105120000500"]  # the middle and end of a requested time
    assert found(table, search="0230") == ["20240105120000500"]  # only in its completion time
    assert found(table, search="0104") == ["20240104230000000", "20240104183000000"]
    assert found(table, search="2024-01-06 09:30") == ["20240106093000123"]  # separators typed are ignored
    assert found(table, search="--") == []


def test_timeline_page_takes_a_typed_date_and_applies_it(table: Table) -> None:
    viewer = login("viewer")
    url = reverse("console:timeline", args=[table.pk])
    page = viewer.get(url, {"since": "2024-01-05", "until": "2024-01-05", "zone": "UTC"})
    html = page.content.decode()
    assert page.status_code == 200 and "filter-error" not in html
    assert [i.requested_time for i in page.context["page"]] == [
        "20240105235959999", "20240105120000500", "20240105000000"]
    assert '<input type="date" name="since" value="2024-01-05"' in html
    assert '<input type="date" name="until" value="2024-01-05"' in html
    assert '<input type="hidden" name="zone" value="UTC"' in html
    assert "3 instants" in html


def test_timeline_page_refuses_what_is_not_a_date_and_lists_nothing(table: Table) -> None:
    viewer = login("viewer")
    url = reverse("console:timeline", args=[table.pk])
    for bad in ({"since": "2024-02-30"}, {"until": "yesterday"}, {"search": "abc"}):
        page = viewer.get(url, bad)
        assert page.status_code == 200 and 'id="filter-error"' in page.content.decode(), bad
        assert page.context["page"].paginator.count == 0 and b"No instant matches" in page.content, bad


def test_timeline_api_takes_dates_and_searches_anywhere(table: Table) -> None:
    user = person("ada", "viewer")
    _, secret = services.token_create(actor=user, owner=user, name="laptop")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    url = f"/api/v1/tables/{table.pk}/instants"
    assert [i["requested_time"] for i in api.get(url, {"since": "2024-01-06"}).json()["items"]] == [
        "20240106093000123", "20240106000000000"]
    assert [i["requested_time"] for i in api.get(url, {"search": "0230"}).json()["items"]] == ["20240105120000500"]
