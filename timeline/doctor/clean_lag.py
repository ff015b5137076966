"""Clean lag: the next clean must cover many commits, typically because the cleaner was off
(apache/hudi #17844: planning fell back to a full listing for ten minutes after 1000+ commits).
The evidence says how many commits since the last completed clean, how many the next clean
covers (from the previous clean's earliest commit to retain to the next one,
`CleanerUtils.getEarliestCommitToRetain`), whether its plan lists every partition or only those
written since (`timeline/clean/planner.py`'s incremental rule, `CleanPlanner.
getPartitionPathsToClean`) and how many files that means listing.

The repair is Hudi 1.2's cap on commits per clean (`hoodie.clean.max.commits.to.clean`,
`HoodieCleanConfig.MAX_COMMITS_TO_CLEAN`, PR #18322): the earliest commit to retain moves at
most that many completed commits past the previous clean's per clean (`CleanerUtils.
getEarliestCommitToRetain` with `maxCommitsToClean`), so the backlog is cleaned in steps, each a
whole clean (planned, scheduled and run as `timeline/clean/` does). Cleanline applies the cap
also to a table never cleaned (starting from its first commit; Hudi caps only from a previous
clean), with the table's own setting or, unset, the doctor's `clean_lag_commits`. A capped step
retains more commits than the table's settings ask for; the last step is the table's own clean.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import CleanPlan, plan_clean, start_plan
from timeline.doctor.check import Check, Session, repairable_plan
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
from timeline.instant import Instant
from timeline.metadata.records import CleanMetadata
from timeline.table import Table

KIND = "clean-lag"
MAX_COMMITS_TO_CLEAN = "hoodie.clean.max.commits.to.clean"  # HoodieCleanConfig.MAX_COMMITS_TO_CLEAN, Hudi 1.2
STEP = "clean step"


@dataclass(frozen=True, slots=True)
class CleanLagEvidence(Evidence):
    policy: str
    last_clean: str | None
    commits_since_last_clean: int
    previous_earliest_commit_to_retain: str | None
    next_earliest_commit_to_retain: str | None
    commits_to_clean: int
    full_scan: bool
    listing: str                # the planner's note: incremental from which commit, or why every partition
    partitions_to_list: int
    files_to_list: int
    max_commits_to_clean: int   # the cap the repair's steps use
    cap_source: str
    steps: tuple[str, ...]      # the earliest commit each step retains, in order


@dataclass(frozen=True, slots=True)
class Lag:
    config: CleanConfig
    commits: tuple[Instant, ...]
    base: int                   # index of the previous clean's earliest retained commit (or 0)
    target: int | None          # index of the next earliest commit to retain
    steps: tuple[int, ...]      # index each step retains from
    evidence: CleanLagEvidence


def _cap(survey: Survey) -> tuple[int, str]:
    if survey.settings.max_commits_per_clean is not None:
        return max(1, survey.settings.max_commits_per_clean), "the doctor's settings"
    raw = (survey.props.get(MAX_COMMITS_TO_CLEAN) or "").strip()
    if raw.isdigit() and int(raw) >= 1:
        return int(raw), MAX_COMMITS_TO_CLEAN
    return max(1, survey.settings.clean_lag_commits), f"the doctor's default ({MAX_COMMITS_TO_CLEAN} is not set)"


def lag(survey: Survey) -> Lag | None:
    """The clean backlog as the next clean would see it (None when the table cannot be planned:
    the unreadable-instant finding says why)."""
    table = survey.table
    try:
        config = CleanConfig.from_properties(survey.props)
        start = start_plan(table, config, now=survey.now)
    except CleanlineError:
        return None
    timeline = table.timeline
    commits = timeline.commits_and_compaction().completed().instants
    last_clean = timeline.cleans().completed().last()
    since = [c for c in commits if last_clean is None or c.requested_time > last_clean.requested_time]
    previous = None
    if last_clean is not None:
        try:
            previous = table.read(last_clean, CleanMetadata, fields=("earliest_commit_to_retain",))
        except CleanlineError:
            previous = None
    previous_ectr = (previous.earliest_commit_to_retain or None) if previous is not None else None
    times = [c.requested_time for c in commits]
    base = next((k for k, t in enumerate(times) if previous_ectr is not None and t >= previous_ectr), 0)
    ectr = start.header.get("earliest_instant_to_retain")
    target = times.index(ectr.requested_time) if isinstance(ectr, Instant) and ectr.requested_time in times else None
    cap, source = _cap(survey)
    steps: list[int] = []
    if target is not None and config.policy is not CleanPolicy.KEEP_LATEST_FILE_VERSIONS:
        position = base
        while position + cap < target:
            position += cap
            steps.append(position)
        steps.append(target)
        covered = target - base
    else:
        steps.append(len(commits))
        covered = len(since)
    partitions = start.partitions
    listed = survey.listing.partitions
    files_to_list = (sum(len(f) for f in listed.values()) if partitions is None
                     else sum(len(listed.get(p, ())) for p in partitions))
    evidence = CleanLagEvidence(
        config.policy.value, last_clean.requested_time if last_clean else None, len(since), previous_ectr,
        ectr.requested_time if isinstance(ectr, Instant) else None, covered, partitions is None and start.context
        is not None, start.notes[0] if start.notes else "", len(listed) if partitions is None else len(partitions),
        files_to_list, cap, source,
        tuple(times[k] if k < len(times) else "(the table's own clean)" for k in steps))
    return Lag(config, tuple(commits), base, target, tuple(steps), evidence)


def diagnose(survey: Survey) -> list[Finding]:
    found = lag(survey)
    if found is None or found.evidence.commits_to_clean < survey.settings.clean_lag_commits:
        return []
    e = found.evidence
    scan = (f"a full listing of {e.partitions_to_list} partitions ({e.files_to_list} files)" if e.full_scan
            else f"{e.partitions_to_list} partitions ({e.files_to_list} files)")
    return [Finding(
        KIND, Severity.WARNING,
        f"the next clean covers {e.commits_to_clean} commits ({e.commits_since_last_clean} since the last clean) and "
        f"plans over {scan}",
        e,
        "A clean over a long backlog plans for a long time and deletes a lot at once (timeouts, memory pressure); "
        "storage keeps every superseded file version until it runs.",
        f"clean in {len(e.steps)} step(s) of at most {e.max_commits_to_clean} commits each ({MAX_COMMITS_TO_CLEAN}, "
        "Hudi 1.2's cap), each planned, scheduled and run as a clean")]


def step_config(lagging: Lag, index: int, commits: int) -> CleanConfig:
    """The clean of one step: the table's own settings for the last step; a capped step retains
    the completed commits from `index` on (`commits` of them on the timeline now), which is
    more than the table's settings retain."""
    if lagging.target is None or index >= lagging.target:
        return lagging.config
    return replace(lagging.config, policy=CleanPolicy.KEEP_LATEST_COMMITS, commits_retained=commits - index)


