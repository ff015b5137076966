"""Which lock a table's writers use, found from the lake (timeline/locks/discovery.py): the
call's options (and those the table was opened with), the root's CLEANLINE_HUDI_OPTIONS (passed
as `roots`), hoodie.properties, and a `.hoodie/.locks/table_lock.json` on storage; a live lease
found there with nothing configured is honoured by every change."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline import CleanConfig, HudiTable
from timeline.cli import main
from timeline.config import update_config
from timeline.locks import STORAGE_BASED_LOCK_PROVIDER, LockUnavailable, UnsupportedLockProvider
from timeline.locks.discovery import (
    HudiOptionsError,
    LockSource,
    discover_lock,
    parse_hudi_options,
)
from timeline.roots import LakeRoots

OCC = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
       "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER}
ZK = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
      "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider"}
NO_WAIT = {"hoodie.write.lock.wait_time_ms": "0"}  # one attempt: no lock setting, only how long to wait


def live_lease(base: Path, owner: str = "hudi-writer-uuid", seconds: int = 300) -> None:
    """A lock file as a Hudi writer's StorageBasedLockProvider leaves it while it holds the lock."""
    lock = base / ".hoodie" / ".locks" / "table_lock.json"
    lock.parent.mkdir(parents=True, exist_ok=True)
    until = int(time.time() * 1000) + seconds * 1000
    lock.write_bytes(f'{{"expired":false,"validUntil":{until},"owner":"{owner}"}}'.encode())


def test_lock_discovery_sources_in_order(v9_table: Path) -> None:
    table = HudiTable.open(str(v9_table))
    none = discover_lock(table)
    assert (none.source, none.provider, none.shared) == (LockSource.NONE, None, False)
    zk_root = LakeRoots(hudi={str(v9_table.parent): ZK})
    rooted = HudiTable.open(str(v9_table), roots=zk_root)
    root = discover_lock(rooted)
    assert (root.source, root.provider, root.root) == (LockSource.ROOT_SETTING, ZK["hoodie.write.lock.provider"],
                                                       str(v9_table.parent))
    option = discover_lock(rooted, OCC)
    assert (option.source, option.provider) == (LockSource.OPTION, STORAGE_BASED_LOCK_PROVIDER)
    assert option.properties["hoodie.table.name"] == table.config.name  # the table's own settings underneath
    given = discover_lock(HudiTable.open(str(v9_table), hudi_options=OCC, roots=zk_root))  # options opened with
    assert (given.source, given.provider) == (LockSource.OPTION, STORAGE_BASED_LOCK_PROVIDER)
    live_lease(v9_table)
    found = discover_lock(table)
    assert (found.source, found.provider, found.shared) == (LockSource.STORAGE, STORAGE_BASED_LOCK_PROVIDER, True)
    assert table.inspect.lock().source is LockSource.STORAGE
    assert discover_lock(rooted).source is LockSource.ROOT_SETTING  # a setting wins over the evidence


def test_lock_discovery_hoodie_properties_holding_the_lock_are_the_table_properties_source(v9_table: Path) -> None:
    table = HudiTable.open(str(v9_table))
    update_config(table.storage, table.base, {**OCC, "hoodie.write.lock.storage.validity.timeout.secs": "600"})
    table = HudiTable.open(str(v9_table))
    found = discover_lock(table)
    assert (found.source, found.provider, found.shared) == (LockSource.TABLE_PROPERTIES, STORAGE_BASED_LOCK_PROVIDER,
                                                            True)
    assert found.properties["hoodie.write.lock.storage.validity.timeout.secs"] == "600"
    assert "from the table properties" in found.detail
    live_lease(v9_table)
    older = table.timeline.writes().completed().instants[-3].requested_time
    before = tree_snapshot(v9_table)
    with pytest.raises(LockUnavailable, match="hudi-writer-uuid"):  # the lock hoodie.properties names is taken
        table.maintenance(options=NO_WAIT).create_savepoint(older)
    assert tree_snapshot(v9_table) == before
    rooted = HudiTable.open(str(v9_table), roots=LakeRoots(hudi={str(v9_table.parent): ZK}))
    assert discover_lock(rooted).source is LockSource.ROOT_SETTING  # a root setting over the table's own


