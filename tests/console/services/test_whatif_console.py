"""What-if retention in the console: an operator asks for an estimate, a task computes it with
the library's `what_if` (the planner per setting over one listing), the page shows a chart and
a table; every figure equals the plan a clean with that setting would make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.urls import reverse

from console import services
from console.models import AuditEvent, JobStatus, RetentionEstimate, Table
from tests.console.helpers import login, person
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.clean.planner import plan_clean

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


def lake_files(table: Table) -> dict[str, tuple[int, int]]:
    root = Path(table.path.removeprefix("file:"))
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_retention_estimate_equals_the_plan_of_each_setting_and_writes_nothing(table: Table) -> None:
    before = lake_files(table)
    estimate = services.estimate_request(table=table, user=person("op", "operator"), commits=[3, 1, 2, 2], hours=[24])
    assert estimate.commits == [1, 2, 3] and estimate.hours == [24] and estimate.status == JobStatus.QUEUED
    estimate = services.estimate_run(estimate=estimate, task_id="t-1")
    assert estimate.status == JobStatus.COMPLETED and estimate.listing["files"] > 0
    lake = HudiTable.open(table.path)
    commits = [r for r in estimate.result if r["policy"] == "KEEP_LATEST_COMMITS"]
    assert [r["retained"] for r in commits] == [1, 2, 3]
    for row in commits:
        plan = plan_clean(lake, CleanConfig.from_properties(lake.config.props, commits_retained=row["retained"]))
        assert (row["files_to_delete"], row["bytes_to_delete"]) == (len(plan.files_to_delete), plan.bytes_to_delete)
    assert commits[0]["files_to_delete"] > 0 and commits[0]["below_table_setting"]  # the table keeps 10 by default
    hours = [r for r in estimate.result if r["policy"] == CleanPolicy.KEEP_LATEST_BY_HOURS.value]
    assert [r["retained"] for r in hours] == [24] and hours[0]["files_to_delete"] == 0 and hours[0]["why_nothing"]
    assert lake_files(table) == before
    assert AuditEvent.objects.filter(table=table, action="retention.estimate.requested").count() == 1
    # computed once: a second delivery of the task finds it settled
    assert services.estimate_run(estimate=estimate, task_id="t-2").task_id == "t-1"


def test_retention_estimate_refuses_what_is_no_setting(table: Table) -> None:
    from django.core.exceptions import ValidationError

    for commits, hours in (([], []), ([0, 1], []), (list(range(1, 60)), []), ([1, 10**30], []), ([], [10**30])):
        with pytest.raises(ValidationError):
            services.estimate_request(table=table, user=None, commits=commits, hours=hours)
    assert not RetentionEstimate.objects.exists()


def test_retention_page_form_task_chart_and_table(table: Table, django_capture_on_commit_callbacks) -> None:
    operator = login("operator")
    page = operator.get(reverse("console:retention", args=[table.pk]))
    assert page.status_code == 200 and b"No estimate yet" in page.content and b"Estimate</button>" in page.content
    with django_capture_on_commit_callbacks(execute=True):  # the task runs eagerly
        response = operator.post(reverse("console:retention_request", args=[table.pk]),
                                 {"commits": "1..3", "hours": "24"})
    estimate = RetentionEstimate.objects.get()
    assert response.status_code == 302 and response.url.endswith(f"?estimate={estimate.pk}")
    page = operator.get(response.url)
    assert page.status_code == 200 and estimate.status in ("queued", "running") or b"Files freed" in page.content
    estimate.refresh_from_db()
    assert estimate.status == JobStatus.COMPLETED, estimate.error
    chart = json.loads(page.content.split(b'id="retention-data" type="application/json">')[1].split(b"</script>")[0])
    assert chart["labels"] == ["1 commit", "2 commits", "3 commits", "24 hours"]
    assert chart["datasets"][0]["data"] == [r["bytes_to_delete"] for r in estimate.result]
    assert chart["datasets"][0]["colors"][0] == "warn" and chart["notes"][0].startswith(
        f"{estimate.result[0]['files_to_delete']} files")
    assert b"chart-4.6.1.umd.min.js" in page.content and b"below the table's setting</span>" in page.content


def test_retention_page_viewer_sees_results_but_no_form_and_bad_input_keeps_it(table: Table) -> None:
    viewer = login("viewer")
    page = viewer.get(reverse("console:retention", args=[table.pk]))
    assert page.status_code == 200 and b"Estimate</button>" not in page.content
    assert viewer.get(reverse("console:retention", args=[table.pk]), {"estimate": "999"}).status_code == 404
    admin = login("admin")
    refused = admin.post(reverse("console:retention_request", args=[table.pk]), {"commits": "5..2", "hours": "x"})
    assert refused.status_code == 400 and b"runs backwards" in refused.content and b'value="5..2"' in refused.content
    assert not RetentionEstimate.objects.exists()
