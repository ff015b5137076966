"""The one approval workflow (issue 40): every change that waits for a second person (a clean
plan, an archival, a repair; next compactions and version changes) is decided here, by one set
of rules, whatever its kind:

- **request**: the kind's service makes the row (its plan kept on it) and calls
  `approval_requested`, which audits `<prefix>.requested`;
- **approve**: refused, with the reason, unless the change waits for a decision (a kind may add
  its own check: a clean plan that deletes nothing) and the approver passes the two-person rule
  by lineage (`permissions.change_approval_refusal`, `console.lineage`; a refusal is audited
  `<prefix>.approval.refused`); then the change is **claimed** for this approver by one
  conditional update (of any number of simultaneous approvals exactly one wins; the others are
  refused), audited, and its task is sent **on commit** (`enqueue_on_commit`): the clean plan's
  check, the archival's or repair's run. A second submit of the same decision by the same
  person changes nothing;
- **reject**: any approver, the requester too; audited (`<prefix>.rejected`, an archival's
  `archival.declined`);
- **expiry**: a change waiting longer than CLEANLINE_APPROVAL_EXPIRY_DAYS (0: never) goes stale
  with the reason, audited `<prefix>.expired`: its plan was made against a table that has moved
  on, so it is planned again rather than approved.

A new kind extends `console.models_approvals.Approvable` and is listed in `KINDS` with the task
that follows its approval; the approval contract test (tests/console/services/test_approval_contract.py)
then holds it to all of the above."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils import timezone

from console.models import Archival, CleanPlan
from console.models_approvals import IN_FLIGHT, Approvable, ApprovalStatus
from console.models_compaction import Compaction
from console.models_health import Repair
from console.models_versions import VersionChange
from console.permissions import change_approval_refusal
from console.services.audit import audit
from console.services.queue import (
    APPROVE_CLEAN_PLAN,
    RUN_ARCHIVAL,
    RUN_COMPACTION,
    RUN_REPAIR,
    RUN_VERSION_CHANGE,
    enqueue_on_commit,
)

Change = TypeVar("Change", bound=Approvable)


@dataclass(frozen=True, slots=True)
class Kind:
    """How one kind of change goes through the workflow: the task sent once it is approved, the
    state approval moves it to (a clean plan is checked by a worker first: APPROVING), its words
    in messages and audit actions, and what it records when it goes stale by expiry (its own
    check before the two-person rule is its model's `approval_blocker`)."""

    model: type[Approvable]
    task: str
    key: str  # the audit parameter naming the row: {"plan": 12}
    waiting: str  # "a draft plan": what can be approved
    approved_to: ApprovalStatus = ApprovalStatus.APPROVED
    approved_action: str = "approved"
    rejected_word: str = "rejected"
    details: Callable[[Approvable], dict[str, Any]] = field(default=lambda change: {})
    stale_fields: Callable[[str], dict[str, Any]] = field(default=lambda reason: {"error": reason[:2000]})


# Every approvable kind, listed once: the queue, the decide view, the API and the contract test
# go over these.
KINDS: dict[type[Approvable], Kind] = {
    CleanPlan: Kind(CleanPlan, APPROVE_CLEAN_PLAN, "plan", "a draft plan", approved_to=ApprovalStatus.APPROVING,
                    approved_action="approval.requested",
                    stale_fields=lambda reason: {"stale_reasons": [reason]}),
    Archival: Kind(Archival, RUN_ARCHIVAL, "archival", "an archival waiting for approval", rejected_word="declined",
                   details=lambda change: {"instants": len(change.instants)} if isinstance(change, Archival) else {},
                   stale_fields=lambda reason: {"stale_reason": reason[:2000]}),
    Repair: Kind(Repair, RUN_REPAIR, "repair", "a repair waiting for approval",
                 details=lambda change: {"kind": change.kind} if isinstance(change, Repair) else {}),
    VersionChange: Kind(VersionChange, RUN_VERSION_CHANGE, "version_change", "a version change waiting for approval",
                        details=lambda change: {"from": change.from_version, "to": change.target}
                        if isinstance(change, VersionChange) else {}),
    Compaction: Kind(Compaction, RUN_COMPACTION, "compaction", "a compaction waiting for approval",
                     details=lambda change: {"file_groups": len(change.operations)}
                     if isinstance(change, Compaction) else {}),
}


def kind_of(change: Approvable) -> Kind:
    return KINDS[type(change)]


def kind_named(name: str) -> Kind:
    """The kind the pages and the API call `name` ("clean plan", "archival", "repair", "version
    change", "compaction"); KeyError for any other."""
    for model, kind in KINDS.items():
        if model.kind_name == name:
            return kind
    raise KeyError(name)


def _parameters(change: Approvable, **more: Any) -> dict[str, Any]:
    kind = kind_of(change)
    return {kind.key: change.pk, **kind.details(change), **more}


def _action(change: Approvable, what: str) -> str:
    return f"{change.audit_prefix}.{what}"


def _stopped(writers_stopped: bool) -> dict[str, bool]:
    return {"writers_stopped": True} if writers_stopped else {}


def approval_requested(*, change: Change, user: User | None, **parameters: Any) -> Change:
    """Record the request of a change its kind's service made (audited `<prefix>.requested`, with
    `parameters`)."""
    audit(user=user, action=_action(change, "requested"), table=change.table,
          parameters=_parameters(change, **parameters))
    return change


def approval_refusal(user: User | None, change: Approvable) -> str:
    """Why `user` may not approve `change`, or "": its own blocker, then the two-person
    rule by lineage (`permissions.change_approval_refusal`; nobody, automatic mode, passes)."""
    return change.approval_blocker() or ("" if user is None else change_approval_refusal(user, change))


# Where a change approved by its approver can be by the time their second submit arrives (a
# stale or failed one is not: approving it again is refused with why).
_APPROVED = (*IN_FLIGHT, ApprovalStatus.COMPLETED)


def _same_decision(change: Approvable, user: User | None, *, approved: bool) -> bool:
    """Whether `user` already made this decision on `change` (a double click's second submit)."""
    change.refresh_from_db()
    if user is None or change.decided_by_id != user.pk:
        return False
    return change.status in _APPROVED if approved else change.is_rejected


def _waiting_refusal(change: Approvable, verb: str) -> str:
    kind = kind_of(change)
    if change.is_in_flight and verb == "approved":
        return (f"{change.kind_name.capitalize()} #{change.pk} is already being approved or was decided meanwhile "
                f"(it is {change.get_status_display()}).")
    return f"Only {kind.waiting} can be {verb}; this one is {change.get_status_display()}."


def approval_approve(*, change: Change, user: User | None, writers_stopped: bool = False, note: str = "") -> Change:
    """Approve a change waiting for a decision: refused unless it waits and `user` may approve it
    (`approval_refusal`, audited); claimed by one conditional update (DRAFT to its kind's next
    state: of simultaneous approvals exactly one wins, the others are refused); audited; its task
    sent on commit. `writers_stopped`: the approver's word that the table's Hudi writers are
    stopped, recorded and audited (the run then goes on beside a live writer when no lock is
    known). `note`: the approver's why, kept as the decision's note. A second submit of the same
    approval by the same person changes nothing."""
    kind = kind_of(change)
    if not change.is_waiting:
        if _same_decision(change, user, approved=True):
            return change
        raise ValidationError(_waiting_refusal(change, "approved"))
    refusal = approval_refusal(user, change)
    if refusal:
        if change.approval_blocker() != refusal:  # the two-person rule's refusals are audited
            audit(user=user, action=_action(change, "approval.refused"), table=change.table,
                  parameters=_parameters(change), result=refusal)
        raise ValidationError(refusal)
    if not approval_claim(change=change, to=kind.approved_to, decided_by=user, decided_at=timezone.now(),
                          writers_stopped=writers_stopped, run_token="", error="", decision_note=note[:2000]):
        if _same_decision(change, user, approved=True):
            return change
        raise ValidationError(_waiting_refusal(change, "approved"))
    audit(user=user, action=_action(change, kind.approved_action), table=change.table,
          parameters=_parameters(change, **_stopped(writers_stopped)))
    change.refresh_from_db()
    enqueue_on_commit(kind.task, change)
    return change


def approval_claim(*, change: Approvable, to: ApprovalStatus, ready: tuple[ApprovalStatus, ...] = (
        ApprovalStatus.DRAFT,), **fields: Any) -> bool:
    """Move `change` from one of the `ready` states to `to` by one conditional update, with
    `fields`: of any number of simultaneous claims exactly one is True (the database settles
    them; no read-then-write)."""
    return bool(type(change)._default_manager.filter(pk=change.pk, status__in=ready).update(status=to, **fields))


def approval_finish(*, change: Approvable, token: str, to: ApprovalStatus, what: str, outcome: str,
                    **fields: Any) -> bool:
    """Settle a run of `change` (RUNNING under the lock token `token`) as `to`, with `fields`, and
    audit `<prefix>.<what>` with `outcome`; False (nothing recorded) when the run lost the change
    to another."""
    if not type(change)._default_manager.filter(pk=change.pk, status=ApprovalStatus.RUNNING, run_token=token).update(
            status=to, finished_at=timezone.now(), **fields):
        return False
    audit(user=None, action=_action(change, what), table=change.table, parameters=_parameters(change), result=outcome)
    return True


def approval_gave_up(*, change: Approvable, error: str) -> bool:
    """A task gave up on an approved change (its table stayed busy, or it failed before its run
    claimed it): FAILED with the reason and audited `<prefix>.failed`, unless a run claimed or
    settled it meanwhile."""
    if not approval_claim(change=change, to=ApprovalStatus.FAILED, ready=(ApprovalStatus.APPROVED,),
                          error=error[:2000], finished_at=timezone.now()):
        return False
    audit(user=None, action=_action(change, "failed"), table=change.table, parameters=_parameters(change),
          result=error)
    return True


def approval_reject(*, change: Change, user: User | None, note: str = "") -> Change:
    """Reject a change waiting for a decision (any approver, its requester too); audited. A second
    submit of the same rejection by the same person changes nothing."""
    kind = kind_of(change)
    now = timezone.now()
    if not approval_claim(change=change, to=ApprovalStatus.REJECTED, decided_by=user, decided_at=now,
                          decision_note=note[:2000], finished_at=now):
        if _same_decision(change, user, approved=False):
            return change
        raise ValidationError(_waiting_refusal(change, kind.rejected_word))
    audit(user=user, action=_action(change, kind.rejected_word), table=change.table,
          parameters=_parameters(change, note=note))
    change.refresh_from_db()
    return change


def approvals_expire(*, now: datetime | None = None) -> int:
    """Changes waiting longer than CLEANLINE_APPROVAL_EXPIRY_DAYS (0: never) go STALE with the
    reason, each audited `<prefix>.expired`; how many."""
    days = float(settings.CLEANLINE_APPROVAL_EXPIRY_DAYS)
    if days <= 0:
        return 0
    now = now or timezone.now()
    expired, before = 0, now - timedelta(days=days)
    for model, kind in KINDS.items():
        for change in model._default_manager.filter(status=ApprovalStatus.DRAFT, requested_at__lt=before):
            reason = (f"It waited more than {days:g} days for approval (CLEANLINE_APPROVAL_EXPIRY_DAYS): the table has "
                      "moved on since it was planned; request it again.")
            if approval_claim(change=change, to=ApprovalStatus.STALE, finished_at=now, **kind.stale_fields(reason)):
                audit(user=None, action=_action(change, "expired"), table=change.table,
                      parameters=_parameters(change), result=reason)
                expired += 1
    return expired
