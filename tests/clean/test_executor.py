"""Scheduling and running cleans: the state files Hudi writes, idempotence, refusals."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import (
    CleanRefused,
    FileStatus,
    Progress,
    Status,
    begin_clean,
    needs_cleaning,
    pending_cleans,
    refuse_protected,
    run_pending_cleans,
    schedule_clean,
)
from timeline.clean.planner import plan_clean
from timeline.config import checksum, read_config
from timeline.instant import Instant, State
from timeline.mdt.writer import MetadataTableUnsupported
from timeline.metadata import avro
from timeline.metadata.records import CleanerPlan
from timeline.storage import MemoryStorage
from timeline.storage.containment import OutsideTableError

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"
CONFIG = CleanConfig(commits_retained=2)


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def lake(request: pytest.FixtureRequest) -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=request.param)
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    return lake


def schedule(lake: Lake, config: CleanConfig = CONFIG, **options: bool) -> tuple[HudiTable, str, list[str]]:
    table = HudiTable.load(lake.storage, lake.base)
    plan = plan_clean(table, config)
    instant = schedule_clean(table, plan, config, **options)
    return table, instant.requested_time, [d.file_name for d in plan.files_to_delete]


def test_executor_writes_requested_inflight_and_completed_as_hudi(lake: Lake) -> None:
    table, t, doomed = schedule(lake)
    folder = table.timeline.folder
    requested = lake.storage.read(f"{folder}/{t}.clean.requested")
    assert avro.record_name(requested) == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    seen: list[Progress] = []
    (result,) = run_pending_cleans(table, progress=seen.append)
    inflight = lake.storage.read(f"{folder}/{t}.clean.inflight")
    assert avro.decode(inflight, path="i") == avro.decode(requested, path="r")  # a copy of the plan
    completed = table.timeline.find(t, "clean")
    assert completed is not None and completed.is_completed
    name = f"{t}.clean" if lake.layout == 1 else f"{t}_{completed.completion_time}.clean"
    assert completed.completion_time is not None and completed.completion_time >= t  # v6: from the mtime
    data = lake.storage.read(f"{folder}/{name}")
    assert avro.record_name(data) == "org.apache.hudi.avro.model.HoodieCleanMetadata"
    meta = avro.decode(data, path=name)
    assert meta["version"] == 2 and meta["startCleanTime"] == t and meta["totalFilesDeleted"] == 2
    assert meta["earliestCommitToRetain"] == T[3] and meta["lastCompletedCommitTimestamp"] == T[4]
    assert sorted(meta["partitionMetadata"][P]["successDeleteFiles"]) == sorted(doomed)
    assert meta["partitionMetadata"][P]["deletePathPatterns"] == meta["partitionMetadata"][P]["successDeleteFiles"]
    assert meta["partitionMetadata"][P]["failedDeleteFiles"] == []
    assert all(not lake.storage.exists(f"/t/{P}/{n}") for n in doomed)
    assert result.deleted == 2 and result.bytes_deleted == 200
    done = [p.files_done for p in seen]
    assert done == sorted(done) and done[-1] == seen[-1].files_total == 2 and seen[-1].bytes_deleted == 200


def test_executor_a_file_already_gone_counts_as_deleted(lake: Lake) -> None:
    table, _, doomed = schedule(lake)
    lake.storage.delete(f"/t/{P}/{doomed[0]}")
    (result,) = run_pending_cleans(table)
    assert (result.deleted, result.already_gone, result.failed) == (1, 1, 0)
    # Hudi's metadata lists the gone file as deleted; Cleanline's outcomes keep it apart, with no bytes.
    assert sorted(result.metadata.partitions[P].success_delete_files) == sorted(doomed)
    assert result.metadata.total_files_deleted == 2
    gone = [o for o in result.outcomes if o.status is FileStatus.GONE]
    assert [o.file_name for o in gone] == [doomed[0]] and gone[0].bytes == 0
    assert result.bytes_deleted == sum(o.bytes for o in result.outcomes if o.file_name == doomed[1]) > 0


def test_executor_resumes_an_inflight_clean_and_accounts_for_every_planned_file(lake: Lake) -> None:
    table, t, doomed = schedule(lake)
    plan = lake.storage.read(f"{table.timeline.folder}/{t}.clean.requested")
    lake.storage.write(f"{table.timeline.folder}/{t}.clean.inflight", plan)  # crashed after inflight...
    lake.storage.delete(f"/t/{P}/{doomed[1]}")                               # ...and one delete
    (result,) = run_pending_cleans(HudiTable.load(lake.storage, "/t"))
    assert sorted(result.metadata.partitions[P].success_delete_files) == sorted(doomed)
    assert not run_pending_cleans(HudiTable.load(lake.storage, "/t"))  # nothing left pending


def test_executor_refuses_an_empty_plan_and_a_second_pending_clean(lake: Lake) -> None:
    table = HudiTable.load(lake.storage, "/t")
    # CleanPlanActionExecutor.requestClean: an empty plan is no error and writes no instant.
    assert schedule_clean(table, plan_clean(table, CleanConfig(commits_retained=10)),
                          CleanConfig(commits_retained=10)) is None
    assert not table.reload().timeline.cleans()
    _, pending, _ = schedule(lake)
    lake.commit(T[6], {P: [lake.base_file(P, "fg1", T[6])]})
    assert f"clean {pending} is still pending (requested): run it first" in plan_clean(
        HudiTable.load(lake.storage, "/t"), CONFIG).notes
    with pytest.raises(CleanRefused, match="still pending"):
        schedule(lake)
    allowed = CleanConfig(commits_retained=1, multiple_enabled=True)
    table, _, _ = schedule(lake, allowed)
    assert len(table.timeline.cleans().pending()) == 2
    results = run_pending_cleans(table)
    assert [r.instant.requested_time for r in results] == sorted(r.instant.requested_time for r in results)


def test_executor_trigger_needs_enough_commits_since_the_last_clean(lake: Lake) -> None:
    schedule(lake)
    run_pending_cleans(HudiTable.load(lake.storage, "/t"))
    lake.commit(T[6], {P: [lake.base_file(P, "fg1", T[6])]})
    strict = CleanConfig(commits_retained=2, trigger_max_commits=2)
    with pytest.raises(CleanRefused, match="hoodie.clean.trigger.max.commits"):
        schedule(lake, strict)
    schedule(lake, strict, force=True)


def test_executor_refuses_a_damaged_metadata_table_before_any_delete_until_it_is_dropped() -> None:
    """A metadata table whose update cannot be written (here: no `files` file group) stops the
    clean before its first delete (the clean stays requested, nothing is deleted); dropping the
    metadata table is the explicit repair action, never a side effect."""
    lake = Lake(MemoryStorage(), "/t", version=6,
                extra_props={"hoodie.table.metadata.partitions": "files,column_stats"})
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    lake.storage.write("/t/.hoodie/metadata/.hoodie/hoodie.properties",
                       b"hoodie.table.name=lake_metadata\nhoodie.table.type=MERGE_ON_READ\nhoodie.table.version=6\n")
    table, _, _ = schedule(lake)
    before = sorted(s.path for s in lake.storage.list_recursive("/t") if s.path.endswith(".parquet"))
    with pytest.raises(MetadataTableUnsupported, match="cleanline mdt drop"):
        run_pending_cleans(table)
    assert sorted(s.path for s in lake.storage.list_recursive("/t") if s.path.endswith(".parquet")) == before
    assert lake.storage.exists("/t/.hoodie/metadata/.hoodie/hoodie.properties")
    assert all(c.is_requested for c in HudiTable.load(lake.storage, "/t").timeline.cleans())
    HudiTable.load(lake.storage, "/t").maintenance().drop_metadata_table(dry_run=False)
    table = HudiTable.load(lake.storage, "/t")
    config = read_config(lake.storage, "/t")
    assert config.metadata_partitions == () and config.stored_checksum == checksum(config.props)
    assert not lake.storage.exists("/t/.hoodie/metadata")
    assert run_pending_cleans(table)[0].deleted == 2
    assert table.timeline.cleans().completed().last() is not None
    assert State.COMPLETED is table.timeline.cleans().last().state  # type: ignore[union-attr]


def six_groups(version: int) -> Lake:
    """Six file groups rewritten by T0..T3: a plan retaining one commit deletes their T0 and T1 slices."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    for t in T[:4]:
        lake.commit(t, {P: [lake.base_file(P, f"fg{g}", t) for g in range(6)]})
    return lake


