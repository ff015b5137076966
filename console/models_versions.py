"""Table version changes (issue 42) as a kind of the one approval workflow (issue 40): a
rehearsal (`VersionRehearsal`: the library's `Maintenance.rehearse_version_change`, run by a
worker on a copy of the table, its report kept) and the change itself (`VersionChange`, an
`Approvable`): asked for with the preflight's plan and the passing rehearsal it rests on,
approved by another admin (the two-person rule), then run by a worker under the table's lock
only after the same change rehearsed again passes there (`console.services.versions`)."""

from __future__ import annotations

from django.db import models

from console.models import Table
from console.models_approvals import Approvable, ApprovalStatus


class RehearsalStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    PASSED = "passed", "passed"
    FAILED = "failed", "failed"


class VersionRehearsal(models.Model):
    """One rehearsal of moving a table from `from_version` to `target`, run by a worker (the
    library copies the table's `.hoodie`, links its data files, makes the change on the copy and
    compares timeline, file-system view, metadata table and hudi-rs's rows). Writes nothing to
    the table; its report is what the library found."""

    table = models.ForeignKey(Table, related_name="version_rehearsals", on_delete=models.CASCADE)
    from_version = models.IntegerField()
    target = models.IntegerField()
    status = models.CharField(max_length=16, choices=RehearsalStatus.choices, default=RehearsalStatus.QUEUED)
    requested_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    report = models.JSONField(default=dict, help_text="the library's rehearsal report: passed, refused, timeline and "
                                                      "file-system view differences, metadata table, rows, notes")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-requested_at", "-pk"]

    def __str__(self) -> str:
        return f"rehearsal #{self.pk} of {self.table_id}: {self.from_version} -> {self.target}"

    @property
    def passed(self) -> bool:
        return self.status == RehearsalStatus.PASSED

    @property
    def is_live(self) -> bool:
        return self.status in (RehearsalStatus.QUEUED, RehearsalStatus.RUNNING)


OPEN_VERSION_CHANGE = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class VersionChange(Approvable):
    """Moving a table to another table version as Hudi's `UpgradeDowngrade` does (the library's
    `Maintenance.change_version`): the preflight's plan as requested, the passing rehearsal it
    rests on (on the approval page), and what the run did (the rehearsal made again under the
    table's lock, then the steps)."""

    kind_name = "version change"
    audit_prefix = "version"
    page = "console:version_change"

    table = models.ForeignKey(Table, related_name="version_changes", on_delete=models.CASCADE)
    from_version = models.IntegerField()
    target = models.IntegerField()
    plan = models.JSONField(default=dict, help_text="the preflight and the steps as requested (a dry run)")
    rehearsal = models.ForeignKey(VersionRehearsal, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+", help_text="the passing rehearsal the request rests on")
    result = models.JSONField(default=dict, help_text="what the run did: its rehearsal under the lock, the steps")

    class Meta:
        ordering = ["-requested_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["table"], condition=models.Q(status__in=OPEN_VERSION_CHANGE),
                                               name="one_open_version_change_per_table")]

    def __str__(self) -> str:
        return f"version change #{self.pk} of {self.table_id}"

    @property
    def summary(self) -> str:
        return f"move {self.table.name} from table version {self.from_version} to {self.target}"

    @property
    def upgrade(self) -> bool:
        return self.target > self.from_version

    def approval_blocker(self) -> str:
        """No passing rehearsal of this very change: nobody may approve it."""
        rehearsal = self.rehearsal
        if rehearsal is None or not rehearsal.passed or (rehearsal.from_version, rehearsal.target) != (
                self.from_version, self.target):
            return (f"No passing rehearsal of the move from table version {self.from_version} to {self.target}: "
                    "rehearse it, then request it again.")
        return ""
