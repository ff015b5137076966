"""Rollback of failed and completed writes, checked with hudi-rs on real tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import TOKEN, Lake, fake_failed_write, rows
from timeline import HudiTable, transition
from timeline.failed_writes import failed_writes
from timeline.files import base_file_name
from timeline.instant import Instant, State
from timeline.metadata import avro
from timeline.rollback import RollbackRefused, plan_rollback, rollback
from timeline.savepoint import create_savepoint
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(20)]
P = "city=sf"


@pytest.mark.parametrize("markers", [True, False], ids=["markers", "listing"])
def test_rollback_failed_write_deletes_its_files_and_reads_the_same(table_copy, markers: bool) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    before = rows(path)
    written = fake_failed_write(path, "20990101000000000", markers=markers)
    table = HudiTable.open(str(path))
    # EAGER (getInstantsToRollback): every pending write, the newest included
    assert [i.requested_time for i in failed_writes(table)] == ["20990101000000000"]
    (failed,) = [i for i in table.timeline.pending() if i.requested_time == "20990101000000000"]
    preview = plan_rollback(table, failed)
    assert sorted(Path(p) for _, p, _ in preview.files_to_delete) == sorted(written)
    assert preview.bytes_to_delete == sum(f.stat().st_size for f in written)
    done = rollback(table, "20990101000000000")
    assert not any(f.exists() for f in written)
    assert not (path / ".hoodie" / ".temp" / "20990101000000000").exists()
    timeline = HudiTable.open(str(path)).timeline
    assert timeline.find("20990101000000000") is None
    assert timeline.rollbacks().completed().last() == done
    folder = Path(timeline.folder)
    meta = avro.decode((folder / done.file_name(2)).read_bytes(), path="rb")
    assert meta["commitsRollback"] == ["20990101000000000"] and meta["version"] == 1
    assert meta["totalFilesDeleted"] == 2
    plan = avro.decode((folder / f"{done.requested_time}.rollback.requested").read_bytes(), path="plan")
    assert plan["instantToRollback"] == {"commitTime": "20990101000000000", "action": "commit"}
    assert len(plan["RollbackRequests"]) >= 1
    assert rows(path) == before


def test_rollback_completed_commit_reads_as_the_commit_before(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    *_, previous, last = table.timeline.commits().completed()
    expected = rows(path, previous.requested_time)
    rollback(table, last.requested_time)
    assert HudiTable.open(str(path)).timeline.commits().completed().last() == previous
    assert rows(path) == expected


def test_rollback_v6_mor_delta_commit_writes_a_rollback_block(table_copy) -> None:
    path = table_copy("quickstart_trips_table/mor/avro/v6_trips_8i1u")
    table = HudiTable.open(str(path))
    first, second = table.timeline.commits().completed()
    expected = rows(path, first.requested_time)
    logs_before = {p.name for p in path.rglob(".*.log.*")}
    done = rollback(table, second.requested_time)
    new_logs = {p.name for p in path.rglob(".*.log.*")} - logs_before
    assert len(new_logs) == 1 and next(iter(new_logs)).endswith("_1-0-1")
    meta = HudiTable.open(str(path)).read_instant(HudiTable.open(str(path)).timeline.rollbacks().last())  # type: ignore[arg-type]
    assert meta is not None and meta["commitsRollback"] == [second.requested_time]
    (partition,) = [m for m in meta["partitionMetadata"].values() if m["rollbackLogFiles"]]
    assert list(partition["logFilesFromFailedCommit"]) and done.is_completed
    assert rows(path) == expected


def test_rollback_refuses_a_savepointed_commit(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = HudiTable.open(str(path))
    last = table.timeline.commits().completed().last()
    assert last is not None
    create_savepoint(table, last.requested_time)
    with pytest.raises(RollbackRefused, match="savepointed commit"):
        rollback(HudiTable.open(str(path)), last.requested_time)


def test_validateRollbackCommitSequence_refuses_a_pending_write_with_later_commits() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]}, state=State.INFLIGHT)
    lake.commit(T[2], {P: [lake.base_file(P, "h", T[2])]})
    lake.commit(T[3], {}, state=State.REQUESTED)
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RollbackRefused, match=f"found commits after {T[1]}"):
        rollback(table, T[1])
    lake.storage.write(f"/t/.hoodie/.heartbeat/{T[1]}", b"")  # a LAZY remnant: Hudi lets it go...
    with pytest.raises(RollbackRefused, match="still being written"):  # (not while it is fresh)
        rollback(table, T[1])
    lake.storage.set_mtime(f"/t/.hoodie/.heartbeat/{T[1]}", 0)
    with pytest.raises(RollbackRefused, match=f"found pending writes after {T[1]}"):
        rollback(table, T[1])                                # ...once the newer pending write is gone
    assert lake.storage.exists(f"/t/{P}/g_0-1-0_{T[1]}.parquet")
    rollback(table, T[3])
    rollback(table, T[1])
    assert not lake.storage.exists(f"/t/{P}/g_0-1-0_{T[1]}.parquet")


def test_rollback_reads_timeline_server_markers() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    written = lake.base_file(P, "g", T[1])
    other = lake.base_file(P, "h", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.commit(T[2], {}, state=State.REQUESTED)
    lake.storage.write(f"/t/.hoodie/.temp/{T[1]}/MARKERS.type", b"TIMELINE_SERVER_BASED")
    lake.storage.write(f"/t/.hoodie/.temp/{T[1]}/MARKERS0", f"{P}/{written}.marker.CREATE\n".encode())
    lake.storage.write(f"/t/.hoodie/.temp/{T[1]}/MARKERS1", f"{P}/{other}.marker.MERGE\n".encode())
    table = HudiTable.load(lake.storage, "/t")
    assert [i.requested_time for i in failed_writes(table)] == [T[2], T[1]]
    failed = failed_writes(table)[-1]
    preview = plan_rollback(table, failed)
    assert sorted(p.rsplit("/", 1)[-1] for _, p, _ in preview.files_to_delete) == sorted([written, other])
    rollback(table, T[2])  # the newer failed write first (validateRollbackCommitSequence)
    rollback(table, T[1])
    assert not lake.storage.exists(f"/t/{P}/{written}") and not lake.storage.exists(f"/t/{P}/{other}")
    assert not lake.storage.exists(f"/t/.hoodie/.temp/{T[1]}/MARKERS0")


def test_validateRollbackCommitSequence_refusal_explains_the_rule_and_the_way_forward() -> None:
    """A failed write with a later completed commit: the refusal names Hudi's rule and a way
    forward that works (a savepoint before it to restore to, made first when there is none),
    and that way, followed, removes the write."""
    from timeline.restore import restore

    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    lake.commit(T[1], {P: [lake.base_file(P, "g", T[1])]})
    lake.commit(T[2], {P: [lake.base_file(P, "h", T[2])]}, state=State.INFLIGHT)
    lake.commit(T[3], {P: [lake.base_file(P, "i", T[3])]})
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RollbackRefused) as refused:
        rollback(table, T[2])
    message = str(refused.value)
    assert "validateRollbackCommitSequence" in message and "newest first" in message
    assert f"create a savepoint of {T[1]} (the newest write before it), then restore the table to it" in message
    assert "cannot be rolled back first" in message  # Hudi refuses the later commits while this one is pending
    with pytest.raises(RollbackRefused, match=f"found pending writes after {T[3]}: none is newer"):
        rollback(table, T[3])  # ...as the refusal said
    create_savepoint(table, T[1])
    with pytest.raises(RollbackRefused, match=f"restore the table to the savepoint {T[1]} "):
        rollback(table.reload(), T[2])
    restore(table.reload(), T[1])  # the way forward, followed
    assert {i.requested_time for i in table.reload().timeline.writes()} == {T[0], T[1]}
    assert not lake.storage.exists(f"/t/{P}/h_0-1-0_{T[2]}.parquet")


def test_validateRollbackCommitSequence_refusal_of_a_completed_write_says_roll_back_the_later_ones_first() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    for n, group in enumerate("ghi"):
        lake.commit(T[n], {P: [lake.base_file(P, group, T[n])]})
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(RollbackRefused) as refused:
        rollback(table, T[1])
    message = str(refused.value)
    assert f"create a savepoint of {T[0]}" in message
    assert f"or roll back the later commits first, newest first, starting with {T[2]} " in message
    assert f"`cleanline rollback {table.uri} --instant {T[2]}`" in message
    rollback(table, T[2])  # the way forward, followed
    rollback(table.reload(), T[1])
    assert [i.requested_time for i in table.reload().timeline.writes()] == [T[0]]


def test_rollback_resumed_on_a_v6_clustering_keeps_its_plan() -> None:
    """HoodieTable.rollbackInflightClustering on table version 6 (a replacecommit whose
    requested plan is a clustering): the pending rollback of the inflight attempt deletes the
    file it wrote and reverts it to requested; its plan stays for a writer to run again. A
    pending rollback of an insert_overwrite replacecommit (no clustering plan) removes it whole."""
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    plan = {"operationType": "cluster", "version": 1, "extraMetadata": {}, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"g_1-0-1_{T[0]}.parquet", "fileId": "g", "partitionPath": P,
                                     "deltaFilePaths": [], "version": 1}], "metrics": {}, "numOutputFileGroups": 1,
                         "version": 1}], "version": 1, "extraMetadata": {}, "preserveHoodieMetadata": True,
        "strategy": {"strategyClassName": "x", "strategyParams": {}, "version": 1}}}
    for time_, content in ((T[1], plan), (T[2], {"operationType": None, "clusteringPlan": None,
                                                 "extraMetadata": None, "version": None})):
        lake.instant_file(Instant(time_, "replacecommit", State.REQUESTED), content)
        lake.instant_file(Instant(time_, "replacecommit", State.INFLIGHT))
        lake.base_file(P, f"c{time_[-7:]}", time_)
    table = HudiTable.load(lake.storage, "/t")
    for time_ in (T[2], T[1]):  # newest first
        target = next(i for i in table.reload().timeline if i.requested_time == time_)
        transition.request(table, "rollback", plan_rollback(table, target).plan.to_raw())
        rollback(table, time_)
    left = {(i.requested_time, i.action, i.state) for i in table.reload().timeline if i.requested_time in T[1:3]}
    assert left == {(T[1], "replacecommit", State.REQUESTED)}
    assert lake.storage.exists(f"/t/.hoodie/{T[1]}.replacecommit.requested")
    assert not any(lake.storage.exists(f"/t/{P}/{base_file_name(f'c{t[-7:]}', TOKEN, t)}") for t in T[1:3])
    assert len(table.timeline.rollbacks().completed()) == 2


def test_rollback_metadata_records_the_instant_and_its_own_duration_and_keeps_other_markers() -> None:
    """BaseRollbackActionExecutor.runRollback/finishRollback: HoodieRollbackMetadata names the
    instant rolled back (commitsRollback, instantsRollback with its action) and timeTakenInMillis
    is the rollback's HoodieTimer, to the millisecond (a metadata-table part of four seconds);
    only the rolled-back instant's marker folder is deleted (WriteMarkers.quietDeleteMarkerDir),
    another write's markers stay."""
    import time

    from timeline.rollback import execute_rollback_plan

    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit(T[0], {P: [lake.base_file(P, "g", T[0])]})
    written = lake.base_file(P, "h", T[1])
    lake.commit(T[1], {}, state=State.INFLIGHT)
    lake.commit(T[2], {}, state=State.INFLIGHT)
    for t, name in ((T[1], written), (T[2], "x")):
        lake.storage.write(f"/t/.hoodie/.temp/{t}/{P}/{name}.marker.CREATE", b"")
    table = HudiTable.load(lake.storage, "/t")
    target = table.timeline.find(T[1])
    plan = plan_rollback(table, target).plan
    marks: list[float] = []

    def slow(partitions: object) -> None:
        time.sleep(4)
        marks.append(time.monotonic())

    called = time.monotonic()
    content = execute_rollback_plan(table, T[5], plan, target, before_state_files=slow)
    took = (marks[0] - called) * 1000
    assert took - 50 <= content.time_taken_ms <= took + 2
    raw = content.to_raw()
    assert raw["commitsRollback"] == [T[1]] and raw["startRollbackTime"] == T[5]
    assert raw["instantsRollback"] == [{"commitTime": T[1], "action": "commit"}]
    assert not lake.storage.exists(f"/t/{P}/{written}")
    assert not lake.storage.exists(f"/t/.hoodie/.temp/{T[1]}/{P}/{written}.marker.CREATE")
    assert lake.storage.exists(f"/t/.hoodie/.temp/{T[2]}/{P}/x.marker.CREATE")