@pytest.mark.parametrize("held", [5, 6])
def test_executor_refuses_a_clean_a_savepoint_now_protects_and_withdraws_it_while_requested(held: int) -> None:
    lake = six_groups(8)
    table = HudiTable.load(lake.storage, "/t")
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config)
    assert clean is not None
    saved = [d.file_name for d in plan.files_to_delete if d.base_instant_time == T[0]][:held]
    lake.savepoint(T[0], {P: saved})
    conflicts = [f"{name}: savepoint {T[0]}" for name in saved]
    with pytest.raises(CleanRefused) as refused:
        run_pending_cleans(HudiTable.load(lake.storage, "/t"))
    assert str(refused.value) == (
        f"{table.uri}: clean {clean.requested_time} refused before any delete: {held} of its files are now protected "
        f"({'; '.join(conflicts[:5])}{'; ...' if held > 5 else ''}). The requested clean was withdrawn; plan again.")
    assert not HudiTable.load(lake.storage, "/t").timeline.cleans()
    assert all(lake.storage.exists(f"/t/{P}/{d.file_name}") for d in plan.files_to_delete)


def test_executor_leaves_an_inflight_clean_a_savepoint_now_protects_as_it_is() -> None:
    lake = six_groups(6)
    table = HudiTable.load(lake.storage, "/t")
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config)
    assert clean is not None
    begin_clean(table, clean)  # moved to inflight, nothing deleted yet
    saved = plan.files_to_delete[0].file_name
    lake.savepoint(T[0], {P: [saved]})
    with pytest.raises(CleanRefused) as refused:
        run_pending_cleans(HudiTable.load(lake.storage, "/t"))
    assert str(refused.value) == (
        f"{table.uri}: clean {clean.requested_time} refused before any delete: 1 of its files are now protected "
        f"({saved}: savepoint {T[0]}). It is inflight and was left as it is; remove the protection or finish it "
        "with a Hudi writer.")
    (pending,) = HudiTable.load(lake.storage, "/t").timeline.cleans().pending()
    assert pending.state is State.INFLIGHT and lake.storage.exists(f"/t/{P}/{saved}")


