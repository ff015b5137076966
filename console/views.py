"""Thin views: authorise, validate a form, call one service or selector, render."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from console import permissions, selectors, services
from console.forms import (
    DecisionForm,
    PlanForm,
    RegisterTableForm,
    RetentionEstimateForm,
    TableSettingsForm,
    TimelineFilterForm,
)
from console.models import Job, Table
from console.models_approvals import ApprovalStatus
from console.permissions import AuthenticatedHttpRequest
from timeline import CleanlineError

logger = logging.getLogger(__name__)

TableView = Callable[..., HttpResponseBase]


def _of_table(view: TableView, *, method: Callable[[TableView], TableView], permission: str | None = None,
              reads_lake: bool = False) -> TableView:
    """Log in; `method` (GET or POST only); the table the URL names, if the user may see tables
    (else 404); then `permission` (else 403). The view is called with the table instead of its
    id. With `reads_lake`, when the library cannot read the table (its folder was removed or
    moved, its files are unreadable), the page says so in a banner naming the problem."""

    @wraps(view)
    def call(request: AuthenticatedHttpRequest, pk: int, **kwargs: object) -> HttpResponseBase:
        table = permissions.visible_table(request.user, pk)
        if permission is not None:
            permissions.require(request.user, permission)
        try:
            return view(request, table, **kwargs)
        except CleanlineError as exc:
            if not reads_lake:
                raise
            logger.warning("%s: %s unavailable: %s", table.path, request.path, exc)
            return render(request, "console/unavailable.html", {"table": table, "error": str(exc)})

    return login_required(method(call))


def table_page(*, reads_lake: bool = False) -> Callable[[TableView], TableView]:
    """A page of one table: GET only, for every role."""
    return lambda view: _of_table(view, method=require_GET, reads_lake=reads_lake)


def table_action(permission: str) -> Callable[[TableView], TableView]:
    """A mutation of one table: POST only (with CSRF), for roles with `permission`."""
    return lambda view: _of_table(view, method=require_POST, permission=permission)


# Views whose service audits its own refusals (so that the API's are audited too).
_AUDITED_BY_SERVICE = frozenset({"restore_run", "rollback_run", "savepoint_create", "people_create", "people_role",
                                 "people_deactivate", "people_reactivate", "people_grant_confirm",
                                 "people_grant_decline", "people_link", "people_unlink", "archival_request",
                                 "version_request", "compaction_request"})


def refused(request: AuthenticatedHttpRequest, exc: ValidationError) -> None:
    """Show why a service refused, and audit the refusal (`<view>.refused`, with the table
    the URL names and the reason)."""
    reason = "; ".join(exc.messages)
    messages.error(request, reason)
    match = request.resolver_match
    name = match.url_name if match is not None else ""
    if name and name not in _AUDITED_BY_SERVICE:
        table = Table.objects.filter(pk=match.kwargs["pk"]).first() if match and "pk" in match.kwargs else None
        services.audit(user=request.user, action=f"{name}.refused", table=table,
                       parameters={"path": request.path}, result=reason)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Every 403: audited (`access.denied`, the path and the table it names), then the page."""
    if request.user.is_authenticated:
        match = request.resolver_match
        pk = match.kwargs.get("pk") if match is not None else None
        services.audit(user=request.user, action="access.denied",
                       table=Table.objects.filter(pk=pk).first() if pk is not None else None,
                       parameters={"path": request.path, "method": request.method or ""},
                       result=str(exception or "") or "Your role does not allow this.")
    return render(request, "403.html", {"reason": str(exception or "")}, status=403)


def attempt(request: AuthenticatedHttpRequest, work: Callable[[], str]) -> None:
    """Call a service: its success message is shown, or why it was refused."""
    try:
        messages.success(request, work())
    except ValidationError as exc:
        refused(request, exc)


def writers_stopped_ticked(request: AuthenticatedHttpRequest) -> bool:
    """The admin ticked "the table's Hudi writers are stopped" (offered when no lock is known and
    a writer looks live: `selectors.writer_lock`)."""
    return request.POST.get("writers_stopped") in ("on", "true", "1")


def _form_errors(form: forms.Form) -> str:
    return "; ".join(f"{field}: {', '.join(str(error) for error in errors)}" for field, errors in form.errors.items())


def _overview(table: Table) -> HttpResponse:
    return redirect("console:overview", pk=table.pk)


