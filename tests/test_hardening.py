"""Hardening of the library: nothing outside a table is deleted, protections are checked again
right before a clean's first delete, savepoints and restores refuse what would lose data, and
a corrupt timeline or table config stops the work. Each test is a hostile or racing case that
deleted data before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import CleanRefused, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.config import BACKUP_FILE, PROPERTIES_FILE, read_config
from timeline.exceptions import CorruptInstantError, TableConfigError
from timeline.instant import CLEAN, Instant, State
from timeline.mdt import drop_metadata_table
from timeline.restore import RestoreRefused, restore, verify_restore
from timeline.rollback import (
    RollbackRefused,
    preview_failed_write,
    rollback,
    rollback_failed_write,
)
from timeline.savepoint import SavepointRefused, create_savepoint
from timeline.storage import OutsideTableError, UnsupportedLocationError, parse_location, within_roots
from timeline.storage.arrow import LocalStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    """A local table at tmp/lake with five commits rewriting one file group, beside a folder
    `elsewhere` holding files that must survive."""
    (tmp_path / "elsewhere" / "dir").mkdir(parents=True)
    (tmp_path / "elsewhere" / "victim.txt").write_bytes(b"keep me")
    (tmp_path / "elsewhere" / "dir" / "inner.txt").write_bytes(b"keep me too")
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=request.param)
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    return lake


def elsewhere(lake: Lake) -> list[Path]:
    root = Path(lake.base).parent / "elsewhere"
    return [root / "victim.txt", root / "dir" / "inner.txt"]


def table_files(lake: Lake) -> set[str]:
    return {str(p) for p in Path(lake.base).rglob("*") if p.is_file() and ".hoodie" not in p.parts}


def hostile_clean(lake: Lake, time: str, *, files: list[str] = (), partitions: list[str] = ()) -> None:
    """A pending clean written by someone else, naming what it likes."""
    plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": T[4], "policy": "KEEP_LATEST_COMMITS",
            "filesToBeDeletedPerPartition": {}, "version": 2,
            "filePathsToBeDeletedPerPartition": {P: [{"filePath": f, "isBootstrapBaseFile": False} for f in files]},
            "partitionsToBeDeleted": list(partitions), "extraMetadata": None}
    lake.instant_file(Instant(time, CLEAN, State.REQUESTED), plan)


def own_file(lake: Lake, t: str) -> str:
    return f"file:{lake.base}/{P}/fg1_0-1-0_{t}.parquet"


@pytest.mark.parametrize("entry", [
    "file:{out}/victim.txt",                       # absolute, another folder
    "{out}/victim.txt",                            # plain absolute path
    "file:{base}/../elsewhere/victim.txt",         # ..
    "file:{base}/city=sf/%2e%2e/%2e%2e/elsewhere/victim.txt",  # encoded ..
    "s3://bucket/lake/city=sf/x.parquet",          # another scheme
    "file://otherhost{base}/city=sf/x.parquet",    # another host
    "file:{base}/.hoodie/hoodie.properties",       # the table's own config
    "file:{base}",                                 # the table itself
    "file:{base}/city=sf/..",                      # .. as the name, beside the table's own file
    "file:{base}/city=sf/%2e%2e",                  # an encoded .. as the name
])
def test_hardening_clean_naming_a_path_outside_the_table_deletes_nothing(lake: Lake, entry: str) -> None:
    out = str(Path(lake.base).parent / "elsewhere")
    before = table_files(lake)
    hostile_clean(lake, T[10], files=[own_file(lake, T[0]), entry.format(out=out, base=lake.base)])
    table = HudiTable.load(lake.storage, lake.base)
    with pytest.raises(OutsideTableError, match="nothing was deleted"):
        run_pending_cleans(table)
    assert all(p.exists() for p in elsewhere(lake))
    assert table_files(lake) == before  # not even the table's own file went
    assert (Path(lake.base) / ".hoodie" / "hoodie.properties").exists()
    assert not table.reload().timeline.cleans().completed()
    assert not any(".clean.inflight" in n for n in os.listdir(table.timeline.folder))


@pytest.mark.parametrize("partition", ["../elsewhere/dir", "../../elsewhere", "/abs/dir", ".hoodie", "", "%2e%2e"])
def test_hardening_clean_deleting_a_partition_outside_the_table_is_refused(lake: Lake, partition: str) -> None:
    hostile_clean(lake, T[10], files=[own_file(lake, T[0])], partitions=[partition or "."])
    before = table_files(lake)
    with pytest.raises(OutsideTableError):
        run_pending_cleans(HudiTable.load(lake.storage, lake.base))
    assert all(p.exists() for p in elsewhere(lake)) and table_files(lake) == before


def test_hardening_symlinks_out_of_the_table_are_refused(lake: Lake) -> None:
    out = Path(lake.base).parent / "elsewhere"
    (Path(lake.base) / "city=la").symlink_to(out / "dir", target_is_directory=True)  # a partition pointing out
    (Path(lake.base) / P / "link.parquet").symlink_to(out / "victim.txt")            # a file pointing out
    for files, partitions in (([f"file:{lake.base}/city=la/inner.txt"], []),
                              ([f"file:{lake.base}/{P}/link.parquet"], []),
                              ([own_file(lake, T[0]), f"file:{lake.base}/{P}/link.parquet"], []),  # one folder
                              ([own_file(lake, T[0])], ["city=la"])):
        hostile_clean(lake, T[10], files=files, partitions=partitions)
        table = HudiTable.load(lake.storage, lake.base)
        with pytest.raises(OutsideTableError):
            run_pending_cleans(table)
        assert all(p.exists() for p in elsewhere(lake))
        assert Path(own_file(lake, T[0])[5:]).exists()
        Path(table.timeline.path_of(table.timeline.cleans().pending().instants[0], State.REQUESTED)).unlink()


def test_hardening_metadata_table_symlinked_out_is_not_removed(lake: Lake) -> None:
    out = Path(lake.base).parent / "elsewhere"
    (Path(lake.base) / ".hoodie" / "metadata").symlink_to(out / "dir", target_is_directory=True)
    with pytest.raises(OutsideTableError):
        drop_metadata_table(HudiTable.load(lake.storage, lake.base))
    assert all(p.exists() for p in elsewhere(lake))


def test_hardening_rollback_plan_naming_a_path_outside_is_refused_and_previewed_as_such(lake: Lake) -> None:
    lake.commit(T[5], state=State.INFLIGHT)   # a failed write (EAGER: every pending write)
    victim = elsewhere(lake)[0]
    plan = {"instantToRollback": {"commitTime": T[5], "action": "commit"}, "version": 1,
            "RollbackRequests": [{"partitionPath": P, "fileId": "", "latestBaseInstant": "",
                                  "filesToBeDeleted": [str(victim)], "logBlocksToBeDeleted": {}}]}
    lake.instant_file(Instant(T[7], "rollback", State.REQUESTED), plan)
    table = HudiTable.load(lake.storage, lake.base)
    with pytest.raises(OutsideTableError, match="victim.txt"):
        preview_failed_write(table, T[5])  # the preview counts what would really run
    with pytest.raises(OutsideTableError):
        rollback(table, T[5])
    assert victim.exists() and table.reload().timeline.find(T[5]) is not None


def test_hardening_rollback_only_of_the_latest_completed_write(lake: Lake) -> None:
    table = HudiTable.load(lake.storage, lake.base)
    only = Path(own_file(lake, T[3])[5:])
    with pytest.raises(RollbackRefused, match="found commits after"):
        rollback(table, T[3])
    with pytest.raises(RollbackRefused, match="not a failed write"):
        rollback_failed_write(table, T[4])
    assert only.exists() and table.reload().timeline.find(T[3]).is_completed


def test_hardening_savepoint_between_approval_and_run(lake: Lake) -> None:
    """KEEP_LATEST_FILE_VERSIONS has no earliest retained instant, so Hudi's savepoint rule
    passes; the savepoint is refused while the approved clean would delete its files, and a
    savepoint made anyway (by a writer that does not check) stops the clean before any delete."""
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    plan = plan_clean(table, config)
    clean = schedule_clean(table, plan, config, force=True)
    assert plan.files_to_delete
    with pytest.raises(SavepointRefused, match=f"pending clean {clean.requested_time} would delete"):
        create_savepoint(table, T[2])
    requested = Path(table.timeline.path_of(clean, State.REQUESTED))
    aside = requested.with_suffix(".aside")
    requested.rename(aside)            # a writer that does not look at pending cleans...
    create_savepoint(table, T[2])
    aside.rename(requested)
    with pytest.raises(CleanRefused, match="now protected.*savepoint"):
        run_pending_cleans(table.reload())
    assert Path(own_file(lake, T[2])[5:]).exists()
    assert not table.reload().timeline.cleans()  # withdrawn, so no Hudi writer runs it either
    restore(table, T[2])
    assert verify_restore(table, T[2]).verified


def test_hardening_pending_compaction_after_approval_stops_the_clean(tmp_path: Path) -> None:
    lake = Lake(LocalStorage(), str(tmp_path / "mor"), version=6, table_type="MERGE_ON_READ")
    for t in T[:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=1)
    clean = schedule_clean(table, plan_clean(table, config), config, force=True)
    lake.schedule_compaction(T[9], [(P, "fg1", T[1])])  # reads the slices from T[1] on
    with pytest.raises(CleanRefused, match="pending compaction"):
        run_pending_cleans(table)
    assert Path(lake.base, P, f"fg1_0-1-0_{T[1]}.parquet").exists()
    assert table.reload().timeline.find(clean.requested_time) is None


def test_hardening_restore_refused_when_a_savepointed_file_is_gone(lake: Lake) -> None:
    table = HudiTable.load(lake.storage, lake.base)
    create_savepoint(table, T[4])
    lake.commit(T[5], {P: [lake.base_file(P, "fg1", T[5])]})
    Path(own_file(lake, T[4])[5:]).unlink()  # damage: the savepoint's only data file
    check = verify_restore(table, T[4])
    assert not check.verified and check.missing == (f"{P}/fg1_0-1-0_{T[4]}.parquet",)
    with pytest.raises(RestoreRefused, match="no longer exist"):
        restore(table, T[4])
    assert Path(own_file(lake, T[5])[5:]).exists() and table.reload().timeline.find(T[5]).is_completed


def test_hardening_truncated_commit_stops_planning_and_mutations(lake: Lake) -> None:
    table = HudiTable.load(lake.storage, lake.base)
    create_savepoint(table, T[3])
    latest = Path(table.reload().timeline.path_of(table.timeline.commits().completed().last()))
    data = latest.read_bytes()
    latest.write_bytes(data[: len(data) // 2])
    config = CleanConfig(commits_retained=1)
    before = table_files(lake)
    for action in (lambda: plan_clean(table.reload(), config), lambda: create_savepoint(table.reload(), T[2]),
                   lambda: restore(table.reload(), T[3]), lambda: rollback(table.reload(), T[4])):
        with pytest.raises(CorruptInstantError, match=latest.name):
            action()
    assert table_files(lake) == before


def test_hardening_bad_checksum_falls_back_to_the_backup_or_stops(lake: Lake) -> None:
    meta = Path(lake.base) / ".hoodie"
    good = (meta / PROPERTIES_FILE).read_text()
    (meta / BACKUP_FILE).write_text(good)
    (meta / PROPERTIES_FILE).write_text(good.replace("hoodie.table.name=lake", "hoodie.table.name=other"))
    assert read_config(lake.storage, lake.base).name == "lake"  # HoodieTableConfig falls back to the backup
    (meta / BACKUP_FILE).unlink()
    with pytest.raises(TableConfigError, match="does not match"):
        HudiTable.load(lake.storage, lake.base)


# Allowed roots: parsed, never opened

def test_hardening_roots_match_whole_resolved_segments(tmp_path: Path, no_store: list[str]) -> None:
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (tmp_path / "rootless").mkdir()
    (tmp_path / "outside").mkdir()
    (root / "link").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert within_roots(str(root / "a"), [str(root)])
    assert within_roots(f"file://{root}/a", [str(root)])
    assert not within_roots(str(tmp_path / "rootless"), [str(root)])      # a prefix, not a segment
    assert not within_roots(str(root / "a" / ".." / ".." / "outside"), [str(root)])
    assert not within_roots(str(root / "link"), [str(root)])              # a symbolic link out
    assert within_roots("s3a://bucket/lake/t", ["s3://bucket/lake"])
    assert not within_roots("s3://bucket/lakehouse/t", ["s3://bucket/lake"])
    assert not within_roots("s3://bucket/lake/../other", ["s3://bucket/lake"])
    assert not within_roots("s3://other/lake/t", ["s3://bucket/lake"])
    assert not within_roots("s3://bucket/lake/t", [str(root)])
    for bad in ("ftp://host/t", "http://host/t", "", "s3:///no-bucket"):
        with pytest.raises(UnsupportedLocationError):
            parse_location(bad)
    assert no_store == []


def test_hardening_plans_keep_working_on_ordinary_tables(lake: Lake) -> None:
    """The rules refuse only what they should: a normal clean still runs."""
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=2)
    schedule_clean(table, plan_clean(table, config), config, force=True)
    (result,) = run_pending_cleans(table)
    assert result.deleted == 2 and all(p.exists() for p in elsewhere(lake))
    shutil.rmtree(Path(lake.base).parent / "elsewhere")


@pytest.mark.parametrize("damage, message", [
    (lambda data: data[: len(data) // 2], "invalid JSON"),
    (lambda data: b"[" + data + b"]", "expected a JSON object, found list"),
    (lambda data: data.replace(b'"pad"', b'"p\xff"', 1), "invalid JSON"),
    (lambda data: data + b" {}", "invalid JSON"),
    (lambda data: b"x" + data, "invalid JSON"),
], ids=["truncated", "array", "not-utf8", "trailing", "garbage"])
def test_hardening_a_large_json_commit_is_checked_as_a_stream_and_still_refused_when_damaged(
        tmp_path: Path, damage, message: str) -> None:  # type: ignore[no-untyped-def]
    """Commits above 1 MiB are checked intact by a streaming parser (constant memory on tables
    whose commits list millions of files): an intact one plans, a damaged one stops the plan
    exactly as the whole-file decoder does."""
    import json

    from timeline.metadata import STREAM_CHECK_BYTES, jsonmeta

    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=6)
    for t in T[:3]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    table = HudiTable.load(lake.storage, lake.base)
    latest = Path(table.timeline.path_of(table.timeline.commits().completed().last()))
    content = json.loads(latest.read_bytes())
    content["extraMetadata"]["pad"] = "x" * (STREAM_CHECK_BYTES + 10)
    latest.write_bytes(json.dumps(content, indent=2).encode())
    assert latest.stat().st_size > STREAM_CHECK_BYTES
    assert plan_clean(table.reload(), CleanConfig(commits_retained=1)).files_to_delete
    damaged = damage(latest.read_bytes())
    with pytest.raises(CorruptInstantError, match=message):
        jsonmeta.decode(damaged, path=str(latest))
    latest.write_bytes(damaged)
    with pytest.raises(CorruptInstantError, match=message):
        plan_clean(table.reload(), CleanConfig(commits_retained=1))


def test_hardening_ensure_located_refuses_a_swapped_folder_and_pins_the_checked_one(tmp_path: Path, table_copy) -> None:
    """The location rule of every change (`HudiTable.ensure_located`): a folder swapped for a
    symbolic link before the check is refused; one swapped after it makes every path the change
    would delete resolve outside the table it checked."""
    from timeline.storage.containment import TableMovedError

    root = tmp_path / "root"
    root.mkdir()
    folder = root / "trips"
    shutil.move(str(table_copy("sample_table/cow/v9_txns_simple_nometa")), str(folder))
    data = next(folder.rglob("*.parquet"))
    entry = f"file:{data}"

    checked = HudiTable.open(str(folder))
    checked.ensure_located(roots=[str(root)])
    assert checked.containment.data_path(entry) == str(data)
    with pytest.raises(TableMovedError, match="outside the allowed roots"):
        HudiTable.open(str(folder)).ensure_located(roots=[str(tmp_path / "other")])

    elsewhere = tmp_path / "outside" / "trips"
    elsewhere.parent.mkdir()
    shutil.move(str(folder), str(elsewhere))
    folder.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(OutsideTableError, match="outside the table"):  # swapped after the check
        checked.containment.data_path(entry)
    with pytest.raises(TableMovedError, match=f"now resolves to {elsewhere}"):  # swapped before it
        HudiTable.open(str(folder)).ensure_located(roots=[str(root)])
