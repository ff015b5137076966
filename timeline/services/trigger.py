"""When a writer's compaction scheduler finds a compaction due: `ScheduleCompactionActionExecutor.
needCompact` with the trigger strategy (`CompactionTriggerStrategy`: NUM_COMMITS,
NUM_COMMITS_AFTER_LAST_REQUEST, TIME_ELAPSED, NUM_AND_TIME, NUM_OR_TIME) over the delta commits
since the latest compaction (`getLatestDeltaCommitInfo`, `getLatestDeltaCommitInfoSinceLastCompactionRequest`),
as the Hudi release writing each table version counts them."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.archive.retain import modified_after_by_completion
from timeline.archive.settings import CompactionTrigger
from timeline.instant import COMMIT, COMPACTION, DELTA_COMMIT, REPLACE_COMMIT, Instant, parse_instant_time
from timeline.timeline import Timeline


@dataclass(frozen=True, slots=True)
class DeltaCommitsSince:
    """The delta commits a compaction trigger counts, and the instant it counts from (the latest
    compaction, or the first delta commit when none completed), whose time TIME_ELAPSED measures
    from."""

    delta_commits: tuple[Instant, ...]
    since: Instant

    @property
    def count(self) -> int:
        return len(self.delta_commits)


def delta_commits_since_compaction(timeline: Timeline, table_version: int) -> DeltaCommitsSince | None:
    """`CompactionUtils.getDeltaCommitsSinceLatestCompaction` (Hudi 0.14/0.15, table version 6):
    every delta commit, pending ones too, requested after the latest completed commit or
    replacecommit (`getCommitTimeline`); and, on versions 8 and 9, Hudi 1.x's
    `getCompletedDeltaCommitsSinceLatestCompaction`: the completed delta commits that completed
    after the latest completed commit was requested (`findInstantsModifiedAfterByCompletionTime`
    of completed instants). With no completed compaction: every such delta commit, counted from
    the first. None when there is neither (`needCompact`: nothing to compact)."""
    v2 = table_version >= 8
    latest = timeline.with_actions({COMMIT} if v2 else {COMMIT, REPLACE_COMMIT}).completed().last()
    deltas = timeline.with_actions({DELTA_COMMIT})
    if v2:
        deltas = deltas.completed()
    if latest is not None:
        since = latest.requested_time
        after = modified_after_by_completion(deltas, since) if v2 else deltas.after(since)
        return DeltaCommitsSince(after.instants, latest)
    first = deltas.first()
    return None if first is None else DeltaCommitsSince(deltas.instants, first)


def delta_commits_since_request(timeline: Timeline) -> DeltaCommitsSince | None:
    """`CompactionUtils.getDeltaCommitsSinceLatestCompactionRequest` (NUM_COMMITS_AFTER_LAST_REQUEST):
    the delta commits requested after the latest pending compaction's request, else after the
    latest completed commit, else all of them."""
    since = timeline.filter(lambda i: i.is_pending and i.action == COMPACTION).last() \
        or timeline.with_actions({COMMIT}).completed().last()
    deltas = timeline.with_actions({DELTA_COMMIT})
    if since is not None:
        return DeltaCommitsSince(deltas.after(since.requested_time).instants, since)
    first = deltas.first()
    return None if first is None else DeltaCommitsSince(deltas.instants, first)


def elapsed_seconds(candidate: str, since: str) -> int:
    """`parsedToSeconds(instantTime) - parsedToSeconds(latest)`: whole seconds between two
    instant times."""
    return int((parse_instant_time(candidate).replace(microsecond=0)
                - parse_instant_time(since).replace(microsecond=0)).total_seconds())


@dataclass(frozen=True, slots=True)
class TriggerCheck:
    """`needCompact`'s answer and what it compared: the delta commits counted (None: none at
    all), the seconds since the instant they count from, and whether each half holds."""

    due: bool
    counted: DeltaCommitsSince | None
    elapsed: int | None
    enough_commits: bool
    enough_time: bool


def need_compact(timeline: Timeline, table_version: int, trigger: CompactionTrigger, max_delta_commits: int,
                 max_delta_seconds: int, candidate: str) -> TriggerCheck:
    """`ScheduleCompactionActionExecutor.needCompact` for a compaction (not a log compaction,
    which is due whenever there are delta commits) scheduled at `candidate`."""
    counted = delta_commits_since_compaction(timeline, table_version)
    if counted is not None and trigger is CompactionTrigger.NUM_COMMITS_AFTER_LAST_REQUEST:
        counted = delta_commits_since_request(timeline)
    if counted is None:
        return TriggerCheck(False, None, None, False, False)
    elapsed = elapsed_seconds(candidate, counted.since.requested_time)
    commits, time_ = max_delta_commits <= counted.count, max_delta_seconds <= elapsed
    due = {CompactionTrigger.NUM_COMMITS: commits, CompactionTrigger.NUM_COMMITS_AFTER_LAST_REQUEST: commits,
           CompactionTrigger.TIME_ELAPSED: time_, CompactionTrigger.NUM_OR_TIME: commits or time_,
           CompactionTrigger.NUM_AND_TIME: commits and time_}[trigger]
    return TriggerCheck(due, counted, elapsed, commits, time_)


__all__ = ["DeltaCommitsSince", "TriggerCheck", "delta_commits_since_compaction", "delta_commits_since_request",
           "elapsed_seconds", "need_compact"]
