"""The metadata table's own timeline archived by its own rules (timeline/archive/retain.py
`earliest_instant_for_metadata_archival`, settings.py `metadata_table_settings` and
`metadata_table_clean`, plan.py `plan_metadata_archival`): Hudi's data-table writer archives the
metadata table after each metadata-table write (`HoodieBackedTableMetadataWriter.
performTableServices`) with keep counts one above the data table's, its own compaction window
(`hoodie.metadata.compact.max.delta.commits`) and never from the data table's earliest active
commit or pending instant on. Hand-made timelines transcribed from Hudi's
`TestTimelineUtils.testGetEarliestInstantForMetadataArchival` and
`TestHoodieTimelineArchiver.testArchivalAndCompactionInMetadataTable`, for table versions 6 and 8."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.archive.helpers import ArchivalLake, expected_row, lsm_rows, t, times
from tests.helpers import FIXTURES, rows, tree_snapshot, unzip_table
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.archive.archiver import archive_instants, run_archival
from timeline.archive.plan import ArchivalPlan, ArchivalUnsupported
from timeline.archive.retain import earliest_instant_for_metadata_archival
from timeline.archive.rules import BlockerKind
from timeline.archive.settings import ArchivalSettings, metadata_table_clean, metadata_table_settings
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.cli import main
from timeline.exceptions import CleanlineError
from timeline.instant import Instant, State
from timeline.timeline import Timeline

C, INF, R = State.COMPLETED, State.INFLIGHT, State.REQUESTED
MDT_INIT = "00000000000000000"  # instantTimePlusMillis(SOLO_COMMIT_TIMESTAMP, 0)


def earliest(instants: list[tuple[State, str, str]], *, beyond: bool = False) -> tuple[str, str, State] | None:
    found = earliest_instant_for_metadata_archival(Timeline.of(Instant(time, action, state)
                                                               for state, action, time in instants),
                                                   beyond_savepoint=beyond)
    return None if found is None else (found.requested_time, found.action, found.state)


def test_earliest_instant_for_metadata_archival() -> None:
    """TestTimelineUtils.testGetEarliestInstantForMetadataArchival, case by case."""
    assert earliest([]) is None
    # an earlier requested clean before the commits
    assert earliest([(C, "rollback", "001"), (C, "clean", "002"), (R, "clean", "003"), (C, "commit", "010"),
                     (C, "replacecommit", "011"), (R, "clustering", "012")]) == ("003", "clean", R)
    # no inflight instant before the first commit
    assert earliest([(C, "rollback", "001"), (C, "clean", "002"), (C, "clean", "003"), (C, "commit", "010"),
                     (C, "replacecommit", "011"), (R, "clustering", "012")]) == ("010", "commit", C)
    # rollbacks only
    rollbacks = [(C, "rollback", "001"), (C, "rollback", "002"), (INF, "rollback", "003")]
    assert earliest(rollbacks) == ("003", "rollback", INF)
    assert earliest([(C, "rollback", "001"), (C, "rollback", "002"), (C, "rollback", "003")]) is None
    # with savepoints: the first commit, or with archive-beyond-savepoint the first not savepointed
    savepointed = [(C, "rollback", "001"), (C, "commit", "003"), (C, "savepoint", "003"), (C, "commit", "010"),
                   (C, "commit", "011")]
    assert earliest(savepointed) == ("003", "commit", C)
    assert earliest(savepointed, beyond=True) == ("010", "commit", C)


def test_metadata_table_settings_derived_from_the_data_table() -> None:
    """HoodieMetadataWriteUtils.createMetadataWriteConfig: keep counts one above the data
    table's; its own compaction trigger; nothing else borrowed (archive beyond savepoint, the
    metaserver and `hoodie.archive.automatic` at Hudi's defaults, the writer calling archive()
    anyway). The cleaner: 1.x borrows the data table's policy, retaining 1.2 x as much (at
    least 20 commits); 0.14/0.15 keeps 20 commits."""
    data = ArchivalSettings(min_commits=4, max_commits=6, beyond_savepoint=True, automatic=False, metaserver=True)
    mdt = metadata_table_settings(data, {"hoodie.metadata.compact.max.delta.commits": "8"})
    assert (mdt.min_commits, mdt.max_commits, mdt.compaction_max_delta_commits) == (5, 7, 8)
    assert (mdt.beyond_savepoint, mdt.automatic, mdt.metaserver) == (False, True, False)
    assert metadata_table_settings(ArchivalSettings(), {}).compaction_max_delta_commits == 10
    assert metadata_table_clean(CleanConfig(commits_retained=1), table_version=8).commits_retained == 20
    assert metadata_table_clean(CleanConfig(commits_retained=30), table_version=8).commits_retained == 36
    versions = metadata_table_clean(CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS,
                                                file_versions_retained=3), table_version=9)
    assert (versions.policy, versions.file_versions_retained) == (CleanPolicy.KEEP_LATEST_FILE_VERSIONS, 4)
    by_hours = CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=5)
    assert metadata_table_clean(by_hours, table_version=8).hours_retained == 6
    old = metadata_table_clean(by_hours, table_version=6)
    assert (old.policy, old.commits_retained) == (CleanPolicy.KEEP_LATEST_COMMITS, 20)


OPTIONS = {"hoodie.keep.min.commits": "4", "hoodie.keep.max.commits": "6", "hoodie.clean.commits.retained": "1",
           "hoodie.metadata.compact.max.delta.commits": "8"}


def compaction_time(n: int) -> str:
    """The metadata table's compaction after the delta commit of t(n) (0.x: its time + "001")."""
    return t(n)[:-3] + "001"


