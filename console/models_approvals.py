"""One approval workflow (issue 40): every change that waits for a second person's decision (a
clean plan, an archival, a repair; next compactions and version changes) extends `Approvable`,
with one vocabulary of states, `ApprovalStatus`. What moves a change from one state to the next
is `console.services.approvals`; what is specific to a kind (its plan, its run) stays in its
model and service.

    planning ─▶ draft ─┬─▶ approving ─┬─▶ approved ─▶ running ─┬─▶ completed
       │               │              ├─▶ stale               ├─▶ failed
       ▼               │              └─▶ draft (check failed) └─▶ stale
     failed            ├─▶ approved (kinds planned in the request)
                       ├─▶ rejected
                       └─▶ stale (expired)

Only a clean plan is planned by a worker (`planning`) and checked by one before it is approved
(`approving`); an archival and a repair are planned in the request and approved at once.
CONTRIBUTING.md draws the states and shows how a new kind is added."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from django.db import models

if TYPE_CHECKING:
    from console.models import Table


class ApprovalStatus(models.TextChoices):
    """The states of every change that waits for approval (CONTRIBUTING.md draws them)."""

    PLANNING = "planning", "planning"
    DRAFT = "draft", "waiting for approval"
    APPROVING = "approving", "being approved"
    APPROVED = "approved", "approved"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed"
    FAILED = "failed", "failed"
    STALE = "stale", "stale"
    REJECTED = "rejected", "rejected"


# Decided but not settled: the change holds its table's turn (approved and queued, or running).
IN_FLIGHT = (ApprovalStatus.APPROVING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)
# Open: waiting for a decision or decided and not settled.
OPEN = (ApprovalStatus.PLANNING, ApprovalStatus.DRAFT, *IN_FLIGHT)
# Settled: nothing more happens to the change.
SETTLED = (ApprovalStatus.COMPLETED, ApprovalStatus.FAILED, ApprovalStatus.STALE, ApprovalStatus.REJECTED)


class Approvable(models.Model):
    """A change that waits for approval: who asked and when, who decided and when (with a note),
    its state, the task that works on it (its id, the table lock token of the run that claimed
    it) and the run's outcome (when it started and finished, why it failed). A subclass adds
    what it changes and names itself for the pages and the audit log."""

    # What the pages and the API call the kind ("clean plan"), and its audit actions' prefix.
    if TYPE_CHECKING:  # each kind declares its table (its own related name)
        table: Table
        table_id: int

    kind_name: ClassVar[str] = ""
    audit_prefix: ClassVar[str] = ""
    # Its page, reversed with the table's id and its own.
    page: ClassVar[str] = ""

    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.DRAFT)
    requested_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_note = models.TextField(blank=True)
    writers_stopped = models.BooleanField(default=False, help_text="the approver said the table's Hudi writers are "
                                                                   "stopped: no lock known and a writer live did "
                                                                   "not refuse it (audited)")
    task_id = models.CharField(max_length=64, blank=True)
    run_token = models.CharField(max_length=64, blank=True, help_text="the table lock token of the run that "
                                                                      "claimed it")
    error = models.TextField(blank=True, help_text="why it failed, or why it went stale")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    # What a kind tells the approvals queue and the decide view.
    @property
    def summary(self) -> str:
        """What approving it does, in a few words (the queue's line)."""
        raise NotImplementedError

    @property
    def bytes_changed(self) -> int | None:
        """The bytes it deletes, where it deletes files (None: it deletes none)."""
        return None

    @property
    def requester_name(self) -> str:
        return self.requested_by.get_username() if self.requested_by is not None else ""

    def approval_blocker(self) -> str:
        """Why it cannot be approved whoever approves it ("": nothing of its own blocks it)."""
        return ""

    # The states as the pages ask about them (templates read these, never status strings).
    @property
    def is_planning(self) -> bool:
        return self.status == ApprovalStatus.PLANNING

    @property
    def is_waiting(self) -> bool:
        """Waiting for a decision (DRAFT)."""
        return self.status == ApprovalStatus.DRAFT

    @property
    def is_approving(self) -> bool:
        return self.status == ApprovalStatus.APPROVING

    @property
    def is_approved(self) -> bool:
        return self.status == ApprovalStatus.APPROVED

    @property
    def is_running(self) -> bool:
        return self.status == ApprovalStatus.RUNNING

    @property
    def is_completed(self) -> bool:
        return self.status == ApprovalStatus.COMPLETED

    @property
    def is_failed(self) -> bool:
        return self.status == ApprovalStatus.FAILED

    @property
    def is_stale(self) -> bool:
        return self.status == ApprovalStatus.STALE

    @property
    def is_rejected(self) -> bool:
        return self.status == ApprovalStatus.REJECTED

    @property
    def is_in_flight(self) -> bool:
        """Approved and not settled yet (being checked, queued or running): its page polls."""
        return self.status in IN_FLIGHT

    @property
    def is_settled(self) -> bool:
        return self.status in SETTLED
