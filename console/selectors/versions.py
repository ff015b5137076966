"""Table versions: the table's version with what each other version means (the library's
`READERS`, the engines known to read each table version), the preflight of moving to each
(`inspect.version_check`: every blocker Hudi's `UpgradeDowngrade` handlers would meet), and the
table's rehearsals and version changes. No Hudi rule is decided here: the preflight, the plan and
the rehearsal are the library's (`timeline.versions`); this turns them into the JSON the rows keep
and the pages and the API show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from console.lake import open_table
from console.models import Table
from console.models_versions import OPEN_VERSION_CHANGE, RehearsalStatus, VersionChange, VersionRehearsal
from timeline import CleanlineError, HudiTable
from timeline.versions import READERS, VERSIONS, Blocker, Rehearsal, StepPlan, VersionChangePlan, VersionCheck


def blocker_json(blocker: Blocker) -> dict[str, Any]:
    """One blocker or note of the preflight: its kind, why, what clears it, the Hudi rule, the
    instant or setting it names, the file groups it holds, and whether it stops the change."""
    return {"kind": blocker.kind.value, "blocking": blocker.blocking, "why": blocker.why, "clears": blocker.clears,
            "rule": blocker.rule, "instant": blocker.instant.requested_time if blocker.instant else None,
            "action": blocker.instant.action if blocker.instant else None, "setting": blocker.setting,
            "file_groups": [{"partition": p, "file_id": f} for p, f in blocker.file_groups]}


def check_json(check: VersionCheck) -> dict[str, Any]:
    """The preflight of moving to `check.target`, step by step."""
    return {"current": check.current, "target": check.target, "ready": check.ready,
            "blockers": len(check.blockers), "notes": len(check.notes),
            "steps": [{"from": s.step.from_version, "to": s.step.to_version, "handler": s.step.handler,
                       "blocked": s.blocked, "blockers": [blocker_json(b) for b in s.blockers]} for s in check.steps]}


def step_json(step: StepPlan) -> dict[str, Any]:
    return {"from": step.step.from_version, "to": step.step.to_version, "handler": step.step.handler,
            "describe": step.describe(), "metadata_table": step.metadata_table,
            "properties": dict(step.properties), "instant_files": len(step.moves)}


def plan_json(plan: VersionChangePlan) -> dict[str, Any]:
    """A version change's plan (a dry run) or what its run did."""
    return {"current": plan.current, "target": plan.target, "dry_run": plan.dry_run, "done": plan.done,
            "refused": list(plan.refused), "resumed": list(plan.resumed) if plan.resumed else None,
            "interrupted": list(plan.interrupted) if plan.interrupted else None,
            "steps": [step_json(s) for s in (plan.ran or plan.steps)], "check": check_json(plan.check)}


def rehearsal_json(report: Rehearsal) -> dict[str, Any]:
    """A rehearsal's report as the library made it."""
    return {"target": report.target, "passed": report.passed, "refused": list(report.refused),
            "timeline_differences": list(report.timeline_differences),
            "fsview_differences": list(report.fsview_differences), "metadata_table": report.metadata_table,
            "metadata_table_ok": report.metadata_table_ok, "rows": report.rows, "rows_equal": report.rows_equal,
            "notes": list(report.notes), "steps": [s.describe() for s in report.plan.ran] if report.plan else []}


@dataclass(frozen=True, slots=True)
class VersionTarget:
    """Another table version the table could move to: newer or older, who reads it, and the
    preflight of moving there (None with `error` when the library cannot check it)."""

    version: int
    newer: bool
    readers: str
    check: dict[str, Any] | None
    error: str = ""

    @property
    def ready(self) -> bool:
        return self.check is not None and bool(self.check["ready"])


@dataclass(frozen=True, slots=True)
class VersionOverview:
    """The table's version now, who reads it, and every other version Cleanline moves tables to."""

    current: int | None
    readers: str
    targets: tuple[VersionTarget, ...]
    error: str = ""


def version_check(table: Table, target: int, lake: HudiTable | None = None) -> dict[str, Any]:
    """The preflight of moving `table` to `target`, read from the lake now with the table's writer
    options. Raises the library's errors (a version it does not check, a table it cannot read)."""
    return check_json((lake or open_table(table.path)).inspect.version_check(target, options=table.write_options))


def version_overview(table: Table) -> VersionOverview:
    """The table's version and, for each other version Cleanline moves tables to (6, 8, 9),
    whether it is newer or older, who reads it, and the preflight of moving there."""
    try:
        lake = open_table(table.path)
        current = lake.version
    except CleanlineError as exc:
        return VersionOverview(None, "", (), error=str(exc))
    targets = []
    for version in VERSIONS:
        if version == current:
            continue
        try:
            check, error = version_check(table, version, lake), ""
        except CleanlineError as exc:
            check, error = None, str(exc)
        targets.append(VersionTarget(version, version > current, READERS.get(version, ""), check, error))
    return VersionOverview(current, READERS.get(current, "not a version Cleanline changes"), tuple(targets))


def rehearsals_of(table: Table) -> QuerySet[VersionRehearsal]:
    return table.version_rehearsals.select_related("requested_by").order_by("-requested_at", "-pk")


def passing_rehearsal(table: Table, from_version: int, target: int) -> VersionRehearsal | None:
    """The newest rehearsal of moving `table` from `from_version` to `target`, if it passed."""
    newest = rehearsals_of(table).filter(from_version=from_version, target=target).exclude(
        status__in=(RehearsalStatus.QUEUED, RehearsalStatus.RUNNING)).first()
    return newest if newest is not None and newest.passed else None


def version_changes_of(table: Table) -> QuerySet[VersionChange]:
    return table.version_changes.select_related("requested_by", "decided_by", "rehearsal").order_by(
        "-requested_at", "-pk")


def open_version_change(table: Table) -> VersionChange | None:
    return version_changes_of(table).filter(status__in=OPEN_VERSION_CHANGE).first()
