"""What `compaction show` sees (timeline/services/pending.py, backlog.py): the pending table
services with their plans on hand-made timelines, and the compaction backlog of every real
merge-on-read fixture table against hudi-rs' file slices."""

from __future__ import annotations

from pathlib import Path

import hudi
import pytest

from tests.helpers import FIXTURE_IDS, TOKEN, Lake, T, fixture_readme
from timeline import HudiTable
from timeline.files import log_file_name
from timeline.instant import Instant, State, moment_of
from timeline.services import ServiceKind
from timeline.storage import MemoryStorage

P = "city=sf"
MOR_TABLES = [i for i in FIXTURE_IDS if fixture_readme()[i]["type"] == "MOR"]


def test_show_pending_compaction_with_its_files_sizes_strategy_age_and_heartbeat() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    base = lake.base_file(P, "g", T[0], size=1000)
    lake.commit(T[0], {P: [base]})
    logs = [lake.log_file(P, "g", t, size=10 * i) for i, t in enumerate(T[1:3], start=1)]
    for t, name in zip(T[1:3], logs):
        lake.commit(t, {P: [name]})
    gone = log_file_name("g", T[3], 1, TOKEN)
    plan = {"operations": [{"baseInstantTime": T[0], "fileId": "g", "partitionPath": P, "dataFilePath": base,
                            "deltaFilePaths": [*logs, gone], "metrics": {"TOTAL_LOG_FILES_SIZE": 30.0}}],
            "strategy": {"compactorClassName": "org.example.Executor"}, "version": 2}
    lake.instant_file(Instant(T[4], "compaction", State.REQUESTED), plan)
    lake.instant_file(Instant(T[4], "compaction", State.INFLIGHT))
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[4]}", b"")
    table = HudiTable.load(lake.storage, "/t")
    now = moment_of(T[14], table.config.timezone)
    beat = lake.storage.status(f"/t/.hoodie/.heartbeat/{T[4]}").mtime_ms
    (service,) = table.inspect.table_services(now=now).pending
    assert service.instant == Instant(T[4], "compaction", State.INFLIGHT) and service.is_inflight
    assert service.kind is ServiceKind.COMPACTION and service.strategy == "org.example.Executor"
    assert service.age_seconds == 600 and service.file_groups == ((P, "g"),)
    (piece,) = service.slices
    assert (piece.base_file, piece.log_files) == (base, (*logs, gone))
    assert piece.bytes == 1030 and piece.missing == (gone,) and piece.planned_log_bytes == 30
    assert service.heartbeat_age_seconds == max(0, (int(now.timestamp() * 1000) - beat) // 1000)


def test_show_pending_clustering_of_a_v6_replacecommit_and_a_log_compaction() -> None:
    """Version 6 keeps a clustering as a replacecommit whose requested plan is "cluster"; an
    insert_overwrite's empty plan is no table service."""
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    base = lake.base_file(P, "g", T[0])
    lake.commit(T[0], {P: [base]})
    cluster = {"operationType": "cluster", "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"{P}/{base}", "deltaFilePaths": [], "fileId": "g",
                                     "partitionPath": P}], "numOutputFileGroups": 1}],
        "strategy": {"strategyClassName": "SparkSizeBasedClusteringPlanStrategy"}, "version": 1}}
    lake.instant_file(Instant(T[1], "replacecommit", State.REQUESTED), cluster)
    lake.commit(T[2], {}, replaced={P: []}, state=State.INFLIGHT)  # an insert_overwrite, pending
    lake.instant_file(Instant(T[3], "logcompaction", State.REQUESTED), {"operations": [
        {"baseInstantTime": T[0], "fileId": "g", "partitionPath": P, "deltaFilePaths": [], "dataFilePath": None}],
        "version": 2})
    services = HudiTable.load(lake.storage, "/t").inspect.table_services().pending
    assert [(s.instant.requested_time, s.kind, s.strategy) for s in services] == [
        (T[1], ServiceKind.CLUSTERING, "SparkSizeBasedClusteringPlanStrategy"), (T[3], ServiceKind.LOG_COMPACTION, "")]
    assert services[0].slices[0].base_file == base and services[0].slices[0].bytes == 100
    assert services[0].heartbeat_age_seconds is None


@pytest.mark.parametrize("version", [6, 8])
def test_show_backlog_counts_log_files_bytes_and_delta_commits_per_group_and_partition(version: int) -> None:
    """Version 6 appends every delta commit of a slice to one log file: the delta commits come
    from the write stats naming it; from version 8 each writes its own. A pending write's log
    file is not read on version 8 (filterUncommittedLogs)."""
    lake = Lake(MemoryStorage(), "/t", version=version, table_type="MERGE_ON_READ")
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0]), lake.base_file(P, "h", T[0])],
                       "city=ny": [lake.base_file("city=ny", "k", T[0])]})
    for t in T[1:4]:
        name = (lake.log_file(P, "g", t, size=7) if version >= 8
                else lake.log_file(P, "g", T[0], size=7) if t == T[1] else log_file_name("g", T[0], 1, TOKEN))
        lake.commit(t, {P: [name]})
    lake.commit(T[4], {P: [lake.log_file(P, "h", T[4] if version >= 8 else T[0], size=5)]})
    lake.commit(T[5], {"city=ny": [lake.log_file("city=ny", "k", T[5] if version >= 8 else T[0], size=3)]},
                state=State.INFLIGHT)
    backlog = HudiTable.load(lake.storage, "/t").inspect.table_services().backlog
    rows = {(g.partition, g.file_id): (g.log_files, g.log_bytes, g.delta_commits) for g in backlog.groups}
    expected = {(P, "g"): (3, 21, 3) if version >= 8 else (1, 7, 3), (P, "h"): (1, 5, 1)}
    if version < 8:
        expected[("city=ny", "k")] = (1, 3, 1)  # 0.x readers merge every log file of the slice
    assert rows == expected
    assert [(p.partition, p.file_groups, p.max_delta_commits) for p in backlog.partitions if p.partition == P] == [
        (P, 2, 3)]
    assert backlog.max_delta_commits == 3


@pytest.mark.parametrize("table_id", MOR_TABLES)
def test_show_backlog_of_real_tables_matches_hudi_rs_file_slices(table_id: str, fixture_lake: dict[str, Path]) -> None:
    """Every real merge-on-read fixture: the file groups in the backlog, their base files and log
    files are hudi-rs' latest file slices that have log files."""
    path = fixture_lake[table_id]
    services = HudiTable.open(str(path)).inspect.table_services()
    ours = {(g.partition, g.file_id, g.base_file, g.log_files) for g in services.backlog.groups}
    theirs = {(s.partition_path, s.file_id, s.base_file_name or None, len(s.log_file_names))
              for s in hudi.HudiTable(str(path)).get_file_slices() if s.log_file_names}
    assert ours == theirs
    assert all(g.delta_commits >= 1 and g.log_bytes > 0 for g in services.backlog.groups)
    assert services.pending == ()