def test_lock_discovery_root_options_parse_like_s3_roots() -> None:
    roots = parse_hudi_options(json.dumps({"s3://lake": OCC, "/data/lake": ZK}))
    assert roots == {"s3://lake": OCC, "/data/lake": ZK}
    with pytest.raises(HudiOptionsError, match="not a Hudi option"):
        parse_hudi_options('{"s3://lake": {"endpoint_url": "x"}}')
    with pytest.raises(HudiOptionsError, match="must be a string"):
        parse_hudi_options('{"s3://lake": {"hoodie.write.lock.wait_time_ms": 5}}')


def test_lock_discovery_a_live_lease_with_nothing_configured_is_honoured_by_every_change(v9_table: Path) -> None:
    """Finding 1: a table whose table_lock.json holds another owner's live lease, with no lock
    configured anywhere: clean schedule, clean run, rollback, restore, savepoint create and
    delete and dropping the metadata table all stop, naming the lock; nothing changes."""
    table = HudiTable.open(str(v9_table))
    writes = table.timeline.writes().completed()
    latest, older = writes.instants[-1].requested_time, writes.instants[-3].requested_time
    table.maintenance().create_savepoint(older)
    config = CleanConfig(commits_retained=1)
    plan = table.maintenance().plan_clean(config, enforce_retention=False)
    assert plan.files_to_delete
    table.maintenance().schedule_clean(plan, config)  # pending, for the run below
    live_lease(v9_table)
    before = tree_snapshot(v9_table)
    maintenance = table.maintenance(options=NO_WAIT)
    changes = {
        "clean schedule": lambda: maintenance.schedule_clean(plan, config, force=True),
        "clean run": maintenance.run_cleans,
        "rollback": lambda: maintenance.rollback(latest),
        "restore": lambda: maintenance.restore(older),
        "savepoint create": lambda: maintenance.create_savepoint(latest),
        "savepoint delete": lambda: maintenance.delete_savepoint(older),
        "metadata table drop": lambda: maintenance.drop_metadata_table(dry_run=False),
    }
    for name, change in changes.items():
        with pytest.raises(LockUnavailable, match="hudi-writer-uuid"):
            change()
        assert tree_snapshot(v9_table) == before, name


def test_lock_discovery_cli_rollback_honours_a_lease_found_on_storage(v9_table: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The reproduction of finding 1: `cleanline rollback` beside a held lease."""
    table = HudiTable.open(str(v9_table))
    latest = table.timeline.writes().completed().instants[-1].requested_time
    live_lease(v9_table)
    before = tree_snapshot(v9_table)
    code = main(["--hoodie-conf", "hoodie.write.lock.wait_time_ms=0", "rollback", str(v9_table),
                 "--instant", latest, "--yes"])
    assert code == 2 and "hudi-writer-uuid" in capsys.readouterr().err
    assert tree_snapshot(v9_table) == before
    assert main(["table", "info", str(v9_table), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["lockProvider"], info["lockSource"], info["liveWriters"]) == (
        STORAGE_BASED_LOCK_PROVIDER, "found on storage", [])


def test_lock_discovery_cli_reads_cleanline_hudi_options(v9_table: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    dynamo = {**OCC, "hoodie.write.lock.provider": "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"}
    monkeypatch.setenv("CLEANLINE_HUDI_OPTIONS", json.dumps({str(v9_table.parent): dynamo}))
    table = HudiTable.open(str(v9_table))
    older = table.timeline.writes().completed().instants[-3].requested_time
    before = tree_snapshot(v9_table)
    assert main(["savepoint", "create", str(v9_table), "--instant", older]) == 2
    assert "DynamoDBBasedLockProvider" in capsys.readouterr().err
    assert tree_snapshot(v9_table) == before
    with pytest.raises(UnsupportedLockProvider):  # the library, given the same root setting
        HudiTable.open(str(v9_table), roots=LakeRoots.from_environ()).maintenance().create_savepoint(older)
    assert discover_lock(table).source is LockSource.NONE  # the command left nothing set in the process
