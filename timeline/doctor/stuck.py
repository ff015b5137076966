"""Stuck table services: an inflight compaction, log compaction or clustering whose job is gone,
rolled back as Hudi's `run_rollback_inflight_tableservice` and `cleanup_stale_inflight_commits`
procedures roll one back (issue 41's "unblock"; apache/hudi #19313: a compaction left inflight
blocks every later one until a job runs it again).

Stuck, as `HoodieTimelineCleanupUtil.inflightWriteCommitsOlderThan` finds the procedure's table
services: inflight (a requested plan wrote nothing: it waits for a writer, a `stale-pending`
finding), requested longer ago than the doctor's stale threshold (180 minutes), and no live
heartbeat: Hudi's table services keep none by default (apache/hudi #2359: they roll back
inline when run again), but one run by a writer that does (`hoodie.clustering.enable.expirations`,
apache/hudi #18302) and whose heartbeat is fresh is running, and left alone. An instant with a
pending rollback is `stale-pending`'s (it finishes that rollback): one rule, one finding.

The repair (`timeline.pending_rollbacks.rollback_table_service`): a rollback planned from the
service's markers, else by listing (a compaction's own base files only, never a log file:
`ListingBasedRollbackStrategy.listBaseFilesToBeDeleted`), the metadata table's rollback as for a
write, then a compaction or clustering reverts to requested with its plan byte for byte
(`HoodieTable.rollbackInflightCompaction` / `rollbackInflightClustering`, the default
deleteInstants=false: a writer runs the plan again); a log compaction's instant files go
(`rollbackInflightLogCompaction`: its plans are mutable, a writer schedules another)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from timeline.doctor.check import Check, Session, fresh_changes, repairable_plan
from timeline.doctor.findings import (
    Change,
    Evidence,
    Finding,
    RepairInvalidated,
    RepairPlan,
    RepairResult,
    Severity,
    changes_under,
)
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.failed_writes import is_table_service, keeps_plan
from timeline.instant import Instant
from timeline.pending_rollbacks import rollback_table_service
from timeline.rollback import pending_rollback_of, plan_rollback

KIND = "stuck-table-service"
HEAD = "rollback"


@dataclass(frozen=True, slots=True)
class StuckEvidence(Evidence):
    """One stuck table service: what it is, since when, its heartbeat, whether it left markers,
    and the files its rollback deletes (count and bytes)."""

    instant: str
    action: str
    requested_at: str       # ISO 8601, from the instant time in the table's timeline zone
    age_seconds: int
    heartbeat: str          # "none", or "expired, touched N s ago"
    markers: bool
    files: int
    bytes: int
    keeps_plan: bool        # reverts to requested with its plan (compaction, clustering); a log compaction goes


def stuck(survey: Survey) -> list[Instant]:
    """The stuck table services (see the module's docstring), oldest first."""
    threshold = survey.now_ms - int(survey.settings.stale_after.total_seconds() * 1000)
    found = []
    for instant in survey.timeline.pending():
        moment = survey.moment_ms(instant.requested_time)
        if not instant.is_inflight or moment is None or moment > threshold:
            continue
        t = instant.requested_time
        if t in survey.live or survey.heartbeat_alive(t):
            continue
        try:
            if not is_table_service(survey.table, instant) or pending_rollback_of(survey.table, t) is not None:
                continue
        except CleanlineError:
            continue  # a plan that does not decode: unreadable-instant says so, nothing is rolled back
        found.append(instant)
    return found


def diagnose(survey: Survey) -> list[Finding]:
    findings = []
    for instant in stuck(survey):
        t = instant.requested_time
        preview = plan_rollback(survey.table, instant, table_service=True)
        beat = survey.heartbeats.get(t)
        heartbeat = "none" if beat is None else f"expired, touched {survey.age_seconds(beat.mtime_ms)} s ago"
        requested = survey.moment_ms(t) or 0
        kept = keeps_plan(survey.table, instant)
        evidence = StuckEvidence(t, instant.action, datetime.fromtimestamp(requested / 1000, UTC).isoformat(),
                                 survey.age_seconds(requested), heartbeat, t in survey.marker_folders,
                                 len(preview.files_to_delete), preview.bytes_to_delete, kept)
        after = ("reverts to requested with its plan kept, to be run again" if kept
                 else "goes with its instant files (a writer schedules another)")
        findings.append(Finding(
            KIND, Severity.WARNING,
            f"{instant.action} {t} has been inflight for {evidence.age_seconds / 3600:.1f} hours with no live "
            "heartbeat",
            evidence,
            "A table service left inflight blocks the next one (Hudi schedules no compaction over file groups a "
            "pending plan holds, and a clustering's file groups take no updates), holds back cleaning and "
            "archival, and leaves its partial files on storage.",
            f"roll back {instant.action} {t} as Hudi's rollbackInflightTableService does: the "
            f"{evidence.files} files it wrote go, it {after}"))
    return findings


def _changes(survey: Survey, instant: Instant) -> list[Change]:
    preview = plan_rollback(survey.table, instant, table_service=True)
    t = instant.requested_time
    state_files = ("its inflight file and markers (it reverts to requested, its plan kept)"
                   if keeps_plan(survey.table, instant) else "its instant files and markers")
    changes = [Change(HEAD, t, 0, f"roll back {instant.action} {t}: {len(preview.files_to_delete)} files "
                                  f"(listed below), {state_files}")]
    changes += [Change("delete", path, size, f"written by {instant.action} {t}")
                for _, path, size in preview.files_to_delete]
    changes += [Change("rollback block", path, size, f"a rollback command block for {t} after this log file")
                for _, path, size in preview.logs_to_mark]
    return changes


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes = [c for instant in stuck(survey) for c in _changes(survey, instant)]
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """Each planned table service in turn, under the table's lock: diagnosed again (still
    inflight, still without a live heartbeat, no pending rollback of it) and its changes compared
    with the approved ones (more than previewed: RepairInvalidated, nothing more is changed), then
    rolled back (`rollback_table_service`)."""
    table = session.table
    done: list[Change] = []
    skipped: list[tuple[Change, str]] = []
    failed: list[tuple[Change, str]] = []
    for head in [c for c in approved.changes if c.action == HEAD]:
        mine = _changes_of(approved.changes, head)
        try:
            with session.transactions.state_change():
                fresh = fresh_changes(session, plan)
                if head.key not in {c.key for c in fresh}:
                    skipped += [(c, "no longer a stuck table service when diagnosed again under the table's lock")
                                for c in mine]
                    continue
                previewed = {c.key for c in mine}
                extra = [c for c in _changes_of(fresh, head) if c.key not in previewed]
                if extra:
                    raise RepairInvalidated(
                        f"{table.uri}: {head.target} would now also change {extra[0].target} ({len(extra)} change(s) "
                        "the plan did not preview); nothing more was changed")
                rollback_table_service(table, head.target, options=session.settings.options)
        except RepairInvalidated:
            raise
        except CleanlineError as exc:
            failed += [(c, str(exc)) for c in mine]
            continue
        done += mine
    table.reload()
    return RepairResult(table.uri, KIND, tuple(done), tuple(skipped), tuple(failed))


def _changes_of(changes: tuple[Change, ...] | list[Change], head: Change) -> list[Change]:
    """The head (a rollback) and the changes listed after it, up to the next head."""
    return changes_under(changes, head, (HEAD,))


CHECK = Check(KIND, diagnose, plan, run)
