"""A table version change stopped at each of its writes (an injected stop before each one, and
SIGKILL of a subprocess at chosen ones): the journal names the step, a dry run says it will be
finished first, and the next run finishes it and goes on to the target; the table then reads
wholly at the target version, with the same rows (hudi-rs), timeline, file-system view and a
valid metadata table where one is kept."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import ROOT, rows
from timeline import HudiTable
from timeline.mdt.reader import metadata_table
from timeline.mdt.validate import validate_files
from timeline.versions.change import StopRequested, change_version, read_journal
from timeline.versions.rehearse import fsview_rows, timeline_rows

# (fixture, target, drop the metadata table): a v6 table with an insert_overwrite replacecommit
# up to 9 (its timeline moved to layout 2), a v9 table with a metadata table down to 6 (index
# partitions dropped at 8, then the metadata table dropped and the timeline moved to layout 1)
CASES = [("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable", 9, False),
         ("sample_table/cow/v9_timebasedkeygen_nonhivestyle", 6, True)]


def _labels(source: Path, work: Path, target: int, drop: bool) -> list[str]:
    seen: list[str] = []
    path = shutil.copytree(source, work / "labels")
    change_version(HudiTable.open(str(path)), target, dry_run=False, drop_metadata_table=drop,
                   checkpoint=seen.append)
    return seen


def _reads_as_before(path: Path, target: int, base: tuple[list, list, list]) -> None:
    table = HudiTable.open(str(path))
    assert table.version == target
    assert read_journal(table) is None and not (path / ".hoodie" / ".cleanline").exists()
    assert (timeline_rows(table), fsview_rows(table), rows(path)) == base
    mdt = metadata_table(table)
    assert mdt is None or validate_files(mdt).ok


def _stopper(at: int) -> Callable[[str], None]:
    """A checkpoint raising StopRequested at its `at`-th call (0-based)."""
    calls = iter(range(1 << 30))

    def stop(seen: str) -> None:
        if next(calls) == at:
            raise StopRequested(seen)
    return stop


@pytest.fixture(scope="module")
def stops(fixture_lake: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str, int]]:
    """Every case stopped before each of its writes, then run again: (case, label, index) of
    each stop, every check made inside (a failure fails the fixture, naming the stop)."""
    work = tmp_path_factory.mktemp("version-stops")
    done = []
    for table_id, target, drop in CASES:
        source = fixture_lake[table_id]
        base_table = HudiTable.open(str(source))
        base = (timeline_rows(base_table), fsview_rows(base_table), rows(source))
        labels = _labels(source, work / table_id, target, drop)
        assert labels[0] == "journal" and labels[-1] == "journal-removed"
        for index, label in enumerate(labels):
            path = shutil.copytree(source, work / table_id / f"stop{index}")
            stop = _stopper(index)

            table = HudiTable.open(str(path))
            with pytest.raises(StopRequested):
                change_version(table, target, dry_run=False, drop_metadata_table=drop, checkpoint=stop)
            reopened = HudiTable.open(str(path))  # hoodie.properties (or its backup) is always good
            journal = read_journal(reopened)
            if journal is not None:
                step = (int(journal["from"]), int(journal["to"]))
                assert reopened.version in step, (table_id, label)
                assert change_version(reopened, target, drop_metadata_table=drop).interrupted == step
            plan = change_version(reopened, target, dry_run=False, drop_metadata_table=drop)
            assert plan.done and (plan.resumed is not None) == (journal is not None), (table_id, label)
            _reads_as_before(path, target, base)
            done.append((table_id, label, index))
    return done


def test_version_change_stopped_before_any_write_is_finished_by_the_next_run(
        stops: list[tuple[str, str, int]]) -> None:
    labels = {(t, label.split(" ")[0]) for t, label, _ in stops}
    first, second = (c[0] for c in CASES)
    for kind in ("journal", "instant", "properties", "journal-removed"):
        assert (first, kind) in labels and (second, kind) in labels
    for kind in ("index-partitions-properties", "index-partition", "index-definitions", "metadata-table-properties",
                 "metadata-table-drop"):
        assert (second, kind) in labels
    assert len(stops) > 30


KILL = textwrap.dedent("""
    import os, signal, sys
    from timeline import HudiTable
    from timeline.versions.change import change_version
    calls = []
    def stop(label):
        calls.append(label)
        if len(calls) == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)
    change_version(HudiTable.open(sys.argv[1]), int(sys.argv[2]), dry_run=False, drop_metadata_table=True,
                   checkpoint=stop)
""")


@pytest.mark.parametrize("at", ["metadata-table-properties", "instant", "properties"])
def test_version_change_killed_mid_step_is_finished_by_the_next_run(fixture_lake: dict[str, Path], tmp_path: Path,
                                                                   at: str) -> None:
    table_id, target, _ = CASES[1]
    source = fixture_lake[table_id]
    base_table = HudiTable.open(str(source))
    base = (timeline_rows(base_table), fsview_rows(base_table), rows(source))
    labels = _labels(source, tmp_path, target, True)
    index = [i for i, label in enumerate(labels) if label.split(" ")[0] == at]
    chosen = index[len(index) // 2] + 1  # the middle one of its kind (1-based call count)
    path = shutil.copytree(source, tmp_path / "killed")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", KILL, str(path), str(target), str(chosen)], cwd=ROOT, env=env,
                          capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    table = HudiTable.open(str(path))
    journal = read_journal(table)
    assert journal is not None and table.version in (int(journal["from"]), int(journal["to"]))
    assert change_version(table, target, dry_run=False, drop_metadata_table=True).resumed is not None
    _reads_as_before(path, target, base)
