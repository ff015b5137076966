"""Thin views: authorise, validate a form, call one service or selector, render."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from console import permissions, selectors, services
from console.forms import DecisionForm, PlanForm, RegisterTableForm, TableSettingsForm, TimelineFilterForm
from console.models import Job, PlanStatus, SyncStatus
from console.tasks import build_clean_plan, enqueue, enqueue_sync, run_clean_plan, run_job
from timeline import CleanlineError

logger = logging.getLogger(__name__)


def lake_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a table's pages that read the lake: when the library cannot read the table (its
    folder was removed or moved, its files are unreadable), the page says so in a banner
    naming the problem instead of failing."""

    @wraps(view)
    def page(request: HttpRequest, pk: int, *args: object, **kwargs: object) -> HttpResponse:
        try:
            return view(request, pk, *args, **kwargs)
        except CleanlineError as exc:
            table = permissions.visible_table(request.user, pk)
            logger.warning("%s: %s unavailable: %s", table.path, request.path, exc)
            return render(request, "console/unavailable.html", {"table": table, "error": str(exc)})

    return page


@login_required
@require_GET
def catalog(request: HttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    return render(request, "console/catalog.html", {
        "tables": selectors.catalog(), "form": RegisterTableForm(),
        "can_register": request.user.has_perm(permissions.REGISTER)})


@login_required
@require_POST
def register(request: HttpRequest) -> HttpResponse:
    permissions.require(request.user, permissions.REGISTER)
    form = RegisterTableForm(request.POST)
    if form.is_valid():
        try:
            table = services.table_register(path=form.cleaned_data["path"], user=request.user)  # type: ignore[arg-type]
        except ValidationError as exc:
            form.add_error("path", exc)
        else:
            enqueue_sync(table.pk)
            messages.success(request, f"{table.name} registered; its timeline is being synced.")
            return redirect("console:overview", pk=table.pk)
    return render(request, "console/catalog.html", {"tables": selectors.catalog(), "form": form,
                                                    "can_register": True}, status=400)


@login_required
@require_GET
@lake_page
def overview(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    return render(request, "console/overview.html", {
        "table": table, "overview": selectors.overview(table), "plans": selectors.plans_of(table)[:20],
        "lock": selectors.table_lock_state(table), "can_break_lock": request.user.has_perm(permissions.APPROVE),
        "plan_form": PlanForm(), "settings_form": TableSettingsForm(initial={
            "auto_clean": table.auto_clean, "auto_max_files": table.auto_max_files,
            "auto_max_bytes": table.auto_max_bytes}),
        "pending_cleans": table.instants.filter(action="clean").exclude(state="COMPLETED")})


@login_required
@require_GET
def timeline(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    form = TimelineFilterForm(request.GET)
    filters = selectors.TimelineFilters(**form.cleaned_data) if form.is_valid() else selectors.TimelineFilters()
    page = selectors.timeline_page(table, filters, request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/timeline.html", {
        "table": table, "form": form, "page": page,
        "actions": selectors.actions_of(table), "states": selectors.STATES, "query": query.urlencode()})


@login_required
@require_GET
@lake_page
def instant_detail(request: HttpRequest, pk: int, instant_id: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    instant = get_object_or_404(table.instants, pk=instant_id)
    contents = selectors.instant_contents(table, instant)
    latest = contents[0].content if contents else None
    return render(request, "console/instant.html", {
        "table": table, "instant": instant, "contents": contents,
        "write_stats": selectors.write_stats(latest),
        "plan_files": selectors.per_partition_files(
            next((c.content for c in contents if c.state == "REQUESTED" and instant.action == "clean"), None),
            "filePathsToBeDeletedPerPartition"),
        "deleted_files": selectors.per_partition_files(latest, "successDeleteFiles") if instant.action in (
            "clean", "rollback") else [],
        "savepoint_files": selectors.per_partition_files(latest, "savepointDataFile") if instant.action == "savepoint"
        else []})


@login_required
@require_GET
@lake_page
def file_groups(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    partitions, chosen, groups = selectors.file_groups(table, request.GET.get("partition"))
    return render(request, "console/file_groups.html", {
        "table": table, "partitions": partitions, "partition": chosen, "groups": groups})


@login_required
@require_POST
def sync(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.SYNC)
    enqueue_sync(table.pk)
    messages.info(request, f"Sync of {table.name} queued.")
    return redirect("console:overview", pk=table.pk)


@login_required
@require_GET
def sync_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The sync badge; htmx polls it while a sync is queued or running."""
    table = permissions.visible_table(request.user, pk)
    live = table.sync_status in (SyncStatus.QUEUED, SyncStatus.RUNNING)
    return render(request, "console/_sync_status.html", {"table": table, "live": live})


@login_required
@require_POST
def plan_request(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.PLAN)
    form = PlanForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Check the plan settings: " + "; ".join(
            f"{f}: {', '.join(e)}" for f, e in form.errors.items()))
        return redirect("console:overview", pk=table.pk)
    try:
        plan = services.plan_request(table=table, user=request.user, overrides=form.cleaned_data)  # type: ignore[arg-type]
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect("console:overview", pk=table.pk)
    enqueue(build_clean_plan, plan.pk)
    return redirect("console:plan", pk=table.pk, plan_id=plan.pk)


@login_required
@require_GET
def plan_detail(request: HttpRequest, pk: int, plan_id: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    show = request.GET.get("show", "delete")
    delete = {"delete": True, "keep": False}.get(show)
    search = request.GET.get("q", "").strip()
    partition = request.GET.get("partition", "")
    return render(request, "console/plan.html", {
        "table": table, "plan": plan, "show": show, "q": search, "partition": partition,
        "files": selectors.plan_files(plan, delete=delete, search=search, partition=partition,
                                      page=request.GET.get("page")),
        "partitions": plan.partition_summary, "decision": DecisionForm(),
        "can_decide": request.user.has_perm(permissions.APPROVE)})


@login_required
@require_GET
def plan_progress(request: HttpRequest, pk: int, plan_id: int) -> HttpResponse:
    """The plan's status and progress bar; htmx polls it while the plan is being made or run."""
    table = permissions.visible_table(request.user, pk)
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    response = render(request, "console/_plan_progress.html", {"table": table, "plan": plan})
    if request.headers.get("HX-Request") and plan.status not in LIVE_PLAN_STATES:
        response["HX-Refresh"] = "true"  # the plan settled: show the whole page (report, decisions)
    return response


LIVE_PLAN_STATES = (PlanStatus.PLANNING, PlanStatus.APPROVED, PlanStatus.RUNNING)


@login_required
@require_POST
def plan_decide(request: HttpRequest, pk: int, plan_id: int, decision: str) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.APPROVE)
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    form = DecisionForm(request.POST)
    note = form.cleaned_data["note"] if form.is_valid() else ""
    try:
        if decision == "approve":
            plan = services.plan_approve(plan=plan, user=request.user)  # type: ignore[arg-type]
            if plan.status == PlanStatus.APPROVED:
                enqueue(run_clean_plan, plan.pk)
                messages.success(request, f"Approved: clean {plan.clean_instant} is running.")
            else:
                messages.warning(request, "The table changed since this plan was made: it is stale and nothing ran.")
        else:
            services.plan_reject(plan=plan, user=request.user, note=note)  # type: ignore[arg-type]
            messages.info(request, "Plan rejected.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("console:plan", pk=table.pk, plan_id=plan.pk)


@login_required
@require_GET
def plan_report_csv(request: HttpRequest, pk: int, plan_id: int) -> HttpResponse:
    """Every file of the plan with its decision, reason, size and outcome, as CSV."""
    table = permissions.visible_table(request.user, pk)
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    from django.utils.http import content_disposition_header

    # The name comes from the table's own properties: only letters, digits, "-", "_" and "." go
    # into the header (non-ASCII letters as RFC 6266's filename*), never quotes or line breaks.
    stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in table.name).strip("-.") or "table"
    response = StreamingHttpResponse(selectors.plan_csv_rows(plan), content_type="text/csv")
    response["Content-Disposition"] = content_disposition_header(True, f"{stem}-clean-plan-{plan.pk}.csv")
    return response


@login_required
@require_GET
@lake_page
def savepoints(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    commits = table.instants.filter(action__in=("commit", "deltacommit", "replacecommit"), state="COMPLETED")
    return render(request, "console/savepoints.html", {
        "table": table, "savepoints": selectors.savepoints(table),
        "commits": commits.order_by("-requested_time")[:200]})


@login_required
@require_POST
def savepoint_create(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.CREATE_SAVEPOINT)
    try:
        done = services.savepoint_create(table=table, user=request.user, instant_time=request.POST.get("instant", ""),  # type: ignore[arg-type]
                                         comment=request.POST.get("comment", "")[:500])
        messages.success(request, f"Savepoint {done} created.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("console:savepoints", pk=table.pk)


@login_required
@require_POST
def savepoint_delete(request: HttpRequest, pk: int, instant: str) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.DELETE_SAVEPOINT)
    if request.POST.get("confirm") != instant:
        messages.error(request, f"Type the savepoint's time ({instant}) to delete it.")
        return redirect("console:savepoints", pk=table.pk)
    try:
        services.savepoint_delete(table=table, user=request.user, instant_time=instant)  # type: ignore[arg-type]
        messages.success(request, f"Savepoint {instant} deleted.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("console:savepoints", pk=table.pk)


@login_required
@require_GET
@lake_page
def restore_preview(request: HttpRequest, pk: int, savepoint: str) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    try:
        preview, error = selectors.restore_preview(table, savepoint), ""
    except CleanlineError as exc:
        preview, error = None, str(exc)
    return render(request, "console/restore.html", {
        "table": table, "savepoint": savepoint, "preview": preview, "error": error,
        "partitions": sorted(preview.per_partition().items()) if preview else [],
        "jobs": table.jobs.filter(kind=Job.Kind.RESTORE)[:10],
        "can_restore": request.user.has_perm(permissions.RESTORE)})


@login_required
@require_POST
def job_request(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.RESTORE)
    target = request.POST.get("target", "")
    try:
        job = services.job_request(table=table, user=request.user, kind=kind, target=target,  # type: ignore[arg-type]
                                   confirm_name=request.POST.get("confirm"))
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect("console:restore", pk=table.pk, savepoint=target) if kind == "restore" else redirect(
            "console:failed_writes", pk=table.pk)
    enqueue(run_job, job.pk)
    return redirect("console:job", pk=table.pk, job_id=job.pk)


@login_required
@require_GET
def job_detail(request: HttpRequest, pk: int, job_id: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    job = get_object_or_404(table.jobs, pk=job_id)
    template = "console/_job.html" if request.headers.get("HX-Request") else "console/job.html"
    return render(request, template, {"table": table, "job": job})


@login_required
@require_GET
@lake_page
def failed_writes(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    return render(request, "console/failed_writes.html", {
        "table": table, "previews": selectors.failed_write_previews(table),
        "jobs": table.jobs.filter(kind=Job.Kind.ROLLBACK)[:10],
        "can_rollback": request.user.has_perm(permissions.RESTORE)})


@login_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    page = selectors.audit_page(action=request.GET.get("action", ""), username=request.GET.get("user", ""),
                                table_id=request.GET.get("table", ""), page=request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/audit.html", {"page": page, "query": query.urlencode(),
                                                  "tables": selectors.catalog()})


@login_required
@require_POST
def table_settings(request: HttpRequest, pk: int) -> HttpResponse:
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.SETTINGS)
    form = TableSettingsForm(request.POST)
    if form.is_valid():
        services.table_settings_update(table=table, user=request.user, **form.cleaned_data)  # type: ignore[arg-type]
        messages.success(request, "Settings saved.")
    else:
        messages.error(request, "Check the settings: " + "; ".join(
            f"{f}: {', '.join(e)}" for f, e in form.errors.items()))
    return redirect("console:overview", pk=table.pk)


@login_required
@require_POST
def clean_run_pending(request: HttpRequest, pk: int, instant: str) -> HttpResponse:
    """Run a requested or inflight clean found on the timeline (one a Hudi writer left)."""
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.APPROVE)
    try:
        services.check_table_free(table)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
        return redirect("console:overview", pk=table.pk)
    job = Job.objects.create(table=table, kind=Job.Kind.CLEAN, target=instant, requested_by=request.user)
    services.audit(user=request.user, action="clean.pending.run", table=table, parameters={"clean": instant})  # type: ignore[arg-type]
    enqueue(run_job, job.pk)
    return redirect("console:job", pk=table.pk, job_id=job.pk)


@login_required
@require_POST
def lock_break(request: HttpRequest, pk: int) -> HttpResponse:
    """Break the table's lock once it expired (its run stopped heartbeating); audited."""
    table = permissions.visible_table(request.user, pk)
    permissions.require(request.user, permissions.APPROVE)
    try:
        services.table_lock_break(table=table, user=request.user, token=request.POST.get("token", ""))  # type: ignore[arg-type]
        messages.success(request, "The stale lock was broken.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    return redirect("console:overview", pk=table.pk)
