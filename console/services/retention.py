"""What-if retention (writes): ask for an estimate of what a clean would free under several
retention settings, and compute it (a Celery task calls `estimate_run`). The figures are the
library's (`timeline.clean.whatif.what_if`: the planner run per setting over one listing); nothing here
decides a file's fate, and nothing is written to the lake."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils import timezone

from console.lake import open_table
from console.models import JobStatus, RetentionEstimate, Table
from console.selectors.tables import instant_count
from console.services.audit import audit
from console.services.queue import ESTIMATE_RETENTION, enqueue_on_commit
from timeline import CleanlineError
from timeline.clean.config import retention_bound_refusal
from timeline.clean.whatif import RetentionCost, what_if

MAX_COMMITS = 50
MAX_HOURS_SETTINGS = 12


def estimate_request(*, table: Table, user: User | None, commits: Sequence[int], hours: Sequence[int],
                     enqueue: bool = True) -> RetentionEstimate:
    """Ask for the cost of each setting: commits retained (each of `commits`) and hours
    retained (each of `hours`); a task, queued on commit, computes it. Refused: no setting, a
    count below 1, more than MAX_COMMITS commits settings or MAX_HOURS_SETTINGS hours settings.
    `enqueue=False`: no task is queued, the caller computes it itself (`estimate_run`: tests)."""
    commits, hours = sorted(set(commits)), sorted(set(hours))
    if not commits and not hours:
        raise ValidationError("Choose at least one retention setting to estimate.")
    if any(n < 1 for n in (*commits, *hours)):
        raise ValidationError("Retention settings start at 1 (commit or hour).")
    if len(commits) > MAX_COMMITS or len(hours) > MAX_HOURS_SETTINGS:
        raise ValidationError(f"At most {MAX_COMMITS} commits settings and {MAX_HOURS_SETTINGS} hours settings "
                              "in one estimate.")
    out_of_bounds = retention_bound_refusal({"commits_retained": commits[-1] if commits else None,
                                             "hours_retained": hours[-1] if hours else None},
                                            instants=instant_count(table), table_props=table.properties)
    if out_of_bounds is not None:
        raise ValidationError(f"Refused: {out_of_bounds}.")
    estimate = RetentionEstimate.objects.create(table=table, requested_by=user, commits=commits, hours=hours)
    audit(user=user, action="retention.estimate.requested", table=table,
          parameters={"estimate": estimate.pk, "commits": commits, "hours": hours})
    if enqueue:
        enqueue_on_commit(ESTIMATE_RETENTION, estimate)
    return estimate


def estimate_run(*, estimate: RetentionEstimate, task_id: str = "") -> RetentionEstimate:
    """Compute a queued (or interrupted) estimate: claimed by one conditional update, so two
    deliveries never both compute it; a redelivered task whose worker died computes it again."""
    claimed = RetentionEstimate.objects.filter(pk=estimate.pk, status__in=(JobStatus.QUEUED, JobStatus.RUNNING))
    if not claimed.update(status=JobStatus.RUNNING, task_id=task_id, error=""):
        estimate.refresh_from_db()
        return estimate
    table = estimate.table
    try:
        found = what_if(open_table(table.path), commits=estimate.commits, hours=estimate.hours)
    except CleanlineError as exc:
        claimed.update(status=JobStatus.FAILED, error=str(exc), finished_at=timezone.now())
        audit(user=None, action="retention.estimate.failed", table=table, parameters={"estimate": estimate.pk},
              result=str(exc))
        estimate.refresh_from_db()
        return estimate
    claimed.update(status=JobStatus.COMPLETED, finished_at=timezone.now(),
                   result=[cost_row(c) for c in found.costs],
                   listing={"partitions": found.partitions, "files": found.files, "bytes": found.bytes,
                            "now": found.now.isoformat() if found.now else None})
    estimate.refresh_from_db()
    return estimate


def cost_row(cost: RetentionCost) -> dict[str, Any]:
    """One setting's figures as the estimate keeps them (JSON): the library's fields by name."""
    return {**asdict(cost), "policy": cost.policy.value, "unit": cost.unit, "notes": list(cost.notes)}
