"""A clean run in shares on Spark (`timeline.clean.sliced`): the executors check and delete
their partitions, the driver joins the completed clean. The same files go and the same
completed clean is written as by the local engine; every refusal of `begin_clean` still comes
before the first delete; a plan that is not regular runs whole, as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from bench.common import CleanShape, generate_clean_table
from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean import sliced
from timeline.clean.config import CleanConfig
from timeline.clean.executor import CleanRefused, Progress, Status, pending_cleans, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.exceptions import CorruptInstantError
from timeline.instant import CLEAN, Instant, State
from timeline.metadata import avro
from timeline.metadata.records import CleanerPlan
from timeline.spark import clean as spark_clean
from timeline.spark.clean import run_pending_cleans_spark
from timeline.storage.arrow import LocalStorage
from timeline.storage.containment import OutsideTableError

SHAPE = CleanShape(partitions=12, groups=5, versions=4, trickle=0, hot=0, retained=2)
CONFIG = CleanConfig(commits_retained=2)


def _scheduled(base: Path, version: int = 6) -> HudiTable:
    generate_clean_table(str(base), SHAPE, version=version)
    table = HudiTable.open(str(base))
    assert schedule_clean(table, plan_clean(table, CONFIG), CONFIG, force=True) is not None
    return table


def _files(base: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), base) for d, _, fs in os.walk(base) for f in fs
                  if ".hoodie" not in Path(d).relative_to(base).parts)


def _completed(base: Path) -> dict:
    table = HudiTable.open(str(base))
    clean = table.timeline.cleans().completed().last()
    raw = avro.decode(table.storage.read(table.timeline.path_of(clean, State.COMPLETED)), path="c")
    raw.pop("timeTakenInMillis")
    raw.pop("startCleanTime")
    return raw


def _in_shares(monkeypatch: pytest.MonkeyPatch) -> list[sliced.Begun]:
    """Record the cleans that ran in shares (and fail the test if one falls back whole)."""
    seen: list[sliced.Begun] = []
    begin = sliced.begin

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = begin(*args, **kwargs)
        if found is not None:
            seen.append(found)
        return found

    monkeypatch.setattr(sliced, "begin", spy)
    return seen


@pytest.mark.parametrize("version", [6, 8])
def test_shares_clean_what_the_local_engine_cleans(spark: SparkSession, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Twin tables: the same files remain and the same completed clean is written (the record,
    decoded; the file names and order of every partition's lists)."""
    local, shared = _scheduled(tmp_path / "local", version), _scheduled(tmp_path / "shared", version)
    doomed = sum(len(v) for v in shared.read(pending_cleans(shared)[0], CleanerPlan, State.REQUESTED).files.values())
    seen = _in_shares(monkeypatch)
    progress: list[Progress] = []
    (result,) = run_pending_cleans_spark(spark, shared.uri, progress=progress.append)
    (expected,) = run_pending_cleans(HudiTable.open(local.uri))
    assert len(seen) == 1 and len(seen[0].shares) > 1
    assert _files(tmp_path / "shared") == _files(tmp_path / "local")
    assert _completed(tmp_path / "shared") == _completed(tmp_path / "local")
    assert (result.deleted, result.already_gone, result.failed, result.bytes_deleted) == (
        expected.deleted, expected.already_gone, expected.failed, expected.bytes_deleted)
    assert result.deleted == doomed > 0
    assert sorted((o.partition, o.path.replace(shared.uri, ""), o.status, o.bytes) for o in result.outcomes) == \
        sorted((o.partition, o.path.replace(local.uri, ""), o.status, o.bytes) for o in expected.outcomes)
    assert dict(result.metadata.partitions) == dict(expected.metadata.partitions)
    assert progress[-1].files_done == progress[-1].files_total == doomed
    assert progress[-1].bytes_deleted == expected.bytes_deleted
    assert HudiTable.open(shared.uri).timeline.cleans().pending().instants == ()


