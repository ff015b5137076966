"""Why nothing is compacting (timeline/services/why.py): each reason Hudi's schedulers have for
writing no compaction plan, on a hand-made timeline that produces it, and its absence where the
timeline or the writers' settings say otherwise."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.helpers import Lake, T
from timeline import HudiTable
from timeline.instant import Instant, State, moment_of
from timeline.services import CompactionWhy, ReasonKind
from timeline.storage import MemoryStorage

P = "city=sf"
INLINE = {"hoodie.compact.inline": "true"}


def mor(version: int = 6, groups: tuple[str, ...] = ("g",)) -> Lake:
    """A merge-on-read table whose first delta commit (T[0]) wrote a base file per group."""
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    lake.commit(T[0], {P: [lake.base_file(P, g, T[0]) for g in groups]})
    return lake


def update(lake: Lake, t: str, group: str = "g", *, base: str = T[0], state: State = State.COMPLETED) -> None:
    """A delta commit at `t` appending a log file to `group` (version 6: the next log version of
    the slice at `base`; from version 8 a log file of its own)."""
    if lake.version >= 8:
        name = lake.log_file(P, group, t)
    else:
        versions = [s.name for s in lake.storage.list(f"/t/{P}") if s.name.startswith(f".{group}_{base}.log.")]
        name = lake.log_file(P, group, base, version=len(versions) + 1)
    lake.commit(t, {P: [name]}, state=state)


def why(lake: Lake, options: Mapping[str, str] | None = None, at: str = T[19]) -> CompactionWhy:
    table = HudiTable.load(lake.storage, "/t")
    return table.inspect.why_not_compacting({**INLINE, **(options or {})}, now=moment_of(at, table.config.timezone))


def kinds(answer: CompactionWhy) -> list[ReasonKind]:
    return [r.kind for r in answer.reasons]


def test_why_copy_on_write_table_is_never_compacted() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    answer = why(lake)
    assert kinds(answer) == [ReasonKind.NOT_MERGE_ON_READ]
    assert not answer.would_schedule
    assert answer.reasons[0].rule == "ScheduleCompactionActionExecutor.execute"


def test_why_no_delta_commits_means_nothing_to_compact() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    answer = why(lake)
    assert ReasonKind.NO_DELTA_COMMITS in kinds(answer)
    assert not answer.would_schedule


@pytest.mark.parametrize("version", [6, 8])
def test_why_num_commits_trigger_counts_delta_commits_since_the_last_compaction(version: int) -> None:
    """NUM_COMMITS (the default, 5): four delta commits are not enough, naming the setting and how
    many more; the fifth makes it due and a plan takes the group with log files."""
    lake = mor(version)
    for t in T[1:4]:
        update(lake, t)
    answer = why(lake)
    (reason,) = [r for r in answer.reasons if r.kind is ReasonKind.TRIGGER_NOT_MET]
    assert reason.setting == "hoodie.compact.inline.max.delta.commits"
    assert "4 delta commits since" in reason.why and reason.change.startswith("1 more delta commits")
    assert reason.instant is not None and reason.instant.requested_time == T[0]
    assert not answer.would_schedule
    update(lake, T[4])
    answer = why(lake)
    assert kinds(answer) == [] and answer.would_schedule
    assert answer.compactable == ((P, "g"),)
    assert answer.trigger is not None and answer.trigger.counted is not None and answer.trigger.counted.count == 5
    assert why(lake, {"hoodie.compact.inline.max.delta.commits": "6"}).would_schedule is False


@pytest.mark.parametrize("version", [6, 8])
def test_why_counts_from_the_latest_completed_compaction(version: int) -> None:
    """After a completed compaction only the delta commits since count (getDeltaCommitsSinceLatestCompaction)."""
    lake = mor(version)
    for t in T[1:6]:
        update(lake, t)
    lake.schedule_compaction(T[6], [(P, "g", T[0])])
    lake.complete_compaction(T[6], {P: [lake.base_file(P, "g", T[6])]})
    update(lake, T[7], base=T[6])
    answer = why(lake)
    assert answer.trigger is not None and answer.trigger.counted is not None
    assert answer.trigger.counted.count == 1 and answer.trigger.counted.since.requested_time == T[6]
    assert ReasonKind.TRIGGER_NOT_MET in kinds(answer)


def test_why_time_elapsed_trigger_measures_from_the_last_compaction() -> None:
    """TIME_ELAPSED: due once hoodie.compact.inline.max.delta.seconds passed since the instant the
    delta commits count from (the first delta commit here), whatever their number."""
    lake = mor(8)
    update(lake, T[1])
    options = {"hoodie.compact.inline.trigger.strategy": "TIME_ELAPSED",
               "hoodie.compact.inline.max.delta.seconds": "600"}
    early = why(lake, options, at=T[9])  # 540 s after T[0]
    (reason,) = [r for r in early.reasons if r.kind is ReasonKind.TRIGGER_NOT_MET]
    assert reason.setting == "hoodie.compact.inline.max.delta.seconds" and "540 s since" in reason.why
    assert reason.change.startswith("60 more seconds")
    assert why(lake, options, at=T[10]).would_schedule


def test_why_num_and_time_needs_both_and_num_or_time_either() -> None:
    lake = mor(8)
    for t in T[1:6]:
        update(lake, t)
    both = {"hoodie.compact.inline.trigger.strategy": "NUM_AND_TIME", "hoodie.compact.inline.max.delta.seconds": "3600"}
    (reason,) = [r for r in why(lake, both).reasons if r.kind is ReasonKind.TRIGGER_NOT_MET]
    assert reason.setting == "hoodie.compact.inline.max.delta.seconds"  # enough commits, not enough time
    either = {**both, "hoodie.compact.inline.trigger.strategy": "NUM_OR_TIME",
              "hoodie.compact.inline.max.delta.commits": "50"}
    assert [r.setting for r in why(lake, either).reasons] == ["hoodie.compact.inline.max.delta.commits"]
    assert why(lake, {**either, "hoodie.compact.inline.max.delta.seconds": "60"}).would_schedule


def test_why_num_commits_after_last_request_counts_from_a_pending_compaction() -> None:
    """NUM_COMMITS_AFTER_LAST_REQUEST counts the delta commits requested after the latest pending
    compaction (getDeltaCommitsSinceLatestCompactionRequest), not those before it."""
    lake = mor(8, ("g", "h"))
    for t in T[1:6]:
        update(lake, t, "h")
    lake.schedule_compaction(T[6], [(P, "h", T[0])])
    update(lake, T[7])
    options = {"hoodie.compact.inline.trigger.strategy": "NUM_COMMITS_AFTER_LAST_REQUEST"}
    answer = why(lake, options)
    assert answer.trigger is not None and answer.trigger.counted is not None
    assert answer.trigger.counted.count == 1 and answer.trigger.counted.since.requested_time == T[6]
    assert ReasonKind.TRIGGER_NOT_MET in kinds(answer)
    assert ReasonKind.TRIGGER_NOT_MET not in kinds(why(lake))  # NUM_COMMITS: 6 since T[0]


def test_why_writers_that_turn_inline_compaction_off_never_schedule() -> None:
    """hoodie.compact.inline and hoodie.compact.schedule.inline off: no writer schedules a plan
    (a blocking reason naming the key); neither given: a note only; either on: nothing said."""
    lake = mor(8)
    for t in T[1:6]:
        update(lake, t)
    off = why(lake, {"hoodie.compact.inline": "false"})
    (reason,) = off.reasons
    assert reason.kind is ReasonKind.NOT_SCHEDULED_BY_WRITERS and reason.blocking
    assert reason.setting == "hoodie.compact.inline" and "hoodie.compact.schedule.inline=true" in reason.change
    assert not off.would_schedule
    assert why(lake, {"hoodie.compact.inline": "false", "hoodie.compact.schedule.inline": "true"}).reasons == ()
    table = HudiTable.load(lake.storage, "/t")
    unset = table.inspect.why_not_compacting(now=moment_of(T[19], table.config.timezone))
    assert [(r.kind, r.blocking) for r in unset.reasons] == [(ReasonKind.NOT_SCHEDULED_BY_WRITERS, False)]
    assert unset.would_schedule


def test_why_a_pending_write_older_than_the_compaction_holds_a_single_writer_back() -> None:
    """Table version 6 (ScheduleCompactionActionExecutor.execute): one writer, failed-writes policy
    not LAZY, a pending delta commit requested before the compaction's time: no plan. A
    multi-writer mode or LAZY lifts it, and so does table version 8."""
    lake = mor(6)
    for t in T[1:6]:
        update(lake, t)
    update(lake, T[6], state=State.INFLIGHT)
    answer = why(lake)
    (reason,) = answer.reasons
    assert reason.kind is ReasonKind.EARLIER_PENDING_WRITE
    assert reason.instant == Instant(T[6], "deltacommit", State.INFLIGHT)
    assert reason.setting == "hoodie.write.concurrency.mode" and "rollback --failed" in reason.change
    assert not answer.would_schedule
    assert why(lake, {"hoodie.clean.failed.writes.policy": "LAZY"}).reasons == ()
    occ = {"hoodie.write.concurrency.mode": "OPTIMISTIC_CONCURRENCY_CONTROL"}
    assert why(lake, occ).reasons == ()
    v8 = mor(8)
    for t in T[1:6]:
        update(v8, t)
    update(v8, T[6], state=State.INFLIGHT)
    assert why(v8).reasons == ()


@pytest.mark.parametrize("version", [6, 8])
def test_why_file_groups_in_a_pending_compaction_stay_out_of_a_new_plan(version: int) -> None:
    """BaseHoodieCompactionPlanGenerator leaves out the file groups of pending compactions: with
    the only group held the reason blocks; with another group holding log files it only says
    which groups wait, and the plan takes the other."""
    lake = mor(version, ("g", "h"))
    for t in T[1:6]:
        update(lake, t)
    lake.schedule_compaction(T[6], [(P, "g", T[0])], state=State.INFLIGHT)
    update(lake, T[7], base=T[6])
    update(lake, T[8], base=T[6])
    answer = why(lake)
    (reason,) = answer.reasons
    assert reason.kind is ReasonKind.PENDING_COMPACTION and reason.blocking
    assert reason.instant == Instant(T[6], "compaction", State.INFLIGHT) and reason.file_groups == ((P, "g"),)
    assert answer.compactable == ()
    update(lake, T[9], "h")
    answer = why(lake)
    (reason,) = answer.reasons
    assert reason.kind is ReasonKind.PENDING_COMPACTION and not reason.blocking
    assert answer.compactable == ((P, "h"),) and answer.would_schedule


def test_why_file_groups_in_a_pending_clustering_stay_out_of_a_new_plan() -> None:
    lake = mor(8)
    for t in T[1:6]:
        update(lake, t)
    base = f"g_0-1-0_{T[0]}.parquet"
    plan = {"operationType": "cluster", "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"{P}/{base}", "deltaFilePaths": [], "fileId": "g",
                                     "partitionPath": P}], "numOutputFileGroups": 1}],
        "strategy": {"strategyClassName": "SparkSizeBasedClusteringPlanStrategy"}, "version": 1}}
    lake.instant_file(Instant(T[6], "clustering", State.REQUESTED), plan)
    answer = why(lake)
    (reason,) = answer.reasons
    assert reason.kind is ReasonKind.PENDING_CLUSTERING and reason.blocking and reason.file_groups == ((P, "g"),)
    assert reason.instant == Instant(T[6], "clustering", State.REQUESTED)


def test_why_a_pending_log_compaction_does_not_hold_a_compaction_back() -> None:
    """HoodieCompactionPlanGenerator.filterLogCompactionOperations is false."""
    lake = mor(8)
    for t in T[1:6]:
        update(lake, t)
    lake.instant_file(Instant(T[6], "logcompaction", State.REQUESTED), {"operations": [
        {"baseInstantTime": T[0], "fileId": "g", "partitionPath": P, "deltaFilePaths": [], "dataFilePath": None}],
        "version": 2})
    answer = why(lake)
    assert answer.reasons == () and answer.compactable == ((P, "g"),)


def test_why_slices_without_log_files_give_an_empty_plan() -> None:
    lake = mor(8, ("g",))
    for t in T[1:6]:
        lake.commit(t, {P: [lake.base_file(P, f"n{t}", t)]})  # inserts into new file groups only
    answer = why(lake)
    assert kinds(answer) == [ReasonKind.NO_LOG_FILES] and not answer.would_schedule