def _step_plan(table: Table, lagging: Lag, index: int, now: datetime | None) -> CleanPlan:
    commits = len(table.timeline.commits_and_compaction().completed())
    return plan_clean(table, step_config(lagging, index, commits), now=now)


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    lagging = lag(survey)
    changes: list[Change] = []
    seen: set[str] = set()
    if findings and lagging is not None:
        for index, retained_from in zip(lagging.steps, lagging.evidence.steps):
            step = _step_plan(survey.table, lagging, index, survey.now)
            new = [d for d in step.files_to_delete if d.path not in seen]
            seen.update(d.path for d in new)
            changes.append(Change(STEP, retained_from, 0, f"a clean retaining from {retained_from}: the {len(new)} "
                                                          "files listed below"))
            changes += [Change("delete", d.path, d.size, d.reason) for d in new]
    return repairable_plan(survey, KIND, findings, changes,
                           ["each step is planned again when it runs, and may delete only files this preview lists"])


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """Step after step: the step is planned again on the timeline as it is now (after the
    previous step's clean), refused whole (RepairInvalidated) if it would delete a file this
    plan did not preview, then scheduled under the table's lock and run with the lock at the
    clean's moments (the executor re-validates it before its first delete)."""
    table = session.table
    previewed = {c.target for c in approved.changes if c.action == "delete"}
    done: list[Change] = []
    skipped: list[tuple[Change, str]] = []
    failed: list[tuple[Change, str]] = []
    heads = [c for c in approved.changes if c.action == STEP]
    for number, head in enumerate(heads):
        mine = _after(approved, head)
        lagging = lag(session.survey())
        if lagging is None:
            failed += [(c, "the table cannot be planned now") for c in mine]
            break
        index = _index_of(lagging, head.target, last=number == len(heads) - 1)
        if index is None:
            skipped += [(c, "the previous clean already retains from there") for c in mine]
            continue
        step = _step_plan(table, lagging, index, None)
        extra = [d.path for d in step.files_to_delete if d.path not in previewed]
        if extra:
            raise RepairInvalidated(f"{table.uri}: the step retaining from {head.target} would now also delete "
                                    f"{extra[0]} ({len(extra)} file(s) the plan did not preview); nothing more was "
                                    "changed")
        config = step_config(lagging, index, len(lagging.commits))
        try:
            with session.transactions.state_change():
                instant = schedule_clean(table, step, config, force=True)
            if instant is not None:
                run_pending_cleans(table, instant=instant.requested_time, guard=session.transactions.state_change)
        except CleanlineError as exc:
            failed += [(c, str(exc)) for c in mine]
            break
        planned = {d.path for d in step.files_to_delete}
        done += [c for c in mine if c.action == STEP or c.target in planned]
        skipped += [(c, "no longer planned") for c in mine if c.action != STEP and c.target not in planned]
    table.reload()
    return RepairResult(table.uri, KIND, tuple(done), tuple(skipped), tuple(failed))


def _index_of(lagging: Lag, retained_from: str, *, last: bool) -> int | None:
    """Where a step retains from on the timeline now; None when the last clean already retains
    from there or later."""
    times = [c.requested_time for c in lagging.commits]
    if last:
        return lagging.target if lagging.target is not None else len(times)
    if retained_from not in times:
        return None
    index = times.index(retained_from)
    return index if index > lagging.base else None


def _after(plan: RepairPlan, head: Change) -> list[Change]:
    return changes_under(plan.changes, head, (STEP,))


CHECK = Check(KIND, diagnose, plan, run)