@login_required
@require_GET
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The lake dashboard: totals, the tables by what a clean would free, three charts."""
    permissions.require_view(request.user)
    return render(request, "console/dashboard.html", {"dashboard": selectors.dashboard(),
                                                      "demo": selectors.demo_status()})


@login_required
@require_GET
def demo_status(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The demo lake's build banner; htmx polls it while the build runs."""
    permissions.require_view(request.user)
    return render(request, "console/_demo_status.html", {"demo": selectors.demo_status()})


@login_required
@require_GET
def catalog(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    return _catalog(request, RegisterTableForm())


def _catalog(request: AuthenticatedHttpRequest, form: RegisterTableForm, status: int = 200) -> HttpResponse:
    """The catalog: tables searched (name or path), sorted and paged; the register form."""
    search = request.GET.get("q", "").strip()
    sort = request.GET.get("sort", "name")
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/catalog.html", {
        "page": selectors.page_of(selectors.catalog(search=search, sort=sort), request.GET.get("page")),
        "q": search, "sort": sort, "query": query.urlencode(), "sorts": selectors.CATALOG_SORTS, "form": form,
        "demo": selectors.demo_status()},
        status=status)


@login_required
@require_POST
def register(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require(request.user, permissions.REGISTER)
    form = RegisterTableForm(request.POST)
    if form.is_valid():
        try:
            table = services.table_register(path=form.cleaned_data["path"], user=request.user)
        except ValidationError as exc:
            form.add_error("path", exc)
        else:
            messages.success(request, f"{table.name} registered; its timeline is being synced.")
            return _overview(table)
    return _catalog(request, form, status=400)


@table_page(reads_lake=True)
def overview(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    return _overview_page(request, table, PlanForm())


def _overview_page(request: AuthenticatedHttpRequest, table: Table, plan_form: PlanForm,
                   status: int = 200) -> HttpResponse:
    """The overview; after a refused plan request, with the form as the user filled it in."""
    mdt, mdt_validation, mdt_error = selectors.metadata_table(table, validate=request.GET.get("validate_mdt") == "1")
    return render(request, "console/overview.html", {
        "mdt": mdt, "mdt_validation": mdt_validation, "mdt_error": mdt_error,
        "mdt_rows": [(p, "available", mdt.file_groups.get(p, "")) for p in mdt.partitions]
        + [(p, "being built", mdt.file_groups.get(p, "")) for p in mdt.inflight] if mdt else [],
        "can_drop_mdt": request.user.has_perm(permissions.RESTORE),
        "table": table, "overview": selectors.overview(table), "plans": selectors.plans_of(table)[:20],
        "lock": selectors.table_lock_state(table), "can_break_lock": request.user.has_perm(permissions.APPROVE),
        "plan_form": plan_form, "settings_form": TableSettingsForm(initial={
            "auto_clean": table.auto_clean, "auto_max_files": table.auto_max_files,
            "auto_max_bytes": table.auto_max_bytes,
            "write_options": "\n".join(f"{k}={v}" for k, v in sorted(table.write_options.items()))}),
        "pending_cleans": table.instants.filter(action="clean").exclude(state="COMPLETED"),
        "writer_lock": selectors.writer_lock(table),
        "folder_replaced": request.user.has_perm(permissions.REGISTER) and selectors.replaced_folder(table) is not None,
    }, status=status)


@table_page()
def timeline(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    form = TimelineFilterForm(request.GET)
    filters = selectors.TimelineFilters(**form.cleaned_data) if form.is_valid() else None  # refused: no rows
    page = selectors.timeline_page(table, filters, request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/timeline.html", {
        "table": table, "form": form, "page": page,
        "actions": selectors.actions_of(table), "states": selectors.STATES, "query": query.urlencode()})


@table_page(reads_lake=True)
def instant_detail(request: AuthenticatedHttpRequest, table: Table, instant_id: int) -> HttpResponse:
    instant = get_object_or_404(table.instants, pk=instant_id)
    contents = selectors.instant_contents(table, instant)
    files = selectors.instant_files(contents)
    stats_page = selectors.write_stats_page(table, instant, contents, partition=request.GET.get("partition"),
                                            page=request.GET.get("page"))
    return render(request, "console/instant.html", {
        "table": table, "instant": instant, "contents": contents, "stats_page": stats_page,
        "write_stats": files.write_stats if stats_page is None else stats_page.stats,
        "plan_files": files.plan_files, "deleted_files": files.deleted_files, "savepoint_files": files.savepoint_files,
        "inline_max": settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES})


@table_page(reads_lake=True)
def instant_raw(request: AuthenticatedHttpRequest, table: Table, instant_id: int, state: str) -> FileResponse:
    """An instant's state file as Hudi wrote it, streamed (never held whole)."""
    instant = get_object_or_404(table.instants, pk=instant_id)
    name, stream = selectors.state_file_reader(table, instant, state)
    response = FileResponse(stream, as_attachment=True, filename=name, content_type="application/octet-stream")
    response.block_size = 1 << 20
    return response


@table_page(reads_lake=True)
def file_groups(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    partitions, chosen, groups = selectors.file_groups(table, request.GET.get("partition"))
    return render(request, "console/file_groups.html", {
        "table": table, "partitions": partitions, "partition": chosen, "groups": groups})


@table_action(permissions.SYNC)
def sync(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    full = request.POST.get("full") == "1"
    services.table_sync_request(table=table, user=request.user, full=full)
    messages.info(request, f"{'Full re-sync' if full else 'Sync'} of {table.name} queued.")
    return _overview(table)


@table_page()
def sync_status(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """The sync badge; htmx polls it while a sync is queued or running (the badge says so)."""
    return render(request, "console/_sync_status.html", {"table": table})


@table_action(permissions.PLAN)
def plan_request(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    form = PlanForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Check the plan settings: " + _form_errors(form))
        return _overview_page(request, table, form, status=400)
    try:
        plan = services.plan_request(table=table, user=request.user, overrides=form.cleaned_data)
    except ValidationError as exc:
        refused(request, exc)
        return _overview_page(request, table, form, status=400)
    return redirect("console:plan", pk=table.pk, plan_id=plan.pk)


@table_page()
def plan_detail(request: AuthenticatedHttpRequest, table: Table, plan_id: int) -> HttpResponse:
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    show = request.GET.get("show", "delete")
    delete = {"delete": True, "keep": False}.get(show)
    search = request.GET.get("q", "").strip()
    partition = request.GET.get("partition", "")
    can_decide = request.user.has_perm(permissions.APPROVE)
    return render(request, "console/plan.html", {
        "table": table, "plan": plan, "show": show, "q": search, "partition": partition,
        "files": selectors.plan_files(plan, delete=delete, search=search, partition=partition,
                                      page=request.GET.get("page")),
        "partitions": selectors.plan_partitions(plan, request.GET.get("ppage")),
        "partition_choices": selectors.partition_choices(plan), "decision": DecisionForm(), "can_decide": can_decide,
        # only the approval form shows it; it reads the timeline's names and the heartbeats
        "writer_lock": selectors.writer_lock(table) if plan.status == ApprovalStatus.DRAFT and can_decide else None})


@table_page()
def plan_progress(request: AuthenticatedHttpRequest, table: Table, plan_id: int) -> HttpResponse:
    """The plan's status and progress bar; htmx polls it while the plan is being made or run."""
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    response = render(request, "console/_plan_progress.html", {"table": table, "plan": plan})
    if request.headers.get("HX-Request") and plan.status not in LIVE_PLAN_STATES:
        response["HX-Refresh"] = "true"  # the plan settled: show the whole page (report, decisions)
    return response


LIVE_PLAN_STATES = (ApprovalStatus.PLANNING, ApprovalStatus.APPROVING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)



@table_page()
def plan_report_csv(request: AuthenticatedHttpRequest, table: Table, plan_id: int) -> StreamingHttpResponse:
    """Every file of the plan with its decision, reason, size and outcome, as CSV."""
    plan = get_object_or_404(table.clean_plans, pk=plan_id)
    from django.utils.http import content_disposition_header

    # The name comes from the table's own properties: only letters, digits, "-", "_" and "." go
    # into the header (non-ASCII letters as RFC 6266's filename*), never quotes or line breaks.
    stem = "".join(c if c.isalnum() or c in "-_." else "-" for c in table.name).strip("-.") or "table"
    # The rows stream after the view returned (and the middleware let the zone go): take it now.
    response = StreamingHttpResponse(selectors.plan_csv_rows(plan, timezone.get_current_timezone()),
                                     content_type="text/csv")
    response["Content-Disposition"] = content_disposition_header(True, f"{stem}-clean-plan-{plan.pk}.csv")
    return response


@table_page(reads_lake=True)
def savepoints(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    return _savepoints(request, table)


def _savepoints(request: AuthenticatedHttpRequest, table: Table, *, chosen: str = "", comment: str = "",
                error: str = "", status: int = 200) -> HttpResponse:
    """The savepoints page; the create form offers only the writes the library accepts, and
    after a refusal shows the reason with the user's choice and comment kept."""
    savepoints, commits = selectors.savepoints_page(table)
    return render(request, "console/savepoints.html", {
        "table": table, "savepoints": savepoints, "commits": commits,
        "chosen": chosen, "comment": comment, "create_error": error, "writer_lock": selectors.writer_lock(table)},
        status=status)


@table_action(permissions.CREATE_SAVEPOINT)
def savepoint_create(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    instant_time, comment = request.POST.get("instant", ""), request.POST.get("comment", "")[:500]
    try:
        done = services.savepoint_create(table=table, user=request.user,
                                         instant_time=instant_time, comment=comment,
                                         writers_stopped=writers_stopped_ticked(request))
    except ValidationError as exc:
        return _savepoints(request, table, chosen=instant_time, comment=comment, error="; ".join(exc.messages),
                           status=400)
    messages.success(request, f"Savepoint {done} created.")
    return redirect("console:savepoints", pk=table.pk)


@table_action(permissions.DELETE_SAVEPOINT)
def savepoint_delete(request: AuthenticatedHttpRequest, table: Table, instant: str) -> HttpResponse:
    def delete() -> str:
        services.savepoint_delete(table=table, user=request.user, instant_time=instant,
                                  writers_stopped=writers_stopped_ticked(request))
        return f"Savepoint {instant} deleted."

    if request.POST.get("confirm") != instant:
        messages.error(request, f"Type the savepoint's time ({instant}) to delete it.")
    else:
        attempt(request, delete)
    return redirect("console:savepoints", pk=table.pk)


@table_page(reads_lake=True)
def restore_preview(request: AuthenticatedHttpRequest, table: Table, savepoint: str) -> HttpResponse:
    try:
        preview, error = selectors.restore_preview(table, savepoint), ""
    except CleanlineError as exc:
        preview, error = None, str(exc)
    return render(request, "console/restore.html", {
        "table": table, "savepoint": savepoint, "preview": preview, "error": error,
        "partitions": sorted(preview.per_partition().items()) if preview else [],
        "files": selectors.page_of(selectors.restore_files(preview) if preview else [], request.GET.get("page")),
        "jobs": table.jobs.filter(kind=Job.Kind.RESTORE)[:10], "writer_lock": selectors.writer_lock(table)})


@table_page(reads_lake=True)
def rollback_preview(request: AuthenticatedHttpRequest, table: Table, instant: str) -> HttpResponse:
    """What rolling back one failed write deletes (paged), or why it cannot be rolled back; the
    typed confirmation that queues it."""
    rows = selectors.failed_write_previews(table)
    row = next((r for r in rows if r.instant.requested_time == instant), None)
    if row is None:
        raise Http404(f"{instant} is not a failed write of {table.name}.")
    files = row.preview.files_to_delete + row.preview.logs_to_mark if row.preview else ()
    return render(request, "console/rollback.html", {
        "table": table, "row": row, "files": selectors.page_of(list(files), request.GET.get("page")),
        "ways": selectors.rollback_ways(table, rows, instant) if row.preview is None and not row.live else None,
        "marked": {path for _, path, _ in row.preview.logs_to_mark} if row.preview else set(),
        "writer_lock": selectors.writer_lock(table)})


@table_action(permissions.RESTORE)
def job_request(request: AuthenticatedHttpRequest, table: Table, kind: str) -> HttpResponse:
    target = request.POST.get("target", "")
    try:
        job = services.job_request(table=table, user=request.user, kind=kind, target=target,
                                   confirm_name=request.POST.get("confirm"),
                                   writers_stopped=writers_stopped_ticked(request))
    except ValidationError as exc:
        refused(request, exc)
        return redirect("console:restore", pk=table.pk, savepoint=target) if kind == "restore" else redirect(
            "console:failed_writes", pk=table.pk)
    return redirect("console:job", pk=table.pk, job_id=job.pk)


@table_page()
def job_detail(request: AuthenticatedHttpRequest, table: Table, job_id: int) -> HttpResponse:
    job = get_object_or_404(table.jobs, pk=job_id)
    template = "console/_job.html" if request.headers.get("HX-Request") else "console/job.html"
    return render(request, template, {"table": table, "job": job})


@table_page()
def retention(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """What-if retention: the latest estimate (or the one asked for) as a chart and a table, and
    the form asking for another. While it is computed the page (or its HTMX part) polls."""
    estimate_id = request.GET.get("estimate", "")
    estimate = selectors.retention_estimate(table, int(estimate_id) if estimate_id.isdigit() else None)
    if estimate_id and estimate is None:
        raise Http404("No such estimate.")
    context = {"table": table, "estimate": estimate, "form": RetentionEstimateForm(),
               "chart": selectors.retention_chart(estimate) if estimate else None}
    template = "console/_retention.html" if request.headers.get("HX-Request") else "console/retention.html"
    return render(request, template, context)


@table_action(permissions.PLAN)
def retention_request(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    form = RetentionEstimateForm(request.POST)
    if form.is_valid():
        try:
            estimate = services.estimate_request(table=table, user=request.user,
                                                 commits=form.cleaned_data["commits"], hours=form.cleaned_data["hours"])
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect(f"{reverse('console:retention', args=[table.pk])}?estimate={estimate.pk}")
    return render(request, "console/retention.html", {
        "table": table, "form": form, "estimate": None, "chart": None}, status=400)


@table_page(reads_lake=True)
def failed_writes(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    return render(request, "console/failed_writes.html", {
        "table": table, "previews": selectors.failed_write_previews(table),
        "jobs": table.jobs.filter(kind=Job.Kind.ROLLBACK)[:10],
        "can_rollback": request.user.has_perm(permissions.RESTORE)})


@login_required
@require_GET
def audit_log(request: AuthenticatedHttpRequest) -> HttpResponse:
    permissions.require_view(request.user)
    page = selectors.audit_page(action=request.GET.get("action", ""), username=request.GET.get("user", ""),
                                table_id=request.GET.get("table", ""), page=request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(request, "console/audit.html", {"page": page, "query": query.urlencode(),
                                                  "tables": selectors.catalog()})


@table_action(permissions.SETTINGS)
def table_settings(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    form = TableSettingsForm(request.POST)
    if form.is_valid():
        def save() -> str:
            services.table_settings_update(table=table, user=request.user, **form.cleaned_data)
            return "Settings saved."

        attempt(request, save)
    else:
        messages.error(request, "Check the settings: " + _form_errors(form))
    return _overview(table)


@table_action(permissions.APPROVE)
def clean_run_pending(request: AuthenticatedHttpRequest, table: Table, instant: str) -> HttpResponse:
    """Run a requested or inflight clean found on the timeline (one a Hudi writer left)."""
    try:
        job = services.job_request(table=table, user=request.user, kind=Job.Kind.CLEAN,
                                   target=instant, writers_stopped=writers_stopped_ticked(request))
    except ValidationError as exc:
        refused(request, exc)
        return _overview(table)
    return redirect("console:job", pk=table.pk, job_id=job.pk)


@table_action(permissions.RESTORE)
def metadata_table_drop(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """The admin's repair action: drop the metadata table (the table's name typed); audited."""
    def drop() -> str:
        partitions = services.metadata_table_drop(table=table, user=request.user,
                                                  confirm_name=request.POST.get("confirm"),
                                                  writers_stopped=writers_stopped_ticked(request))
        return f"The metadata table ({', '.join(partitions)}) was dropped; Hudi writers rebuild it."

    attempt(request, drop)
    return _overview(table)


@table_action(permissions.REGISTER)
def location_rerecord(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """Record the table's replaced folder again (`services.table_location_rerecord`); audited."""
    def rerecord() -> str:
        services.table_location_rerecord(table=table, user=request.user)
        return "The table's folder was recorded again: changes run in it from now on."

    attempt(request, rerecord)
    return _overview(table)


@table_action(permissions.APPROVE)
def lock_break(request: AuthenticatedHttpRequest, table: Table) -> HttpResponse:
    """Break the table's lock once it expired (its run stopped heartbeating); audited."""
    def break_lock() -> str:
        services.table_lock_break(table=table, user=request.user, token=request.POST.get("token", ""))
        return "The stale lock was broken."

    attempt(request, break_lock)
    return _overview(table)
