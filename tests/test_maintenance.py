"""`Maintenance.clean`: the one-call clean with a dry run (delta-rs's `vacuum(dry_run=True)`),
returning the same plan as the three steps; a dry run writes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.doctor.helpers import OLD, age_tree, archive_commit, copy_base_file, grow_history, stuck_compaction
from tests.helpers import fake_failed_write, tree_snapshot
from timeline import CleanConfig, HudiTable
from timeline.doctor import KINDS, DoctorSettings, diagnose, plan_repair, run_repair
from timeline.instant import CLEAN, Instant, State

TABLE = V9_COW_NOMETA = "sample_table/cow/v9_txns_simple_nometa"


def test_maintenance_clean_dry_run_is_the_three_steps_plan_and_writes_nothing(table_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(TABLE)
    config = CleanConfig(commits_retained=1)
    before = tree_snapshot(path)
    table = HudiTable.open(str(path))
    dry = table.maintenance().clean(config, dry_run=True, enforce_retention=False)
    three_steps = table.maintenance().plan_clean(config, enforce_retention=False)
    assert dry.files_to_delete and dry.decisions == three_steps.decisions
    assert tree_snapshot(path) == before

    done = HudiTable.open(str(path)).maintenance().clean(config, enforce_retention=False, dry_run=False)
    assert done.decisions == dry.decisions
    gone = {d.path.rsplit("/", 1)[-1] for d in done.files_to_delete}
    assert gone and not gone & {p.name for p in path.rglob("*") if p.is_file()}
    cleans = HudiTable.open(str(path)).timeline.cleans().completed()
    assert len(cleans) == 1


def test_maintenance_clean_defaults_to_the_tables_own_settings(table_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(TABLE)
    table = HudiTable.open(str(path))
    own = CleanConfig.from_properties(table.config.props)
    assert table.maintenance().clean(dry_run=True).decisions == table.maintenance().plan_clean(own).decisions


# Library calls that change a table are dry runs unless told (`dry_run=False`), as delta-rs's
# `vacuum`: each below runs on a real fixture table damaged or grown so that the call has work to
# do, and leaves every file of the table (timeline, data, metadata table) byte for byte as it was.

V9_META = "sample_table/cow/v9_txns_simple_meta"
V6_COW = "sample_table/cow/v6_nonpartitioned"
V9_MOR = "sample_table/mor/avro/v9_txns_simple_nometa"
ARCHIVAL = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}


def contents(path: Path) -> dict[str, tuple[bytes, int]]:
    """Relative path -> (bytes, modification time) of every file below `path`."""
    return {str(p.relative_to(path)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_maintenance_clean_archive_and_drop_are_dry_runs_unless_told(table_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(V9_META)
    before = contents(path)
    maintenance = HudiTable.open(str(path)).maintenance(options=ARCHIVAL)
    plan = maintenance.clean(CleanConfig(commits_retained=1), enforce_retention=False)
    assert plan.files_to_delete  # there was something to delete
    outcome = maintenance.archive()
    assert outcome.plan.instants and outcome.result is None and outcome.metadata_table is None
    assert maintenance.drop_metadata_table() == f"file:{path}/.hoodie/metadata"
    assert maintenance.decisions == []  # no lock was taken: nothing was about to change
    assert contents(path) == before
    assert HudiTable.open(str(path)).config.metadata_table_enabled


def damaged(path: Path, kind: str) -> DoctorSettings:
    """Damage a copy of a real table so that the doctor plans a repair of `kind` (the recipes of
    tests/doctor/); the settings that repair is planned with."""
    table = HudiTable.open(str(path))
    commits = list(table.timeline.commits().completed())
    settings = DoctorSettings()
    if kind == "leftover-markers":
        leftover = path / ".hoodie" / ".temp" / commits[-1].requested_time / "region=eu"
        leftover.mkdir(parents=True)
        (leftover / "x_0-1-0_1.parquet.marker.CREATE").write_bytes(b"")
    elif kind == "leftover-heartbeats":
        (path / ".hoodie" / ".heartbeat").mkdir(parents=True, exist_ok=True)
        (path / ".hoodie" / ".heartbeat" / commits[-2].requested_time).write_bytes(b"")
    elif kind == "table-properties":
        shutil.copy(path / ".hoodie" / "hoodie.properties", path / ".hoodie" / "hoodie.properties.backup")
    elif kind == "unreadable-instant":
        folder = Path(table.timeline.folder)
        (folder / Instant(OLD, CLEAN, State.REQUESTED).file_name(2)).write_bytes(b"not avro")
    elif kind == "stale-pending":
        fake_failed_write(path, OLD, markers=False)
        settings = DoctorSettings(include_ingestion_commits=True)
    elif kind == "stuck-table-service":
        stuck_compaction(path, OLD)
    elif kind == "orphan-files":
        copy_base_file(path, "20261102000000000")  # a write whose instant files are gone
    elif kind == "archived-timeline":
        archive_commit(path, commits[0].requested_time)
        (path / ".hoodie" / "timeline" / "history" / "manifest_9").write_text('{"files": [')  # a crash's leftover
    elif kind == "metadata-table-drift":
        view = table.file_system_view()
        piece = next(g.slices[1] for g in view.all_file_groups()
                     if len(g.slices) > 1 and g.slices[1].base_file is not None)
        assert piece.base_file is not None
        ((path / piece.partition if piece.partition else path) / piece.base_file.name).unlink()
    elif kind == "clean-lag":
        grow_history(path, 30)
        settings = DoctorSettings(clean_lag_commits=10)
    age_tree(path)
    return settings


NO_REPAIR_KINDS = {"index-drift"}  # verification only, no repair yet (tests/doctor/test_indexes.py)
REPAIRS = {"leftover-markers": V9_COW_NOMETA, "leftover-heartbeats": V9_COW_NOMETA,
           "table-properties": V9_COW_NOMETA, "unreadable-instant": V9_COW_NOMETA, "stale-pending": V9_COW_NOMETA,
           "orphan-files": V9_COW_NOMETA, "archived-timeline": V9_COW_NOMETA, "metadata-table-drift": V9_META,
           "clean-lag": V6_COW, "stuck-table-service": V9_MOR}


def test_maintenance_every_repair_kind_has_a_dry_run_case() -> None:
    assert set(REPAIRS) == set(KINDS) - NO_REPAIR_KINDS


@pytest.mark.parametrize("kind", sorted(REPAIRS))
def test_maintenance_repairs_are_dry_runs_unless_told(table_copy, kind: str) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(REPAIRS[kind])
    settings = damaged(path, kind)
    plan = plan_repair(HudiTable.open(str(path)), kind, settings=settings)
    assert plan.changes  # the repair has work to do
    before = contents(path)
    maintenance = HudiTable.open(str(path)).maintenance(writers_stopped=True)
    for result in (maintenance.repair(plan, settings=settings),
                   run_repair(HudiTable.open(str(path)), plan, settings=settings)):
        assert (result.done, result.failed) == ((), ())
        assert [change for change, _ in result.skipped] == list(plan.changes)
    assert maintenance.decisions == []
    assert contents(path) == before
    assert diagnose(HudiTable.open(str(path)), kinds=[kind], settings=settings)  # still found
