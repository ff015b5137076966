"""The table doctor in the console (issue 28): each table's health as its last check found it,
and the repairs people asked for, approved and ran. The findings and repair plans are the
library's (`timeline.doctor`), stored as its JSON (`Finding.to_json`, `RepairPlan.to_json`): the
same the CLI's `cleanline doctor --json` prints. Imported by console/models.py."""

from __future__ import annotations

from typing import Any

from django.db import models

from console.models_approvals import Approvable, ApprovalStatus

# Worst first: the order of the health list and of a table's findings.
SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1, "": 0}


class TableHealth(models.Model):
    """The doctor's findings of one table, worst first, from the last check (made at sync
    time: `console.services.health.health_check`)."""

    table = models.OneToOneField("console.Table", related_name="health", on_delete=models.CASCADE)
    checked_at = models.DateTimeField()
    fingerprint = models.CharField(max_length=64, blank=True, help_text="the table's timeline fingerprint when "
                                                                       "it was checked")
    findings = models.JSONField(default=list, help_text="the doctor's findings as `cleanline doctor --json` prints "
                                                        "them, worst first")
    worst = models.CharField(max_length=16, blank=True, help_text="the worst finding's severity; empty when healthy")
    error = models.TextField(blank=True, help_text="why the doctor could not look at the table")

    @property
    def rank(self) -> int:
        """How bad the table is: 4 when it could not be checked, else its worst severity's rank."""
        return 4 if self.error else SEVERITY_RANK.get(self.worst, 0)

    @property
    def kinds(self) -> list[str]:
        return sorted({str(f.get("kind")) for f in self.findings})


OPEN_REPAIR = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class Repair(Approvable):
    """A repair of every finding of one kind: the plan as it was previewed (`plan_repair`,
    exactly the changes it makes), requested by an operator or admin, approved by another admin
    (the two-person rule of a clean), run by a Celery task under the table's lock, re-validated
    first: a table that now asks for changes the plan did not preview makes it STALE."""

    kind_name = "repair"
    audit_prefix = "repair"
    page = "console:repair"

    table = models.ForeignKey("console.Table", related_name="repairs", on_delete=models.CASCADE)
    kind = models.CharField(max_length=64, help_text="the doctor's finding kind it repairs")
    plan = models.JSONField(default=dict, help_text="the library's RepairPlan as JSON: findings, changes, notes")
    changes = models.IntegerField(default=0)
    bytes = models.BigIntegerField(default=0)
    result = models.JSONField(default=dict, help_text="the library's RepairResult as JSON: done, skipped, failed")

    class Meta:
        ordering = ["-requested_at", "-pk"]

    @property
    def summary(self) -> str:
        return f"repair {self.kind} on {self.table.name}: {self.changes} changes"

    @property
    def bytes_changed(self) -> int | None:
        return self.bytes

    @property
    def change_rows(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.plan.get("changes", [])
        return rows