def test_files_already_gone_and_refused_deletes(spark: SparkSession, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    local, shared = _scheduled(tmp_path / "local"), _scheduled(tmp_path / "shared")
    for table in (local, shared):
        plan = table.read(pending_cleans(table)[0], CleanerPlan,
                          State.REQUESTED)
        first, second = list(plan.files.values())[0][:2]
        os.unlink(LocalStorage().path_of(first.path))
        target = LocalStorage().path_of(second.path)
        os.unlink(target)
        os.mkdir(target)  # the store refuses to unlink a directory
    seen = _in_shares(monkeypatch)
    (result,) = run_pending_cleans_spark(spark, shared.uri)
    (expected,) = run_pending_cleans(HudiTable.open(local.uri))
    assert seen
    assert (result.already_gone, result.failed) == (expected.already_gone, expected.failed) == (1, 1)
    assert [o.error for o in result.outcomes if o.status is Status.FAILED] == \
        [o.error for o in expected.outcomes if o.status is Status.FAILED]
    assert _completed(tmp_path / "shared") == _completed(tmp_path / "local")


def test_a_partition_linked_outside_is_refused_before_any_delete(spark: SparkSession, tmp_path: Path) -> None:
    """Paths of the regular form whose partition folder is a symbolic link out of the table:
    an executor's containment check refuses the whole clean; nothing anywhere is deleted."""
    table = _scheduled(tmp_path / "t")
    plan = table.read(pending_cleans(table)[0], CleanerPlan, State.REQUESTED)
    partition = list(plan.files)[-1]
    folder = tmp_path / "t" / partition
    outside = tmp_path / "outside"
    folder.rename(outside)
    folder.symlink_to(outside)
    before_inside, before_outside = _files(tmp_path / "t"), sorted(os.listdir(outside))
    with pytest.raises(OutsideTableError, match="outside the table"):
        run_pending_cleans_spark(spark, table.uri)
    assert _files(tmp_path / "t") == before_inside and sorted(os.listdir(outside)) == before_outside
    assert HudiTable.open(table.uri).timeline.cleans().pending().instants[0].state is State.REQUESTED


def test_a_savepoint_taken_since_the_plan_refuses_it(spark: SparkSession, tmp_path: Path) -> None:
    table = _scheduled(tmp_path / "t")
    plan = table.read(pending_cleans(table)[0], CleanerPlan, State.REQUESTED)
    partition, infos = next(iter(plan.files.items()))
    name = infos[0].path.rsplit("/", 1)[1]
    commit = name.rsplit("_", 1)[1].split(".")[0]
    lake = Lake.__new__(Lake)
    lake.storage, lake.base, lake.version = LocalStorage(), str(tmp_path / "t"), 6
    lake.savepoint(commit, {partition: [name]})
    before = _files(tmp_path / "t")
    with pytest.raises(CleanRefused, match="1 of its files are now protected.*withdrawn"):
        run_pending_cleans_spark(spark, table.uri)
    assert _files(tmp_path / "t") == before
    assert not HudiTable.open(table.uri).timeline.cleans().pending()


def test_undecodable_files_in_a_share_are_a_corrupt_plan(spark: SparkSession, tmp_path: Path) -> None:
    """A file path that is not UTF-8 passes the driver's framing scan; the executor's decode
    finds it and nothing is deleted."""
    table = _scheduled(tmp_path / "t")
    clean = pending_cleans(table)[0]
    path = table.timeline.path_of(clean, State.REQUESTED)
    data = bytearray(table.storage.read(path))
    at = data.index(b".parquet")
    data[at + 1] = 0xFF
    os.unlink(path)
    table.storage.write(path, bytes(data))
    before = _files(tmp_path / "t")
    with pytest.raises(CorruptInstantError, match=r"clean\.requested"):
        run_pending_cleans_spark(spark, table.uri)
    assert _files(tmp_path / "t") == before


def test_a_plan_naming_a_file_twice_runs_whole(spark: SparkSession, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Not the regular form: the driver runs the clean as before, with one outcome per file."""
    lake = Lake(LocalStorage(), str(tmp_path / "t"))
    times = [f"2026110100{i:02d}00000" for i in range(4)]
    names = [lake.base_file("city=sf", "fg1", t) for t in times[:3]]
    for t, n in zip(times[:3], names, strict=True):
        lake.commit(t, {"city=sf": [n]})
    doomed = f"file:{lake.base}/city=sf/{names[0]}"
    lake.instant_file(Instant(times[3], CLEAN, State.REQUESTED), {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": times[2], "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2,
        "filePathsToBeDeletedPerPartition": {"city=sf": [{"filePath": doomed, "isBootstrapBaseFile": False}] * 2},
        "partitionsToBeDeleted": [], "extraMetadata": None})
    seen = _in_shares(monkeypatch)
    (result,) = run_pending_cleans_spark(spark, lake.base)
    assert not seen and result.failed == 0
    assert not Path(lake.base, "city=sf", names[0]).exists()
    assert HudiTable.open(lake.base).timeline.cleans().completed()


def test_shares_are_contiguous_and_balanced() -> None:
    from timeline.metadata.planfile import PartitionSlice

    slices = [PartitionSlice(f"p{i}", i * 10, i * 10 + 10, files) for i, files in enumerate([5, 5, 5, 5, 100, 1, 1])]
    data = bytes(range(256)) * 2
    dealt = sliced.shares("plan", data, slices, 3)
    assert [p for share in dealt for p, _, _ in share.partitions] == [s.partition for s in slices]
    assert [[p for p, _, _ in share.partitions] for share in dealt] == [["p0", "p1", "p2", "p3"], ["p4"], ["p5", "p6"]]
    for share in dealt:
        assert all(0 <= a < b <= share.end - share.start for _, a, b in share.partitions)
    assert 3 <= len(sliced.shares("plan", data, slices, 50)) <= len(slices)
    even = [PartitionSlice(f"p{i}", i, i + 1, 10) for i in range(12)]
    assert [len(share.partitions) for share in sliced.shares("plan", data, even, 4)] == [3, 3, 3, 3]
    assert len(sliced.shares("plan", data, slices[:1], 8)) == 1
    assert spark_clean.TASKS_PER_CORE >= 1


def test_a_corrupt_commit_is_found_by_the_workers(spark: SparkSession, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeline's state files are checked on the executors (`ensure_intact`'s rule): a
    completed commit that does not decode refuses the clean before any delete."""
    table = _scheduled(tmp_path / "t")
    commit = table.timeline.commits().completed().instants[1]
    path = table.timeline.path_of(commit, State.COMPLETED)
    os.unlink(path)
    table.storage.write(path, b'{"partitionToWriteStats": {')
    before = _files(tmp_path / "t")
    checked: list[int] = []
    prepare = sliced.prepare

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = prepare(*args, **kwargs)
        checked.append(sum(len(share.state_files) for share in found[2]))
        return found

    monkeypatch.setattr(sliced, "prepare", spy)
    with pytest.raises(CorruptInstantError, match=commit.requested_time):
        run_pending_cleans_spark(spark, table.uri)
    assert checked == [1]  # the rewritten commit went to the workers (this process checked the rest before)
    assert _files(tmp_path / "t") == before


def _hand_made(base: Path, files: dict[str, list[str]]) -> Lake:
    """A table whose requested clean names `files` (partition -> names of files it wrote, some
    partitions with none): each file group has a newer version, so the plan is Hudi's."""
    lake = Lake(LocalStorage(), str(base))
    times = [f"2026110100{i:02d}00000" for i in range(4)]
    for partition, names in files.items():
        for name in names:
            lake.data_file(partition, name)
    lake.commit(times[0], {p: n for p, n in files.items() if n})
    lake.instant_file(Instant(times[3], CLEAN, State.REQUESTED), {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": times[0], "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2,
        "filePathsToBeDeletedPerPartition": {
            p: [{"filePath": f"file:{lake.base}/{p}/{n}", "isBootstrapBaseFile": False} for n in names]
            for p, names in files.items()},
        "partitionsToBeDeleted": [], "extraMetadata": {"by": "test"}})
    return lake


def test_a_partition_with_no_files_has_no_entry(spark: SparkSession, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan may list a partition with an empty array: the local engine writes no
    partitionMetadata entry for it (no outcome), and neither do the shares."""
    files = {"city=a": ["a1.parquet", "a2.parquet"], "city=b": [], "city=c": ["c1.parquet"]}
    local, shared = _hand_made(tmp_path / "local", files), _hand_made(tmp_path / "shared", files)
    seen = _in_shares(monkeypatch)
    (result,) = run_pending_cleans_spark(spark, shared.base)
    (expected,) = run_pending_cleans(HudiTable.open(local.base))
    assert seen
    assert list(result.metadata.partitions) == list(expected.metadata.partitions) == ["city=a", "city=c"]
    assert _completed(tmp_path / "shared") == _completed(tmp_path / "local")
    assert len(result.outcomes) == result.deleted == 3


def test_a_state_file_changed_after_the_workers_read_it_is_checked_again(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver takes a worker's word only for the file it dealt (path, size and modification
    time): a commit replaced after the workers decoded it is decoded again, and refused."""
    table = _scheduled(tmp_path / "t")
    commit = table.timeline.commits().completed().instants[1]
    path = table.timeline.path_of(commit, State.COMPLETED)
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))  # unchecked in this process now
    begin = sliced.begin

    def spy(table_, clean, data, slices, dealt, protection, checked):  # type: ignore[no-untyped-def]
        assert any(p == path for share in dealt for p, *_ in share.state_files)
        original = Path(path).read_bytes()
        os.unlink(path)
        Path(path).write_bytes(original[:-2] + b"!}")  # same size, another time, not JSON
        return begin(table_, clean, data, slices, dealt, protection, checked)

    monkeypatch.setattr(sliced, "begin", spy)
    before = _files(tmp_path / "t")
    with pytest.raises(CorruptInstantError, match=commit.requested_time):
        run_pending_cleans_spark(spark, table.uri)
    assert _files(tmp_path / "t") == before


def test_a_savepoint_taken_while_the_workers_check_sends_the_clean_whole(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Protection read again after the workers' checks: a savepoint written meanwhile makes the
    driver check every file itself (begin_clean), which refuses the clean; nothing deleted."""
    table = _scheduled(tmp_path / "t")
    plan = table.read(pending_cleans(table)[0], CleanerPlan, State.REQUESTED)
    partition, infos = next(iter(plan.files.items()))
    name = infos[0].path.rsplit("/", 1)[1]
    begin = sliced.begin
    whole: list[bool] = []

    def spy(*args):  # type: ignore[no-untyped-def]
        lake = Lake.__new__(Lake)
        lake.storage, lake.base, lake.version = LocalStorage(), str(tmp_path / "t"), 6
        lake.savepoint(name.rsplit("_", 1)[1].split(".")[0], {partition: [name]})
        found = begin(*args)
        whole.append(found is None)
        return found

    monkeypatch.setattr(sliced, "begin", spy)
    before = _files(tmp_path / "t")
    with pytest.raises(CleanRefused, match="now protected"):
        run_pending_cleans_spark(spark, table.uri)
    assert whole == [True] and _files(tmp_path / "t") == before


def test_a_partition_with_uri_characters_runs_whole(spark: SparkSession, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition named with '#' (which a URI parser cuts at) is not the regular form: the
    clean runs whole, and containment refuses its paths before any delete."""
    lake = _hand_made(tmp_path / "t", {"city=a#b": ["x1.parquet"], "city=c": ["c1.parquet"]})
    seen = _in_shares(monkeypatch)
    before = _files(tmp_path / "t")
    with pytest.raises(OutsideTableError, match="'#'"):
        run_pending_cleans_spark(spark, lake.base)
    assert not seen and _files(tmp_path / "t") == before


@pytest.mark.parametrize("partition", ["city=a#b", "city=a?b", "city=a%2Fb", "ts=00:00"])
def test_partitions_a_uri_parser_reads_are_not_regular(partition: str) -> None:
    """On an object store the deleted path is the folder's store path and the name: a partition
    holding what a URI parser cuts at or decodes would name another object than the plan's."""
    root = "s3://bucket/table/"
    files = [(f"{root}{partition}/f1.parquet", False)]
    assert "URI parser" in sliced._irregular(root, partition, files)[2]
    assert sliced._irregular(root, "city=a", [(f"{root}city=a/f1.parquet", False)])[2] == ""
