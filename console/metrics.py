"""Prometheus metrics at /metrics (prometheus_client's text format), for the clients that
CLEANLINE_METRICS_ALLOW (addresses, networks) or CLEANLINE_METRICS_TOKEN (a bearer token) allow.

Table, job and alert figures are read from the database at each scrape (the rows each sync,
plan and job keeps true): nothing is counted twice and every web process answers the same.
Request latencies are observed by `RequestMetricsMiddleware` in the process that served the
request, labelled by the URL's route name (never the raw path) and the method; with several
web processes set PROMETHEUS_MULTIPROC_DIR so that they are summed over all of them.

The figures the alert rules test (console.alerts) are computed here too, so that an alert
and the metric it matches always agree."""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, F, Min, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from console.metrics_health import health_metrics
from console.metrics_services import service_metrics
from console.models import WRITE_ACTIONS, Alert, AlertKind, CleanPlan, Instant, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from timeline.exceptions import InvalidInstantError
from timeline.instant import moment_of

# Request latencies -----------------------------------------------------------------------

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "(unmatched)"

REQUEST_LATENCY = Histogram(
    "cleanline_http_request_duration_seconds",
    "Time to answer an HTTP request, by the URL's route name (namespace:name; (unmatched) when no "
    "route matched) and method",
    ["route", "method"], registry=None,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))


def route_of(request: HttpRequest) -> str:
    """The route's name (e.g. console:overview), its pattern if it has no name: never the
    path itself, whose table ids and instant times would make a series per URL."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNMATCHED
    return match.view_name or match.route or UNMATCHED


class RequestMetricsMiddleware:
    """Observes every request's latency (first in MIDDLEWARE, so that the others count too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in METHODS else "other"
        REQUEST_LATENCY.labels(route_of(request), method).observe(time.perf_counter() - started)
        return response


# Figures per table, shared with the alert rules ------------------------------------------

OPEN_PLAN = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING,
             ApprovalStatus.STALE, ApprovalStatus.REJECTED)
BUILT_PLAN = (*OPEN_PLAN, ApprovalStatus.COMPLETED)


def timeline_zone(table: Table) -> str:
    """The zone the table's instant times are written in (hoodie.table.timeline.timezone)."""
    return str((table.properties or {}).get("hoodie.table.timeline.timezone", "LOCAL"))


def age_seconds(instant_time: str, zone: str, now: datetime | None = None) -> float | None:
    """How long ago an instant time was (None when it is not one)."""
    try:
        moment = moment_of(instant_time, zone)
    except InvalidInstantError:
        return None
    return ((now or timezone.now()) - moment).total_seconds()


@dataclass(frozen=True, slots=True)
class Reclaimable:
    """What the table's newest built clean plan deletes and is not deleted yet."""

    plan_id: int | None
    bytes: int
    files: int


def reclaimable(tables: Iterable[int] | None = None) -> dict[int, Reclaimable]:
    """Per table: the bytes and files its newest built plan (any status but planning and
    failed) would delete that are still there: all of a draft, approved, stale or rejected
    plan's, the rest of a running one's, none of a completed one's; 0 without a plan."""
    newest = CleanPlan.objects.filter(table=OuterRef("pk"), status__in=BUILT_PLAN).order_by("-requested_at", "-pk")
    rows = Table.objects.annotate(plan_id=Subquery(newest.values("pk")[:1]))
    if tables is not None:
        rows = rows.filter(pk__in=list(tables))
    by_table = dict(rows.values_list("pk", "plan_id"))
    plans = {p.pk: p for p in CleanPlan.objects.filter(pk__in=[p for p in by_table.values() if p]).only(
        "status", "bytes_to_delete", "files_to_delete", "progress_bytes", "progress_done")}
    result = {}
    for table_id, plan_id in by_table.items():
        plan = plans.get(plan_id) if plan_id else None
        if plan is None or plan.status == ApprovalStatus.COMPLETED:
            result[table_id] = Reclaimable(plan_id, 0, 0)
        elif plan.status == ApprovalStatus.RUNNING:
            result[table_id] = Reclaimable(plan_id, max(0, plan.bytes_to_delete - plan.progress_bytes),
                                           max(0, plan.files_to_delete - plan.progress_done))
        else:
            result[table_id] = Reclaimable(plan_id, plan.bytes_to_delete, plan.files_to_delete)
    return result


