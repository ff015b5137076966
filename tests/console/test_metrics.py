"""/metrics scraped with the test client and parsed with prometheus_client's parser: every
table, job and plan figure equals what the database rows (and the lake) say; request latencies
are labelled by route name and method, never by path; only allowed addresses or the bearer
token may scrape."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console import services
from console.models import CleanPlan, Instant, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.settings import metrics_allow, webhook_urls
from tests.console.helpers import SHORT_RETENTION, login
from timeline import HudiTable
from timeline.instant import moment_of

pytestmark = pytest.mark.django_db

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(client: Client | None = None, **extra: str) -> Samples:
    response = (client or Client()).get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.content.decode()) for s in family.samples}


def of_table(samples: Samples, name: str, table: Table) -> float | None:
    return samples.get((name, frozenset({("table_id", str(table.pk)), ("table", table.name)})))


def labelled(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def completed_writes(table: Table) -> Iterable[Instant]:
    return table.instants.filter(action__in=("commit", "deltacommit", "replacecommit"), state="COMPLETED")


def test_metrics_every_table_and_job_figure_equals_the_database(console_table) -> None:
    # a table with a draft plan and a write left inflight (its writer died), never cleaned
    left = console_table("sample_table/cow/v9_txns_simple_nometa")
    draft = services.plan_build(plan=services.plan_request(table=left, user=None, overrides=SHORT_RETENTION))
    lake = HudiTable.open(left.path)
    last = lake.timeline.commits().completed().last()
    assert last is not None
    files = lake.timeline.files_of(last)
    Path(files[max(files)].path).unlink()
    services.table_sync(table=left)
    left.refresh_from_db()
    # a table with a savepoint, a clean Cleanline ran and a restore job
    right = console_table("sample_table/mor/avro/v9_txns_complex_nometa")
    commits = [i.requested_time for i in HudiTable.open(right.path).timeline.commits().completed()]
    services.savepoint_create(table=right, user=None, instant_time=commits[-1], comment="")
    plan = services.plan_build(plan=services.plan_request(table=right, user=None, overrides=SHORT_RETENTION))
    plan = services.plan_run(plan=services.plan_approve(plan=plan, user=None))
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_bytes > 0
    job = services.job_run(job=services.job_request(table=right, user=None, kind=Job.Kind.RESTORE,
                                                     target=commits[-1], confirm_name=right.name))
    assert job.status == JobStatus.COMPLETED
    left.refresh_from_db()
    right.refresh_from_db()

    samples = scrape()
    now = timezone.now()
    for table in (left, right):
        assert of_table(samples, "cleanline_table_files", table) == table.total_files > 0
        assert of_table(samples, "cleanline_table_bytes", table) == table.total_bytes > 0
        assert of_table(samples, "cleanline_table_failed_writes", table) == table.failed_writes
        pending = table.instants.filter(action__in=("commit", "deltacommit", "replacecommit"),
                                        archived=False).exclude(state="COMPLETED").count()
        assert of_table(samples, "cleanline_table_pending_writes", table) == pending
    assert (left.failed_writes, of_table(samples, "cleanline_table_pending_writes", left)) == (1, 1)
    assert left.failed_writes == len(HudiTable.open(left.path).inspect.failed_writes())  # the lake agrees
    assert of_table(samples, "cleanline_table_reclaimable_bytes", left) == draft.bytes_to_delete > 0
    assert of_table(samples, "cleanline_table_reclaimable_files", left) == draft.files_to_delete > 0
    assert of_table(samples, "cleanline_table_reclaimable_bytes", right) == 0  # its plan completed
    # never cleaned: every completed write counts; cleaned just now: none since
    assert of_table(samples, "cleanline_table_instants_since_last_clean", left) == completed_writes(left).count() > 0
    clean = right.instants.get(action="clean", state="COMPLETED")
    assert of_table(samples, "cleanline_table_instants_since_last_clean", right) == completed_writes(right).filter(
        requested_time__gt=clean.requested_time).count() == 0
    savepoint = right.instants.get(action="savepoint", state="COMPLETED")
    expected_age = (now - moment_of(savepoint.requested_time, "LOCAL")).total_seconds()
    assert expected_age - 60 < of_table(samples, "cleanline_table_oldest_savepoint_age_seconds", right) <= expected_age
    assert of_table(samples, "cleanline_table_oldest_savepoint_age_seconds", left) is None
    plan.refresh_from_db()
    assert of_table(samples, "cleanline_table_last_clean_bytes", right) == plan.progress_bytes
    assert of_table(samples, "cleanline_table_last_clean_files", right) == plan.progress_done
    assert of_table(samples, "cleanline_table_last_clean_duration_seconds", right) == pytest.approx(
        (plan.finished_at - plan.started_at).total_seconds())
    assert of_table(samples, "cleanline_table_last_clean_timestamp_seconds", right) == pytest.approx(
        plan.finished_at.timestamp())
    assert of_table(samples, "cleanline_table_last_clean_bytes", left) is None

    plans_as_jobs = {"queued": "approved", "running": "running", "completed": "completed", "failed": "failed"}
    for kind in Job.Kind.values:
        for status in JobStatus.values:
            plans = CleanPlan.objects.filter(status=plans_as_jobs[status]).count() if kind == "clean" else 0
            assert labelled(samples, "cleanline_jobs", kind=kind, status=status) == Job.objects.filter(
                kind=kind, status=status).count() + plans
    assert labelled(samples, "cleanline_jobs", kind="restore", status="completed") == 1
    assert labelled(samples, "cleanline_jobs", kind="clean", status="completed") >= 1  # the plan that ran (issue 43)
    for status in ApprovalStatus.values:
        assert labelled(samples, "cleanline_clean_plans", status=status) == CleanPlan.objects.filter(
            status=status).count()
    job.refresh_from_db()
    assert labelled(samples, "cleanline_job_duration_seconds_count", kind="restore", status="completed") == 1
    assert labelled(samples, "cleanline_job_duration_seconds_sum", kind="restore", status="completed") == (
        pytest.approx((job.finished_at - job.requested_at).total_seconds()))
    assert labelled(samples, "cleanline_job_duration_seconds_bucket", kind="restore", status="completed",
                    le="+Inf") == 1
    assert labelled(samples, "cleanline_clean_run_duration_seconds_count", status="completed") == 1
    assert labelled(samples, "cleanline_clean_run_duration_seconds_sum", status="completed") == pytest.approx(
        (plan.finished_at - plan.started_at).total_seconds())


def test_metrics_request_latency_by_route_name_and_method_never_the_path(console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    viewer = login("viewer")
    route = {"route": "console:overview", "method": "GET"}
    before = scrape()
    for _ in range(3):
        assert viewer.get(reverse("console:overview", args=[table.pk])).status_code == 200
    assert viewer.get("/no/such/page").status_code == 404
    assert viewer.post(reverse("console:sync", args=[table.pk])).status_code == 403  # a viewer may not sync
    after = scrape()

    def delta(name: str, **labels: str) -> float:
        return (labelled(after, name, **labels) or 0) - (labelled(before, name, **labels) or 0)

    assert delta("cleanline_http_request_duration_seconds_count", **route) == 3
    assert delta("cleanline_http_request_duration_seconds_bucket", **route, le="+Inf") == 3
    assert delta("cleanline_http_request_duration_seconds_sum", **route) > 0
    assert delta("cleanline_http_request_duration_seconds_count", route="(unmatched)", method="GET") == 1
    assert delta("cleanline_http_request_duration_seconds_count", route="console:sync", method="POST") == 1
    assert delta("cleanline_http_request_duration_seconds_count", route="metrics", method="GET") == 1
    routes = {dict(labels)["route"] for name, labels in after if name.startswith("cleanline_http_request")}
    assert routes and not [r for r in routes if "/" in r or str(table.pk) in r]


def test_metrics_only_allowed_addresses_or_the_token_may_scrape(settings) -> None:
    client = Client()
    assert client.get("/metrics").status_code == 200  # the test client's address is 127.0.0.1
    assert client.get("/metrics", REMOTE_ADDR="::1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="::ffff:127.0.0.1").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="10.1.2.3")
    assert refused.status_code == 403 and b"cleanline_" not in refused.content
    settings.CLEANLINE_METRICS_TOKEN = "a-long-scrape-token"
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="a-long-scrape-token").status_code == 403
    scrape(client, REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer a-long-scrape-token")
    settings.CLEANLINE_METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3", HTTP_AUTHORIZATION="Bearer ").status_code == 403
    settings.CLEANLINE_METRICS_ALLOW = ["10.0.0.0/8"]
    scrape(client, REMOTE_ADDR="10.1.2.3")
    assert client.get("/metrics").status_code == 403  # 127.0.0.1 is no longer listed
    assert client.post("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 405


def test_metrics_and_alert_settings_are_checked_at_start_up() -> None:
    assert metrics_allow(["127.0.0.1", "::1", "10.0.0.0/8", "fd00::/8"]) == ["127.0.0.1", "::1", "10.0.0.0/8",
                                                                            "fd00::/8"]
    with pytest.raises(ImproperlyConfigured, match="'10.0.0.300' is not an IP address"):
        metrics_allow(["10.0.0.300"])
    assert webhook_urls(["https://hooks.example.test/T/B/x"]) == ["https://hooks.example.test/T/B/x"]
    with pytest.raises(ImproperlyConfigured, match="entry 2 is not an http"):
        webhook_urls(["http://127.0.0.1:9/x", "file:///etc/passwd"])
