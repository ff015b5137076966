"""Heartbeats of finished instants: `.hoodie/.heartbeat/<instant>` files left after the write
completed, was archived or was rolled back, or of an instant no timeline knows, once expired.
Hudi's write client deletes a heartbeat when the write finishes (`HoodieHeartbeatClient.stop`,
`HeartbeatUtils.deleteHeartbeatFile`); a crash in between leaves it, and a heartbeat left behind
keeps confusing writers and table services that look for live writes (apache/hudi #18903). The
repair deletes them as `HeartbeatUtils.deleteHeartbeatFile` does. A heartbeat still within the
heartbeat window, or of a pending instant, is never touched."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.doctor.check import Check, Session, repairable_plan, resolve_meta, run_deletes
from timeline.doctor.findings import Change, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import Survey

KIND = "leftover-heartbeats"


@dataclass(frozen=True, slots=True)
class Heartbeat(Evidence):
    instant: str
    file: str
    finished: str       # "completed", "archived", "rolled back by ...", or "on no timeline"
    age_seconds: int


@dataclass(frozen=True, slots=True)
class HeartbeatsEvidence(Evidence):
    heartbeats: tuple[Heartbeat, ...]
    heartbeat_window_seconds: int


def diagnose(survey: Survey) -> list[Finding]:
    pending = {i.requested_time for i in survey.timeline.pending()}
    found = []
    for instant, status in sorted(survey.heartbeats.items()):
        if instant in pending or survey.heartbeat_alive(instant) or not instant[:1].isdigit():
            continue
        finished = survey.finished.get(instant, "on no timeline")
        found.append(Heartbeat(instant, survey.storage.uri(status.path), finished, survey.age_seconds(status.mtime_ms)))
    if not found:
        return []
    evidence = HeartbeatsEvidence(tuple(found), survey.heartbeat_window_ms // 1000)
    return [Finding(
        KIND, Severity.WARNING, f"{len(found)} expired heartbeat(s) of finished instants under .hoodie/.heartbeat",
        evidence,
        "A heartbeat left behind makes writers and table services that look for live or failed writes act on a "
        "write that is over.",
        "delete them, as HeartbeatUtils.deleteHeartbeatFile does when a write finishes")]


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes = [Change("delete", h.file, 0, f"heartbeat of {h.instant} ({h.finished})")
               for finding in findings if isinstance(e := finding.evidence, HeartbeatsEvidence) for h in e.heartbeats]
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    return run_deletes(session, approved, plan, resolve_meta)


CHECK = Check(KIND, diagnose, plan, run)
