"""The orphan repair's re-check under the table's lock (timeline/doctor/orphans.py, issue 38):
on a folder the run holds it asks each planned file's status through the folder's handle and
decides it again by the rule (`_held`), and it answers exactly what the general re-check (a
listing of the planned files, the diagnosis over it, then the containment) answers on a storage
that holds no folder: the same files deleted, skipped and failed, each for the same reason, and
those deleted are the planned files the diagnosis finds at that moment. Whatever it cannot
decide itself (a planned symbolic link, folder or checksum file, a plan spelled otherwise, a
folder that is no partition) goes the general way before anything changes."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.doctor.helpers import CountingStorage, UnheldStorage
from tests.helpers import Lake
from timeline import HudiTable
from timeline.doctor import RepairPlan, RepairResult, plan_repair, run_repair
from timeline.doctor.findings import Change
from timeline.doctor.orphans import horizon, orphans
from timeline.doctor.survey import Survey, parse_data_name
from timeline.exceptions import InvalidFileNameError
from timeline.files import base_file_of, is_base_file_name, parse_log_file
from timeline.instant import State
from timeline.storage import OutsideTableError
from timeline.storage.arrow import LocalStorage

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)  # the repair runs as of this moment
T0, T1, PENDING, BEATING = "20261101000000000", "20261101010000000", "20261110000000000", "20261103000000000"
UNKNOWN, OLDER = "20261102000000000", "20261001000000000"
P, P2 = "city=sf", "city=ny"
OLD_MS = int(datetime(2026, 11, 5, tzinfo=UTC).timestamp() * 1000)


def _at(path: str, ms: int) -> None:
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000), follow_symlinks=False)


def build(base: str, version: int) -> tuple[Lake, dict[str, str]]:
    """A merge-on-read table with every kind of file the rule decides, aged; returns it and
    the files to be given to the plan (relative path -> what the rule makes of it at NOW)."""
    lake = Lake(LocalStorage(), base, version=version, table_type="MERGE_ON_READ")
    lake.commit(OLDER, {P: [lake.base_file(P, "fgold", OLDER)]})
    named = lake.base_file(P, "fg0", T0)
    lake.commit(T0, {P: [named], P2: [lake.base_file(P2, "fg2", T0)]})
    log = lake.log_file(P, "fg0", T0)
    lake.commit(T1, {P: [log]})
    lake.commit(PENDING, {P: []}, state=State.INFLIGHT)
    empty = "20261101020000000"  # a completed write without write stats: its files kept
    (Path(lake.timeline_folder) / lake.commit(empty, {}).file_name(lake.layout)).write_bytes(b"")
    files = {
        f"{P}/{named}": "named",
        f"{P}/{log}": "named",
        f"{P}/{lake.base_file(P, 'dup', T0)}": "orphan",              # a completed commit's unnamed output
        f"{P}/{lake.base_file(P, 'lost', UNKNOWN)}": "orphan",        # an instant on no timeline
        f"{P2}/{lake.base_file(P2, 'lost2', UNKNOWN)}": "orphan",     # another folder
        f"{P}/{lake.base_file(P, 'pend', PENDING)}": "kept",          # a pending write's
        f"{P}/{lake.base_file(P, 'beat', BEATING)}": "kept",          # a live heartbeat's
        f"{P}/{lake.base_file(P, 'older', '20260901000000000')}": "kept",  # older than every instant
        f"{P}/{lake.base_file(P, 'boot', '00000000000001')}": "kept",      # a bootstrap instant's
        f"{P}/{lake.base_file(P, 'empty', empty)}": "kept",           # a write without write stats
        f"{P}/{lake.log_file(P, 'fg0', T0, version=2)}": "kept",      # a known file group's log, known instant
        f"{P}/{lake.log_file(P, 'stray', T0)}": "orphan",             # an unknown file group's log
        f"{P}/{lake.log_file(P, 'fg0', UNKNOWN)}": "orphan",          # a known group's log, unknown instant
        f"{P}/{lake.base_file(P, 'young', UNKNOWN)}": "young",        # too young
        f"{P}/{lake.base_file(P, 'epoch', UNKNOWN)}": "epoch",        # a time of 0
        f"{P}/{lake.base_file(P, 'halfms', UNKNOWN)}": "half-ms",     # half a millisecond after it: 0 ms
        f"{P}/{lake.base_file(P, 'atlimit', UNKNOWN)}": "at-limit",   # at the horizon: too young
        f"{P}/{lake.base_file(P, 'justold', UNKNOWN)}": "before-limit",
        f"{P}/{lake.base_file(P, 'gone', UNKNOWN)}": "gone",          # deleted before the run
        f"{P}/{lake.data_file(P, 'notes.txt')}": "kept",              # no data file
        f"{P}/.hoodie_partition_metadata": "kept",
    }
    Path(base, P, f".{files_named(files, 'orphan')[0].split('/')[1]}.crc").write_bytes(b"crc")  # Hadoop's checksum
    heartbeat = Path(base, ".hoodie", ".heartbeat", BEATING)
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    heartbeat.write_bytes(b"")
    for item in Path(base).rglob("*"):
        _at(str(item), OLD_MS)
    _at(str(heartbeat), int(NOW.timestamp() * 1000))  # alive as of NOW
    limit, _ = horizon(Survey(HudiTable.open(base), now=NOW))
    for name, ms in {"young": int(NOW.timestamp() * 1000), "epoch": 0, "at-limit": limit,
                     "before-limit": limit - 1}.items():
        _at(f"{base}/{files_named(files, name)[0]}", ms)
    os.utime(f"{base}/{files_named(files, 'half-ms')[0]}", ns=(500_000, 500_000))
    return lake, files


def files_named(files: dict[str, str], what: str) -> list[str]:
    return [path for path, kind in files.items() if kind == what]


def plan_of(base: str, relative: list[str]) -> RepairPlan:
    """An approved plan deleting these files (what a plan made earlier may name: the table changed since)."""
    uri = HudiTable.open(base).uri
    return RepairPlan(uri, "orphan-files", (), tuple(Change("delete", f"file:{base}/{r}", 1, "planned")
                                                      for r in relative))


def outcome(base: str, result: RepairResult) -> tuple[list[str], list[tuple[str, str]], list[tuple[str, str]]]:
    cut = len(f"file:{base}/")
    return ([c.target[cut:] for c in result.done], [(c.target[cut:], why) for c, why in result.skipped],
            [(c.target[cut:], why.replace(base, "<base>")) for c, why in result.failed])


def both(tmp_path: Path, version: int, prepare: Callable[[Lake, dict[str, str]], list[str]]
         ) -> tuple[tuple, tuple, dict[str, CountingStorage], dict[str, str]]:
    """The repair of what `prepare` plans (and changes) on two copies of the table: one through
    the held folder, one on a storage that holds none (the general re-check); and the files."""
    results, storages = [], {}
    for held in (True, False):
        base = str(tmp_path / ("held" if held else "unheld") / "t")
        lake, files = build(base, version)
        planned = prepare(lake, files)
        storage = CountingStorage() if held else UnheldStorage()
        table = HudiTable.load(storage, base)
        table.ensure_located(roots=[str(tmp_path)])
        results.append(outcome(base, run_repair(table, plan_of(base, planned), now=NOW, dry_run=False)))
        storages["held" if held else "unheld"] = storage
    return results[0], results[1], storages, files


@pytest.mark.parametrize("version", [6, 8])
def test_orphan_repair_held_recheck_decides_as_the_diagnosis(tmp_path: Path, version: int) -> None:
    expected: list[list[str]] = []

    def prepare(lake: Lake, files: dict[str, str]) -> list[str]:
        os.unlink(f"{lake.base}/{files_named(files, 'gone')[0]}")
        found = orphans(Survey(HudiTable.open(lake.base), now=NOW))[0]
        expected.append(sorted(f"{d.partition}/{d.status.name}" for d, _ in found))
        return sorted(files)

    held, unheld, storages, files = both(tmp_path, version, prepare)

    assert held == unheld
    done, skipped, failed = held
    assert sorted(done) == expected[0] == expected[1]
    assert sorted(done) == sorted(files_named(files, "orphan") + files_named(files, "before-limit"))
    assert not failed
    assert sorted(path for path, _ in skipped) == sorted(set(files) - set(done))
    assert {why for _, why in skipped} == {"no longer found when diagnosed again under the table's lock"}
    assert storages["held"].named and not storages["held"].listed[f"{tmp_path}/held/t/{P}"]  # the held way
    assert storages["unheld"].listed[f"{tmp_path}/unheld/t/{P}"] == 1
    for place in ("held", "unheld"):  # the checksum file went with its file, nothing else did
        left = {f"{P}/{p.name}" for p in (tmp_path / place / "t" / P).iterdir()}
        assert not [n for n in left if n.endswith(".crc")]
        assert left >= {path for path, kind in files.items() if path.startswith(P + "/") and kind not in (
            "orphan", "before-limit", "gone")}


@pytest.mark.parametrize("odd", ["symlink", "folder", "checksum", "spelled", "twice", "not-a-partition"])
def test_orphan_repair_held_recheck_leaves_what_it_cannot_decide_to_the_general_way(tmp_path: Path, odd: str) -> None:
    link = f"{P}/link_1-0-1_{UNKNOWN}.parquet"

    def prepare(lake: Lake, files: dict[str, str]) -> list[str]:
        planned = sorted(files_named(files, "orphan"))
        folder = Path(lake.base, P)
        if odd == "symlink":  # a link, named as an orphan, to a file of the table (the link goes, not the file)
            Path(lake.base, link).symlink_to(Path(lake.base, files_named(files, "named")[0]))
            _at(f"{lake.base}/{link}", OLD_MS)
            planned.append(link)
        elif odd == "folder":
            (folder / f"dir_1-0-1_{UNKNOWN}.parquet").mkdir()
            planned.append(f"{P}/dir_1-0-1_{UNKNOWN}.parquet")
        elif odd == "checksum":
            planned.append(f"{P}/.{planned[0].split('/')[1]}.crc")
        elif odd == "spelled":
            planned.append(f"{P}/./{planned[0].split('/')[1]}")
        elif odd == "twice":
            planned.append(planned[0])
        else:  # a folder without partition metadata
            os.unlink(Path(lake.base, P2, ".hoodie_partition_metadata"))
        return planned

    held, unheld, storages, files = both(tmp_path, 8, prepare)

    assert held == unheld
    assert storages["held"].listed[f"{tmp_path}/held/t/{P}"] >= 1  # the general way: a listing
    assert held[0]  # orphans deleted all the same
    if odd == "symlink":
        assert link in held[0]
        assert all(Path(tmp_path, place, "t", files_named(files, "named")[0]).exists() for place in ("held", "unheld"))


def test_orphan_repair_held_recheck_keeps_what_became_referenced_since_the_plan(tmp_path: Path) -> None:
    """Planned orphans that a write names now, or that were touched since, are kept: the rule
    decides each again under the lock."""
    lake, files = build(str(tmp_path / "t"), 8)
    base = lake.base
    orphaned = sorted(files_named(files, "orphan") + files_named(files, "before-limit") + files_named(files, "gone"))
    plan = plan_repair(HudiTable.open(base), "orphan-files", now=NOW)
    assert sorted(c.target.removeprefix(f"file:{base}/") for c in plan.changes) == orphaned
    lost, touched = files_named(files, "orphan")[1], files_named(files, "before-limit")[0]
    lake.commit("20261104000000000", {P: [lost.split("/")[1]]})  # named now
    _at(f"{base}/{touched}", int(time.time() * 1000))            # touched now
    table = HudiTable.open(base)
    table.ensure_located(roots=[str(tmp_path)])

    result = run_repair(table, plan, now=NOW, dry_run=False)

    kept = {c.target.removeprefix(f"file:{base}/") for c, _ in result.skipped}
    assert kept == {lost, touched}
    assert all(Path(base, k).exists() for k in kept)
    assert sorted(c.target.removeprefix(f"file:{base}/") for c in result.done) == sorted(set(orphaned) - kept)


@pytest.mark.parametrize("doubt", ["unreadable", "no-instant"])
def test_orphan_repair_held_recheck_keeps_everything_when_nothing_can_be_proved(tmp_path: Path, doubt: str) -> None:
    """A state file that no longer decodes (or a timeline that knows no instant any more) since
    the plan: the rule proves nothing, every planned file is kept, held folder or not."""
    def prepare(lake: Lake, files: dict[str, str]) -> list[str]:
        timeline = Path(lake.timeline_folder)
        completed = [p for p in timeline.iterdir() if p.name.startswith(T0) and p.suffix == ".deltacommit"]
        if doubt == "unreadable":
            completed[0].write_bytes(b"{not json")
        else:
            for item in timeline.iterdir():
                if item.is_file():
                    item.unlink()
        return sorted(files_named(files, "orphan"))

    held, unheld, storages, files = both(tmp_path, 8, prepare)

    assert held == unheld
    assert not held[0] and not held[2] and len(held[1]) == len(files_named(files, "orphan"))
    assert storages["held"].named  # decided the held way


def test_orphan_repair_a_planned_link_out_of_the_table_refuses_the_repair_either_way(tmp_path: Path) -> None:
    """A planned name that is a symbolic link to a file outside the table is not followed nor
    decided by its status: the containment resolves it and refuses the whole repair, nothing
    deleted, held folder or not."""
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"x")
    for held in (True, False):
        lake, files = build(str(tmp_path / str(held) / "t"), 8)
        link = f"{P}/link_1-0-1_{UNKNOWN}.parquet"
        Path(lake.base, link).symlink_to(outside)
        _at(f"{lake.base}/{link}", OLD_MS)
        table = HudiTable.load(CountingStorage() if held else UnheldStorage(), lake.base)
        table.ensure_located(roots=[str(tmp_path)])
        planned = [*files_named(files, "orphan"), link]

        with pytest.raises(OutsideTableError, match="outside the table"):
            run_repair(table, plan_of(lake.base, planned), now=NOW, dry_run=False)

        assert outside.exists() and all(Path(lake.base, p).exists() for p in planned)


@given(st.text(alphabet="._-0123456789abfgilnopqrtuc", max_size=40)
       | st.builds(lambda a, b, c, ext: f"{a}_{b}_{c}{ext}", st.text("_.-0123a", max_size=6),
                   st.text("_.-0123a", max_size=6), st.text("_.-0123a", max_size=8),
                   st.sampled_from([".parquet", ".orc", ".hfile", ".lance", ".log", ".parquet.x", ""])))
@settings(max_examples=400, deadline=None)
def test_orphan_repair_a_names_parse_is_the_file_names_module(name: str) -> None:
    """The rule's parse of a name (`parse_data_name`, inlined for the re-check of many files)
    is `timeline/files.py`'s: a log file by its pattern, a base file by its extension, its file
    id and instant as `base_file_of` reads them."""
    expected: tuple[str, str, bool] | None = None
    if name.startswith("."):
        if ".log." in name:
            try:
                log = parse_log_file(name)
                expected = (log.file_id, log.instant_time, True)
            except InvalidFileNameError:
                pass
    elif name and is_base_file_name(name):
        try:
            base = base_file_of(name)
            expected = (base.file_id, base.instant_time, False)
        except InvalidFileNameError:
            pass
    assert (parse_data_name(name) if name else None) == expected
