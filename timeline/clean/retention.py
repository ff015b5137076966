"""The earliest commit to retain (ECTR), as `CleanerUtils.getEarliestCommitToRetain`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy
from timeline.instant import Instant, format_instant_time, zone_of
from timeline.timeline import Timeline


def hours_cutoffs(now: datetime, hours: int, timeline_timezone: str) -> tuple[str, str]:
    """`now - hours` (exact to the millisecond) as an instant time in the table's timeline zone
    and in this process's local zone.

    CleanPlanner.getEarliestCommitToRetain formats the cutoff with HoodieInstantTimeGenerator in
    the JVM's default zone, even when the table writes its instant times in UTC. Which JVM
    zone the table's other cleaners run in is unknown here, so this process's zone stands in
    for it; `hours_cutoff` takes the earlier of the two, so that neither reading deletes what
    the other keeps."""
    if now.tzinfo is None:
        raise ValueError("now must carry a time zone")
    moment = now - timedelta(hours=hours)
    return (format_instant_time(moment.astimezone(zone_of(timeline_timezone))),
            format_instant_time(moment.astimezone()))


def hours_cutoff(now: datetime, hours: int, timeline_timezone: str) -> str:
    """The earlier of `hours_cutoffs` (keeps the more of the two windows)."""
    return min(hours_cutoffs(now, hours, timeline_timezone))


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
        cutoff = hours_cutoff(now or datetime.now(UTC), config.hours_retained, timeline_timezone)
        return next((i for i in completed if i.requested_time >= cutoff), None)
    return None


# Retention minimums (in the manner of delta-rs's `vacuum(enforce_retention_duration=True)`)

class RetentionTooShort(CleanConfigError):
    """A clean would keep less history than the table's own clean settings ask for."""


_RETAINED = {CleanPolicy.KEEP_LATEST_COMMITS: ("commits_retained", "commits"),
             CleanPolicy.KEEP_LATEST_FILE_VERSIONS: ("file_versions_retained", "file versions"),
             CleanPolicy.KEEP_LATEST_BY_HOURS: ("hours_retained", "hours")}


def retention_shortfall(table_props: Mapping[str, str], config: CleanConfig) -> str | None:
    """Why `config` keeps less than the table's own settings for its policy (the table's
    `hoodie.properties`, Hudi's defaults where a key is unset: 10 commits, 3 file versions,
    24 hours); None when it keeps at least as much."""
    field_name, unit = _RETAINED[config.policy]
    minimum = getattr(CleanConfig.from_properties(table_props), field_name)
    wanted = getattr(config, field_name)
    if wanted < minimum:
        return f"retains {wanted} {unit}, fewer than the table's configured {minimum}"
    return None


def check_retention(table_uri: str, table_props: Mapping[str, str], config: CleanConfig) -> None:
    """Refuse (RetentionTooShort) a configuration that keeps less than the table's settings."""
    why = retention_shortfall(table_props, config)
    if why is not None:
        raise RetentionTooShort(f"{table_uri}: {why}; plan with enforce_retention off (CLI "
                                "--allow-short-retention) to clean more than the table's settings allow")


__all__ = [
    "RetentionTooShort", "check_retention", "earliest_commit_to_retain", "hours_cutoff", "hours_cutoffs",
    "retention_shortfall"
]
