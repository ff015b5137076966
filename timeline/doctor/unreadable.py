"""Unreadable instant files: a completed instant's metadata or a pending instant's plan that does
not decode (the state files `Table.ensure_intact` checks; Hudi fails on the same files when it
reads them), and a pending clean whose requested plan is empty (Hudi's `CleanerUtils.
getCleanerPlan` finds "Not an Avro data file").

Hudi has one repair here, and Cleanline runs it: a corrupt pending clean is removed (Hudi CLI's
`repair corrupted clean files`, `RepairsCommand.removeCorruptedPendingCleanAction`, which
deletes the instant file with `HoodieActiveTimeline.deleteInstantFile`); Cleanline deletes every
pending state file of that clean (inflight, then requested), and refuses when the metadata table
holds a deltacommit at the clean's time (removing the clean would make that deltacommit count).
Anything else needs the file back from a backup: Hudi cannot read it either."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.doctor.check import Check, Session, repairable_plan, resolve_meta, run_deletes
from timeline.doctor.findings import NO_REPAIR, Change, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.instant import CLEAN, Instant, State
from timeline.mdt.reader import metadata_table
from timeline.table import PLANNED_ACTIONS

KIND = "unreadable-instant"


@dataclass(frozen=True, slots=True)
class UnreadableEvidence(Evidence):
    instant: str
    action: str
    state: str      # the state the instant is in
    file: str       # the state file that does not decode
    bytes: int
    reason: str


def _checked(instant: Instant) -> tuple[State, bool] | None:
    """Which state file of the instant must decode, and whether an empty one is corrupt."""
    if instant.is_completed:
        return State.COMPLETED, False
    if instant.action in PLANNED_ACTIONS:
        return State.REQUESTED, instant.action == CLEAN
    return None


def _mdt_holds(survey: Survey, instant_time: str) -> bool:
    try:
        mdt = metadata_table(survey.table)
    except CleanlineError:
        return True  # cannot tell: keep the clean
    return mdt is not None and any(i.requested_time == instant_time for i in mdt.mdt.reload().timeline)


def diagnose(survey: Survey) -> list[Finding]:
    timeline = survey.timeline
    findings = []
    for instant in timeline:
        checked = _checked(instant)
        if checked is None:
            continue
        state, empty_is_corrupt = checked
        status = timeline.files_of(instant).get(state)
        if status is None:
            continue
        if status.size == 0:
            if not empty_is_corrupt:
                continue
            reason = "the plan is empty (Hudi: \"Not an Avro data file\")"
        elif status.path in survey.state_files.errors:
            reason = survey.state_files.errors[status.path]
        else:
            continue
        pending_clean = instant.action == CLEAN and instant.is_pending
        if pending_clean and not _mdt_holds(survey, instant.requested_time):
            repair = (f"delete the corrupt pending clean {instant.requested_time} (Hudi CLI's repair corrupted clean "
                      "files, RepairsCommand.removeCorruptedPendingCleanAction)")
        elif pending_clean:
            repair = (f"{NO_REPAIR}the metadata table holds a deltacommit at {instant.requested_time}; a Hudi writer "
                      "must roll it back before the clean goes")
        else:
            repair = (f"{NO_REPAIR}Hudi fails on this file too; restore it from a backup of the table, or have a Hudi "
                      "writer remove the instant")
        findings.append(Finding(
            KIND, Severity.ERROR, f"{instant.action} {instant.requested_time}: {status.name} does not decode",
            UnreadableEvidence(instant.requested_time, instant.action, instant.state.name, survey.storage.uri(
                status.path), max(status.size, 0), reason),
            "Every Hudi writer, reader and table service that reads this instant fails, and Cleanline refuses to "
            "plan or change the table until it is gone.",
            repair))
    return findings


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes: list[Change] = []
    for finding in findings:
        evidence = finding.evidence
        if not finding.repairable or not isinstance(evidence, UnreadableEvidence):
            continue
        instant = next(i for i in survey.timeline if i.requested_time == evidence.instant and i.action == CLEAN)
        files = survey.timeline.files_of(instant)
        for state in (State.INFLIGHT, State.REQUESTED):  # inflight first: never leave an inflight without its plan
            if state in files:
                status = files[state]
                why = f"{state.name.lower()} file of the corrupt pending clean {instant.requested_time}"
                changes.append(Change("delete", survey.storage.uri(status.path), max(status.size, 0), why))
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    return run_deletes(session, approved, plan, resolve_meta)


CHECK = Check(KIND, diagnose, plan, run)