def lake_at_write_10(version: int) -> ArchivalLake:
    """testArchivalAndCompactionInMetadataTable when write 10 starts: write 1 rolled back by
    the rollback at 2, writes 3-9 completed and 10 inflight on the data table; the metadata
    table holds its initial delta commit, those of writes 3-9 and the compaction that 8 delta
    commits triggered (write 1's was rolled back with it)."""
    lake = ArchivalLake(version, metadata_table=True)
    lake.rollback(2, of=1)
    for n in range(3, 10):
        lake.commit(n)
    lake.commit(10, state=INF)
    assert lake.mdt is not None
    lake.mdt.commit(MDT_INIT, action="deltacommit")
    for n in range(3, 10):
        lake.mdt.commit(t(n), action="deltacommit")
    lake.metadata_compaction(compaction_time(9))
    return lake


def drop(lake: ArchivalLake, *times_: str, mdt: bool = False) -> None:
    """Remove every state file of the instants at `times_` (as an archival or a finished write
    leaves the timeline), from the metadata table's timeline with `mdt`."""
    where = lake.mdt if mdt else lake.lake
    assert where is not None
    for status in list(where.storage.list(where.timeline_folder)):
        if status.name.startswith(times_):
            where.storage.delete(status.path)


def mdt_plan(lake: ArchivalLake) -> ArchivalPlan:
    return HudiTable.load(lake.lake.storage, "/t/.hoodie/metadata").inspect.archival(OPTIONS)


@pytest.mark.parametrize("version", [6, 8])
def test_archival_and_compaction_in_metadata_table_at_write_10(version: int) -> None:
    """testArchivalAndCompactionInMetadataTable, i == 10: the metadata table's initial delta
    commit is archived since it is older than the data table's earliest commit (3); the
    completed rollback at 2 does not block it; the data table's commits 3.. keep theirs."""
    lake = lake_at_write_10(version)
    plan = mdt_plan(lake)
    assert (plan.keep.min_instants, plan.keep.max_instants) == (5, 7)
    assert [i.requested_time for i in plan.instants] == [MDT_INIT]
    [held] = [b for b in plan.blockers if b.kind is BlockerKind.DATA_TABLE_TIMELINE]
    assert held.instant is not None and held.instant.requested_time == t(3)


@pytest.mark.parametrize("version", [6, 8])
def test_archival_and_compaction_in_metadata_table_at_write_11(version: int) -> None:
    """testArchivalAndCompactionInMetadataTable, i <= 13: once the data table archived 3-6
    (its timeline starts at 7), the metadata table's delta commits 3-6 go, 7 on stay with its
    compaction (the compaction window keeps the latest compaction)."""
    lake = lake_at_write_10(version)
    drop(lake, *times(2, 3, 4, 5, 6, 10))
    drop(lake, MDT_INIT, mdt=True)
    lake.commit(10)
    assert lake.mdt is not None
    lake.mdt.commit(t(10), action="deltacommit")
    plan = mdt_plan(lake)
    assert [i.requested_time for i in plan.instants] == times(3, 4, 5, 6)


@pytest.mark.parametrize("version", [6, 8])
def test_metadata_table_plan_follows_the_data_table_archival(version: int) -> None:
    """The data table's plan carries its metadata table's, made over the data table's
    timeline as its archival leaves it (what the next writer's table services archive): with
    write 10 done, the data table archives 3-6 and its metadata table then init and 3-6."""
    lake = lake_at_write_10(version)
    drop(lake, t(10))
    lake.commit(10)
    assert lake.mdt is not None
    lake.mdt.commit(t(10), action="deltacommit")
    plan = lake.table().inspect.archival(OPTIONS)
    data = [i.requested_time for i in plan.instants if i.action != "rollback"]
    assert data == times(3, 4, 5, 6)
    assert plan.metadata_table is not None
    assert [i.requested_time for i in plan.metadata_table.instants] == [MDT_INIT, *times(3, 4, 5, 6)]
    assert plan.metadata_table.table_uri.endswith("/.hoodie/metadata")


