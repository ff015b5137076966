"""timeline/failed_writes.py: which pending writes failed, as
BaseHoodieTableServiceClient.getInstantsToRollback finds them under the table's failed-writes
policy (EAGER, LAZY, NEVER), with the writers' heartbeats (HoodieHeartbeatClient); the rollback
of each is tests/test_rollback.py's."""

from __future__ import annotations

from tests.helpers import Lake
from timeline import HudiTable
from timeline.failed_writes import failed_writes, failed_writes_policy
from timeline.instant import State
from timeline.rollback import rollback_failed_writes
from timeline.roots import LakeRoots
from timeline.storage import MemoryStorage
from timeline.storage.arrow import LocalStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"


def test_rollback_failed_writes_eager_and_lazy() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]}, state=State.INFLIGHT)
    lake.commit(T[2], {}, state=State.REQUESTED)
    lake.commit(T[3], {P: [lake.base_file(P, "h", T[3])]}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/t")
    assert [i.requested_time for i in failed_writes(table)] == [T[3], T[2], T[1]]
    lazy = Lake(MemoryStorage(), "/u", version=8, extra_props={"hoodie.clean.failed.writes.policy": "LAZY"})
    lazy.commit(T[1], {}, state=State.INFLIGHT)
    lazy.commit(T[2], {}, state=State.INFLIGHT)
    lazy.storage.write(f"/u/.hoodie/.heartbeat/{T[2]}", b"")
    lazy_table = HudiTable.load(lazy.storage, "/u")
    beat = lazy.storage.status(f"/u/.hoodie/.heartbeat/{T[2]}").mtime_ms
    assert [i.requested_time for i in failed_writes(lazy_table, now_ms=beat + 1000)] == [T[1]]
    assert [i.requested_time for i in failed_writes(lazy_table, now_ms=beat + 600_001)] == [T[2], T[1]]
    done = rollback_failed_writes(table)  # newest first, so each passes validateRollbackCommitSequence
    assert len(done) == 3 and not lake.storage.exists(f"/t/{P}/g_0-1-0_{T[1]}.parquet")
    assert not lake.storage.exists(f"/t/{P}/h_0-1-0_{T[3]}.parquet")
    assert lake.storage.exists(f"/t/{P}/g_0-1-0_{T[0]}.parquet")


def test_getInstantsToRollback_lazy_heartbeat_defaults_and_inference() -> None:
    """HoodieWriteConfig: tolerable misses default 2 (x 60,000 ms); multi-writer concurrency
    modes make the policy LAZY whatever it says."""
    lake = Lake(MemoryStorage(), "/u", version=8, extra_props={
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control"})
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.storage.write(f"/u/.hoodie/.heartbeat/{T[1]}", b"")
    table = HudiTable.load(lake.storage, "/u")
    beat = lake.storage.status(f"/u/.hoodie/.heartbeat/{T[1]}").mtime_ms
    assert failed_writes(table, now_ms=beat + 120_000) == []          # alive: 2 misses allowed
    assert [i.requested_time for i in failed_writes(table, now_ms=beat + 120_001)] == [T[1]]


def test_failed_writes_none_under_never_and_the_old_key_is_read() -> None:
    """NEVER leaves every pending write alone; `hoodie.cleaner.policy.failed.writes` (the key's
    old name) is read when the new one is absent."""
    lake = Lake(MemoryStorage(), "/n", version=8, extra_props={"hoodie.cleaner.policy.failed.writes": "NEVER"})
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, "/n")
    assert failed_writes_policy(table) == "NEVER" and failed_writes(table) == []


def test_failed_writes_policy_is_the_writers_options_over_the_table_properties(tmp_path) -> None:
    """HoodieWriteConfig.getFailedWritesCleanPolicy reads the writer's own config: the call's
    options (`maintenance(options=...)`), then the root's (`HudiTable.open(uri, roots=...)`,
    CLEANLINE_HUDI_OPTIONS), over `hoodie.properties`, layered as the lock is found. A pending
    write under NEVER from the writers' options is no failed write, whatever the table says."""
    base = str(tmp_path / "lake" / "w")
    lake = Lake(LocalStorage(), base, version=8, extra_props={"hoodie.clean.failed.writes.policy": "EAGER"})
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {}, state=State.INFLIGHT)
    table = HudiTable.load(lake.storage, base)
    never = {"hoodie.clean.failed.writes.policy": "NEVER"}
    assert failed_writes_policy(table) == "EAGER" and [i.requested_time for i in failed_writes(table)] == [T[1]]
    assert failed_writes_policy(table, never) == "NEVER" and failed_writes(table, options=never) == []
    assert table.maintenance(options=never).preview_rollback_failed_writes() == []
    assert table.maintenance(options=never).rollback_failed_writes() == []
    assert table.timeline.find(T[1]) is not None
    roots = LakeRoots(hudi={str(tmp_path / "lake"): {"hoodie.cleaner.policy.failed.writes": "never"}})
    rooted = HudiTable.open(base, roots=roots)
    assert failed_writes_policy(rooted) == "NEVER" and failed_writes(rooted) == []
    assert failed_writes_policy(rooted, {"hoodie.clean.failed.writes.policy": "LAZY"}) == "LAZY"  # the call's win