def test_executor_trigger_counts_exactly_the_commits_since_the_last_clean(lake: Lake) -> None:
    table = HudiTable.load(lake.storage, "/t")
    assert needs_cleaning(table, CleanConfig(trigger_max_commits=5))
    assert not needs_cleaning(table, CleanConfig(trigger_max_commits=6))


def test_executor_runs_only_the_pending_clean_asked_for(lake: Lake) -> None:
    table, t, _ = schedule(lake)
    assert [i.requested_time for i in pending_cleans(table, instant=t)] == [t]
    assert [i.requested_time for i in pending_cleans(table)] == [t]
    with pytest.raises(CleanRefused) as refused:
        pending_cleans(table, instant=T[19])
    assert str(refused.value) == f"{table.uri}: no pending clean at {T[19]}"


@pytest.mark.parametrize("partitioned", [True, False])
def test_executor_runs_a_version_1_plan_naming_files_relative_to_their_partition(partitioned: bool) -> None:
    lake = Lake(MemoryStorage(), "/t", version=6, partitioned=partitioned)
    partition = P if partitioned else ""
    names = [lake.base_file(partition, "fg1", t) for t in T[:2]]
    for t, name in zip(T, names):
        lake.commit(t, {partition: [name]})
    plan = CleanerPlan(legacy_file_names={partition: (names[0],)}, policy="KEEP_LATEST_COMMITS", version=1)
    lake.instant_file(Instant(T[5], "clean", State.REQUESTED), plan.to_raw())
    (result,) = run_pending_cleans(HudiTable.load(lake.storage, "/t"))
    folder = f"/t/{partition}" if partitioned else "/t"
    assert [(o.partition, o.path, o.status) for o in result.outcomes] == [
        (partition, f"memory:/{folder}/{names[0]}", Status.DELETED)]
    assert not lake.storage.exists(f"{folder}/{names[0]}") and lake.storage.exists(f"{folder}/{names[1]}")


def test_executor_refuses_a_plan_deleting_a_partition_outside_the_table(lake: Lake) -> None:
    plan = CleanerPlan(partitions_to_delete=("../elsewhere",), policy="KEEP_LATEST_COMMITS")
    lake.instant_file(Instant(T[5], "clean", State.REQUESTED), plan.to_raw())
    with pytest.raises(OutsideTableError, match="lies outside the table"):
        run_pending_cleans(HudiTable.load(lake.storage, "/t"))


def test_executor_never_withdraws_a_clean_read_as_requested_that_is_inflight_by_now() -> None:
    lake = six_groups(8)
    table = HudiTable.load(lake.storage, "/t")
    config = CleanConfig(commits_retained=1)
    clean = schedule_clean(table, plan_clean(table, config), config)
    assert clean is not None and clean.is_requested
    begin_clean(table, clean)  # moved to inflight since `clean` was read
    with pytest.raises(CleanRefused, match="It is inflight and was left as it is"):
        refuse_protected(table.reload(), clean, ["x: savepoint"], 1)
    assert set(table.timeline.files_of(clean)) == {State.REQUESTED, State.INFLIGHT}