@pytest.mark.parametrize("version", [6, 8])
def test_metadata_table_pending_data_instant_holds_its_instants(version: int) -> None:
    """A pending instant of any action on the data table (here a requested clean requested
    between writes 4 and 5, older than its earliest commit, 7) bounds the metadata table's
    archival (getEarliestInstantForMetadataArchival): its delta commits 3 and 4 go, not 5 and 6."""
    lake = lake_at_write_10(version)
    drop(lake, *times(2, 3, 4, 5, 6, 10))
    drop(lake, MDT_INIT, mdt=True)
    lake.commit(10)
    assert lake.mdt is not None
    lake.mdt.commit(t(10), action="deltacommit")
    clean = t(4)[:-3] + "500"
    lake.lake.instant_file(Instant(clean, "clean", R), {
        "earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
        "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
        "partitionsToBeDeleted": [], "extraMetadata": None})
    plan = mdt_plan(lake)
    assert [i.requested_time for i in plan.instants] == times(3, 4)
    [held] = [b for b in plan.blockers if b.kind is BlockerKind.DATA_TABLE_TIMELINE]
    assert held.instant is not None and (held.instant.requested_time, held.instant.action) == (clean, "clean")


def test_metadata_table_archival_alone_is_refused() -> None:
    """The metadata table's archival runs with its data table's, under the data table's lock:
    asked for on its own, it is refused and nothing changes."""
    lake = lake_at_write_10(8)
    mdt = HudiTable.load(lake.lake.storage, "/t/.hoodie/metadata")
    with pytest.raises(ArchivalUnsupported, match="is a metadata table: archive its data table"):
        run_archival(mdt, options=OPTIONS)
    assert MDT_INIT in {i.requested_time for i in mdt.reload().timeline}


# On copies of real tables with a metadata table (v8 MOR, v9 COW and MOR)

SMALL = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
         "--hoodie-conf", "hoodie.clean.commits.retained=1"]
MDT_TABLES = [
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/cow/v9_txns_simple_meta",
    "sample_table/mor/avro/v9_txns_complex_meta",
]


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    assert code in (0, None), out
    return json.loads(out)