RULE = ("Hudi's rule (BaseRollbackActionExecutor.validateRollbackCommitSequence, failed-writes policy EAGER): "
        "a write is rolled back only when no commit completed after it, newest first.")


def sequence_lake(completed: list[str], pending: list[str], savepoints: list[str] = ()) -> HudiTable:
    lake = Lake(MemoryStorage(), "/t", version=8)
    for t in sorted([*completed, *pending]):
        lake.commit(t, {P: [lake.base_file(P, f"g{t[-7:-5]}", t)]},
                    state=State.COMPLETED if t in completed else State.INFLIGHT)
    for t in savepoints:
        lake.savepoint(t, {P: [f"g{t[-7:-5]}_{TOKEN}_{t}.parquet"]})
    return HudiTable.load(lake.storage, "/t")


def refusal(table: HudiTable, t: str) -> str:
    with pytest.raises(RollbackRefused) as refused:
        rollback(table, t)
    return str(refused.value)


def test_validateRollbackCommitSequence_refusals_name_the_commits_the_savepoints_and_the_way_forward() -> None:
    """BaseRollbackActionExecutor.validateRollbackCommitSequence under EAGER, each refusal in
    full: the later completed commits (three named, then "..."), the savepoints after the write
    that a restore may not pass (one or more), the savepoint before it to restore to, or the newest
    write before it to savepoint, or neither; the later pending writes (newest first, three named);
    a completed commit refused while writes are pending (one or more)."""
    table = sequence_lake(T[:6], [], [T[0], T[3], T[4]])
    uri = table.uri
    back = (f"roll back the later commits first, newest first, starting with {T[5]} "
            f"(`cleanline rollback {uri} --instant {T[5]}`; what they wrote is lost), then this one")
    assert refusal(table, T[1]) == (
        f"{uri}: found commits after {T[1]} ({T[2]}, {T[3]}, {T[4]}, ...), so it cannot be rolled back now. {RULE} "
        f"The way forward: first delete the savepoints after it ({T[3]}, {T[4]}: no restore passes a later "
        "savepoint and no savepointed commit is rolled back); then restore the table to the savepoint "
        f"{T[0]} (a restore rolls back every write after the savepoint, this one included); or {back}.")
    table = sequence_lake(T[:5], [], [T[2]])
    back = back.replace(T[5], T[4])
    assert refusal(table, T[1]) == (
        f"{uri}: found commits after {T[1]} ({T[2]}, {T[3]}, {T[4]}), so it cannot be rolled back now. {RULE} "
        f"The way forward: first delete the savepoint after it ({T[2]}: no restore passes a later savepoint and "
        f"no savepointed commit is rolled back); then create a savepoint of {T[0]} (the newest write before it), "
        f"then restore the table to it (a restore rolls back every write after the savepoint, this one included); "
        f"or {back}.")
    table = sequence_lake(T[:2], [])  # nothing before it to restore to: only the later commits first
    assert refusal(table, T[0]) == (
        f"{uri}: found commits after {T[0]} ({T[1]}), so it cannot be rolled back now. {RULE} The way forward: "
        f"roll back the later commits first, newest first, starting with {T[1]} (`cleanline rollback {uri} "
        f"--instant {T[1]}`; what they wrote is lost), then this one.")
    table = sequence_lake(T[:3], [], [T[1]])  # a savepoint of the write itself is neither before nor after it
    assert refusal(table, T[1]) == (
        f"{uri}: found commits after {T[1]} ({T[2]}), so it cannot be rolled back now. {RULE} The way forward: "
        f"create a savepoint of {T[0]} (the newest write before it), then restore the table to it (a restore rolls "
        "back every write after the savepoint, this one included); or roll back the later commits first, newest "
        f"first, starting with {T[2]} (`cleanline rollback {uri} --instant {T[2]}`; what they wrote is lost), then "
        "this one.")
    table = sequence_lake([T[1]], [T[0]])
    assert refusal(table, T[0]) == (
        f"{uri}: found commits after {T[0]} ({T[1]}), so it cannot be rolled back now. {RULE} The way forward: "
        "no savepoint can be restored to (none lies before it, and no write before it can be savepointed), and "
        "while this write is pending Hudi's same rule refuses to roll back the later commits.")
    table = sequence_lake([T[0], T[2]], [T[1]])
    assert refusal(table, T[1]) == (
        f"{uri}: found commits after {T[1]} ({T[2]}), so it cannot be rolled back now. {RULE} The way forward: "
        f"create a savepoint of {T[0]} (the newest write before it), then restore the table to it (a restore rolls "
        "back every write after the savepoint, this one included). The later commits cannot be rolled back first: "
        "while this write is pending Hudi's same rule refuses to roll back a completed commit.")
    for newer in (T[2:6], T[2:5]):
        table = sequence_lake([T[0]], [T[1], *newer])
        named = ", ".join(sorted(newer, reverse=True)[:3]) + (", ..." if len(newer) > 3 else "")
        assert refusal(table, T[1]) == (
            f"{uri}: found pending writes after {T[1]} ({named}); roll back the newer ones first. Hudi's rule "
            "(validateRollbackCommitSequence, failed-writes policy EAGER): pending writes are rolled back newest "
            f"first, so roll back {newer[-1]} first, then this one.")
    for pending in ([T[1]], T[1:3], T[1:5]):
        table = sequence_lake([T[0], T[5]], pending)
        named = ", ".join(sorted(pending, reverse=True)[:3])
        assert refusal(table, T[5]) == (
            f"{uri}: found pending writes after {T[5]}: none is newer, but {pending[-1]} is pending. Hudi's rule "
            "(validateRollbackCommitSequence, failed-writes policy EAGER) rolls back a completed commit only while "
            f"no write is pending: roll back the pending write{'s' if len(pending) > 1 else ''} first ({named}), "
            "or restore the table to a savepoint.")


def test_validateRollbackCommitSequence_follows_the_writers_policy_and_the_writes_own_heartbeat() -> None:
    """The sequence rule holds under the writers' EAGER policy only (the options given over
    hoodie.properties): under LAZY a write with later commits is rolled back. Only the write's
    own heartbeat file (`.hoodie/.heartbeat/<t>`, a LAZY remnant) lets it go under EAGER: another
    write's heartbeat does not."""
    table = sequence_lake([T[0], T[2]], [T[1], T[3]])
    table.storage.write(f"/t/.hoodie/.heartbeat/{T[3]}", b"")
    table.storage.set_mtime(f"/t/.hoodie/.heartbeat/{T[3]}", 0)
    with pytest.raises(RollbackRefused, match=f"found commits after {T[1]}"):
        rollback(table, T[1])
    rollback(table, T[1], options={"hoodie.cleaner.policy.failed.writes": "LAZY"})
    assert table.reload().timeline.find(T[1]) is None
