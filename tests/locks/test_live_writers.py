"""The live-writer rule (timeline/locks/live.py): with no lock known (or one inside a writer's
process) and a writer live (a fresh heartbeat, or a pending write requested within the heartbeat
window), every change is refused, naming the live instant and how to configure the lock, until
the caller says the writers are stopped; the override is recorded."""

from __future__ import annotations

import os
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import tree_snapshot
from timeline import CleanConfig, HudiTable
from timeline.cli import main
from timeline.config import update_config
from timeline.instant import format_instant_time
from timeline.locks.live import LiveWriterUnlocked

IN_PROCESS = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
              "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}


def pending_write(base: Path, t: str, *, heartbeat_age_s: float | None) -> None:
    """A writer's requested commit at `t`, with its heartbeat file touched `heartbeat_age_s` ago."""
    (base / ".hoodie" / "timeline" / f"{t}.commit.requested").write_bytes(b"")
    if heartbeat_age_s is not None:
        beat = base / ".hoodie" / ".heartbeat" / t
        beat.parent.mkdir(parents=True, exist_ok=True)
        beat.write_bytes(b"")
        stamp = time.time() - heartbeat_age_s
        os.utime(beat, (stamp, stamp))


def changes(table: HudiTable, **kwargs: object) -> dict[str, object]:
    """Every kind of change, on a table with a savepoint and a pending clean (made first)."""
    writes = table.timeline.writes().completed()
    latest, older = writes.instants[-1].requested_time, writes.instants[-3].requested_time
    config = CleanConfig(commits_retained=1)
    setup = table.maintenance(writers_stopped=True)
    setup.create_savepoint(older)
    plan = setup.plan_clean(config, enforce_retention=False)
    setup.schedule_clean(plan, config)
    maintenance = table.maintenance(**kwargs)  # type: ignore[arg-type]
    return {
        "clean schedule": lambda: maintenance.schedule_clean(plan, config, force=True),
        "clean run": maintenance.run_cleans,
        "rollback": lambda: maintenance.rollback(latest),
        "restore": lambda: maintenance.restore(older),
        "savepoint create": lambda: maintenance.create_savepoint(older),
        "savepoint delete": lambda: maintenance.delete_savepoint(older),
        "metadata table drop": lambda: maintenance.drop_metadata_table(dry_run=False),
    }


@pytest.mark.parametrize("options", [{}, IN_PROCESS], ids=["no-lock", "in-process-lock"])
def test_live_writers_a_live_heartbeat_with_no_lock_refuses_every_change(v9_table: Path,
                                                                          options: dict[str, str]) -> None:
    t = "20300101000000000"  # requested "in the future": only the heartbeat says it is live
    pending_write(v9_table, t, heartbeat_age_s=5)
    table = HudiTable.open(str(v9_table))
    assert [(w.requested_time, w.evidence) for w in table.inspect.live_writers()] == [(t, "heartbeat")]
    todo = changes(table, options=options)
    before = tree_snapshot(v9_table)
    for name, change in todo.items():
        with pytest.raises(LiveWriterUnlocked, match=f"commit {t}.*hoodie.write.lock.provider.*--writers-stopped"):
            change()  # type: ignore[operator]
        assert tree_snapshot(v9_table) == before, name


def test_live_writers_an_expired_heartbeat_is_no_live_writer(v9_table: Path) -> None:
    ten_minutes_ago = format_instant_time(datetime.now() - timedelta(minutes=10))
    pending_write(v9_table, ten_minutes_ago, heartbeat_age_s=121)  # past 60 s x 2 misses: a failed write
    table = HudiTable.open(str(v9_table))
    assert table.inspect.live_writers() == []
    older = table.timeline.writes().completed().instants[-3].requested_time
    table.maintenance().create_savepoint(older)


def test_live_writers_a_pending_write_newer_than_the_window_is_live(v9_table: Path) -> None:
    t = format_instant_time(datetime.now())  # the fixture's timeline is in LOCAL time
    pending_write(v9_table, t, heartbeat_age_s=None)
    table = HudiTable.open(str(v9_table))
    assert [(w.requested_time, w.evidence) for w in table.inspect.live_writers()] == [(t, "pending")]
    older = table.timeline.writes().completed().instants[-3].requested_time
    with pytest.raises(LiveWriterUnlocked, match=f"commit {t} \\(pending"):
        table.maintenance().create_savepoint(older)