@pytest.mark.parametrize("table_id", MDT_TABLES)
def test_metadata_table_archived_with_its_data_table(table_copy: Callable[[str], Path], table_id: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`cleanline archive run` archives the metadata table's timeline after the data table's, as
    its plan says: the moved instants leave the metadata table's active timeline and its LSM
    history holds each with its original content (createLSMTimelineInstant's row, byte for
    byte); `cleanline mdt validate` is clean, `cleanline fsview --json` unchanged, hudi-rs reads
    the same rows now and as of every instant it could read before."""
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    readable = [i.requested_time for i in table.timeline.writes().completed()]
    rows_before = {t_: rows(path, t_) for t_ in readable}
    latest_before = rows(path)
    fsview_before = cli_json(capsys, "fsview", str(path))
    plan = cli_json(capsys, *SMALL, "archive", "plan", str(path))["metadataTable"]
    assert plan is not None and plan["archivable"] > 0, "the metadata table has instants to archive"
    mdt = HudiTable.open(str(path / ".hoodie" / "metadata"))
    wanted = [i["requestedTime"] for i in plan["instants"]]
    moving = [i for i in mdt.timeline if i.requested_time in wanted]
    expected = [expected_row(mdt, i) for i in moving]

    done = cli_json(capsys, *SMALL, "archive", "run", str(path), "--yes")
    assert [i["requestedTime"] for i in done["metadataTableArchived"]] == wanted

    mdt = HudiTable.open(str(path / ".hoodie" / "metadata"))
    assert not set(wanted) & {i.requested_time for i in mdt.timeline}, "moved off the metadata table's timeline"
    assert [(i.requested_time, i.completion_time) for i in load_archived_timeline(mdt)] == [
        (i.requested_time, i.completion_time) for i in moving]
    assert lsm_rows(path / ".hoodie" / "metadata" / ".hoodie" / "timeline" / "history") == expected
    assert cli_json(capsys, "mdt", "validate", str(path))["ok"]
    assert cli_json(capsys, "fsview", str(path)) == fsview_before
    assert rows(path) == latest_before
    for instant, before in rows_before.items():
        assert rows(path, instant) == before, f"as of {instant}"
    again = cli_json(capsys, *SMALL, "archive", "plan", str(path))["metadataTable"]
    assert again["archivable"] == 0, "nothing left to archive now"


def test_metadata_table_archival_is_fenced_by_the_data_table_lock(table_copy: Callable[[str], Path],
                                                                  tmp_path: Path) -> None:
    """Every write of the metadata table's archival is preceded by the data table's held-lock
    check (`MetadataTable.fence`): a lock lost once the data table's archival is done stops it
    before anything of the metadata table changes."""
    options = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}
    counted = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(counted))
    plan = table.inspect.archival(options)
    assert plan.archivable and plan.metadata_table is not None and plan.metadata_table.archivable
    [window] = [b for b in plan.metadata_table.blockers if b.kind is BlockerKind.COMPACTION_WINDOW]
    assert "(hoodie.metadata.compact.max.delta.commits)" in window.why, "named by the setting it comes from"
    calls: list[str] = []
    table.publish_check = lambda: calls.append("data")
    archive_instants(table, plan.instants, settings=plan.settings)
    data_checks = len(calls)

    path = unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", tmp_path / "fenced")
    table = HudiTable.open(str(path))
    mdt_before = tree_snapshot(path / ".hoodie" / "metadata")

    def check() -> None:
        calls.append("fenced")
        if calls.count("fenced") > data_checks:
            raise CleanlineError("lock lost")

    table.publish_check = check
    with pytest.raises(CleanlineError, match="lock lost"):
        run_archival(table, options=options)
    assert not {i.requested_time for i in plan.instants} & {i.requested_time for i in table.reload().timeline}
    assert tree_snapshot(path / ".hoodie" / "metadata") == mdt_before, "nothing of the metadata table changed"


# Archives a table (its metadata table's archival after its own) and kills its own process at
# one point of the metadata table's archival:
#   after-data      right after the metadata table's LSM data file is written;
#   after-manifest  right after its manifest is written (`_version_` still the old one);
#   mid-delete      after three of its archived state files are deleted.
MDT_KILLER = """
import os, signal, sys
from timeline import HudiTable
from timeline.archive.archiver import run_archival
from timeline.storage.arrow import LocalStorage
path, point = sys.argv[1], sys.argv[2]
real_write, real_delete = LocalStorage.write, LocalStorage.delete
deleted = []
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def write(self, target, data, **kw):
    real_write(self, target, data, **kw)
    if "/metadata/.hoodie/timeline/history/" in target:
        name = target.rsplit("/", 1)[-1]
        if point == "after-data" and name.endswith("_0.parquet"):
            die()
        if point == "after-manifest" and name.startswith("manifest_"):
            die()
def delete(self, target):
    found = real_delete(self, target)
    if "/metadata/.hoodie/timeline/" in target and "/history/" not in target:
        deleted.append(target)
        if point == "mid-delete" and len(deleted) == 3:
            die()
    return found
LocalStorage.write, LocalStorage.delete = write, delete
run_archival(HudiTable.open(path), options={"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3",
                                            "hoodie.clean.commits.retained": "1"})
"""
KILLED_OPTIONS = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}


@pytest.mark.parametrize("point", ["after-data", "after-manifest", "mid-delete"])
def test_metadata_table_archival_killed_is_readable_and_finishes_on_rerun(table_copy: Callable[[str], Path],
                                                                         point: str,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """SIGKILL in the metadata table's archival (after its LSM file, after its manifest,
    half-way through its state files): the table reads as before (hudi-rs rows, `mdt validate`
    clean), the metadata table's timeline lists every instant (active or archived); a re-run
    finishes it, each moved instant archived once."""
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    plan = table.inspect.archival(KILLED_OPTIONS)
    assert plan.metadata_table is not None
    moving = [i.requested_time for i in plan.metadata_table.instants]
    mdt_path = path / ".hoodie" / "metadata"
    every = {i.requested_time for i in HudiTable.open(str(mdt_path)).timeline}
    expected_rows = rows(path)

    run = subprocess.run([sys.executable, "-c", MDT_KILLER, str(path), point], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == -9, run.stderr

    def readable() -> list[str]:
        mdt = HudiTable.open(str(mdt_path))
        archived = [i.requested_time for i in load_archived_timeline(mdt)]
        assert every <= {i.requested_time for i in mdt.timeline} | set(archived), "nothing lost"
        history = mdt_path / ".hoodie" / "timeline" / "history"
        listed = [r["instantTime"] for r in lsm_rows(history)] if (history / "_version_").exists() else []
        assert len(listed) == len(set(listed)), "nothing listed twice"
        assert rows(path) == expected_rows
        assert cli_json(capsys, "mdt", "validate", str(path))["ok"]
        return archived

    readable()
    outcome = run_archival(HudiTable.open(str(path)), options=KILLED_OPTIONS)
    assert outcome.metadata_table is not None
    assert readable() == moving
    assert not set(moving) & {i.requested_time for i in HudiTable.open(str(mdt_path)).timeline}