def pending_writes() -> Iterator[Instant]:
    """Every write (commit, deltacommit, replacecommit) on an active timeline that is not
    completed, as the last sync found it."""
    return Instant.objects.filter(action__in=WRITE_ACTIONS, archived=False).exclude(state="COMPLETED").order_by(
        "table_id", "requested_time").iterator()


def earliest_savepoints() -> dict[int, str]:
    """Per table with one: its earliest completed savepoint's time (the savepointed commit's),
    where Hudi's archival stops."""
    return dict(Instant.objects.filter(action="savepoint", state="COMPLETED").values("table_id").annotate(
        first=Min("requested_time")).values_list("table_id", "first"))


@dataclass(frozen=True, slots=True)
class LastClean:
    """The last clean Cleanline ran to completion on a table: an approved plan's run or a
    pending clean run as a job."""

    finished_at: datetime
    bytes: int
    files: int
    seconds: float


def last_cleans() -> dict[int, LastClean]:
    """Per table: its last completed clean run, by finish time. A plan's run lasts from its
    start; a job (a pending clean found on the timeline) from its request."""
    found: dict[int, LastClean] = {}
    newest_plan = CleanPlan.objects.filter(table=OuterRef("pk"), status=ApprovalStatus.COMPLETED).order_by(
        "-finished_at", "-pk").values("pk")[:1]
    newest_job = Job.objects.filter(table=OuterRef("pk"), kind=Job.Kind.CLEAN, status=JobStatus.COMPLETED).order_by(
        "-finished_at", "-pk").values("pk")[:1]
    ids = Table.objects.annotate(plan=Subquery(newest_plan), job=Subquery(newest_job)).values_list("pk", "plan", "job")
    plan_ids = [p for _, p, _ in ids if p]
    job_ids = [j for _, _, j in ids if j]
    for plan in CleanPlan.objects.filter(pk__in=plan_ids).exclude(finished_at=None):
        if plan.finished_at is None:  # excluded by the query (the type allows it)
            continue
        start = plan.started_at or plan.requested_at
        found[plan.table_id] = LastClean(plan.finished_at, plan.progress_bytes, plan.progress_done,
                                         (plan.finished_at - start).total_seconds())
    for job in Job.objects.filter(pk__in=job_ids).exclude(finished_at=None):
        if job.finished_at is None:  # excluded by the query (the type allows it)
            continue
        known = found.get(job.table_id)
        if known is None or job.finished_at > known.finished_at:
            found[job.table_id] = LastClean(job.finished_at, int(job.result.get("bytes") or 0),
                                            int(job.result.get("deleted") or 0),
                                            (job.finished_at - job.requested_at).total_seconds())
    return found


def writes_since_last_clean() -> dict[int, int]:
    """Per table: completed writes requested after its last completed clean on the timeline
    (all of them when it was never cleaned), archived ones included."""
    last = Instant.objects.filter(table=OuterRef("pk"), action="clean", state="COMPLETED").order_by(
        "-requested_time").values("requested_time")[:1]
    since = Table.objects.annotate(since=Coalesce(Subquery(last), Value("")))
    return dict(since.annotate(n=Count("instants", filter=Q(
        instants__action__in=WRITE_ACTIONS, instants__state="COMPLETED",
        instants__requested_time__gt=F("since")))).values_list("pk", "n"))


# The collector ------------------------------------------------------------------------------

# A clean plan's status as a clean job's (cleanline_jobs{kind="clean"}): from its approval on.
PLAN_AS_JOB: dict[str, str] = {ApprovalStatus.APPROVED: JobStatus.QUEUED, ApprovalStatus.RUNNING: JobStatus.RUNNING,
               ApprovalStatus.COMPLETED: JobStatus.COMPLETED, ApprovalStatus.FAILED: JobStatus.FAILED}
DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 24 * 3600.0)