def test_live_writers_the_override_goes_on_and_is_recorded(v9_table: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    t = "20300101000000000"
    pending_write(v9_table, t, heartbeat_age_s=5)
    table = HudiTable.open(str(v9_table))
    older = table.timeline.writes().completed().instants[-3].requested_time
    with pytest.raises(LiveWriterUnlocked):
        table.maintenance().preflight()
    maintenance = table.maintenance(writers_stopped=True)
    assert maintenance.preflight().live_writers[0].requested_time == t
    maintenance.create_savepoint(older)
    (decision,) = maintenance.decisions
    assert decision.overridden and not decision.locked and decision.live_writers[0].requested_time == t
    assert "the caller said the writers are stopped" in decision.describe()
    before = tree_snapshot(v9_table)
    assert main(["savepoint", "delete", str(v9_table), "--instant", older, "--yes"]) == 2
    assert f"commit {t}" in capsys.readouterr().err and tree_snapshot(v9_table) == before
    assert main(["savepoint", "delete", str(v9_table), "--instant", older, "--yes", "--writers-stopped"]) == 0
    assert not HudiTable.open(str(v9_table)).timeline.savepoints().completed().instants


def test_live_writers_a_pending_write_far_ahead_of_the_clock_is_no_evidence(v9_table: Path) -> None:
    pending_write(v9_table, "20990101000000000", heartbeat_age_s=None)  # a wrong clock, not a running writer
    soon = format_instant_time(datetime.now() + timedelta(seconds=30))  # a writer's clock a little ahead: live
    pending_write(v9_table, soon, heartbeat_age_s=None)
    table = HudiTable.open(str(v9_table))
    assert [w.requested_time for w in table.inspect.live_writers()] == [soon]


def test_live_writers_completed_writes_and_table_services_keep_their_pending_files_and_are_not_live(
        v9_table: Path) -> None:
    """A completed write keeps its requested and inflight files; a compaction completes as a
    commit and a clustering as a replacecommit of its own time: none is live, though all were
    requested just now. A pending delta commit and a pending compaction beside them are."""
    now = datetime.now()  # the fixture's timeline is in LOCAL time
    t1, t2, t3, t4, t5 = (format_instant_time(now - timedelta(seconds=s)) for s in (5, 4, 3, 2, 1))
    folder = v9_table / ".hoodie" / "timeline"
    completion = format_instant_time(now)
    for name in (f"{t1}.commit.requested", f"{t1}.commit.inflight", f"{t1}_{completion}.commit",
                 f"{t2}.compaction.requested", f"{t2}.compaction.inflight", f"{t2}_{completion}.commit",
                 f"{t3}.clustering.requested", f"{t3}.clustering.inflight", f"{t3}_{completion}.replacecommit",
                 f"{t4}.deltacommit.requested", f"{t5}.compaction.requested"):
        source = next(folder.glob("*.commit"))  # any decodable content: only the names matter here
        (folder / name).write_bytes(source.read_bytes() if not name.endswith((".requested", ".inflight")) else b"")
    live = HudiTable.open(str(v9_table)).inspect.live_writers()
    assert [(w.requested_time, w.action, w.evidence) for w in live] == [
        (t5, "compaction", "pending"), (t4, "deltacommit", "pending")]


def test_live_writers_the_override_lets_a_clean_and_a_rollback_go_on_and_records_it(v9_table: Path) -> None:
    t = "20300101000000000"
    pending_write(v9_table, t, heartbeat_age_s=5)
    table = HudiTable.open(str(v9_table))
    # the writers' failed-writes policy is LAZY (as under multi-writer settings), so a completed
    # commit may be rolled back beside another writer's pending one
    update_config(table.storage, table.base, {"hoodie.clean.failed.writes.policy": "LAZY"})
    latest = table.reload().timeline.writes().completed().instants[-1].requested_time
    config = CleanConfig(commits_retained=1)
    maintenance = table.maintenance(writers_stopped=True)
    plan = maintenance.plan_clean(config, enforce_retention=False)
    assert plan.files_to_delete
    with pytest.raises(LiveWriterUnlocked, match=f"commit {t}"):
        table.maintenance().schedule_clean(plan, config)
    clean = maintenance.schedule_clean(plan, config)
    assert clean is not None and len(maintenance.run_cleans()) == 1
    assert table.reload().timeline.cleans().completed().last().requested_time == clean.requested_time  # type: ignore[union-attr]
    with pytest.raises(LiveWriterUnlocked, match=f"commit {t}"):
        table.maintenance().rollback(latest)
    maintenance.rollback(latest)
    assert latest not in {i.requested_time for i in table.reload().timeline.writes()}
    # schedule, the run's inflight and completion, the rollback: each under the caller's word
    assert len(maintenance.decisions) >= 4
    assert all(d.overridden and not d.locked and d.live_writers[0].requested_time == t
               for d in maintenance.decisions)
