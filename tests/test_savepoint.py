"""Savepoints: create, delete and list as Hudi does, refusing what would be unreadable."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.instant import State
from timeline.metadata import avro
from timeline.savepoint import (
    SavepointRefused,
    create_savepoint,
    delete_savepoint,
    list_savepoints,
    savepoint_candidates,
)
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]
P, Q = "city=sf", "city=nyc"


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def lake(request: pytest.FixtureRequest) -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=request.param, table_type="MERGE_ON_READ")
    for t in T[:4]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)], Q: [lake.base_file(Q, "fg2", t)]})
    return lake


def table(lake: Lake) -> HudiTable:
    return HudiTable.load(lake.storage, lake.base)


def test_savepoint_create_writes_inflight_then_completed_metadata(lake: Lake) -> None:
    done = create_savepoint(table(lake), T[1], user="ada", comment="before the backfill")
    folder = table(lake).timeline.folder
    assert lake.storage.read(f"{folder}/{T[1]}.savepoint.inflight") == b""
    data = lake.storage.read(f"{folder}/{done.file_name(lake.layout)}")
    assert avro.record_name(data) == "org.apache.hudi.avro.model.HoodieSavepointMetadata"
    meta = avro.decode(data, path="sp")
    assert (meta["savepointedBy"], meta["comments"], meta["version"]) == ("ada", "before the backfill", 1)
    assert meta["partitionMetadata"][P] == {"partitionPath": P, "savepointDataFile": [f"fg1_0-1-0_{T[1]}.parquet"]}
    assert meta["partitionMetadata"][Q]["savepointDataFile"] == [f"fg2_0-1-0_{T[1]}.parquet"]
    if lake.layout == 2:
        assert done.completion_time is not None and done.completion_time > T[3]


def test_savepoint_refuses_non_writes_unknown_and_repeated(lake: Lake) -> None:
    with pytest.raises(SavepointRefused, match="not a completed commit"):
        create_savepoint(table(lake), "20200101000000000")
    lake.commit(T[5], {}, state=State.INFLIGHT)
    with pytest.raises(SavepointRefused, match="not a completed commit"):
        create_savepoint(table(lake), T[5])
    create_savepoint(table(lake), T[2])
    with pytest.raises(SavepointRefused, match="already savepointed"):
        create_savepoint(table(lake), T[2])


def test_savepoint_refused_after_commits_clean_removed_its_slice(lake: Lake) -> None:
    config = CleanConfig(commits_retained=1)
    t = table(lake)
    schedule_clean(t, plan_clean(t, config), config)
    run_pending_cleans(t)
    with pytest.raises(SavepointRefused, match="older than the last clean's earliest retained commit"):
        create_savepoint(table(lake), T[0])


def test_savepoint_candidates_are_what_hudis_rule_accepts_newest_first(lake: Lake) -> None:
    t = table(lake)
    assert [i.requested_time for i in savepoint_candidates(t)] == T[3::-1]
    create_savepoint(t, T[1])
    config = CleanConfig(commits_retained=1)
    schedule_clean(t, plan_clean(t, config), config)  # pending: its plan's retained commit counts already
    offered = [i.requested_time for i in savepoint_candidates(table(lake))]
    assert offered == [T[3]]  # T[1] savepointed; T[0] and T[2] older than the clean's earliest retained commit
    for refused in (T[0], T[2]):
        with pytest.raises(SavepointRefused, match="older than the last clean's earliest retained commit"):
            create_savepoint(table(lake), refused)
    run_pending_cleans(table(lake))
    assert [i.requested_time for i in savepoint_candidates(table(lake))] == offered


def test_savepoint_refused_after_file_versions_clean_where_hudi_lets_it_through(lake: Lake) -> None:
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    t = table(lake)
    schedule_clean(t, plan_clean(t, config), config)
    run_pending_cleans(t)
    # Hudi compares T1 with the clean's empty earliest commit ("") and accepts it; its files are gone.
    with pytest.raises(SavepointRefused, match=f"lost its slice {T[1]} to a clean"):
        create_savepoint(table(lake), T[1])
    create_savepoint(table(lake), T[3])  # the latest slices are all there


def test_savepoint_protects_files_from_an_aggressive_clean(lake: Lake) -> None:
    create_savepoint(table(lake), T[1])
    for config in (CleanConfig(commits_retained=1),
                   CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)):
        t = table(lake)
        plan = plan_clean(t, config)
        if not plan.is_empty:
            schedule_clean(t, plan, config, force=True)
            run_pending_cleans(t)
    assert lake.storage.exists(f"/t/{P}/fg1_0-1-0_{T[1]}.parquet")
    assert not lake.storage.exists(f"/t/{P}/fg1_0-1-0_{T[0]}.parquet")


def test_savepoint_delete_removes_every_state_file(lake: Lake) -> None:
    create_savepoint(table(lake), T[2])
    delete_savepoint(table(lake), T[2])
    assert not table(lake).timeline.savepoints()
    assert not [name for name in lake.storage.files if ".savepoint" in name]
    with pytest.raises(SavepointRefused, match="no completed savepoint"):
        delete_savepoint(table(lake), T[2])


def test_savepoint_list_reports_files_bytes_and_archival(lake: Lake) -> None:
    create_savepoint(table(lake), T[1], user="ada")
    create_savepoint(table(lake), T[3], user="bob")
    lake.storage.delete(f"/t/{Q}/fg2_0-1-0_{T[3]}.parquet")
    first, second = list_savepoints(table(lake))
    assert (first.instant.requested_time, first.savepointed_by, first.files, first.bytes) == (T[1], "ada", 2, 200)
    assert (second.files, second.missing_files, second.bytes) == (2, 1, 100)
    assert not first.holds_back_archival  # 4 commits: not above hoodie.keep.max.commits, nothing to hold back
    lake2 = Lake(MemoryStorage(), "/u", version=8,
                 extra_props={"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    for t in T[:4]:
        lake2.commit(t, {P: [lake2.base_file(P, "g", t)]})
    create_savepoint(HudiTable.load(lake2.storage, "/u"), T[0])
    (only,) = list_savepoints(HudiTable.load(lake2.storage, "/u"))
    assert only.holds_back_archival


def test_savepoint_cli_create_list_delete_with_confirmation(table_copy) -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    cleanline = str(Path(sys.executable).with_name("cleanline"))
    path = str(table_copy("sample_table/cow/v9_txns_simple_nometa"))
    commits = [i.requested_time for i in HudiTable.open(path).timeline.commits().completed()]
    run = lambda *a, stdin="": subprocess.run([cleanline, *a], input=stdin, capture_output=True, text=True, timeout=60)  # noqa: E731
    created = run("savepoint", "create", path, "--instant", commits[-2], "--comment", "keep", "--user", "ada")
    assert created.returncode == 0, created.stderr
    (listed,) = json.loads(run("savepoint", "list", path, "--json").stdout)
    assert listed["instant"]["requestedTime"] == commits[-2] and listed["savepointedBy"] == "ada"
    assert listed["files"] > 0 and listed["bytes"] > 0 and listed["missingFiles"] == 0
    refused = run("savepoint", "delete", path, "--instant", commits[-2], stdin="n\n")
    assert refused.returncode == 2 and "cancelled" in refused.stderr
    assert HudiTable.open(path).timeline.savepoints()
    assert run("savepoint", "delete", path, "--instant", commits[-2], stdin="y\n").returncode == 0
    assert not HudiTable.open(path).timeline.savepoints()
    bad = run("savepoint", "create", path, "--instant", "19990101000000000")
    assert bad.returncode == 2 and "not a completed commit" in bad.stderr


@pytest.mark.parametrize("table_id", ["sample_table/cow/v9_txns_simple_nometa",
                                      "sample_table/mor/avro/v9_txns_simple_nometa",
                                      "sample_table/cow/v9_txns_nonpart_nometa"])
def test_savepoint_of_the_latest_write_after_a_clean_of_replaced_groups(table_copy, table_id: str) -> None:
    """A clean that deleted file groups a clustering or overwrite had replaced took nothing a
    read as of a later write needs: savepointing that write is allowed (it was refused)."""
    from timeline import CleanConfig

    path = str(table_copy(table_id))
    table = HudiTable.open(path)
    config = CleanConfig(commits_retained=1)
    maintenance = table.maintenance()
    assert maintenance.schedule_clean(maintenance.plan_clean(config, enforce_retention=False), config, force=True)
    (result,) = maintenance.run_cleans()
    assert result.deleted > 0
    latest = table.reload().timeline.writes().completed().last()
    assert latest is not None
    maintenance.create_savepoint(latest.requested_time)
    assert table.reload().timeline.savepoints().completed().find(latest.requested_time) is not None


@pytest.mark.parametrize("partitioned", [True, False])
def test_savepoint_refused_while_a_pending_clean_would_delete_its_files(partitioned: bool) -> None:
    """Cleanline's own rule: a requested clean deleting files the savepoint would hold is run or
    withdrawn first; the refusal names how many and the first of them."""
    lake = Lake(MemoryStorage(), "/t", version=8, partitioned=partitioned)
    partition = P if partitioned else ""
    names = {t: [lake.base_file(partition, g, t) for g in ("fg1", "fg2")] for t in T[:5]}
    for t in T[:5]:
        lake.commit(t, {partition: names[t]})
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    clean = schedule_clean(table(lake), plan_clean(table(lake), config), config)  # all but the T4 slices
    assert clean is not None
    with pytest.raises(SavepointRefused) as refused:
        create_savepoint(table(lake), T[3])
    shown = f"{P}/" if partitioned else ""
    assert str(refused.value) == (
        f"{table(lake).uri}: cannot savepoint {T[3]}: pending clean {clean.requested_time} would delete 2 of its "
        f"files (e.g. {shown}{names[T[3]][0]}); run the clean first, or wait until it is done")
    assert create_savepoint(table(lake), T[4]).requested_time == T[4]  # the clean keeps those files
    run_pending_cleans(table(lake))
    assert not lake.storage.exists(f"/t/{shown}{names[T[3]][0]}")


def test_savepoint_metadata_records_who_when_and_an_empty_comment_by_default(lake: Lake) -> None:
    import time

    before = int(time.time() * 1000)
    create_savepoint(table(lake), T[1], user="ada")
    after = int(time.time() * 1000)
    (listed,) = list_savepoints(table(lake))
    data = lake.storage.read(f"{table(lake).timeline.folder}/{listed.instant.file_name(lake.layout)}")
    meta = avro.decode(data, path="sp")
    assert meta["comments"] == "" and listed.comments == ""
    assert before <= meta["savepointedAt"] <= after
    assert listed.savepointed_at_ms == meta["savepointedAt"]
    create_savepoint(table(lake), T[2], user="bob", comment="keep")
    assert [(s.savepointed_by, s.comments) for s in list_savepoints(table(lake))] == [("ada", ""), ("bob", "keep")]


def test_savepoint_refusal_of_a_non_write_says_what_may_be_savepointed(lake: Lake) -> None:
    t = table(lake)
    with pytest.raises(SavepointRefused) as refused:
        create_savepoint(t, "20200101000000000")
    assert str(refused.value) == (f"{t.uri}: 20200101000000000 is not a completed commit, deltacommit or "
                                  "replacecommit on the active timeline")


def test_savepoint_refused_when_a_clean_took_a_log_only_slice_named_by_full_path() -> None:
    """A clean's reported files may be full paths and may include names that are no data files;
    a log-only slice (no base file) the clean deleted is lost all the same."""
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ", partitioned=False)
    lake.commit(T[0], {"": [lake.base_file("", "fg1", T[0])]})
    log = lake.log_file("", "fg1", T[1])
    lake.commit(T[1], {"": [log]})  # a new slice T1 with its log file only
    lake.commit(T[2], {"": [lake.base_file("", "fg2", T[2])]})
    lost = f"/t/{log}"
    lake.clean(T[3], "", deleted={"": ["/t/.hoodie_partition_metadata", lost]})
    with pytest.raises(SavepointRefused) as refused:
        create_savepoint(table(lake), T[2])
    assert str(refused.value) == (
        f"{table(lake).uri}: cannot savepoint {T[2]}: file group fg1 in partition (none) lost its slice {T[1]} "
        f"to a clean; the table can no longer be read as of {T[2]}")


@pytest.mark.parametrize("version", [6, 8])
def test_savepoint_of_a_replacecommit_ignores_what_was_cleaned_of_the_groups_it_replaced(version: int) -> None:
    """A group replaced by the savepointed replacecommit itself is not read as of it: its cleaned
    files do not matter; another group's lost slice still refuses."""
    lake = Lake(MemoryStorage(), "/t", version=version)
    for t in T[:2]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t), lake.base_file(P, "fg2", t)]})
    lake.commit(T[2], {P: [lake.base_file(P, "fg3", T[2])]}, replaced={P: ["fg1"]})
    fg1 = [f"fg1_0-1-0_{t}.parquet" for t in T[:2]]
    lake.clean(T[3], "", deleted={P: fg1})
    assert create_savepoint(table(lake), T[2]).requested_time == T[2]
    delete_savepoint(table(lake), T[2])
    lake.clean(T[4], "", deleted={P: [f"fg2_0-1-0_{T[1]}.parquet"]})
    lake.clean(T[5], "", deleted={P: fg1})  # the replaced group comes first in the checks
    with pytest.raises(SavepointRefused, match=f"file group fg2 in partition {P} lost its slice {T[1]}"):
        create_savepoint(table(lake), T[2])


