"""The clean plan pages: request, review, approve, reject, progress and the CSV report."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from console import services
from console.models import CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from tests.console.helpers import SHORT_RETENTION, SHORT_RETENTION_FORM, login

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


def test_plan_views_operator_plans_admin_approves_and_downloads_the_report(
        table: Table, django_capture_on_commit_callbacks) -> None:
    operator, admin = login("operator"), login("admin")
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(reverse("console:plan_request", args=[table.pk]), SHORT_RETENTION_FORM)
    plan = CleanPlan.objects.get()
    assert response.status_code == 302 and plan.status == ApprovalStatus.DRAFT
    page = operator.get(reverse("console:plan", args=[table.pk, plan.pk]))
    assert b"Approve and run" not in page.content and str(plan.files_to_delete).encode() in page.content
    kept = operator.get(reverse("console:plan", args=[table.pk, plan.pk]), {"show": "keep", "partition": "region=eu"})
    files = kept.content.split(b'<h2 id="files">Files</h2>')[1].split(b"</select>")[-1]
    assert b"latest version" in kept.content and b"region=us" not in files
    first = min(stored_plan(plan).deletes(), key=lambda f: f.file_name)  # type: ignore[union-attr]
    found = operator.get(reverse("console:plan", args=[table.pk, plan.pk]), {"q": first.file_name[3:14]})
    assert first.file_name.encode() in found.content
    assert operator.post(reverse("console:plan_approve", args=[table.pk, plan.pk])).status_code == 403
    assert admin.get(reverse("console:plan_approve", args=[table.pk, plan.pk])).status_code == 405
    with django_capture_on_commit_callbacks(execute=True):
        admin.post(reverse("console:plan_approve", args=[table.pk, plan.pk]))
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_done == plan.files_to_delete
    progress = admin.get(reverse("console:plan_progress", args=[table.pk, plan.pk]), HTTP_HX_REQUEST="true")
    assert progress["HX-Refresh"] == "true" and b"reclaimed" in progress.content
    report = admin.get(reverse("console:plan_csv", args=[table.pk, plan.pk]))
    lines = list(csv.reader(io.StringIO(b"".join(report.streaming_content).decode())))
    assert lines[0] == ["partition", "file", "bytes", "decision", "reason", "outcome", "path"]
    assert sum(1 for line in lines[1:] if line[3] == "delete" and line[5] == "deleted") == plan.files_to_delete


def test_plan_views_reject_and_viewer_cannot_plan(table: Table) -> None:
    assert login("viewer").post(reverse("console:plan_request", args=[table.pk]), {}).status_code == 403
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    admin = login("admin")
    admin.post(reverse("console:plan_reject", args=[table.pk, plan.pk]), {"note": "not today"})
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.REJECTED and plan.decision_note == "not today"


def test_plan_views_a_plan_of_many_partitions_pages_its_sums_and_filters_by_a_text_field(table: Table) -> None:
    """A plan of 10,000 partitions must not draw them all on every page: the per-partition
    sums come a page at a time, and the file filter is a text field (each row links to its
    partition's files) once there are too many partitions to list."""
    summary = [{"partition": f"day={i:05d}", "files": 1, "bytes": 10, "reclaimed": 0, "failed": 0}
               for i in range(250)]
    plan = CleanPlan.objects.create(table=table, partition_summary=summary, status=ApprovalStatus.DRAFT)
    url = reverse("console:plan", args=[table.pk, plan.pk])
    viewer = login("viewer")
    page = viewer.get(url).content.decode()
    assert "Per partition (250)" in page and "page 1 of 5" in page
    assert "day=00049" in page and "day=00050" not in page
    assert '<input type="search" name="partition"' in page and '<select name="partition"' not in page
    assert 'href="?show=delete&partition=day%3D00007#files"' in page
    third = viewer.get(url, {"ppage": 3}).content.decode()
    assert "day=00100" in third and "day=00049" not in third
    assert viewer.get(url, {"ppage": 9}).status_code == 404
    plan.partition_summary = summary[:3]
    plan.save()
    small = viewer.get(url).content.decode()
    assert '<select name="partition"><option value="">all</option><option value="day=00000" >' in small