def _histogram(name: str, documentation: str, labels: list[str],
               samples: dict[tuple[str, ...], list[float]]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=labels)
    for key, values in sorted(samples.items()):
        buckets = [(str(bound), sum(1 for v in values if v <= bound)) for bound in DURATION_BUCKETS]
        buckets.append(("+Inf", len(values)))
        family.add_metric(list(key), buckets, sum(values))
    return family


class DatabaseCollector:
    """Tables, jobs, plans and alerts, read from the database at each scrape."""

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration (collecting would query the database)

    def collect(self) -> Iterator[Metric]:
        yield from self.tables()
        yield from self.jobs()
        yield from self.alerts()
        yield from health_metrics()
        yield from service_metrics()

    def tables(self) -> Iterator[Metric]:
        labels = ["table_id", "table"]
        tables = list(Table.objects.only("pk", "name", "total_files", "total_bytes", "failed_writes", "properties",
                                         "archival"))
        names = {t.pk: [str(t.pk), t.name] for t in tables}

        def gauge(name: str, documentation: str, values: Mapping[int, float]) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, documentation, labels=labels)
            for table_id, value in sorted(values.items()):
                if table_id in names:
                    family.add_metric(names[table_id], value)
            return family

        yield gauge("cleanline_table_files", "Files of committed slices in the table's storage, at the last sync",
                    {t.pk: t.total_files for t in tables})
        yield gauge("cleanline_table_bytes", "Bytes of the table's files, at the last sync",
                    {t.pk: t.total_bytes for t in tables})
        found = reclaimable()
        yield gauge("cleanline_table_reclaimable_bytes", "Bytes the newest clean plan deletes that are not deleted "
                    "yet (0 without a plan or once it completed)", {k: v.bytes for k, v in found.items()})
        yield gauge("cleanline_table_reclaimable_files", "Files the newest clean plan deletes that are not deleted yet",
                    {k: v.files for k, v in found.items()})
        pending: dict[int, float] = dict.fromkeys(names, 0)
        for row in Instant.objects.filter(action__in=WRITE_ACTIONS, archived=False).exclude(
                state="COMPLETED").values("table_id").annotate(n=Count("pk")).values_list("table_id", "n"):
            pending[row[0]] = row[1]
        yield gauge("cleanline_table_pending_writes", "Writes (commit, deltacommit, replacecommit) requested or "
                    "inflight on the active timeline, at the last sync", pending)
        yield gauge("cleanline_table_failed_writes", "Failed writes under the table's failed-writes policy, at the "
                    "last sync", {t.pk: t.failed_writes for t in tables})
        zones = {t.pk: timeline_zone(t) for t in tables}
        now = timezone.now()
        ages = {}
        for table_id, first in earliest_savepoints().items():
            age = age_seconds(first, zones.get(table_id, "LOCAL"), now)
            if age is not None:
                ages[table_id] = age
        yield gauge("cleanline_table_oldest_savepoint_age_seconds", "Age of the savepointed commit of the table's "
                    "earliest savepoint (where archival stops); absent without a savepoint", ages)
        yield gauge("cleanline_table_instants_since_last_clean", "Completed writes (commit, deltacommit, "
                    "replacecommit) requested after the last completed clean on the timeline (all when never "
                    "cleaned)", writes_since_last_clean())
        yield gauge("cleanline_table_active_instants", "Instants in the table's active timeline, at the last sync",
                    {t.pk: v for t in tables if (v := t.active_instants) is not None})
        yield gauge("cleanline_table_archivable_instants", "Instants Hudi's archiver would move off the active "
                    "timeline now (the table's writer options), at the last sync",
                    {t.pk: v for t in tables if (v := t.archivable_instants) is not None})
        cleans = last_cleans()
        yield gauge("cleanline_table_last_clean_bytes", "Bytes the last clean Cleanline completed deleted; absent "
                    "before the first", {k: v.bytes for k, v in cleans.items()})
        yield gauge("cleanline_table_last_clean_files", "Files the last clean Cleanline completed deleted",
                    {k: v.files for k, v in cleans.items()})
        yield gauge("cleanline_table_last_clean_duration_seconds", "How long the last clean Cleanline completed ran",
                    {k: v.seconds for k, v in cleans.items()})
        yield gauge("cleanline_table_last_clean_timestamp_seconds", "When the last clean Cleanline completed ended "
                    "(Unix time)", {k: v.finished_at.timestamp() for k, v in cleans.items()})

    def jobs(self) -> Iterator[Metric]:
        counts = GaugeMetricFamily("cleanline_jobs", "Jobs (restores, rollbacks, cleans: a pending clean run from "
                                   "the timeline and every approved clean plan) by kind and status",
                                   labels=["kind", "status"])
        found = {(k, s): n for k, s, n in Job.objects.values("kind", "status").annotate(n=Count("pk")).values_list(
            "kind", "status", "n")}
        # A clean plan runs as itself, not as a Job: once approved it is a clean job too.
        for status, n in CleanPlan.objects.filter(status__in=PLAN_AS_JOB).values("status").annotate(
                n=Count("pk")).values_list("status", "n"):
            key = (Job.Kind.CLEAN.value, PLAN_AS_JOB[status])
            found[key] = found.get(key, 0) + n
        for kind in Job.Kind.values:
            for status in JobStatus.values:
                counts.add_metric([kind, status], found.get((kind, status), 0))
        yield counts
        plans = GaugeMetricFamily("cleanline_clean_plans", "Clean plans by status", labels=["status"])
        found_plans = dict(CleanPlan.objects.values("status").annotate(n=Count("pk")).values_list("status", "n"))
        for status in ApprovalStatus.values:
            plans.add_metric([status], found_plans.get(status, 0))
        yield plans
        durations: dict[tuple[str, ...], list[float]] = {}
        for kind, status, begun, ended in Job.objects.filter(
                status__in=(JobStatus.COMPLETED, JobStatus.FAILED)).exclude(finished_at=None).values_list(
                "kind", "status", "requested_at", "finished_at").iterator():
            if ended is None:  # excluded by the query (the type allows it)
                continue
            durations.setdefault((kind, status), []).append(max(0.0, (ended - begun).total_seconds()))
        yield _histogram("cleanline_job_duration_seconds", "Finished jobs' durations, from request to end, by kind "
                         "and outcome", ["kind", "status"], durations)
        runs: dict[tuple[str, ...], list[float]] = {}
        for status, started, finished in CleanPlan.objects.filter(
                status__in=(ApprovalStatus.COMPLETED, ApprovalStatus.FAILED)).exclude(started_at=None).exclude(
                finished_at=None).values_list("status", "started_at", "finished_at").iterator():
            if started is None or finished is None:  # excluded by the query (the type allows it)
                continue
            runs.setdefault((status,), []).append(max(0.0, (finished - started).total_seconds()))
        yield _histogram("cleanline_clean_run_duration_seconds", "Finished runs of approved clean plans, from start "
                         "to end, by outcome", ["status"], runs)

    def alerts(self) -> Iterator[Metric]:
        family = GaugeMetricFamily("cleanline_alerts_open", "Alerts fired and not resolved, by kind", labels=["kind"])
        found = dict(Alert.objects.filter(resolved_at=None).values("kind").annotate(n=Count("pk")).values_list(
            "kind", "n"))
        for kind in AlertKind.values:
            family.add_metric([kind], found.get(kind, 0))
        yield family


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(DatabaseCollector())
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # every web process's request latencies, summed
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # prometheus_client leaves its __init__ unannotated
    else:
        registry.register(REQUEST_LATENCY)
    return registry


REGISTRY = _registry()


# The view -------------------------------------------------------------------------------------

def client_allowed(request: HttpRequest) -> bool:
    """From an address or network of CLEANLINE_METRICS_ALLOW, or with CLEANLINE_METRICS_TOKEN."""
    token = settings.CLEANLINE_METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    if token and header.startswith("Bearer ") and hmac.compare_digest(header[7:].strip().encode(), token.encode()):
        return True
    try:
        address: Any = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if getattr(address, "ipv4_mapped", None) is not None:
        address = address.ipv4_mapped
    return any(address in ipaddress.ip_network(n, strict=False) for n in settings.CLEANLINE_METRICS_ALLOW)


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if not client_allowed(request):
        return HttpResponse("Not allowed: see CLEANLINE_METRICS_ALLOW and CLEANLINE_METRICS_TOKEN.\n", status=403,
                            content_type="text/plain; charset=utf-8")
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
