"""Earliest commit to retain, rule by rule (CleanerUtils.getEarliestCommitToRetain)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy
from timeline.clean.retention import (
    RetentionTooShort,
    check_retention,
    earliest_commit_to_retain,
    hours_cutoff,
    hours_cutoffs,
)
from timeline.instant import Instant, State, format_instant_time
from timeline.timeline import Timeline


def commits(*specs: tuple[str, str, State]) -> Timeline:
    return Timeline.of(Instant(t, action, state) for t, action, state in specs)


DONE = State.COMPLETED
FIFTEEN = [(f"202611010000{i:02d}000", "commit", DONE) for i in range(15)]


def test_retention_keep_latest_commits_takes_the_nth_from_the_end() -> None:
    ectr = earliest_commit_to_retain(commits(*FIFTEEN), CleanConfig(commits_retained=10))
    assert ectr is not None and ectr.requested_time == FIFTEEN[5][0]  # 15 completed, retain 10 -> 6th


def test_retention_nothing_when_too_few_commits_or_zero_retained() -> None:
    assert earliest_commit_to_retain(commits(*FIFTEEN[:10]), CleanConfig(commits_retained=10)) is None
    assert earliest_commit_to_retain(commits(*FIFTEEN), CleanConfig(commits_retained=0)) is None


def test_retention_is_capped_at_the_earliest_pending_instant() -> None:
    timeline = commits(*FIFTEEN[:3], ("20261101000003000", "deltacommit", State.INFLIGHT), *FIFTEEN[4:])
    ectr = earliest_commit_to_retain(timeline, CleanConfig(commits_retained=2))
    assert ectr is not None and ectr.requested_time == FIFTEEN[2][0]


def test_retention_pending_compaction_also_caps_and_nothing_before_it_means_no_clean() -> None:
    timeline = commits(("20261101000000000", "compaction", State.REQUESTED), *FIFTEEN[1:])
    assert earliest_commit_to_retain(timeline, CleanConfig(commits_retained=1)) is None


def test_retention_candidate_before_the_pending_instant_is_kept() -> None:
    timeline = commits(*FIFTEEN, ("20261101000099000", "commit", State.REQUESTED))
    ectr = earliest_commit_to_retain(timeline, CleanConfig(commits_retained=3))
    assert ectr is not None and ectr.requested_time == FIFTEEN[12][0]


def test_retention_ignores_non_write_actions() -> None:
    timeline = commits(*FIFTEEN[:3], ("20261101000001500", "clean", DONE),
                       ("20261101000001600", "rollback", State.INFLIGHT), ("20261101000001700", "savepoint", DONE))
    ectr = earliest_commit_to_retain(timeline, CleanConfig(commits_retained=1))
    assert ectr is not None and ectr.requested_time == FIFTEEN[2][0]


def test_retention_file_versions_policy_has_none() -> None:
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS)
    assert earliest_commit_to_retain(commits(*FIFTEEN), config) is None


def test_retention_by_hours_uses_the_table_timezone() -> None:
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    assert hours_cutoff(now, 2, "UTC") == "20261101100000000"
    timeline = commits(("20261101095959999", "commit", DONE), ("20261101100000000", "commit", DONE),
                       ("20261101110000000", "commit", DONE))
    ectr = earliest_commit_to_retain(timeline, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=2),
                                     now=now, timeline_timezone="UTC")
    assert ectr is not None and ectr.requested_time == "20261101100000000"
    local = hours_cutoff(now, 2, "LOCAL")
    offset = datetime.now().astimezone().utcoffset() or timedelta(0)
    assert local == (now - timedelta(hours=2) + offset).strftime("%Y%m%d%H%M%S") + "000"


def test_retention_config_reads_new_and_old_keys_and_overrides() -> None:
    config = CleanConfig.from_properties({"hoodie.cleaner.commits.retained": "4",
                                          "hoodie.clean.policy": "keep_latest_by_hours",
                                          "hoodie.cleaner.hours.retained": "6", "hoodie.clean.hours.retained": "7"})
    assert (config.policy, config.commits_retained, config.hours_retained) == (CleanPolicy.KEEP_LATEST_BY_HOURS, 4, 7)
    assert CleanConfig.from_properties({}, commits_retained=2, policy=None).commits_retained == 2
    assert CleanConfig.from_properties({}) == CleanConfig()
    assert CleanConfig().multiple_enabled is False and CleanConfig().incremental is True
    with pytest.raises(CleanConfigError, match="hoodie.clean.commits.retained"):
        CleanConfig.from_properties({"hoodie.clean.commits.retained": "many"})
    with pytest.raises(CleanConfigError, match="not a valid value"):
        CleanConfig.from_properties({"hoodie.clean.policy": "KEEP_EVERYTHING"})
    with pytest.raises(CleanConfigError, match="unknown cleaning settings"):
        CleanConfig().with_overrides(retain=1)


@pytest.mark.parametrize("process_zone", ["Asia/Tokyo", "America/New_York"])
def test_retention_hours_cutoff_is_the_earlier_of_the_table_and_process_zones(process_zone: str) -> None:
    """CleanPlanner.getEarliestCommitToRetain formats the cutoff in the JVM's zone; the table may
    write its instant times in UTC. Whichever zone another cleaner runs in, the window kept is
    the larger one: the earlier of the two cutoffs (ahead of UTC or behind it)."""
    import os
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = process_zone
    time.tzset()
    try:
        now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
        in_table, in_process = hours_cutoffs(now, 2, "UTC")
        assert in_table == "20261101100000000" and in_process != in_table
        assert hours_cutoff(now, 2, "UTC") == min(in_table, in_process)
        timeline = commits((min(in_table, in_process), "commit", DONE), (max(in_table, in_process), "commit", DONE),
                           ("20261101230000000", "commit", DONE))
        ectr = earliest_commit_to_retain(timeline, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS,
                                                               hours_retained=2), now=now, timeline_timezone="UTC")
        assert ectr is not None and ectr.requested_time == min(in_table, in_process)
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def test_retention_by_hours_with_nothing_in_the_window_is_none_and_now_defaults_to_the_clock() -> None:
    hours = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)
    assert earliest_commit_to_retain(commits(*FIFTEEN), hours, now=datetime(2026, 11, 2, tzinfo=UTC)) is None
    recent = format_instant_time(datetime.now(UTC) - timedelta(minutes=10))
    ectr = earliest_commit_to_retain(commits(*FIFTEEN, (recent, "commit", DONE)), hours, timeline_timezone="UTC")
    assert ectr is not None and ectr.requested_time == recent


def test_retention_refusals_say_what_and_how_to_override() -> None:
    with pytest.raises(ValueError) as naive:
        hours_cutoffs(datetime(2026, 11, 2), 1, "UTC")
    assert str(naive.value) == "now must carry a time zone"
    with pytest.raises(RetentionTooShort) as short:
        check_retention("file:/t", {}, CleanConfig(commits_retained=2))
    assert str(short.value) == (
        "file:/t: retains 2 commits, fewer than the table's configured 10; plan with enforce_retention off (CLI "
        "--allow-short-retention) to clean more than the table's settings allow")
