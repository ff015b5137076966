"""Compactions (issue 41) as a kind of the one approval workflow (issue 40): "Schedule" on a
table's Table services page plans a compaction as Hudi's scheduler does with its default strategy
(the library's `Maintenance.compact`, a dry run: nothing written) and keeps the plan, file group by
file group, on a `Compaction`; once another admin approves it a worker, under the table's lock,
plans again, writes the plan only if it compacts exactly the approved file groups (else STALE,
nothing written), and runs it (`Maintenance.run_compaction`, the library's local engine)
(`console.services.compactions`)."""

from __future__ import annotations

from typing import Any

from django.db import models

from console.models import Table
from console.models_approvals import Approvable, ApprovalStatus

OPEN_COMPACTION = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class Compaction(Approvable):
    """A compaction of a merge-on-read table: the plan as the library previewed it (its file
    groups, each with its base file and log files, bytes, the merge rules, what was left out and
    why), the engine that runs it, and what the run did (the compaction instant, the new base
    files)."""

    kind_name = "compaction"
    audit_prefix = "compaction"
    page = "console:compaction"

    table = models.ForeignKey(Table, related_name="compactions", on_delete=models.CASCADE)
    plan = models.JSONField(default=dict, help_text="the plan as requested (a dry run): operations (partition, "
                                                    "file id, base instant, base file, log files, bytes), merge "
                                                    "mode, ordering field, left out")
    engine = models.CharField(max_length=16, default="local", help_text="the engine that runs it")
    result = models.JSONField(default=dict, help_text="what the run did: the compaction instant, the new base files")

    class Meta:
        ordering = ["-requested_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["table"], condition=models.Q(status__in=OPEN_COMPACTION),
                                               name="one_open_compaction_per_table")]

    def __str__(self) -> str:
        return f"compaction #{self.pk} of {self.table_id}"

    @property
    def operations(self) -> list[dict[str, Any]]:
        return list(self.plan.get("operations", []))

    @property
    def summary(self) -> str:
        return f"compact {self.table.name}: {len(self.operations)} file groups"

    @property
    def expected(self) -> list[list[Any]]:
        """The approved plan's file slices (partition, file id, base instant, log files): the run
        writes no plan over any other."""
        return [[op["partition"], op["file_id"], op["base_instant_time"], list(op["log_files"])]
                for op in self.operations]
