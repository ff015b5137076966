"""Marker folders of finished instants: `.hoodie/.temp/<instant>` left after the instant
completed, was archived or was rolled back. Hudi deletes an instant's markers once its commit
completes (`WriteMarkers.quietDeleteMarkerDir` in the write client's post-commit step), after a
rollback (`BaseRollbackActionExecutor.finishRollback`) and, for anything left, when archiving
(`HoodieTimelineArchiver.deleteAnyLeftOverMarkers`); a crash between those steps leaves them. The
repair deletes them as those steps do. The marker folders of pending instants are never touched:
a rollback reads them."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.doctor.check import Check, Session, repairable_plan, resolve_meta, run_deletes
from timeline.doctor.findings import Change, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError

KIND = "leftover-markers"


@dataclass(frozen=True, slots=True)
class MarkerFolder(Evidence):
    instant: str
    folder: str
    finished: str       # "completed", "archived" or "rolled back by ..."
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class MarkersEvidence(Evidence):
    folders: tuple[MarkerFolder, ...]
    files: int
    bytes: int


def diagnose(survey: Survey) -> list[Finding]:
    storage = survey.storage
    folders = []
    for instant, status in sorted(survey.marker_folders.items()):
        finished = survey.finished.get(instant)
        if finished is None:
            continue
        try:
            inside = list(storage.list_recursive(status.path))
        except CleanlineError:
            inside = []
        folders.append(MarkerFolder(instant, storage.uri(status.path), finished, len(inside),
                                    sum(max(s.size, 0) for s in inside)))
    if not folders:
        return []
    evidence = MarkersEvidence(tuple(folders), sum(f.files for f in folders), sum(f.bytes for f in folders))
    return [Finding(
        KIND, Severity.INFO, f"{len(folders)} marker folder(s) of finished instants under .hoodie/.temp", evidence,
        "Markers only serve the rollback of a pending write; left behind they cost listings and storage, and a "
        "rollback by markers of a reused time would read them.",
        "delete them, as Hudi's post-commit step and archival do (WriteMarkers.quietDeleteMarkerDir)")]


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes = [Change("delete folder", f.folder, f.bytes, f"markers of {f.instant} ({f.finished})")
               for finding in findings if isinstance(e := finding.evidence, MarkersEvidence) for f in e.folders]
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    return run_deletes(session, approved, plan, resolve_meta, folders=True)


CHECK = Check(KIND, diagnose, plan, run)
