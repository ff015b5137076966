"""Alert rules per table, checked by a periodic task (console.tasks.check_alerts, every
CLEANLINE_ALERT_INTERVAL_SECONDS), delivered by e-mail (Django's mail backend, to
CLEANLINE_ALERT_EMAILS) and by JSON webhooks (Slack-compatible: a `text` field; to
CLEANLINE_ALERT_WEBHOOKS).

Every table has one rule per kind (AlertKind), on by default, with a threshold where the kind
has one (hours, days or bytes; empty: the setting's default). A check finds each enabled
rule's conditions: each is an alert keyed by what it is about (a plan, a write, a savepoint).
A condition found for the first time fires an alert, which is recorded (the alerts page, the
audit log's alert.fired) and delivered once to every channel; a channel that failed is tried
again at the next checks until it succeeds or the alert resolves. An open alert whose
condition is gone (or whose rule was turned off) is resolved (alert.resolved). A condition
that comes back later fires a new alert."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, tzinfo
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from console import outbound, permissions, zones
from console.alerts_health import health_error, health_info, health_warning
from console.alerts_services import backlog_bytes, backlog_commits, service_inflight
from console.alerts_setup import alert_emails, alert_webhooks, all_channels, lake_enabled, lake_rules, lake_threshold
from console.lake import open_table
from console.metrics import age_seconds, earliest_savepoints, pending_writes, reclaimable, timeline_zone
from console.models import Alert, AlertKind, AlertRule, CleanPlan, Job, JobStatus, Table
from console.models_approvals import ApprovalStatus
from console.services.audit import audit
from console.services.locks import live_lock
from timeline import CleanlineError

logger = logging.getLogger(__name__)


# Rules and their thresholds ---------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Threshold:
    unit: str
    setting: str


THRESHOLDS = {
    AlertKind.WRITE_PENDING: Threshold("hours", "CLEANLINE_ALERT_WRITE_PENDING_HOURS"),
    AlertKind.SAVEPOINT_OLD: Threshold("days", "CLEANLINE_ALERT_SAVEPOINT_DAYS"),
    AlertKind.RECLAIMABLE: Threshold("bytes", "CLEANLINE_ALERT_RECLAIMABLE_BYTES"),
    AlertKind.ACTIVE_TIMELINE: Threshold("instants", "CLEANLINE_ALERT_ACTIVE_INSTANTS"),
    AlertKind.BACKLOG_COMMITS: Threshold("delta commits", "CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS"),
    AlertKind.BACKLOG_BYTES: Threshold("bytes", "CLEANLINE_ALERT_BACKLOG_BYTES"),
    AlertKind.SERVICE_INFLIGHT: Threshold("hours", "CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS"),
}


def setting_threshold(kind: str) -> float | None:
    """The kind's threshold in the settings (CLEANLINE_ALERT_*), None for a kind without one."""
    known = THRESHOLDS.get(AlertKind(kind))
    return float(getattr(settings, known.setting)) if known else None


def default_threshold(kind: str) -> float | None:
    """The lake-wide threshold: the console's (alerts set up by an admin), else the setting's."""
    if kind not in THRESHOLDS:
        return None
    found = lake_threshold(kind)
    return found if found is not None else setting_threshold(kind)


def threshold_of(rule: AlertRule) -> float | None:
    """The rule's threshold, or the setting's default when it has none of its own."""
    return rule.threshold if rule.threshold is not None else default_threshold(rule.kind)


def rules_of(table: Table, *, create: bool = True) -> dict[str, AlertRule]:
    """The table's rule of every kind (made, following the lake-wide default, when missing;
    unsaved ones with `create` false)."""
    rules = {r.kind: r for r in table.alert_rules.all()}
    lake = lake_rules()
    missing = [AlertRule(table=table, kind=kind, enabled=lake_enabled(kind, lake)) for kind in AlertKind.values
               if kind not in rules]
    if missing and create:
        AlertRule.objects.bulk_create(missing, ignore_conflicts=True)
        rules = {r.kind: r for r in table.alert_rules.all()}
    else:
        rules.update({r.kind: r for r in missing})
    return {kind: rules[kind] for kind in AlertKind.values}


