"""Template tags of console/templatetags/display.py: instant times as moments and ages, the
timeline page's time axis in pixels."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils.timesince import timesince

from console import selectors
from console.models import Instant, Table
from console.templatetags.display import moment, time_axis
from tests.console.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(console_table) -> Table:
    return console_table("sample_table/mor/avro/v9_txns_simple_nometa")


def test_display_moment_parses_instant_times_and_ages_read_as_timesince() -> None:
    assert moment("20260101000000000") == datetime(2026, 1, 1)
    assert moment("") is None and moment("not-a-time") is None
    age = Template("{% load display %}{{ t|moment|timesince:now }}|{{ bad|moment|timesince:now }}")
    assert age.render(Context({"t": "20260101000000000", "bad": "x", "now": datetime(2026, 1, 3, 5)})) == (
        "2\xa0days, 5\xa0hours|")


def test_display_time_axis_scales_bars_to_the_page(table: Table) -> None:
    rows = time_axis(list(table.instants.all()), width=100)
    bars = [r["bar"] for r in rows]
    assert all(b is not None and 0 <= b["x"] <= 100 and b["w"] >= 2 for b in bars)
    assert min(b["x"] for b in bars) == 0 and max(b["x"] + b["w"] for b in bars) >= 99


def test_display_time_axis_leaves_unreadable_times_without_a_bar(table: Table) -> None:
    odd = Instant(table=table, requested_time="garbage", action="commit", state="COMPLETED")
    rows = time_axis([*table.instants.all()[:2], odd])
    assert rows[-1] == {"instant": odd, "bar": None} and all(r["bar"] for r in rows[:2])


def test_display_pages_show_the_axis_and_slice_ages(table: Table) -> None:
    viewer = login("viewer")
    page = viewer.get(reverse("console:timeline", args=[table.pk])).content.decode()
    assert page.count('class="bar state-') == table.instants.count()
    groups = viewer.get(reverse("console:file_groups", args=[table.pk]), {"partition": "region=us"}).content.decode()
    _, _, rows = selectors.file_groups(table, "region=us")
    ages = {timesince(moment(s.base_instant)) for g in rows for s in g["slices"]}  # type: ignore[arg-type]
    assert ages and all(f"<td>{age}</td>" in groups for age in ages), ages
