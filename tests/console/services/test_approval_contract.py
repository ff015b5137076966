"""The approval contract (issue 40), the same for every change that waits for a second person:
requested and audited; refused, with why and audited, to its requester and to an account the
requester created; approved by another admin, claimed exactly once by twenty simultaneous
approvals, run by its task, audited; rejected; expired. Parametrised over
`console.services.approvals.KINDS`: a new kind gets the contract by being listed there (and
here, where it is made)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection

from console import services
from console.models import Archival, AuditEvent, CleanPlan
from console.models_approvals import Approvable, ApprovalStatus
from console.models_compaction import Compaction
from console.models_health import Repair
from console.models_versions import VersionChange
from console.services import approvals, compactions, health, versions
from tests.console.helpers import ARCHIVABLE_TABLE, KEEP_FEW, SHORT_RETENTION, leave_markers, person

pytestmark = pytest.mark.django_db

SMALL_TABLE = "sample_table/cow/v9_txns_simple_nometa"
APPROVERS = 20


def _clean_plan(console_table: Callable[[str], Any], requester: User) -> Approvable:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    return services.plan_build(plan=services.plan_request(table=table, user=requester, overrides=SHORT_RETENTION))


def _archival(console_table: Callable[[str], Any], requester: User) -> Approvable:
    table = services.table_settings_update(table=console_table(ARCHIVABLE_TABLE), user=None, auto_clean=False,
                                           auto_max_files=1000, auto_max_bytes=1000, write_options=KEEP_FEW)
    return services.archival_request(table=table, user=requester)


def _repair(console_table: Callable[[str], Any], requester: User) -> Approvable:
    table = console_table(SMALL_TABLE)
    leave_markers(Path(table.path.removeprefix("file:")))
    return health.repair_request(table=table, user=requester, kind="leftover-markers")


def _version_change(console_table: Callable[[str], Any], requester: User) -> Approvable:
    table = console_table(SMALL_TABLE)  # table version 9, moved down to 8
    rehearsal = versions.version_rehearsal_request(table=table, user=requester, target=8)
    versions.version_rehearsal_run(rehearsal=rehearsal)  # a worker's (run already where tasks run on commit)
    return versions.version_change_request(table=table, user=requester, target=8)


def _compaction(console_table: Callable[[str], Any], requester: User) -> Approvable:
    table = console_table("quickstart_trips_table/mor/avro/v6_trips_8i1u")  # a file group with a log file
    return compactions.compaction_request(table=table, user=requester)


# How each approvable kind is made, waiting for approval: every kind of the workflow is here.
MAKERS: dict[type[Approvable], Callable[[Callable[[str], Any], User], Approvable]] = {
    CleanPlan: _clean_plan, Archival: _archival, Repair: _repair, VersionChange: _version_change,
    Compaction: _compaction}


# How each kind's approved change is run (what its task calls).
RUNNERS: dict[type[Approvable], Callable[[Any], Approvable]] = {
    CleanPlan: lambda change: services.plan_run(plan=change),
    Archival: lambda change: services.archival_run(archival=change),
    Repair: lambda change: health.repair_run(repair=change),
    VersionChange: lambda change: versions.version_change_run(change=change),
    Compaction: lambda change: compactions.compaction_run(compaction=change)}


@pytest.fixture(params=list(approvals.KINDS), ids=lambda model: model.kind_name.replace(" ", "-"))
def make(request: pytest.FixtureRequest, console_table: Callable[[str], Any],
         settings: Any) -> Callable[[User], Approvable]:
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    maker = MAKERS[request.param]
    return lambda requester: maker(console_table, requester)


# The workflow's audit actions (after the kind's prefix): the kinds' own (a plan built, a run's
# steps) are left out.
DECISIONS = ("requested", "approval.refused", "approval.requested", "approved", "rejected", "declined", "expired")


def events(change: Approvable) -> list[str]:
    """The workflow's audit actions about `change`, oldest first."""
    return [a for a in actions(change) if a.removeprefix(change.audit_prefix + ".") in DECISIONS]


def actions(change: Approvable) -> list[str]:
    """Every audit action about `change`, oldest first."""
    key = approvals.kind_of(change).key
    return [e.action for e in AuditEvent.objects.filter(table=change.table).order_by("pk")
            if e.parameters.get(key) == change.pk]


def test_approval_contract_lists_every_kind() -> None:
    """Every subclass of Approvable (the approvals queue lists every one) is a kind of the workflow
    (its task listed) and is made here."""
    assert set(MAKERS) == set(RUNNERS) == set(approvals.KINDS) == set(Approvable.__subclasses__())
    assert {model.kind_name for model in approvals.KINDS} == {"clean plan", "archival", "repair", "version change",
                                                              "compaction"}