# Conditions: what is true now, per table and rule --------------------------------------------

@dataclass
class Figures:
    """What the checks of all tables share, read once per check."""

    reclaimable: dict[int, Any]
    pending: dict[int, list[Any]]
    savepoints: dict[int, str]

    @classmethod
    def read(cls) -> Figures:
        pending: dict[int, list[Any]] = {}
        for instant in pending_writes():
            pending.setdefault(instant.table_id, []).append(instant)
        return cls(reclaimable(), pending, earliest_savepoints())


def _hours(seconds: float) -> str:
    hours = seconds / 3600
    return f"{hours:.1f} hours" if hours < 48 else f"{hours / 24:.1f} days"


def clean_failed(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """Cleans of the table failed (a plan that failed to build or to run, a pending clean's
    job) since its last clean that completed: one alert per table until a clean completes."""
    succeeded = max(
        [t for t in (table.clean_plans.filter(status=ApprovalStatus.COMPLETED).aggregate(t=Max("finished_at"))["t"],
                     table.jobs.filter(kind=Job.Kind.CLEAN, status=JobStatus.COMPLETED).aggregate(
                         t=Max("finished_at"))["t"]) if t is not None], default=None)
    plans = table.clean_plans.filter(status=ApprovalStatus.FAILED)
    jobs = table.jobs.filter(kind=Job.Kind.CLEAN, status=JobStatus.FAILED)
    if succeeded is not None:
        plans = plans.filter(Q(finished_at__gt=succeeded) | Q(finished_at=None, requested_at__gt=succeeded))
        jobs = jobs.filter(Q(finished_at__gt=succeeded) | Q(finished_at=None, requested_at__gt=succeeded))
    failures = [(p.finished_at or p.requested_at, f"clean plan #{p.pk} failed: {p.error or 'no reason recorded'}")
                for p in plans.only("pk", "error", "finished_at", "requested_at")]
    failures += [(j.finished_at or j.requested_at, f"the run of pending clean {j.target} (job #{j.pk}) failed: "
                  f"{j.error or 'no reason recorded'}") for j in jobs.only("pk", "target", "error", "finished_at",
                                                                           "requested_at")]
    if not failures:
        return {}
    failures.sort(key=lambda f: f[0])
    more = f" ({len(failures) - 1} more failed after it)" if len(failures) > 1 else ""
    return {"cleans": f"{failures[0][1][:1000]}{more}; resolved once a clean of the table completes"}


def plan_stale(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """Plans found stale at approval that no newer plan of the table has replaced."""
    newest = table.clean_plans.order_by("-requested_at", "-pk").values_list("pk", "requested_at").first()
    found = {}
    for plan in table.clean_plans.filter(status=ApprovalStatus.STALE).only("pk", "requested_at", "stale_reasons"):
        if newest is not None and (newest[1], newest[0]) > (plan.requested_at, plan.pk):
            continue
        reasons = plan.stale_reasons or []
        first = f": {reasons[0]}" if reasons else ""
        found[f"plan:{plan.pk}"] = (f"clean plan #{plan.pk} went stale at approval ({len(reasons)} "
                                    f"differences{first}); plan again")
    return found


def write_pending(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """Writes pending (requested or inflight) for longer than the threshold (hours)."""
    limit = (threshold or 0) * 3600
    zone = timeline_zone(table)
    found = {}
    for instant in figures.pending.get(table.pk, []):
        age = age_seconds(instant.requested_time, zone)
        if age is not None and age > limit:
            found[f"{instant.action}:{instant.requested_time}"] = (
                f"{instant.action} {instant.requested_time} has been {instant.state.lower()} for {_hours(age)} "
                f"(threshold {threshold:g} hours); failed writes now: {table.failed_writes}")
    return found


def savepoint_old(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """The table's earliest savepoint, where Hudi's archival stops, older than the threshold (days)."""
    first = figures.savepoints.get(table.pk)
    age = age_seconds(first, timeline_zone(table)) if first else None
    if first is None or age is None or age <= (threshold or 0) * 86400:
        return {}
    return {f"savepoint:{first}": f"savepoint {first} is {age / 86400:.1f} days old (threshold {threshold:g} days); "
                                  "archival stops at the earliest savepoint, and its files are never cleaned"}


def reclaimable_over(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """More bytes reclaimable (the newest plan's, not deleted yet) than the threshold."""
    found = figures.reclaimable.get(table.pk)
    if found is None or found.bytes <= (threshold or 0):
        return {}
    return {"reclaimable": f"{found.bytes} bytes in {found.files} files are reclaimable by clean plan "
                           f"#{found.plan_id} (threshold {threshold:.0f} bytes)"}


def mdt_out_of_sync(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """The metadata table's file listing differs from storage (`cleanline mdt validate`), or
    cannot be read: only for tables with a metadata table."""
    if not table.metadata_table_enabled:
        return {}
    try:
        lake = open_table(table.path)
        if not lake.config.metadata_table_enabled:
            return {}
        if lake.timeline.cleans().pending() or live_lock(table) is not None:
            # a clean deletes files before its metadata-table update: no verdict while one runs, the
            # open alert (if any) stays as it is
            return dict(Alert.objects.filter(table=table, kind=AlertKind.MDT_OUT_OF_SYNC, resolved_at=None)
                        .values_list("key", "message"))
        result = lake.inspect.validate_metadata_table()
    except CleanlineError as exc:
        return {"files": f"the metadata table could not be validated: {exc}"[:1000]}
    if result.ok:
        return {}
    first = result.differences[0]
    return {"files": f"the metadata table's file listing differs from storage in {len(result.differences)} "
                     f"partitions (first: {first.partition or '(none)'}: {len(first.only_on_storage)} files only "
                     f"on storage, {len(first.only_in_metadata)} only in the metadata table, {len(first.sizes)} of "
                     "another size)"}


def approval_waiting(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """Draft plans with something to delete, waiting for an admin's approval (an automatic
    plan over its table's thresholds too): one alert per plan, with the link to decide it,
    resolved once it is approved or rejected. Its e-mail also goes to every admin who may
    approve it (`approvers_of`)."""
    found = {}
    for plan in table.clean_plans.filter(status=ApprovalStatus.DRAFT).select_related("requested_by"):
        if plan.deletes_nothing:
            continue
        asked = plan.requested_by.get_username() if plan.requested_by else "automatic mode"
        found[f"plan:{plan.pk}"] = (f"clean plan #{plan.pk} waits for approval: {plan.files_to_delete} files "
                                    f"({plan.bytes_to_delete} bytes) to delete, requested by {asked} at "
                                    f"{plan.requested_at:%Y-%m-%d %H:%M} UTC; review and decide: "
                                    f"{settings.CLEANLINE_URL}{reverse('console:plan', args=[table.pk, plan.pk])}")
    return found
def active_timeline_long(table: Table, threshold: float | None, figures: Figures) -> dict[str, str]:
    """More instants in the active timeline than the threshold, at the last sync (every
    listing, clean plan and sync pays for them), with what archival would move now and what
    holds the rest back (the library's plan the sync stored)."""
    summary = table.archival or {}
    active = table.active_instants
    if active is None or active <= (threshold or 0):
        return {}
    blockers = summary.get("blockers") or []
    held = "; ".join(f"{b['kind']}{' ' + b['instant'] if b.get('instant') else ''}" for b in blockers[:3])
    more = f" and {len(blockers) - 3} more" if len(blockers) > 3 else ""
    why = (f"archival is held back by {held}{more}" if blockers
           else f"archival cannot be planned: {summary['error']}" if summary.get("error") else "nothing blocks it")
    return {"active": f"the active timeline holds {active} instants (threshold {threshold:g}); archival would move "
                      f"{table.archivable_instants or 0} now; {why}"[:1000]}


CONDITIONS: dict[str, Callable[[Table, float | None, Figures], dict[str, str]]] = {
    AlertKind.CLEAN_FAILED: clean_failed,
    AlertKind.PLAN_STALE: plan_stale,
    AlertKind.WRITE_PENDING: write_pending,
    AlertKind.SAVEPOINT_OLD: savepoint_old,
    AlertKind.RECLAIMABLE: reclaimable_over,
    AlertKind.MDT_OUT_OF_SYNC: mdt_out_of_sync,
    AlertKind.HEALTH_ERROR: health_error,
    AlertKind.HEALTH_WARNING: health_warning,
    AlertKind.HEALTH_INFO: health_info,
    AlertKind.APPROVAL_WAITING: approval_waiting,
    AlertKind.ACTIVE_TIMELINE: active_timeline_long,
    AlertKind.BACKLOG_COMMITS: backlog_commits,
    AlertKind.BACKLOG_BYTES: backlog_bytes,
    AlertKind.SERVICE_INFLIGHT: service_inflight,
}


# The check ---------------------------------------------------------------------------------

def check_alerts() -> int:
    """Check every table's rules: fire (and deliver) what is new, resolve what is gone, try
    the channels that failed again. Returns how many alerts fired."""
    figures = Figures.read()
    fired: list[int] = []
    for table in Table.objects.order_by("pk"):
        try:
            fired += check_table(table, figures)
        except Exception:  # one table's trouble (a store down) must not stop the others' alerts
            logger.exception("alert check of table %s (%s) failed", table.pk, table.path)
    for alert in Alert.objects.filter(resolved_at=None).exclude(pk__in=fired).select_related("table"):
        if pending_channels(alert):
            deliver(alert)
    return len(fired)


def check_table_now(table_id: int) -> int:
    """One table's rules, checked at once rather than at beat's next check: a plan that now
    waits for approval reaches its approvers (queued by the plan's service on commit). Returns
    how many alerts fired."""
    table = Table.objects.filter(pk=table_id).first()
    return 0 if table is None else len(check_table(table, Figures.read()))


def check_table(table: Table, figures: Figures) -> list[int]:
    """One table's rules: resolve the open alerts whose condition is gone (a rule that could
    not be checked leaves its alerts as they are), fire and deliver the new ones."""
    rules = rules_of(table)
    found: dict[tuple[str, str], str] = {}
    unknown: set[str] = set()
    for kind, rule in rules.items():
        if not rule.enabled:
            continue
        try:
            found.update({(kind, key): message for key, message in
                          CONDITIONS[kind](table, threshold_of(rule), figures).items()})
        except Exception:
            logger.exception("alert rule %s of table %s could not be checked", kind, table.pk)
            unknown.add(kind)
    now = timezone.now()
    for alert in table.alerts.filter(resolved_at=None):
        if alert.kind in unknown or (alert.kind, alert.key) in found:
            continue
        if Alert.objects.filter(pk=alert.pk, resolved_at=None).update(resolved_at=now):
            audit(user=None, action="alert.resolved", table=table,
                  parameters={"alert": alert.pk, "kind": alert.kind, "key": alert.key},
                  result="the condition is gone" if rules[alert.kind].enabled else "the rule was turned off")
    open_keys = set(table.alerts.filter(resolved_at=None).values_list("kind", "key"))
    fired = []
    for (kind, key), message in found.items():
        if (kind, key) in open_keys:
            continue
        try:
            with transaction.atomic():
                alert = Alert.objects.create(table=table, kind=kind, key=key[:128], message=message)
        except IntegrityError:  # another check fired it a moment ago: it delivers it
            continue
        audit(user=None, action="alert.fired", table=table, parameters={"alert": alert.pk, "kind": kind, "key": key},
              result=message)
        fired.append(alert.pk)
        deliver(alert)
    return fired


# Delivery ------------------------------------------------------------------------------------

SENT = "sent"


def channels(alert: Alert | None = None) -> list[tuple[str, Callable[[Alert], None]]]:
    """The configured channels by name: e-mail (when it has recipients: `recipients`), and
    each webhook by its position and host (its URL is a secret to Slack and the like, so it is
    never shown or recorded)."""
    found: list[tuple[str, Callable[[Alert], None]]] = []
    if recipients(alert):
        found.append(("email", send_email))
    for name, url in alert_webhooks():  # the console's channels, else the settings' (console.alerts_setup)
        found.append((name, partial(post_webhook, url)))
    return found


def approvers_of(alert: Alert) -> list[str]:
    """The e-mail addresses of the active admins who may approve the plan an approval alert is
    about (`console.permissions.may_approve`: not its requester, nor an account the requester
    created or promoted, while two-person approval is on)."""
    if alert.kind != AlertKind.APPROVAL_WAITING or not alert.key.startswith("plan:"):
        return []
    plan = CleanPlan.objects.filter(pk=int(alert.key.removeprefix("plan:"))).first()
    if plan is None:
        return []
    return sorted({u.email for u in User.objects.filter(is_active=True).exclude(email="")
                   if permissions.may_approve(u, plan)})


def recipients(alert: Alert | None) -> list[str]:
    """Who an alert's e-mail goes to: the e-mail channels (the console's, else
    CLEANLINE_ALERT_EMAILS), and for a plan waiting for approval also the admins who may approve it."""
    listed = alert_emails()
    return listed + [a for a in (approvers_of(alert) if alert is not None else []) if a not in listed]


def pending_channels(alert: Alert) -> list[tuple[str, Callable[[Alert], None]]]:
    return [(name, send) for name, send in channels(alert)
            if (alert.deliveries or {}).get(name, {}).get("outcome") != SENT]


def deliver(alert: Alert) -> dict[str, Any]:
    """Send the alert to every channel it has not reached yet; record each outcome."""
    deliveries = dict(alert.deliveries or {})
    for name, send in pending_channels(alert):
        attempts = int(deliveries.get(name, {}).get("attempts", 0)) + 1
        try:
            send(alert)
            deliveries[name] = {"outcome": SENT, "at": timezone.now().isoformat(), "attempts": attempts}
        except Exception as exc:  # the reason to the log only: the page says refused (why) or failed (outbound)
            logger.warning("alert %s: delivery to %s failed: %s: %s", alert.pk, name, type(exc).__name__, exc)
            deliveries[name] = {"outcome": "failed", "at": timezone.now().isoformat(), "attempts": attempts,
                                "error": outbound.outcome_of(exc)[:500]}
        Alert.objects.filter(pk=alert.pk).update(deliveries=deliveries)
    alert.deliveries = deliveries
    return deliveries


def subject_of(alert: Alert) -> str:
    return f"[Cleanline] {alert.table.name}: {AlertKind(alert.kind).label}"


def body_of(alert: Alert, zone: tzinfo = UTC) -> str:
    """The e-mail's text, its times in the readers' `zone` (console/zones.py's one helper)."""
    message = zones.text_in_zone(alert.message, zone, timeline_zone(alert.table))
    return (f"{message}\n\nTable: {alert.table.name} ({alert.table.path})\nRule: {alert.kind}\n"
            f"About: {zones.text_in_zone(alert.key, zone, timeline_zone(alert.table))}\n"
            f"Fired: {zones.readable(alert.fired_at, zone=zone)} (alert #{alert.pk})\n\n"
            "Sent once; it is resolved when the condition is gone (the console's alerts page lists both).\n")


def send_email(alert: Alert) -> None:
    """One e-mail per zone its readers chose (console/zones.py), each with its times in it."""
    for zone, addresses in zones.zones_of_addresses(recipients(alert)).items():
        send_mail(subject_of(alert), body_of(alert, ZoneInfo(zone)), settings.CLEANLINE_ALERT_FROM, addresses)


def payload_of(alert: Alert) -> dict[str, Any]:
    """Slack's incoming-webhook `text`, and the alert's fields for other receivers."""
    return {"text": f"{subject_of(alert)}: {alert.message}",
            "cleanline": {"alert": alert.pk, "table": alert.table.name, "table_id": alert.table_id,
                          "path": alert.table.path, "kind": alert.kind, "key": alert.key, "message": alert.message,
                          "fired_at": alert.fired_at.isoformat()}}


def post_webhook(url: str, alert: Alert) -> None:
    """POST the alert to a webhook through the fence (console/outbound.py)."""
    outbound.post_json(url, payload_of(alert))


# The page -----------------------------------------------------------------------------------

class RulesForm(forms.Form):
    """One table's rules: each kind following the lake-wide default, or on or off with its
    threshold where it has one."""

    def __init__(self, *args: Any, rules: dict[str, AlertRule], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for kind, rule in rules.items():
            self.fields[f"lake_{kind}"] = forms.BooleanField(required=False, initial=not rule.custom)
            self.fields[f"enabled_{kind}"] = forms.BooleanField(required=False, initial=rule.enabled)
            if kind in THRESHOLDS:
                self.fields[f"threshold_{kind}"] = forms.FloatField(required=False, min_value=0,
                                                                    initial=rule.threshold)


def rules_update(*, table: Table, user: User, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Save a table's rules (admins); audited with every rule's new state. A rule follows the
    lake-wide default while "as the lake" (`lake_<kind>`) is ticked, and becomes the table's own
    when it is not, or when a rule that followed the lake is sent with another state or a
    threshold of its own (the admin changed it, leaving the box as it was)."""
    rules = rules_of(table)
    lake = lake_rules()
    changed: dict[str, dict[str, Any]] = {}
    for kind, rule in rules.items():
        edited = (bool(values.get(f"enabled_{kind}")) != lake_enabled(kind, lake)
                  or values.get(f"threshold_{kind}") is not None)
        rule.custom = not values.get(f"lake_{kind}") or (not rule.custom and edited)
        rule.enabled = bool(values.get(f"enabled_{kind}")) if rule.custom else lake_enabled(kind, lake)
        rule.threshold = values.get(f"threshold_{kind}") if rule.custom and kind in THRESHOLDS else None
        rule.save(update_fields=["enabled", "threshold", "custom"])
        changed[kind] = {"enabled": rule.enabled, "threshold": rule.threshold}
        if not rule.custom:
            changed[kind]["lake_default"] = True
    audit(user=user, action="alert.rules.changed", table=table, parameters=changed)
    return changed


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def alerts_page(request: permissions.AuthenticatedHttpRequest) -> HttpResponse:
    """Open and recently resolved alerts for anyone who may view tables; one table's rules,
    changed by admins."""
    permissions.require_view(request.user)
    tables = list(Table.objects.order_by("name", "pk").only("pk", "name"))
    chosen_id = request.POST.get("table") if request.method == "POST" else request.GET.get("table")
    chosen = next((t for t in tables if str(t.pk) == chosen_id), None)
    form = None
    if request.method == "POST":
        permissions.require(request.user, permissions.SETTINGS)
        if chosen is None:
            messages.error(request, "Choose a table.")
            return redirect("console:alerts")
        form = RulesForm(request.POST, rules=rules_of(chosen))
        if form.is_valid():
            rules_update(table=chosen, user=request.user, values=form.cleaned_data)
            messages.success(request, f"Alert rules of {chosen.name} saved; the next check applies them.")
            return redirect(f"{reverse('console:alerts')}?table={chosen.pk}")
    rules = []
    if chosen is not None:
        current = rules_of(chosen, create=False)
        form = form or RulesForm(rules=current)
        for kind, rule in current.items():
            unit = THRESHOLDS[AlertKind(kind)].unit if kind in THRESHOLDS else ""
            rules.append({"kind": kind, "label": AlertKind(kind).label, "rule": rule, "unit": unit,
                          "default": default_threshold(kind), "effective": threshold_of(rule),
                          "enabled_field": form[f"enabled_{kind}"], "lake_field": form[f"lake_{kind}"],
                          "threshold_field": form[f"threshold_{kind}"] if unit else None})
    alerts = Alert.objects.select_related("table")
    return render(request, "console/alerts.html", {
        "open_alerts": alerts.filter(resolved_at=None).order_by("-fired_at", "-pk"),
        "resolved_alerts": alerts.exclude(resolved_at=None).order_by("-resolved_at", "-pk")[:50],
        "tables": tables, "chosen": chosen, "rules": rules, "form": form,
        "can_change": request.user.has_perm(permissions.SETTINGS),
        "channels": [c for c in all_channels() if c.enabled],
        "interval": settings.CELERY_BEAT_SCHEDULE["alerts"]["schedule"]})
