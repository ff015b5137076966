"""Pending rollbacks finished as Hudi finishes them (timeline/pending_rollbacks.py): of a write,
of a pending compaction (reverts to requested), of a pending log compaction (its instant files
go), of an instant whose files are gone already; refused when none is pending or its writer is
still running. Hand-made timelines (`Lake`)."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable, transition
from timeline.instant import COMPACTION, DELTA_COMMIT, LOG_COMPACTION, ROLLBACK, Instant, State
from timeline.metadata.records import RollbackMetadata
from timeline.pending_rollbacks import finish_rollback
from timeline.rollback import RollbackRefused, plan_rollback
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(10)]
P = "city=sf"


def lake() -> Lake:
    made = Lake(MemoryStorage(), "/t", version=8)
    made.commit(T[0], {P: [made.base_file(P, "a", T[0])]})
    return made


def pending_rollback(made: Lake, raw: dict) -> Instant:
    return transition.request(HudiTable.load(made.storage, "/t"), ROLLBACK, raw)


def states_of(made: Lake, time: str) -> list[tuple[str, State]]:
    return sorted((i.action, i.state) for i in HudiTable.load(made.storage, "/t").timeline if i.requested_time == time)


def rolled_back(made: Lake, rollback: Instant) -> RollbackMetadata:
    table = HudiTable.load(made.storage, "/t")
    (done,) = [i for i in table.timeline.rollbacks().completed() if i.requested_time == rollback.requested_time]
    return table.read(done, RollbackMetadata)


def beat(made: Lake, time: str) -> None:
    made.storage.write(f"/t/.hoodie/.heartbeat/{time}", b"")  # its writer is alive


def test_pending_rollbacks_refused_when_none_is_pending() -> None:
    made = lake()
    made.commit(T[1], {P: [made.base_file(P, "b", T[1])]}, state=State.INFLIGHT)
    with pytest.raises(RollbackRefused, match=f"no pending rollback of {T[1]}"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [("commit", State.INFLIGHT)]


def test_pending_rollbacks_write_is_finished_from_its_plan() -> None:
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    table = HudiTable.load(made.storage, "/t")
    (failed,) = table.timeline.pending()
    pending = pending_rollback(made, plan_rollback(table, failed).plan.to_raw())
    done = finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert (done.requested_time, done.action, done.state) == (pending.requested_time, ROLLBACK, State.COMPLETED)
    assert states_of(made, T[1]) == []
    assert not made.storage.exists(f"/t/{P}/{written}")
    assert rolled_back(made, pending).commits_rollback == (T[1],)


def test_pending_rollbacks_write_still_running_is_refused() -> None:
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    table = HudiTable.load(made.storage, "/t")
    (failed,) = table.timeline.pending()
    pending_rollback(made, plan_rollback(table, failed).plan.to_raw())
    beat(made, T[1])
    with pytest.raises(RollbackRefused, match="still being written"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert made.storage.exists(f"/t/{P}/{written}")


def test_pending_rollbacks_instant_gone_is_rebuilt_from_the_plan() -> None:
    made = lake()
    written = made.base_file(P, "b", T[1])
    made.commit(T[1], {P: [written]}, state=State.INFLIGHT)
    table = HudiTable.load(made.storage, "/t")
    (failed,) = table.timeline.pending()
    pending = pending_rollback(made, plan_rollback(table, failed).plan.to_raw())
    for status in table.timeline.files_of(failed).values():
        made.storage.delete(status.path)  # the rollback deleted the write's instant files, then died
    beat(made, T[1])  # a gone instant has no writer to wait for
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert not made.storage.exists(f"/t/{P}/{written}")
    metadata = rolled_back(made, pending)
    assert [(i.time, i.action) for i in metadata.instants_rollback] == [(T[1], "commit")]


def test_pending_rollbacks_instant_gone_without_its_action_is_a_deltacommit() -> None:
    made = lake()
    pending = pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": ""},
                                      "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert [(i.time, i.action) for i in rolled_back(made, pending).instants_rollback] == [(T[1], DELTA_COMMIT)]


def test_pending_rollbacks_compaction_reverts_to_requested() -> None:
    made = lake()
    made.schedule_compaction(T[1], [(P, "a", T[0])], state=State.INFLIGHT)
    pending = pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": COMPACTION},
                                      "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(COMPACTION, State.REQUESTED)]
    assert [(i.time, i.action) for i in rolled_back(made, pending).instants_rollback] == [(T[1], COMPACTION)]


def test_pending_rollbacks_compaction_still_running_is_refused() -> None:
    made = lake()
    made.schedule_compaction(T[1], [(P, "a", T[0])], state=State.INFLIGHT)
    pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": COMPACTION},
                            "RollbackRequests": [], "version": 1})
    beat(made, T[1])
    with pytest.raises(RollbackRefused, match="still being written"):
        finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == [(COMPACTION, State.INFLIGHT)]


def test_pending_rollbacks_log_compaction_instant_files_go() -> None:
    made = lake()
    plan = {"operations": [], "version": 2}
    made.instant_file(Instant(T[1], LOG_COMPACTION, State.REQUESTED), plan)
    made.instant_file(Instant(T[1], LOG_COMPACTION, State.INFLIGHT))
    pending_rollback(made, {"instantToRollback": {"commitTime": T[1], "action": LOG_COMPACTION},
                            "RollbackRequests": [], "version": 1})
    finish_rollback(HudiTable.load(made.storage, "/t"), T[1])
    assert states_of(made, T[1]) == []