def test_approval_contract_request_refusals_approve_run_and_audit(make: Callable[[User], Approvable],
                                                                  django_capture_on_commit_callbacks: Any) -> None:
    ada = person("ada", "admin")
    change = make(ada)
    assert change.is_waiting and change.requested_by == ada and change.decided_by is None
    prefix = change.audit_prefix
    assert events(change) == [f"{prefix}.requested"]

    with pytest.raises(ValidationError, match="approver must differ"):
        approvals.approval_approve(change=change, user=ada)
    # an account ada made (then promoted) shares her lineage: refused, naming the chain
    mallory, _, _ = services.person_create(actor=ada, username="mallory", role="operator",
                                           password="a long enough password 1")
    mallory.groups.set(ada.groups.all())
    with django_capture_on_commit_callbacks() as queued, pytest.raises(ValidationError, match="created"):
        approvals.approval_approve(change=change, user=User.objects.get(pk=mallory.pk))
    assert queued == []
    refusals = AuditEvent.objects.filter(action=f"{prefix}.approval.refused", table=change.table).order_by("pk")
    assert [(e.username, "must differ" in e.result or "created" in e.result) for e in refusals] == [
        ("ada", True), ("mallory", True)]
    change.refresh_from_db()
    assert change.is_waiting and change.decided_by is None

    bob = person("bob", "admin")
    with django_capture_on_commit_callbacks(execute=True) as queued:
        approved = approvals.approval_approve(change=change, user=bob, writers_stopped=False)
    assert approved.decided_by == bob and len(queued) >= 1  # its task, sent once the approval committed
    change.refresh_from_db()
    assert change.is_completed, (change.status, change.error)
    assert change.finished_at is not None and change.decided_by == bob
    kind = approvals.kind_of(change)
    assert events(change)[:4] == [f"{prefix}.requested", f"{prefix}.approval.refused", f"{prefix}.approval.refused",
                                  f"{prefix}.{kind.approved_action}"]
    assert events(change)[-1] == f"{prefix}.approved"  # a clean plan: by the worker that checked it
    assert actions(change)[-1].endswith(".completed")  # the run, audited
    # a second submit of bob's approval changes nothing; anyone else's is refused with why
    with django_capture_on_commit_callbacks() as queued:
        assert approvals.approval_approve(change=change, user=bob).pk == change.pk
    assert queued == []
    with pytest.raises(ValidationError, match="this one is completed"):
        approvals.approval_approve(change=change, user=person("cy", "admin"))


@pytest.mark.django_db(transaction=True)  # each approver's thread has its own connection and transactions
def test_approval_contract_twenty_simultaneous_approvals_claim_it_once(make: Callable[[User], Approvable]) -> None:
    change = make(person("ada", "admin"))
    admins = [person(f"admin{n}", "admin") for n in range(APPROVERS)]
    go = threading.Barrier(APPROVERS)
    outcomes: list[str] = []

    def approve(admin: User) -> None:
        mine = type(change).objects.get(pk=change.pk)
        try:
            go.wait()
            approvals.approval_approve(change=mine, user=admin)
            outcomes.append("approved")
        except ValidationError as exc:
            outcomes.append("refused: " + "; ".join(exc.messages))
        finally:
            connection.close()

    threads = [threading.Thread(target=approve, args=(admin,)) for admin in admins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(outcomes) == APPROVERS
    assert outcomes.count("approved") == 1, outcomes
    refused = [o for o in outcomes if o != "approved"]
    assert all("already being approved or was decided meanwhile" in o or "this one is" in o for o in refused), refused
    kind = approvals.kind_of(change)
    assert AuditEvent.objects.filter(action=f"{change.audit_prefix}.{kind.approved_action}").count() == 1
    change.refresh_from_db()
    assert change.is_completed, (change.status, change.error)  # the winner's task ran it, once
    assert events(change).count(f"{change.audit_prefix}.approved") == 1
    assert [a for a in actions(change) if a.endswith(".completed")] != []


def test_approval_contract_a_run_is_claimed_once(make: Callable[[User], Approvable],
                                                django_capture_on_commit_callbacks: Any) -> None:
    """The run claims the approved change through the workflow's one conditional update
    (`approvals.approval_claim`): a second delivery of its task, which read the change while it
    was approved, finds it settled and changes nothing."""
    change = make(person("ada", "admin"))
    late = type(change).objects.get(pk=change.pk)
    with django_capture_on_commit_callbacks(execute=True):
        approvals.approval_approve(change=change, user=person("bob", "admin"))
    change.refresh_from_db()
    assert change.is_completed, (change.status, change.error)
    before, finished = actions(change), change.finished_at
    late.status = ApprovalStatus.APPROVED  # as the second delivery read it
    assert RUNNERS[type(change)](late).is_completed
    change.refresh_from_db()
    assert actions(change) == before and change.finished_at == finished
    assert [a for a in before if a.endswith(".completed")] != []


def test_approval_contract_rejected_by_any_approver_the_requester_too(make: Callable[[User], Approvable],
                                                                      django_capture_on_commit_callbacks: Any) -> None:
    ada = person("ada", "admin")
    change = make(ada)
    with django_capture_on_commit_callbacks() as queued:
        rejected = approvals.approval_reject(change=change, user=ada, note="not now")
        assert approvals.approval_reject(change=change, user=ada).is_rejected  # a double submit
    assert queued == [] and rejected.is_rejected and rejected.decision_note == "not now"
    word = approvals.kind_of(change).rejected_word
    assert events(change) == [f"{change.audit_prefix}.requested", f"{change.audit_prefix}.{word}"]
    with pytest.raises(ValidationError, match="this one is rejected"):
        approvals.approval_approve(change=change, user=person("bob", "admin"))


def test_approval_contract_a_change_waiting_too_long_expires(make: Callable[[User], Approvable],
                                                             settings: Any) -> None:
    change = make(person("ada", "admin"))
    assert approvals.approvals_expire() == 0  # CLEANLINE_APPROVAL_EXPIRY_DAYS 0: never
    settings.CLEANLINE_APPROVAL_EXPIRY_DAYS = 2
    assert approvals.approvals_expire() == 0  # not old enough
    type(change).objects.filter(pk=change.pk).update(requested_at=change.requested_at - timedelta(days=3))
    assert approvals.approvals_expire() == 1
    change.refresh_from_db()
    assert change.is_stale and change.status == ApprovalStatus.STALE
    assert events(change)[-1] == f"{change.audit_prefix}.expired"
    with pytest.raises(ValidationError, match="this one is stale"):
        approvals.approval_approve(change=change, user=person("bob", "admin"))
