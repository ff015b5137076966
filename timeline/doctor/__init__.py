"""The table doctor: what is wrong with a Hudi table, why it matters, and the repair Hudi has for
it, shown before anything changes (issue 28).

`diagnose(table)` only reads. Each finding kind has one module (its rule, with the Java it
follows, and its repair), registered in `CHECKS`:

| kind | module |
|---|---|
| unreadable-instant | `unreadable.py` |
| table-properties | `properties.py` |
| archived-timeline | `archived.py` |
| stale-pending | `stale.py` |
| stuck-table-service | `stuck.py` |
| metadata-table-drift | `mdt_drift.py` |
| index-drift | `indexes.py` (its repair: `index_repair.py`) |
| orphan-files | `orphans.py` |
| clean-lag | `clean_lag.py` |
| leftover-markers | `markers.py` |
| leftover-heartbeats | `heartbeats.py` |

A repair is a plan first (`plan_repair`: pure, exactly the files and instants it changes and
their bytes), then `run_repair`: under the table's lock (`timeline/transactions.py`, the lock
Hudi's writers share and the live-writer rule), the kind is diagnosed again and only what is
both planned and still found is changed; every state file goes through `timeline/transition.py`,
every write and delete follows `transition.fence`, every deleted path goes through the table's
`Containment`. A repair is idempotent: run again, it finds the work done and skips it. The CLI
(`cleanline doctor`) and the console only show what these return.

Index partitions (issue 45): `plan_index_rebuild` / `plan_index_drop` plan one index's rebuild
from the data or its drop (`index_repair.py`), run like any plan by `run_repair`;
`index_states` lists the table's indexes with their state and size."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from timeline.discover import find_tables  # the tables under a root: one walk, timeline/discover.py
from timeline.doctor import (
    archived,
    clean_lag,
    heartbeats,
    index_repair,
    indexes,
    markers,
    mdt_drift,
    orphans,
    properties,
    stale,
    stuck,
    unreadable,
)
from timeline.doctor.check import Check, Session
from timeline.doctor.findings import (
    Change,
    Evidence,
    Finding,
    RepairInvalidated,
    RepairPlan,
    RepairResult,
    RepairUnavailable,
    Severity,
)
from timeline.doctor.index_repair import IndexState, RebuildEstimate, index_states
from timeline.doctor.index_repair import plan_drop as plan_index_drop
from timeline.doctor.index_repair import plan_rebuild as plan_index_rebuild
from timeline.doctor.survey import DoctorSettings, Survey
from timeline.exceptions import CleanlineError
from timeline.table import Table
from timeline.transactions import Transactions

# Diagnosed in this order (findings are then sorted worst first, this order within a severity).
CHECKS: Mapping[str, Check] = {check.kind: check for check in (
    unreadable.CHECK, properties.CHECK, archived.CHECK, stale.CHECK, stuck.CHECK, mdt_drift.CHECK, index_repair.CHECK,
    orphans.CHECK,
    clean_lag.CHECK, markers.CHECK, heartbeats.CHECK)}
KINDS = tuple(CHECKS)
# The checks that list the table's files (every partition): what a caller that diagnoses often
# (the console at each sync) runs less often than the rest, which read only the timeline folder,
# the instants, markers, heartbeats and hoodie.properties.
LISTING_KINDS = (mdt_drift.KIND, indexes.KIND, orphans.KIND, clean_lag.KIND)
TIMELINE_KINDS = tuple(kind for kind in KINDS if kind not in LISTING_KINDS)


class UnknownKind(CleanlineError, ValueError):
    """A finding kind the doctor does not know."""


def _checks(kinds: Iterable[str] | None) -> list[Check]:
    if kinds is None:
        return list(CHECKS.values())
    wanted = list(kinds)
    unknown = [k for k in wanted if k not in CHECKS]
    if unknown:
        raise UnknownKind(f"unknown finding kind {unknown[0]!r} (known: {', '.join(KINDS)})")
    return [CHECKS[k] for k in wanted]


def diagnose(table: Table, *, now: datetime | None = None, kinds: Iterable[str] | None = None,
             settings: DoctorSettings | None = None) -> list[Finding]:
    """What is wrong with `table`, worst first; an empty list when it is healthy. Only reads.
    `now` (aware, not later than the clock) diagnoses as of that moment; `kinds` limits the
    checks; `settings` holds the thresholds and the writers' options."""
    survey = Survey(table, now=now, settings=settings)
    order = {kind: n for n, kind in enumerate(KINDS)}
    findings = [f for check in _checks(kinds) for f in _diagnosed(check, survey)]
    return sorted(findings, key=lambda f: (-f.severity.rank, order[f.kind]))


@dataclass(frozen=True, slots=True)
class CheckFailed(Evidence):
    """A check that could not finish: what stopped it."""

    error: str


def _diagnosed(check: Check, survey: Survey) -> list[Finding]:
    """One check's findings; a check the table stops (a file that does not decode, storage
    refusing a read) is itself a finding, so that the others still report."""
    try:
        return check.diagnose(survey)
    except CleanlineError as exc:
        return [Finding(check.kind, Severity.ERROR, f"{check.kind} could not be checked: {exc}", CheckFailed(str(exc)),
                        "What this check looks for cannot be ruled out until the table reads.",
                        f"none: {exc}")]


def plan_repair(table: Table, kind: str, *, now: datetime | None = None,
                settings: DoctorSettings | None = None) -> RepairPlan:
    """The repair of every finding of `kind` the doctor repairs, before anything changes:
    exactly the changes it makes. RepairUnavailable when the kind finds nothing or offers no
    repair Cleanline runs (the message says who must act)."""
    (check,) = _checks([kind])
    return check.plan(Survey(table, now=now, settings=settings))


# Why a dry run's changes were skipped (`run_repair`).
DRY_RUN = "dry run: nothing changed"


def run_repair(table: Table, plan: RepairPlan, *, transactions: Transactions | None = None,
               now: datetime | None = None, settings: DoctorSettings | None = None,
               dry_run: bool = True) -> RepairResult:
    """Run an approved plan: re-validated under the table's lock (the kind diagnosed again, as
    of the clock or `now`), then only the planned changes still found are made. `transactions`
    carries the lock the table's writers share (`table.maintenance(options=...).transactions`);
    by default the lock is found from the table. RepairInvalidated when the table now asks for
    changes the plan did not preview. A dry run unless told (`dry_run=False`): by default
    nothing is read or changed, and the `RepairResult` lists every planned change as skipped."""
    (check,) = _checks([plan.kind])
    if dry_run:
        return RepairResult(plan.table, plan.kind, skipped=tuple((change, DRY_RUN) for change in plan.changes),
                            notes=(f"{DRY_RUN}: pass dry_run=False to repair",))
    session = Session(table, transactions or Transactions(table, settings.options if settings else None),
                      settings or DoctorSettings(), now)
    return check.run(session, plan)


__all__ = ["CHECKS", "KINDS", "LISTING_KINDS", "TIMELINE_KINDS", "Change", "DoctorSettings", "Evidence", "Finding",
           "IndexState", "RebuildEstimate", "RepairInvalidated", "RepairPlan", "RepairResult", "RepairUnavailable",
           "Severity", "UnknownKind", "diagnose", "find_tables", "index_states", "plan_index_drop",
           "plan_index_rebuild", "plan_repair", "run_repair"]
