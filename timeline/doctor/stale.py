"""Stale pending writes and table services: requested or inflight instants whose writer is
gone (no live heartbeat) and that are older than a threshold, as Hudi's
`HoodieTimelineCleanupUtil.inflightWriteCommitsOlderThan` finds them for
`CleanupStaleInflightCommitsProcedure` (180 minutes by default), over the whole timeline.

Repairs, where Cleanline has one: a write (commit, delta commit, replace commit that is no
clustering) is rolled back as `timeline/rollback.py` does (`BaseRollbackActionExecutor`, from
markers or, without them, by listing: the procedure's `ROLLBACK_USING_MARKERS_ENABLE=false`
case), newest first; a pending clean is finished from its plan (`CleanActionExecutor.
runPendingClean`, `timeline/clean/executor.py`); a pending rollback is finished from its plan
(`timeline.pending_rollbacks.finish_rollback`: of a compaction or clustering, which then reverts to
requested with its plan kept, as `HoodieTable.rollbackInflightCompaction` /
`rollbackInflightClustering` do; of an instant already gone, as `BaseHoodieTableServiceClient.
rollback` finishes it). A requested compaction, log compaction or clustering is left to a Hudi
writer to run; an inflight one with no live heartbeat is `stuck-table-service`'s finding
(`timeline/doctor/stuck.py`), not this kind's. Restores and other actions are left to a Hudi
writer. A write whose heartbeat is alive is never stale (`timeline/rollback.py`'s rule).

Which stale writes are offered, by the writers' failed-writes policy (`failed_writes_policy`,
their options over `hoodie.properties`, as the lock is found): a writer heartbeats only under
LAZY (`BaseHoodieWriteClient.startCommit` starts `HoodieHeartbeatClient` then), so under EAGER
a writer still running a long write looks the same as a dead one. Like Hudi's
`cleanup_stale_inflight_commits`, whose `HoodieTimelineCleanupUtil.inflightWriteCommitsOlderThan`
drops commits and delta commits (ingestion commits) unless `include_ingestion_commits` (which
its documentation calls dangerous), an ingestion commit is offered only under LAZY (its
heartbeat expired) or with `DoctorSettings.include_ingestion_commits`, the operator's explicit
word, which the plan records in its notes. Under NEVER no write is offered: Hudi never rolls
one back by itself (`getInstantsToRollback`); a pending rollback someone started is still
finished (`rollbackFailedWrites` re-runs those whatever the policy)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from timeline.clean.executor import run_pending_cleans
from timeline.doctor.check import Check, Session, fresh_changes, repairable_plan
from timeline.doctor.findings import (
    NO_REPAIR,
    Change,
    Evidence,
    Finding,
    RepairInvalidated,
    RepairPlan,
    RepairResult,
    Severity,
    changes_under,
)
from timeline.doctor.stuck import stuck
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.failed_writes import INGESTION_ACTIONS, LAZY, NEVER, failed_writes_policy, is_clustering, keeps_plan
from timeline.instant import CLEAN, COMMIT, DELTA_COMMIT, REPLACE_COMMIT, RESTORE, ROLLBACK, Instant, State
from timeline.metadata.records import CleanerPlan, RollbackPlan
from timeline.pending_rollbacks import finish_rollback
from timeline.rollback import (
    RollbackPreview,
    check_rollback_sequence,
    pending_rollback_of,
    plan_rollback,
    preview_of_plan,
    rollback,
)

KIND = "stale-pending"
WRITES = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
TABLE_SERVICES = frozenset({"compaction", "logcompaction", "clustering"})
HEADS = ("rollback", "run clean")  # the change that stands for one instant's repair; its files follow it


@dataclass(frozen=True, slots=True)
class StaleEvidence(Evidence):
    """One stale pending instant: what it is, since when, its heartbeat, whether it left
    markers, and the data files carrying its time (what a listing-based rollback deletes)."""

    instant: str
    action: str
    state: str
    role: str               # "write", "clean", "rollback", "table service", "restore", "other"
    requested_at: str       # ISO 8601, from the instant time in the table's timeline zone
    age_seconds: int
    heartbeat: str          # "none", or "expired, touched N s ago"
    markers: bool
    files: int
    bytes: int


def _role(survey: Survey, instant: Instant) -> str:
    if instant.action in WRITES:
        try:
            return "table service" if is_clustering(survey.table, instant) else "write"
        except CleanlineError:
            return "other"  # its plan does not decode (unreadable-instant says so): nothing is rolled back
    if instant.action in TABLE_SERVICES:
        return "table service"
    return {CLEAN: "clean", ROLLBACK: "rollback", RESTORE: "restore"}.get(instant.action, "other")


def _repair(survey: Survey, instant: Instant, role: str, newer: frozenset[str]) -> str:
    """The repair of one stale instant; `newer` are the stale writes rolled back before it (newest
    first, so Hudi's sequence rule is checked as it will stand when this one's turn comes)."""
    t = instant.requested_time
    if role == "write":
        pending = pending_rollback_of(survey.table, t)
        if pending is not None:
            return f"finish rollback {pending[0].requested_time} of {instant.action} {t} from its plan"
        held = _write_held(survey, instant)
        if held:
            return f"{NO_REPAIR}{held}"
        try:
            check_rollback_sequence(survey.table, instant, newer_go_first=newer, options=survey.settings.options)
        except CleanlineError as exc:
            return f"{NO_REPAIR}{exc}"
        return f"roll back {instant.action} {t} as Hudi's rollback does (its files, then its instant files)"
    if role == "clean":
        return f"finish clean {t} from its plan (CleanActionExecutor.runPendingClean)"
    if role == "rollback":
        target = _rollback_target(survey, instant)
        if target is None:
            named = _rollback_named(survey, instant)
            if named is None:
                return f"{NO_REPAIR}rollback {t}'s plan names no instant; a Hudi writer must finish or remove it"
            return (f"finish rollback {t} of {named.action} {named.requested_time} from its plan (the instant's files "
                    "are gone already: only what the plan names is deleted, as BaseHoodieTableServiceClient.rollback "
                    "finishes it)")
        if keeps_plan(survey.table, target):
            return (f"finish rollback {t} of {target.action} {target.requested_time} from its plan, then revert it "
                    "to requested with its plan kept (HoodieTable.rollbackInflightCompaction / "
                    "rollbackInflightClustering)")
        return f"finish rollback {t} of {target.action} {target.requested_time} from its plan"
    if role == "table service":
        if instant.is_inflight:  # a pending rollback of it is finished by that rollback's finding
            return (f"{NO_REPAIR}finish the pending rollback of {instant.action} {t} (its stale-pending rollback "
                    "finding), which leaves it requested with its plan")
        return (f"{NO_REPAIR}a Hudi writer must run the requested {instant.action} {t} (run_compaction, "
                "run_clustering): it has not started, so nothing of it is left to roll back")
    if role == "restore":
        return f"{NO_REPAIR}re-run the restore (cleanline restore --savepoint ...) or finish it with a Hudi writer"
    return f"{NO_REPAIR}a Hudi writer must finish or roll back the pending {instant.action} {t}"


def _write_held(survey: Survey, instant: Instant) -> str:
    """Why the failed-writes policy holds a stale write back from the repair ("" when it does
    not: see the module's docstring)."""
    policy = failed_writes_policy(survey.table, survey.settings.options)
    t = instant.requested_time
    if policy == NEVER:
        return ("the writers' failed-writes policy is NEVER (hoodie.clean.failed.writes.policy): Hudi never rolls "
                "back a failed write by itself; once its writer is known gone, roll it back by name (cleanline "
                f"rollback PATH --instant {t})")
    if instant.action in INGESTION_ACTIONS and policy != LAZY and not survey.settings.include_ingestion_commits:
        return (f"under the {policy} failed-writes policy Hudi writers keep no heartbeat "
                "(BaseHoodieWriteClient.startCommit starts one only under LAZY), so a writer still running this "
                f"{instant.action} looks the same as a dead one. Like Hudi's cleanup_stale_inflight_commits, the "
                "doctor leaves ingestion commits alone unless told to include them (include_ingestion_commits, "
                "`cleanline doctor --repair stale-pending --include-ingestion-commits`): that drops the write of "
                "any writer still running it")
    return ""


def _rollback_named(survey: Survey, instant: Instant) -> Instant | None:
    """The instant a pending rollback's plan names, as BaseHoodieTableServiceClient.rollback
    reconstructs it when it is gone (inflight, the plan's action); None when the plan names none."""
    try:
        target = survey.table.read(instant, RollbackPlan, State.REQUESTED).instant_to_rollback
    except (CleanlineError, TypeError):
        return None
    if target is None or not target.time:
        return None
    return Instant(target.time, target.action or DELTA_COMMIT, State.INFLIGHT)


def _rollback_target(survey: Survey, instant: Instant) -> Instant | None:
    """The instant a pending rollback's plan names, when it is still on the active timeline."""
    try:
        target = survey.table.read(instant, RollbackPlan, State.REQUESTED).instant_to_rollback
    except (CleanlineError, TypeError):
        return None
    if target is None:
        return None
    return next((i for i in survey.timeline if i.requested_time == target.time and i.action != ROLLBACK), None)


def diagnose(survey: Survey) -> list[Finding]:
    threshold = survey.now_ms - int(survey.settings.stale_after.total_seconds() * 1000)
    claimed = {i.requested_time for i in stuck(survey)}  # stuck-table-service's: reported there, once
    pending = [i for i in survey.timeline.pending() if (m := survey.moment_ms(i.requested_time)) is not None
               and m <= threshold and i.requested_time not in survey.live and i.requested_time not in claimed]
    if not pending:
        return []
    written = survey.files_written_at({i.requested_time for i in pending})
    counts = {t: (len(files), sum(max(survey.sized(f.status).size, 0) for f in files)) for t, files in written.items()}
    findings = []
    newer: set[str] = set()
    for instant in sorted(pending, key=lambda i: i.sort_key, reverse=True):
        t = instant.requested_time
        requested = survey.moment_ms(t) or 0
        beat = survey.heartbeats.get(t)
        heartbeat = "none" if beat is None else f"expired, touched {survey.age_seconds(beat.mtime_ms)} s ago"
        role = _role(survey, instant)
        files, size = counts[t]  # files_written_at answers every time asked, with no files too
        evidence = StaleEvidence(t, instant.action, instant.state.name, role,
                                 datetime.fromtimestamp(requested / 1000, UTC).isoformat(),
                                 survey.age_seconds(requested), heartbeat, t in survey.marker_folders, files, size)
        age_hours = evidence.age_seconds / 3600
        findings.append(Finding(
            KIND, Severity.WARNING,
            f"{instant.action} {t} has been {instant.state.name.lower()} for {age_hours:.1f} hours with no live "
            "heartbeat",
            evidence,
            "A pending instant no writer runs holds back cleaning and archival (the earliest commit to retain stops "
            "before it) and keeps its partial files on storage.",
            _repair(survey, instant, role, frozenset(newer))))
        if role == "write" and findings[-1].repairable:
            newer.add(t)
    return findings


def _write_changes(preview: RollbackPreview, *, keep_plan: bool = False) -> list[Change]:
    t = preview.instant.requested_time
    instant_files = ("its inflight file and markers (it reverts to requested, its plan kept)" if keep_plan
                     else "its instant files and markers")
    changes = [Change("rollback", t, 0, f"roll back {preview.instant.action} {t}: {len(preview.files_to_delete)} "
                                        f"files (listed below), {instant_files}")]
    changes += [Change("delete", path, size, f"written by {t}") for _, path, size in preview.files_to_delete]
    changes += [Change("rollback block", path, size, f"a rollback command block for {t} after this log file")
                for _, path, size in preview.logs_to_mark]
    return changes


def _clean_changes(survey: Survey, instant: Instant) -> list[Change]:
    plan = survey.table.read(instant, CleanerPlan, State.REQUESTED)
    paths = [info.path for infos in plan.files.values() for info in infos]
    storage = survey.storage
    sizes = storage.sizes_of([storage.path_of(p) for p in paths])
    deletes = [Change("delete", p, sizes.get(storage.path_of(p), 0), f"planned by clean {instant.requested_time}")
               for p in paths]
    deletes += [Change("delete partition", p, 0, f"planned by clean {instant.requested_time}")
                for p in plan.partitions_to_delete]
    return [Change("run clean", instant.requested_time, 0,
                   f"finish clean {instant.requested_time}: the {len(paths)} files its plan names (listed below)"),
            *deletes]


def _instant_changes(survey: Survey, finding: Finding) -> list[Change]:
    evidence = finding.evidence
    assert isinstance(evidence, StaleEvidence)
    instant = next(i for i in survey.timeline.pending() if i.requested_time == evidence.instant)
    if evidence.role == "write":
        return _write_changes(plan_rollback(survey.table, instant))
    if evidence.role == "clean":
        return _clean_changes(survey, instant)
    target = _rollback_target(survey, instant) or _rollback_named(survey, instant)
    assert target is not None
    existing = pending_rollback_of(survey.table, target.requested_time)
    assert existing is not None
    return _write_changes(preview_of_plan(survey.table, target, existing[1]),
                          keep_plan=target.is_pending and keeps_plan(survey.table, target))


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes: dict[tuple[str, str], Change] = {}
    for finding in findings:  # a stale write and the stale rollback of it plan the same rollback: once
        if finding.repairable:
            for change in _instant_changes(survey, finding):
                changes.setdefault(change.key, change)
    notes = ["writes are rolled back newest first, as Hudi's rollbackFailedWrites does"]
    if survey.settings.include_ingestion_commits:
        notes.append("include_ingestion_commits: the operator's word that stale commits and delta commits may be "
                     "rolled back although their writers keep no heartbeat; a writer still running one loses its "
                     "write (Hudi's cleanup_stale_inflight_commits calls this dangerous)")
    return repairable_plan(survey, KIND, findings, list(changes.values()), notes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """Each planned instant in turn (newest first): diagnosed again (still pending, still
    stale, no live heartbeat) and its changes compared with the approved ones (more than
    previewed: RepairInvalidated, nothing more is changed); a write is then rolled back, or a
    rollback finished, under the table's lock (checked and rolled back in one hold); a clean
    is finished with the lock at the clean's own moments (the executor re-validates it)."""
    table = session.table
    done: list[Change] = []
    skipped: list[tuple[Change, str]] = []
    failed: list[tuple[Change, str]] = []
    for head in [c for c in approved.changes if c.action in HEADS]:
        mine = _changes_of(approved, head)
        try:
            if head.action == "rollback":
                with session.transactions.state_change():
                    if _revalidate(session, approved, head, mine):
                        _roll_back(session, head.target)
                    else:
                        skipped += [(c, "no longer a stale pending instant") for c in mine]
                        continue
            elif _revalidate(session, approved, head, mine):
                run_pending_cleans(table, instant=head.target, guard=session.transactions.state_change)
            else:
                skipped += [(c, "no longer a stale pending instant") for c in mine]
                continue
        except RepairInvalidated:
            raise
        except CleanlineError as exc:
            failed += [(c, str(exc)) for c in mine]
            break  # newest first: an older instant may not go before this one
        done += mine
    table.reload()
    return RepairResult(table.uri, KIND, tuple(done), tuple(skipped), tuple(failed))


def _revalidate(session: Session, approved: RepairPlan, head: Change, mine: list[Change]) -> bool:
    """Whether `head` is still a stale instant's repair, refusing (RepairInvalidated) when it
    would now change something the approved plan did not preview."""
    fresh = fresh_changes(session, plan)
    if head.key not in {c.key for c in fresh}:
        return False
    previewed = {m.key for m in mine}
    extra = [c for c in _changes_of(RepairPlan(approved.table, KIND, (), fresh), head) if c.key not in previewed]
    if extra:
        raise RepairInvalidated(f"{session.table.uri}: {head.target} would now also change {extra[0].target} "
                                f"({len(extra)} change(s) the plan did not preview); nothing more was changed")
    return True


def _roll_back(session: Session, instant_time: str) -> None:
    """Roll back a stale write, or finish the pending rollback of an instant (`finish_rollback`:
    of a write, a table service, or an instant already gone)."""
    if pending_rollback_of(session.table.reload(), instant_time) is not None:
        finish_rollback(session.table, instant_time, options=session.settings.options)
    else:
        rollback(session.table, instant_time, options=session.settings.options)


def _changes_of(plan: RepairPlan, head: Change) -> list[Change]:
    """The head change (a rollback or clean run) and the changes listed after it, up to the next head."""
    return changes_under(plan.changes, head, HEADS)


CHECK = Check(KIND, diagnose, plan, run)
