"""Containment (timeline/storage/containment.py): nothing outside the table is deleted. Every
path a clean, a rollback or a drop of the metadata table names is resolved (scheme, `..`,
encoded forms, symbolic links) and the plan refused whole if one lies outside; allowed roots
match on whole resolved segments; a registered table's folder is checked again before a change
and pinned for it (`ensure_located`). Each test is a hostile case that deleted data before."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import GUARDED_PARTITION as P
from tests.helpers import GUARDED_TIMES as T
from tests.helpers import Lake, elsewhere, guarded_lake, own_file, table_files
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.instant import CLEAN, Instant, State
from timeline.mdt import drop_metadata_table
from timeline.rollback import preview_failed_write, rollback
from timeline.storage import OutsideTableError, UnsupportedLocationError, parse_location, within_roots


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    """A local table beside a folder `elsewhere` holding files that must survive."""
    return guarded_lake(tmp_path, request.param)


def hostile_clean(lake: Lake, time: str, *, files: list[str] = (), partitions: list[str] = ()) -> None:
    """A pending clean written by someone else, naming what it likes."""
    plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": T[4], "policy": "KEEP_LATEST_COMMITS",
            "filesToBeDeletedPerPartition": {}, "version": 2,
            "filePathsToBeDeletedPerPartition": {P: [{"filePath": f, "isBootstrapBaseFile": False} for f in files]},
            "partitionsToBeDeleted": list(partitions), "extraMetadata": None}
    lake.instant_file(Instant(time, CLEAN, State.REQUESTED), plan)


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
def test_containment_clean_naming_a_path_outside_the_table_deletes_nothing(lake: Lake, entry: str) -> None:
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
def test_containment_clean_deleting_a_partition_outside_the_table_is_refused(lake: Lake, partition: str) -> None:
    hostile_clean(lake, T[10], files=[own_file(lake, T[0])], partitions=[partition or "."])
    before = table_files(lake)
    with pytest.raises(OutsideTableError):
        run_pending_cleans(HudiTable.load(lake.storage, lake.base))
    assert all(p.exists() for p in elsewhere(lake)) and table_files(lake) == before


def test_containment_symlinks_out_of_the_table_are_refused(lake: Lake) -> None:
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


def test_containment_metadata_table_symlinked_out_is_not_removed(lake: Lake) -> None:
    out = Path(lake.base).parent / "elsewhere"
    (Path(lake.base) / ".hoodie" / "metadata").symlink_to(out / "dir", target_is_directory=True)
    with pytest.raises(OutsideTableError):
        drop_metadata_table(HudiTable.load(lake.storage, lake.base))
    assert all(p.exists() for p in elsewhere(lake))


def test_containment_rollback_plan_naming_a_path_outside_is_refused_and_previewed_as_such(lake: Lake) -> None:
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


# Allowed roots: parsed, never opened

def test_containment_roots_match_whole_resolved_segments(tmp_path: Path, no_store: list[str]) -> None:
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


def test_containment_plans_keep_working_on_ordinary_tables(lake: Lake) -> None:
    """The rules refuse only what they should: a normal clean still runs."""
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=2)
    schedule_clean(table, plan_clean(table, config), config, force=True)
    (result,) = run_pending_cleans(table)
    assert result.deleted == 2 and all(p.exists() for p in elsewhere(lake))
    shutil.rmtree(Path(lake.base).parent / "elsewhere")


def test_containment_ensure_located_refuses_a_swapped_folder_and_pins_the_checked_one(
        tmp_path: Path, table_copy) -> None:
    """The location rule of every change (`HudiTable.ensure_located`): a folder swapped for a
    symbolic link before the check is refused; after it, the checked folder is held open, so a
    path the change deletes reaches the folder checked or nothing (tests/storage/test_anchor.py)."""
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
    copy = elsewhere / data.relative_to(folder)
    with pytest.raises(TableMovedError, match="moved during the run"):  # swapped after the check
        checked.storage.delete(checked.containment.data_path(entry))
    assert copy.exists()
    with pytest.raises(TableMovedError, match=f"now resolves to {elsewhere}"):  # swapped before it
        HudiTable.open(str(folder)).ensure_located(roots=[str(root)])


def test_containment_one_per_table_until_it_is_located_again(lake: Lake, tmp_path: Path) -> None:
    """A run's paths are checked by one containment, which resolves and lists each folder once
    (issue 38, finding 4: a new one per path re-listed the folder for every orphan: quadratic);
    locating or reloading the table starts a new one."""
    table = HudiTable.load(lake.storage, lake.base)
    first = table.containment
    assert table.containment is first
    first.data_path(own_file(lake, T[0]))
    assert table.containment._folders == first._folders and len(first._folders) == 1
    table.ensure_located(roots=[str(tmp_path)])
    located = table.containment
    assert located is not first and table.containment is located
    assert table.reload().containment is not located
