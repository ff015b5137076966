"""The lake dashboard (the home page) and the catalog's search, sort and paging."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from console import selectors, services
from console.models import Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, login, person
from timeline import CleanConfig, HudiTable
from timeline.clean.planner import plan_clean

pytestmark = pytest.mark.django_db


def chart(content: bytes, name: str) -> dict:  # type: ignore[type-arg]
    return json.loads(content.split(f'id="{name}" type="application/json">'.encode())[1].split(b"</script>")[0])


def test_dashboard_totals_reclaimable_and_charts(console_table) -> None:
    mor = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    cow = console_table("sample_table/cow/v8_nonpartitioned")
    for table in (mor, cow):  # the sync keeps what a clean with the table's own settings would free
        lake = HudiTable.open(table.path)
        expected = plan_clean(lake, CleanConfig.from_properties(lake.config.props))
        assert table.layout_summary["reclaimable"]["bytes"] == expected.bytes_to_delete
        assert table.layout_summary["reclaimable"]["files"] == len(expected.files_to_delete)
    plan = services.plan_build(plan=services.plan_request(table=mor, user=None, overrides=SHORT_RETENTION))
    plan = services.plan_run(plan=services.plan_approve(plan=plan, user=person("boss", "admin")))
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_bytes > 0
    services.table_sync(table=mor)

    board = selectors.dashboard()
    assert board.files == mor.total_files + cow.total_files and board.bytes == mor.total_bytes + cow.total_bytes
    assert board.reclaimable == sum(t.layout_summary["reclaimable"]["bytes"] for t in (mor, cow))
    reclaimed = board.charts["reclaimed"]
    assert sum(reclaimed["datasets"][0]["data"]) == plan.progress_bytes and len(reclaimed["labels"]) == 31
    instants = {d["label"]: sum(d["data"]) for d in board.charts["instants"]["datasets"]}
    assert instants.get("clean") == 1  # the clean just written; the fixtures' own instants are older

    page = login("viewer").get(reverse("console:home"))
    assert page.status_code == 200 and b"Lake dashboard: 2 tables" in page.content
    assert chart(page.content, "chart-reclaimed") == reclaimed
    assert b"chart-4.6.1.umd.min.js" in page.content and b'data-chart="chart-savepoints"' in page.content


def test_dashboard_savepoint_ages(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    commit = table.instants.filter(action="deltacommit", state="COMPLETED").order_by("requested_time").last()
    services.savepoint_create(table=table, user=None, instant_time=commit.requested_time, comment="keep")
    ages = selectors.dashboard().charts["savepoints"]
    assert ages["labels"] == [f"{table.name} {commit.requested_time}"] and ages["datasets"][0]["data"][0] > 0


def test_catalog_search_sort_and_pages(console_table) -> None:
    mor = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    cow = console_table("sample_table/cow/v8_nonpartitioned")
    viewer = login("viewer")
    found = viewer.get(reverse("console:catalog"), {"q": "nonpart"})
    assert cow.name.encode() in found.content and mor.name.encode() not in found.content
    assert b"1 table" in found.content
    by_size = [t.pk for t in selectors.catalog(sort="-size")]
    assert by_size == [t.pk for t in sorted((mor, cow), key=lambda t: -t.total_bytes)]
    assert [t.pk for t in selectors.catalog(sort="size")] == by_size[::-1]
    page = viewer.get(reverse("console:catalog"), {"sort": "-size"}).content
    assert page.index(Table.objects.get(pk=by_size[0]).name.encode()) < page.index(
        Table.objects.get(pk=by_size[1]).name.encode())
    assert viewer.get(reverse("console:catalog"), {"page": "2"}).status_code == 404
    assert viewer.get(reverse("console:catalog"), {"sort": "nonsense"}).status_code == 200  # by name


def test_catalog_register_errors_show_above_the_tables(console_table) -> None:
    console_table("sample_table/cow/v8_nonpartitioned")
    response = login("admin").post(reverse("console:register"), {"path": "/nowhere/at/all"})
    assert response.status_code == 400
    assert response.content.index(b'class="error"') < response.content.index(b'<table class="grid')


def test_overview_charts_are_specs_for_the_chart_library(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    page = login("viewer").get(reverse("console:overview", args=[table.pk])).content
    commits = chart(page, "chart-commits")
    assert sum(commits["datasets"][0]["data"]) == table.instants.filter(
        action__in=("commit", "deltacommit", "replacecommit"), state="COMPLETED").count()
    assert chart(page, "chart-partitions")["labels"] and chart(page, "chart-versions")["datasets"][0]["data"]
    assert b"<svg width" not in page and b"chart-4.6.1.umd.min.js" in page  # no hand-drawn chart left


def test_demo_lake_build_progress_shows_on_the_dashboard_and_catalog(settings, tmp_path) -> None:
    from django.core.management import call_command

    from timeline.internal.demo import DEMO_TABLES

    status = tmp_path / "status.json"
    settings.CLEANLINE_DEMO_STATUS = str(status)
    viewer = login("viewer")
    assert b'id="demo-status"' in viewer.get(reverse("console:home")).content
    assert b"Demo lake" not in viewer.get(reverse("console:home")).content  # no status file: no banner
    status.write_text(json.dumps({"tables": list(DEMO_TABLES), "built": [DEMO_TABLES[0]], "building": DEMO_TABLES[1],
                                  "finished": False, "failed": ""}))
    poll = f'hx-get="{reverse("console:demo_status")}"'.encode()
    for url in (reverse("console:home"), reverse("console:catalog"), reverse("console:demo_status")):
        page = viewer.get(url).content
        assert b"1 of 3 done" in page and DEMO_TABLES[1].encode() in page and poll in page, url
    # the command keeps the file: on a lake whose tables are all there it finishes at once, without Spark
    lake = tmp_path / "lake"
    for name in DEMO_TABLES:
        (lake / name / ".hoodie").mkdir(parents=True)
        (lake / name / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=x\n")
    person("admin", "admin")
    call_command("demo_lake", str(lake), "--status", str(status))
    assert json.loads(status.read_text()) == {"tables": list(DEMO_TABLES), "built": list(DEMO_TABLES), "building": "",
                                              "finished": True, "failed": ""}
    page = viewer.get(reverse("console:demo_status")).content
    assert b"Demo lake" not in page and poll not in page  # done: the banner goes and stops polling


@pytest.mark.parametrize("fixture", ["sample_table/mor/avro/v9_txns_simple_nometa",
                                     "sample_table/cow/v9_txns_simple_meta"])
def test_dashboard_shows_cleanlines_own_clean_at_once(console_table, fixture: str) -> None:
    """Issue 30 item 5: after Cleanline's own clean the dashboard shows the new files, bytes,
    reclaimable bytes and last clean at once, with no sync run in between: the service that
    completes the run syncs the table (listing it in full when it has no metadata table)."""
    table = console_table(fixture)
    before = Table.objects.get(pk=table.pk)
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    plan = services.plan_run(plan=services.plan_approve(plan=plan, user=person("boss", "admin")))
    assert plan.status == ApprovalStatus.COMPLETED and plan.files_to_delete > 0
    after = Table.objects.get(pk=table.pk)
    assert after.total_files == before.total_files - plan.files_to_delete
    assert after.total_bytes == before.total_bytes - plan.progress_bytes
    lake = HudiTable.open(table.path)
    expected = plan_clean(lake, CleanConfig.from_properties(lake.config.props))
    assert after.reclaimable["bytes"] == expected.bytes_to_delete
    page = login("viewer").get(reverse("console:home")).content.decode()
    assert plan.clean_instant in page and "never" not in page.split(table.name, 1)[1].split("</tr>", 1)[0]
