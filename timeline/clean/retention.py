"""The earliest commit to retain (ECTR), as `CleanerUtils.getEarliestCommitToRetain`."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.instant import Instant, format_instant_time, zone_of
from timeline.timeline import Timeline


def hours_cutoff(now: datetime, hours: int, timeline_timezone: str) -> str:
    """`now - hours` as an instant time in the zone the table writes instant times in.

    Hudi formats this cutoff in the JVM's default zone even when the table's timeline is UTC
    (a known bug that skews the window by the zone offset); Cleanline formats it in the
    table's own timeline zone, which is what its instant times mean."""
    if now.tzinfo is None:
        raise ValueError("now must carry a time zone")
    return format_instant_time((now - timedelta(hours=hours)).astimezone(zone_of(timeline_timezone)))


def earliest_commit_to_retain(timeline: Timeline, config: CleanConfig, *, now: datetime | None = None,
                              timeline_timezone: str = "LOCAL") -> Instant | None:
    """The first instant whose files every retained query may still read, or None (nothing to
    clean by commits: too few commits, the file-versions policy, or a pending write that pins
    the window).

    Input is the active commits-and-compaction timeline: commit, deltacommit, replacecommit,
    clustering and compaction, in every state; completed compactions appear as commits."""
    writes = timeline.commits_and_compaction()
    completed = writes.completed().instants
    if config.policy is CleanPolicy.KEEP_LATEST_COMMITS:
        retained = config.commits_retained
        if len(completed) <= retained or retained == 0:
            return None
        candidate = completed[len(completed) - retained]
        pending = writes.pending().first()
        if pending is None or candidate.sort_key <= pending.sort_key:
            return candidate
        # HUDI-5341: never retain from later than the earliest pending instant.
        before = [i for i in completed if i.requested_time < pending.requested_time]
        return before[-1] if before else None
    if config.policy is CleanPolicy.KEEP_LATEST_BY_HOURS:
        cutoff = hours_cutoff(now or datetime.now(timezone.utc), config.hours_retained, timeline_timezone)
        return next((i for i in completed if i.requested_time >= cutoff), None)
    return None