def test_savepoint_allowed_when_cleaned_files_are_of_the_slice_shown_or_later() -> None:
    """A clean that deleted a stray copy of the slice the savepoint holds (same instant, another
    write token), or files of later slices only, took nothing a read as of it needs."""
    from timeline.files import base_file_name

    lake = Lake(MemoryStorage(), "/t", version=6)
    for t in T[:3]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    lake.commit(T[3], {P: [lake.base_file(P, "fg2", T[3])]})
    strays = [lake.data_file(P, base_file_name(g, "9-9-9", t)) for g, t in (("fg1", T[1]), ("fg2", T[3]))]
    lake.clean(T[4], "", deleted={P: strays})
    assert create_savepoint(table(lake), T[1]).requested_time == T[1]


def test_savepoint_refused_while_a_version_1_clean_plan_would_delete_its_files() -> None:
    """A version-1 plan names files relative to their partition (CleanPlanV2MigrationHandler)."""
    from timeline.instant import Instant

    lake = Lake(MemoryStorage(), "/t", version=6)
    for t in T[:3]:
        lake.commit(t, {P: [lake.base_file(P, "fg1", t)]})
    plan = {"earliestInstantToRetain": None, "policy": "KEEP_LATEST_FILE_VERSIONS", "version": 1,
            "filesToBeDeletedPerPartition": {P: [f"fg1_0-1-0_{T[1]}.parquet"]}, "filePathsToBeDeletedPerPartition": {},
            "partitionsToBeDeleted": [], "lastCompletedCommitTimestamp": "", "extraMetadata": None}
    lake.instant_file(Instant(T[3], "clean", State.REQUESTED), plan)
    with pytest.raises(SavepointRefused, match=f"pending clean {T[3]} would delete 1 of its files"):
        create_savepoint(table(lake), T[1])


def test_savepoint_list_flags_only_the_savepoint_archival_stops_at() -> None:
    """Archival stops at the first savepoint; a later savepoint of a replacecommit that holds
    archival back for its own reason (replaced files not cleaned) is not what holds it back."""
    lake = Lake(MemoryStorage(), "/u", version=8,
                extra_props={"hoodie.keep.min.commits": "1", "hoodie.keep.max.commits": "2"})
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "h", T[1])]}, replaced={P: ["g"]})
    for t in T[2:4]:
        lake.commit(t, {P: [lake.base_file(P, "h", t)]})
    for t in T[:2]:
        create_savepoint(table(lake), t)
    assert [(s.instant.requested_time, s.holds_back_archival) for s in list_savepoints(table(lake))] == [
        (T[0], True), (T[1], False)]
