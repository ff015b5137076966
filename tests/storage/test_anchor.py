"""A run's changes go through the table's folder opened once (timeline/storage/anchor.py): a
folder swapped for a symbolic link to a copy outside the allowed roots during a run changes
nothing in the copy, the run stops with TableMovedError naming the folder, and what it left is
pending in the real table and runs again once the folder is back (issue 38, finding 1)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from tests.helpers import GUARDED_PARTITION as P
from tests.helpers import GUARDED_TIMES as T
from tests.helpers import Lake
from tests.storage.helpers import copied_aside, swap_back, swap_for_link, swap_when_deleted, tree_state
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import pending_cleans, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.cli import main
from timeline.doctor import plan_repair, run_repair
from timeline.instant import Instant, State
from timeline.rollback import rollback
from timeline.storage import FolderIdentity, TableMovedError, storage_for
from timeline.storage.arrow import LocalStorage

GROUPS = 40


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """The allowed root (the table goes in it) and a folder outside it (the attacker's copy)."""
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "root", tmp_path / "outside"


def folder_of_files(folder: Path, count: int) -> list[str]:
    (folder / "part").mkdir(parents=True)
    names = [str(folder / "part" / f"f{i:04d}.parquet") for i in range(count)]
    for name in names:
        Path(name).write_bytes(b"x")
    return names


def test_anchor_deletes_after_a_swap_change_nothing_in_the_copy(place: tuple[Path, Path]) -> None:
    root, outside = place
    folder = root / "t"
    names = folder_of_files(folder, 20)
    storage = LocalStorage()
    storage.anchor(str(folder), "file:t")
    assert storage.delete_many(names[:10]) == dict.fromkeys(names[:10], "deleted")
    copy = outside / "t"
    before = copied_aside(folder, copy)
    moved = swap_for_link(folder, copy)

    with pytest.raises(TableMovedError, match=f"{folder}.*moved during the run"):
        storage.delete_many(names[10:])
    for change in (lambda: storage.delete(names[10]), lambda: storage.write(f"{folder}/part/new", b"x"),
                   lambda: storage.delete_dir(f"{folder}/part"), lambda: storage.makedirs(f"{folder}/other"),
                   lambda: storage.write_arrow(f"{folder}/part/a.arrow", pa.table({"a": [1]}))):
        with pytest.raises(TableMovedError):
            change()
    assert tree_state(copy) == before
    assert len(os.listdir(moved / "part")) == 10  # nothing more changed in the real folder either

    swap_back(folder, moved)  # back in place: the same handles go on
    assert storage.delete_many(names[10:]) == dict.fromkeys(names[10:], "deleted")
    storage.release()


def test_anchor_subfolder_swapped_for_a_link_is_not_followed(place: tuple[Path, Path]) -> None:
    root, outside = place
    folder = root / "t"
    names = folder_of_files(folder, 4)
    (folder / "other").mkdir()
    storage = LocalStorage()
    storage.anchor(str(folder), "file:t")
    assert storage.delete(names[0])  # the run holds `part` open now
    shutil.copytree(folder / "part", outside / "part")
    shutil.copytree(folder / "other", outside / "other")
    before = tree_state(outside)
    (folder / "part").rename(folder / "part.moved")
    (folder / "part").symlink_to(outside / "part", target_is_directory=True)
    (folder / "other").rmdir()
    (folder / "other").symlink_to(outside / "other", target_is_directory=True)

    with pytest.raises(TableMovedError, match=f"{folder}/part"):  # held: replaced since it was opened
        storage.delete_many(names[1:])
    with pytest.raises(TableMovedError, match=f"{folder}/other.*symbolic link"):  # opened now: not followed
        storage.write(f"{folder}/other/new.parquet", b"x")
    with pytest.raises(TableMovedError, match="symbolic link"):
        storage.delete_dir(f"{folder}/other")
    assert tree_state(outside) == before
    storage.release()


def test_anchor_refuses_a_folder_other_than_the_registered_one(place: tuple[Path, Path]) -> None:
    root, _ = place
    folder = root / "t"
    folder_of_files(folder, 1)
    registered = LocalStorage().anchor(str(folder), "file:t")
    assert registered == FolderIdentity(folder.stat().st_dev, folder.stat().st_ino)
    folder.rename(root / "old")
    shutil.copytree(root / "old", folder)  # the same path, another folder: restored, or planted
    with pytest.raises(TableMovedError, match="is not the folder registered"):
        LocalStorage().anchor(str(folder), "file:t", registered)


def lake_with_clean(root: Path) -> Lake:
    """A local table whose pending clean deletes 2 x GROUPS files."""
    lake = Lake(LocalStorage(), str(root / "lake"), version=8)
    for t in T[:5]:
        lake.commit(t, {P: [lake.base_file(P, f"fg{g}", t) for g in range(GROUPS)]})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=2)
    schedule_clean(table, plan_clean(table, config), config, force=True)
    return lake


