"""The table doctor's findings and repairs, for the pages and the API (issue 28): a table's health
as its last check stored it, the lake's tables worst first, a repair's preview (the library's
`plan_repair`, which only reads) and the repairs asked for. No Hudi rule is decided here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from console.lake import open_table
from console.models import Table
from console.models_health import OPEN_REPAIR, Repair, TableHealth
from timeline import CleanlineError
from timeline.doctor import KINDS, DoctorSettings, RepairPlan, index_states, plan_repair

NO_REPAIR = "none: "  # how the library begins the repair text of a finding no Cleanline repair fixes


def doctor_settings(table: Table) -> DoctorSettings:
    """The doctor's settings for a registered table: its Hudi writer options (as the CLI's
    `--hoodie-conf` gives them) and the thresholds of CLEANLINE_DOCTOR_* (as the CLI's
    `--stale-after`, `--orphan-min-age` and `--clean-lag` give them)."""
    return DoctorSettings(stale_after=timedelta(minutes=settings.CLEANLINE_DOCTOR_STALE_AFTER_MINUTES),
                          orphan_min_age=timedelta(hours=settings.CLEANLINE_DOCTOR_ORPHAN_MIN_AGE_HOURS),
                          clean_lag_commits=max(1, settings.CLEANLINE_DOCTOR_CLEAN_LAG_COMMITS),
                          options=dict(table.write_options or {}))


def table_health(table: Table) -> TableHealth | None:
    """The table's health as its last check stored it; None before the first."""
    return TableHealth.objects.filter(table=table).first()


def health_json(table: Table) -> dict[str, Any]:
    """The API's answer: the findings exactly as `cleanline doctor --json` prints them, with when
    and whether the table could be checked."""
    health = table_health(table)
    if health is None:
        return {"table_id": table.pk, "checked_at": None, "healthy": None, "worst": None, "error": None,
                "findings": []}
    return {"table_id": table.pk, "checked_at": health.checked_at, "healthy": not health.findings and not health.error,
            "worst": health.worst or None, "error": health.error or None, "findings": health.findings}


@dataclass(frozen=True, slots=True)
class FindingRow:
    """A stored finding as the Health section shows it."""

    kind: str
    severity: str
    summary: str
    why: str
    repair: str
    repairable: bool
    evidence: dict[str, Any]

    @property
    def who_must_act(self) -> str:
        return self.repair.removeprefix(NO_REPAIR)


def finding_rows(health: TableHealth | None) -> list[FindingRow]:
    if health is None:
        return []
    return [FindingRow(str(f["kind"]), str(f["severity"]), str(f["summary"]), str(f["why"]), str(f["repair"]),
                       bool(f["repairable"]), dict(f.get("evidence") or {})) for f in health.findings]


@dataclass(frozen=True, slots=True)
class LakeHealthRow:
    table: Table
    health: TableHealth | None

    @property
    def rank(self) -> int:
        return self.health.rank if self.health is not None else -1

    @property
    def findings(self) -> int:
        return len(self.health.findings) if self.health is not None else 0


def lake_health() -> list[LakeHealthRow]:
    """Every table with its health, worst first (could not be checked, then error, warning,
    info, healthy, not checked yet), more findings first within a severity, then by name."""
    health = {h.table_id: h for h in TableHealth.objects.all()}
    rows = [LakeHealthRow(t, health.get(t.pk)) for t in Table.objects.only("pk", "name", "path")]
    return sorted(rows, key=lambda r: (-r.rank, -r.findings, r.table.name, r.table.pk))


def repair_preview(table: Table, kind: str) -> tuple[RepairPlan | None, str]:
    """The repair of every finding of `kind` as the library plans it now (it only reads):
    exactly the changes it would make; or why there is none (who must act)."""
    if kind not in KINDS:
        return None, f"unknown finding kind {kind!r}"
    try:
        return plan_repair(open_table(table.path), kind, settings=doctor_settings(table)), ""
    except CleanlineError as exc:
        return None, str(exc)


def repairs_of(table: Table) -> QuerySet[Repair]:
    return table.repairs.select_related("requested_by", "decided_by").order_by("-requested_at", "-pk")


def open_repair(table: Table, kind: str) -> Repair | None:
    """The repair of `kind` waiting for approval or running, if any."""
    return repairs_of(table).filter(kind=kind, status__in=OPEN_REPAIR).first()


def repair_json(repair: Repair) -> dict[str, Any]:
    return {"id": repair.pk, "table_id": repair.table_id, "kind": repair.kind, "status": repair.status,
            "plan": repair.plan, "changes": repair.changes, "bytes": repair.bytes,
            "requested_by": repair.requested_by.get_username() if repair.requested_by else None,
            "requested_at": repair.requested_at,
            "decided_by": repair.decided_by.get_username() if repair.decided_by else None,
            "decided_at": repair.decided_at, "result": repair.result, "error": repair.error,
            "finished_at": repair.finished_at}


INDEX_KIND = "index-drift"


def indexes_json(table: Table) -> dict[str, Any]:
    """The table's index partitions (issue 45) as the library lists them now (`index_states`:
    state, file groups, records, bytes, what each serves), each with the index-drift findings of
    the last health check about it and when that check ran (its last verification); `error`
    when the table cannot be read."""
    health = table_health(table)
    findings = [f for f in (health.findings if health is not None else []) if f.get("kind") == INDEX_KIND]
    try:
        states = index_states(open_table(table.path))
        error = None
    except CleanlineError as exc:
        states, error = [], str(exc)
    rows = [{"name": s.name, "state": s.state, "file_groups": s.file_groups, "records": s.records, "bytes": s.bytes,
             "defined": s.defined, "serves": s.serves,
             "findings": [f for f in findings if (f.get("evidence") or {}).get("index") == s.name]}
            for s in states]
    return {"table_id": table.pk, "checked_at": health.checked_at if health is not None else None,
            "error": error, "indexes": rows}
