"""Restore to a savepoint on real tables: hudi-rs then reads what it read as of the savepoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import retained_files, rows
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.metadata import avro
from timeline.restore import RestoreRefused, preview_restore, restore
from timeline.savepoint import create_savepoint

TABLES = [
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/mor/parquet/v6_nonpartitioned_rollback",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",
    "sample_table/cow/v9_txns_simple_nometa",
    "sample_table/mor/avro/v9_txns_simple_nometa",
    "sample_table/mor/avro/v9_nonpartitioned_rollback",
]


def savepoint_target(table: HudiTable) -> str:
    """A commit with writes after it: the second completed write, or the first of two."""
    writes = [i for i in table.timeline.commits().completed() if i.action in ("commit", "deltacommit")]
    return writes[1 if len(writes) > 2 else 0].requested_time


@pytest.mark.parametrize("table_id", TABLES)
def test_restore_reads_as_the_savepoint(table_copy, table_id: str) -> None:
    path = table_copy(table_id)
    table = HudiTable.open(str(path))
    k = savepoint_target(table)
    expected = rows(path, k)
    drop = table.config.metadata_table_enabled
    if drop:
        from timeline.mdt import drop_metadata_table
        drop_metadata_table(table)
    create_savepoint(table, k)
    preview = preview_restore(table, k)
    later = [i.requested_time for i in table.timeline.writes() if i.requested_time > k]
    assert sorted(i.requested_time for i in preview.instants) == sorted(later)
    done = restore(table, k)
    after = HudiTable.open(str(path))
    assert [i for i in after.timeline.writes() if i.requested_time > k] == []
    assert not after.timeline.rollbacks().filter(lambda i: i.requested_time > k)
    assert rows(path) == expected
    for file in retained_files(after, "0"):
        assert file.exists(), file
    meta = avro.decode(Path(after.timeline.path_of(after.timeline.restores().last())).read_bytes(), path="r")  # type: ignore[arg-type]
    assert meta["startRestoreTime"] == done.requested_time and meta["version"] == 1
    assert sorted(meta["instantsToRollback"]) == sorted(later)
    assert set(meta["hoodieRestoreMetadata"]) == set(later)


def test_restore_refuses_a_later_savepoint_and_a_pending_clean(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    commits = [i.requested_time for i in table.timeline.commits().completed()]
    create_savepoint(table, commits[1])
    create_savepoint(table, commits[3])
    with pytest.raises(RestoreRefused, match=f"savepoint {commits[3]} is later"):
        restore(table, commits[1])
    with pytest.raises(RestoreRefused, match="no completed savepoint"):
        restore(table, commits[2])


def test_restore_still_works_after_an_aggressive_clean(table_copy) -> None:
    path = table_copy("sample_table/mor/avro/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    k = savepoint_target(table)
    expected = rows(path, k)
    create_savepoint(table, k)
    for config in (CleanConfig(commits_retained=1),
                   CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)):
        table = HudiTable.open(str(path))
        plan = plan_clean(table, config)
        if not plan.is_empty:
            schedule_clean(table, plan, config, force=True)
            run_pending_cleans(table)
    restore(HudiTable.open(str(path)), k)
    assert rows(path) == expected


def test_restore_and_rollback_cli_preview_confirm_and_run(table_copy) -> None:
    import json
    import subprocess
    import sys

    from tests.helpers import tree_snapshot

    cleanline = str(Path(sys.executable).with_name("cleanline"))
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    run = lambda *a, stdin="": subprocess.run([cleanline, *a], input=stdin, capture_output=True, text=True,  # noqa: E731
                                              timeout=60)
    commits = [i.requested_time for i in HudiTable.open(str(path)).timeline.commits().completed()]
    k = commits[2]
    expected = rows(path, k)
    assert run("savepoint", "create", str(path), "--instant", k).returncode == 0
    before = tree_snapshot(path)
    preview = json.loads(run("restore", str(path), "--savepoint", k, "--preview", "--json").stdout)
    assert {p["instant"]["requestedTime"] for p in preview["instantsToRollback"]} == {t for t in commits if t > k}
    assert preview["bytesToDelete"] == sum(v["bytes"] for v in preview["perPartition"].values()) > 0
    declined = run("restore", str(path), "--savepoint", k, stdin="no\n")
    assert declined.returncode == 2 and "cancelled" in declined.stderr
    assert tree_snapshot(path) == before
    done = run("restore", str(path), "--savepoint", k, "--yes")
    assert done.returncode == 0, done.stderr
    assert rows(path) == expected
    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None and last.requested_time == k
    refused = run("rollback", str(path), "--instant", k, "--yes")
    assert refused.returncode == 2 and "savepointed commit" in refused.stderr
    older = run("rollback", str(path), "--instant", commits[1], "--preview", "--json")
    assert older.returncode == 2 and "found commits after" in older.stderr  # validateRollbackCommitSequence
    assert f"first delete the savepoint after it ({k}" in older.stderr  # the rule and the way forward
    assert f"create a savepoint of {commits[0]}" in older.stderr and f"--instant {k}`" in older.stderr
    assert run("rollback", str(path), "--failed").stdout.strip() == "no failed writes"


def test_restore_rolls_back_a_pending_compaction_after_the_savepoint() -> None:
    from tests.helpers import Lake
    from timeline.instant import State
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    times = [f"2026110100{i:02d}00000" for i in range(6)]
    base = lake.base_file("p=1", "g", times[0])
    lake.commit(times[0], {"p=1": [base]})
    log = lake.log_file("p=1", "g", times[1])
    lake.commit(times[1], {"p=1": [log]})
    lake.schedule_compaction(times[2], [("p=1", "g", times[0])], state=State.INFLIGHT)
    half = lake.base_file("p=1", "g", times[2])  # written by the running compaction
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, times[1])
    preview = preview_restore(table, times[1])
    assert [i.requested_time for i in preview.instants] == [times[2]]
    restore(table, times[1])
    after = HudiTable.load(lake.storage, "/t")
    assert not after.timeline.pending_compactions()
    assert not lake.storage.exists(f"/t/p=1/{half}") and lake.storage.exists(f"/t/p=1/{log}")


@pytest.mark.parametrize("version", [6, 8])
def test_restore_rolls_back_pending_clusterings_first_then_the_writes_after_the_savepoint_newest_first(
        version: int) -> None:
    """RestorePlanActionExecutor: pending clusterings after the savepoint, newest first, then the
    other writes after it, newest first: v6 by requested time, v8 pending ones first and then by
    completion time (a write requested before the savepoint's commit and completed after it goes)."""
    from tests.helpers import Lake, T
    from timeline.instant import Instant, State
    from timeline.storage import MemoryStorage

    lake = Lake(MemoryStorage(), "/t", version=version)
    p = "city=sf"
    for t in T[:5]:
        lake.commit(t, {p: [lake.base_file(p, f"g{t[-7:-5]}", t)]})
    early = "20261101000030000"  # requested between T0 and T1, completed after T3
    lake.commit(early, {p: [lake.base_file(p, "early", early)]}, completion=T[3][:-3] + "500")
    cluster = {"operationType": "cluster", "version": 1, "clusteringPlan": {"inputGroups": [], "version": 1}}
    lake.instant_file(Instant(T[5], "clustering" if version == 8 else "replacecommit", State.REQUESTED), cluster)
    lake.instant_file(Instant(T[7], "clustering" if version == 8 else "replacecommit", State.REQUESTED), cluster)
    lake.commit(T[6], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    create_savepoint(table, T[1])
    preview = preview_restore(table, T[1])
    expected = [T[7], T[5], T[6], T[4], T[3]] + ([early] if version == 8 else []) + [T[2]]
    assert [i.requested_time for i in preview.instants] == expected
    assert [r.instant.requested_time for r in preview.rollbacks] == expected
    assert preview.metadata_table == ""
    gone = [t for t in expected if t in (T[2], T[3], T[4], early)]
    assert preview.per_partition() == {p: (len(gone), 100 * len(gone))}
    assert preview.bytes_to_delete == 100 * len(gone)