def test_anchor_clean_swapped_mid_run_changes_nothing_outside_and_stays_pending(place: tuple[Path, Path]) -> None:
    root, outside = place
    lake = lake_with_clean(root)
    folder = Path(lake.base)
    copy = outside / "lake"
    before = copied_aside(folder, copy)
    table = HudiTable.open(lake.base)
    table.ensure_located(roots=[str(root)])
    moved: list[Path] = []

    def swap(_: object) -> None:
        if not moved:
            moved.append(swap_for_link(folder, copy))

    with pytest.raises(TableMovedError, match=f"{folder}.*moved during the run"):
        run_pending_cleans(table, progress=swap, parallelism=1)
    assert tree_state(copy) == before  # no file deleted, no .clean written outside
    swap_back(folder, moved[0])
    table = HudiTable.open(lake.base)
    (pending,) = pending_cleans(table)
    assert pending.state is State.INFLIGHT and not table.timeline.cleans().completed()

    table.ensure_located(roots=[str(root)])
    (result,) = run_pending_cleans(table)  # runs again once the folder is back
    assert result.failed == 0 and result.deleted + result.already_gone == 2 * GROUPS
    assert not pending_cleans(table.reload())


def test_anchor_rollback_swapped_mid_run_changes_nothing_outside(place: tuple[Path, Path]) -> None:
    root, outside = place
    lake = Lake(LocalStorage(), str(root / "lake"), version=8)
    lake.commit(T[0], {P: [lake.base_file(P, f"fg{g}", T[0]) for g in range(GROUPS)]})
    lake.commit(T[1], {P: [lake.base_file(P, f"fg{g}", T[1]) for g in range(GROUPS)]}, state=State.INFLIGHT)
    folder = Path(lake.base)
    copy = outside / "lake"
    before = copied_aside(folder, copy)
    table = HudiTable.open(lake.base)
    table.ensure_located(roots=[str(root)])
    moved: list[Path] = []

    def swap_at_the_second_change() -> None:  # the held-lock check before each change: the library's own hook
        if len(moved) < 2:
            moved.append(swap_for_link(folder, copy) if moved else folder)

    table.publish_check = swap_at_the_second_change
    with pytest.raises(TableMovedError, match=f"{folder}.*moved during the run"):
        rollback(table, T[1])
    assert tree_state(copy) == before
    swap_back(folder, moved[1])
    table = HudiTable.open(lake.base)
    assert table.timeline.find(T[1]) is not None  # the write is still there to roll back, the rollback pending
    table.ensure_located(roots=[str(root)])
    rollback(table, T[1])
    assert table.reload().timeline.find(T[1]) is None


def test_anchor_orphan_repair_swapped_mid_run_changes_nothing_outside(place: tuple[Path, Path]) -> None:
    root, outside = place
    lake = Lake(LocalStorage(), str(root / "lake"), version=8)
    lake.commit(T[0], {P: [lake.base_file(P, f"fg{g}", T[0]) for g in range(GROUPS)]})
    for g in range(GROUPS):  # files no instant wrote
        lake.base_file(P, f"orphan{g}", "20261102000000000")
    folder = Path(lake.base)
    old = 1_000_000_000
    for item in folder.rglob("*"):
        os.utime(item, (old, old))
    plan = plan_repair(HudiTable.open(lake.base), "orphan-files")
    assert len(plan.changes) == GROUPS
    copy = outside / "lake"
    before = copied_aside(folder, copy)
    table = HudiTable.open(lake.base)
    table.ensure_located(roots=[str(root)])
    moved: list[Path] = []

    def swap_before_the_deletes() -> None:  # the held-lock check before each batch of deletes
        if not moved:
            moved.append(swap_for_link(folder, copy))

    table.publish_check = swap_before_the_deletes
    with pytest.raises(TableMovedError, match=f"{folder}.*moved during the run"):
        run_repair(table, plan, dry_run=False)
    assert tree_state(copy) == before
    swap_back(folder, moved[0])
    table = HudiTable.open(lake.base)
    table.ensure_located(roots=[str(root)])
    result = run_repair(table, plan, dry_run=False)  # once the folder is back
    assert result.ok and len(result.done) == GROUPS


def test_anchor_instant_files_land_in_the_table_held(place: tuple[Path, Path]) -> None:
    """A write of the run after a swap is refused, not made in the copy (the completed clean of
    the issue was written outside)."""
    root, outside = place
    lake = lake_with_clean(root)
    folder = Path(lake.base)
    copy = outside / "lake"
    shutil.copytree(folder, copy)
    table = HudiTable.open(lake.base)
    table.ensure_located(roots=[str(root)])
    swap_for_link(folder, copy)
    with pytest.raises(TableMovedError):
        table.storage.write(f"{lake.base}/.hoodie/timeline/{Instant(T[9], 'clean', State.REQUESTED).file_name(2)}",
                            b"")
    assert not any(p.name.startswith(T[9]) for p in (copy / ".hoodie" / "timeline").iterdir())


