"""Hardening of the library: protections are checked again right before a clean's first
delete, savepoints, rollbacks and restores refuse what would lose data, and a corrupt timeline
or table config stops the work. Each test is a hostile or racing case that deleted data before.
Nothing outside a table is deleted: tests/storage/test_containment.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import GUARDED_PARTITION as P
from tests.helpers import GUARDED_TIMES as T
from tests.helpers import Lake, guarded_lake, own_file, table_files
from timeline import HudiTable
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import CleanRefused, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.config import BACKUP_FILE, PROPERTIES_FILE, read_config
from timeline.exceptions import CorruptInstantError, TableConfigError
from timeline.instant import State
from timeline.restore import RestoreRefused, restore, verify_restore
from timeline.rollback import RollbackRefused, rollback, rollback_failed_write
from timeline.savepoint import SavepointRefused, create_savepoint
from timeline.storage.arrow import LocalStorage


@pytest.fixture(params=[6, 8], ids=["v6", "v8"])
def lake(request: pytest.FixtureRequest, tmp_path: Path) -> Lake:
    """A local table beside a folder `elsewhere` holding files that must survive."""
    return guarded_lake(tmp_path, request.param)


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