def test_anchor_a_run_worker_holds_the_folder_the_driver_checked(place: tuple[Path, Path]) -> None:
    """A Spark executor's storage (`storage_for(..., anchored=identity)`) holds the folder the
    driver located: a swap before or during its task changes nothing outside."""
    root, outside = place
    folder = root / "t"
    names = folder_of_files(folder, 4)
    table_folder = LocalStorage()
    identity = table_folder.anchor(str(folder), "file:t")
    worker, _ = storage_for(str(folder), anchored=identity)
    assert worker.delete(names[0])
    copy = outside / "t"
    before = copied_aside(folder, copy)
    moved = swap_for_link(folder, copy)
    with pytest.raises(TableMovedError, match="moved during the run"):
        worker.delete_many(names[1:])
    with pytest.raises(TableMovedError):  # a worker starting after the swap
        storage_for(str(folder), anchored=identity)
    assert tree_state(copy) == before
    swap_back(folder, moved)
    worker.release()
    table_folder.release()


def test_anchor_a_held_folder_removed_is_gone_not_moved(place: tuple[Path, Path]) -> None:
    """A subfolder the run holds, removed by someone else with nothing in its place: its files
    are already gone (not a swap)."""
    root, _ = place
    folder = root / "t"
    names = folder_of_files(folder, 3)
    storage = LocalStorage()
    storage.anchor(str(folder), "file:t")
    assert storage.delete(names[0])
    shutil.rmtree(folder / "part")
    assert storage.delete_many(names[1:]) == dict.fromkeys(names[1:], "gone")
    assert not storage.delete(names[1])
    storage.release()


@pytest.mark.parametrize("through_link", [False, True])
def test_anchor_cli_clean_swapped_at_its_first_delete_changes_nothing_outside(
        place: tuple[Path, Path], capsys: pytest.CaptureFixture[str], through_link: bool) -> None:
    """`cleanline clean run` opens no location check (no roots, no registered identity): its run
    holds the folder from its first change all the same (`Transactions.state_change`); a table
    named through a symbolic link to its folder is held where the link leads, for both paths."""
    root, outside = place
    lake = Lake(LocalStorage(), str(root / "lake"), version=8)
    for t in T[:4]:
        lake.commit(t, {f"p={p}": [lake.base_file(f"p={p}", f"g{g}", t) for g in range(100)] for p in range(20)})
    table = HudiTable.load(lake.storage, lake.base)
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    schedule_clean(table, plan, config, force=True)
    (clean,) = pending_cleans(table)
    doomed = [Path(table.storage.path_of(d.path)) for d in plan.files_to_delete]
    assert len(doomed) == 4000
    folder = Path(lake.base)
    copy = outside / "lake"
    before = copied_aside(folder, copy)

    named = folder
    if through_link:
        named = root / "link"
        named.symlink_to(folder, target_is_directory=True)
    watcher, moved = swap_when_deleted(doomed[::100], folder, copy)
    code = main(["clean", "run", str(named)])
    watcher.join(timeout=30)
    assert moved, "the swap must happen during the run for this test to mean anything"
    assert code != 0
    err = capsys.readouterr().err
    assert "the table's folder moved" in err and "Traceback" not in err
    assert tree_state(copy) == before  # no file deleted, no .clean written outside
    swap_back(folder, moved[0])
    table = HudiTable.open(lake.base)
    assert [c.requested_time for c in pending_cleans(table)] == [clean.requested_time]
    assert not table.timeline.cleans().completed()


def test_anchor_a_base_named_through_a_link_is_held_for_both_paths(place: tuple[Path, Path]) -> None:
    """A table named through a symbolic link (`Table.hold_folder`): the folder it leads to is held,
    and a change spelled through the link goes through that handle too."""
    root, outside = place
    folder = root / "t"
    folder_of_files(folder, 2)
    link = root / "link"
    link.symlink_to(folder, target_is_directory=True)
    storage = LocalStorage()
    storage.anchor(str(folder), "file:link", alias=str(link))
    assert storage.delete(f"{link}/part/f0000.parquet") and not (folder / "part" / "f0000.parquet").exists()
    copy = outside / "t"
    before = copied_aside(folder, copy)
    moved = swap_for_link(folder, copy)
    for change in (lambda: storage.write(f"{link}/part/new", b"x"),
                   lambda: storage.delete(f"{link}/part/f0001.parquet")):
        with pytest.raises(TableMovedError):
            change()
    assert tree_state(copy) == before
    swap_back(folder, moved)
    storage.release()
