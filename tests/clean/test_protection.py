"""What keeps files from being cleaned whatever the policy (timeline/clean/protection.py): read
from the timeline once, asked per slice while planning and per target again before the first
delete."""

from __future__ import annotations

from tests.helpers import Lake, T
from timeline import HudiTable
from timeline.clean.protection import (
    PendingOperation,
    Protection,
    clustering_reason,
    compaction_reason,
    conflicts_with,
    pending_reason,
    pending_write_reason,
    protection_conflicts,
    read_protection,
    slice_savepoint,
    why_protected,
)
from timeline.files import base_file_name, base_file_of, log_file_name, parse_log_file
from timeline.fsview import FileGroup, FileSlice
from timeline.instant import Instant, State
from timeline.storage import MemoryStorage

P, Q = "city=sf", "city=nyc"
TOKEN = "0-1-0"


def base(file_id: str, t: str) -> str:
    return base_file_name(file_id, TOKEN, t)


def log(file_id: str, t: str, version: int = 1) -> str:
    return log_file_name(file_id, t, version, TOKEN)


def piece(file_id: str, t: str, *logs: str, with_base: bool = True) -> FileSlice:
    return FileSlice(P, file_id, t, base_file_of(base(file_id, t)) if with_base else None,
                     tuple(parse_log_file(name) for name in logs))


def group(file_id: str) -> FileGroup:
    return FileGroup(P, file_id, {}, {}, lambda _: True)


def clustering_plan(*names: str) -> dict:
    return {"operationType": "cluster", "version": 1, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"{P}/{n}", "deltaFilePaths": [], "fileId": n.split("_")[0],
                                     "partitionPath": P} for n in names], "numOutputFileGroups": 1}], "version": 1}}


def compaction_plan(file_id: str, base_instant: str) -> dict:
    return {"operations": [{"baseInstantTime": base_instant, "fileId": file_id, "partitionPath": P,
                            "deltaFilePaths": [], "dataFilePath": None}], "version": 2}


def test_protection_read_from_the_timeline_as_the_planner_reads_it() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8, table_type="MERGE_ON_READ")
    names = {f: lake.base_file(P, f, T[0]) for f in ("fg1", "fg2", "fg3", "fg4", "fg5", "fg6", "fg7")}
    lake.commit(T[0], {P: list(names.values())})
    lake.commit(T[1], {P: [lake.base_file(P, "fg2", T[1]), lake.base_file(P, "fg3", T[1])]})
    lake.savepoint(T[0], {P: [names["fg1"]]})
    lake.savepoint(T[1], {P: [names["fg1"], names["fg5"]]})  # the first savepoint holding a file is named
    # fg2: the compaction reads from T1, the log compaction from T0: the older base instant is kept;
    # fg3: the other way round
    lake.instant_file(Instant(T[2], "compaction", State.REQUESTED), compaction_plan("fg2", T[1]))
    lake.instant_file(Instant(T[3], "logcompaction", State.REQUESTED), compaction_plan("fg2", T[0]))
    lake.instant_file(Instant(T[4], "compaction", State.REQUESTED), compaction_plan("fg3", T[0]))
    lake.instant_file(Instant(T[5], "logcompaction", State.REQUESTED), compaction_plan("fg3", T[1]))
    # fg6: both from T0: the first plan in timeline order is named
    lake.instant_file(Instant(T[8], "compaction", State.REQUESTED), compaction_plan("fg6", T[0]))
    lake.instant_file(Instant(T[9], "logcompaction", State.REQUESTED), compaction_plan("fg6", T[0]))
    lake.instant_file(Instant(T[6], "clustering", State.REQUESTED), clustering_plan(names["fg4"]))
    # an inflight clustering: its plan is read from the requested file (the inflight one is empty)
    lake.instant_file(Instant(T[10], "clustering", State.REQUESTED), clustering_plan(names["fg7"]))
    lake.instant_file(Instant(T[10], "clustering", State.INFLIGHT))
    lake.commit(T[7], {}, state=State.INFLIGHT)
    got = read_protection(HudiTable.load(lake.storage, lake.base))
    assert got == Protection(
        {names["fg1"]: T[0], names["fg5"]: T[1]},
        {(P, "fg2"): PendingOperation(T[0], "pending log compaction", T[3]),
         (P, "fg3"): PendingOperation(T[0], "pending compaction", T[4]),
         (P, "fg6"): PendingOperation(T[0], "pending compaction", T[8])},
        {names["fg4"]: T[6], names["fg7"]: T[10]},
        frozenset({T[2], T[3], T[4], T[5], T[6], T[7], T[8], T[9], T[10]}))


def test_protection_of_a_timeline_without_any_is_empty() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    lake.commit(T[0], {P: [lake.base_file(P, "fg1", T[0])]})
    assert read_protection(HudiTable.load(lake.storage, lake.base)) == Protection({}, {}, {}, frozenset())


def test_protection_conflicts_name_each_protected_target_and_why() -> None:
    protection = Protection(
        {base("fg1", T[0]): T[0], base("fg9", T[0]): T[9]},
        {(P, "fg2"): PendingOperation(T[1], "pending compaction", T[2])},
        {base("fg3", T[0]): T[4], base("fg9", T[0]): T[5]})
    targets = [(P, f"/t/{P}/{name}") for name in (
        base("fg1", T[0]), base("fg3", T[0]), base("fg9", T[0]),
        "junk.txt", base("fg2", T[0]), base("fg2", T[1]), base("fg2", T[2]), log("fg2", T[0]),
        base("fg5", T[0]))] + [(Q, f"/t/{Q}/{base('fg2', T[1])}")]  # a name not Hudi's is passed over
    assert conflicts_with(protection, targets) == [
        f"{base('fg1', T[0])}: savepoint {T[0]}",
        f"{base('fg3', T[0])}: pending clustering {T[4]} reads it",
        f"{base('fg9', T[0])}: savepoint {T[9]}",  # a savepoint is named before a clustering
        f"{base('fg2', T[1])}: pending compaction {T[2]} reads its file group",
        f"{base('fg2', T[2])}: pending compaction {T[2]} reads its file group",
        f"{log('fg2', T[0])}: pending compaction {T[2]} reads its file group",  # any log of the group
    ]


def test_protection_conflicts_without_pending_operations_look_only_at_names() -> None:
    targets = [(P, f"/t/{P}/{base('fg2', T[1])}"), (P, f"/t/{P}/{log('fg2', T[1])}")]
    assert conflicts_with(Protection({base("fg2", T[1]): T[1]}, {}, {}), targets) == [
        f"{base('fg2', T[1])}: savepoint {T[1]}"]
    assert conflicts_with(Protection({}, {}, {log("fg2", T[1]): T[3]}), targets) == [
        f"{log('fg2', T[1])}: pending clustering {T[3]} reads it"]
    only_ops = Protection({}, {(P, "fg2"): PendingOperation(T[1], "pending log compaction", T[2])}, {})
    assert conflicts_with(only_ops, targets) == [
        f"{base('fg2', T[1])}: pending log compaction {T[2]} reads its file group",
        f"{log('fg2', T[1])}: pending log compaction {T[2]} reads its file group"]
    assert conflicts_with(Protection({}, {}, {}, frozenset({T[1]})), targets) == []


def test_protection_conflicts_read_the_table_as_it_is_now() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    names = [lake.base_file(P, "fg1", t) for t in T[:2]]
    for t, name in zip(T, names):
        lake.commit(t, {P: [name]})
    table = HudiTable.load(lake.storage, lake.base)
    targets = [(P, f"/t/{P}/{n}") for n in names]
    assert protection_conflicts(table, targets) == []
    lake.savepoint(T[0], {P: [names[0]]})
    assert protection_conflicts(HudiTable.load(lake.storage, lake.base), targets) == [f"{names[0]}: savepoint {T[0]}"]


def test_protection_of_a_slice_savepoint_first_then_compaction_clustering_and_pending_writes() -> None:
    slices = piece("fg1", T[1], log("fg1", T[2]))
    assert slice_savepoint(slices, {}) is None
    assert slice_savepoint(slices, {log("fg1", T[2]): T[5]}) == T[5]  # a log file of the slice counts
    assert slice_savepoint(piece("fg1", T[1], with_base=False), {base("fg1", T[1]): T[5]}) is None
    everything = Protection({base("fg1", T[1]): T[6]}, {(P, "fg1"): PendingOperation(T[1], "pending compaction", T[3])},
                            {base("fg1", T[1]): T[4]}, frozenset({T[1]}))
    assert why_protected(group("fg1"), slices, everything) == f"savepoint {T[6]}"
    no_savepoint = Protection({}, everything.pending_ops, everything.clustering, everything.pending_writes)
    assert why_protected(group("fg1"), slices, no_savepoint) == f"pending compaction {T[3]} reads this slice"
    only_clustering = Protection({}, {}, everything.clustering, everything.pending_writes)
    assert pending_reason(group("fg1"), slices, only_clustering) == (
        f"pending clustering {T[4]} reads this file (Cleanline keeps it; Hudi's cleaner does not check)")
    only_write = Protection({}, {}, {}, everything.pending_writes)
    assert why_protected(group("fg1"), slices, only_write) == (
        f"pending write {T[1]} wrote this slice (Cleanline keeps it; Hudi's cleaner takes a write older than the "
        "first completed commit for archived)")
    assert why_protected(group("fg1"), slices, Protection({}, {}, {})) is None


def test_protection_compaction_reads_from_its_base_instant_on() -> None:
    ops = Protection({}, {(P, "fg1"): PendingOperation(T[2], "pending compaction", T[3])}, {})
    assert compaction_reason(group("fg1"), piece("fg1", T[1]), ops) is None
    assert compaction_reason(group("fg1"), piece("fg1", T[2]), ops) == f"pending compaction {T[3]} reads this slice"
    assert compaction_reason(group("fg1"), piece("fg1", T[4]), ops) == f"pending compaction {T[3]} reads this slice"
    assert compaction_reason(group("fg2"), piece("fg2", T[4]), ops) is None


def test_protection_clustering_and_pending_writes_by_file() -> None:
    protection = Protection({}, {}, {log("fg1", T[2]): T[4]}, frozenset({T[3]}))
    assert clustering_reason(piece("fg1", T[1], log("fg1", T[2])), protection) == (
        f"pending clustering {T[4]} reads this file (Cleanline keeps it; Hudi's cleaner does not check)")
    assert clustering_reason(piece("fg1", T[1]), protection) is None
    assert pending_write_reason(piece("fg1", T[1]), protection) is None
    assert pending_write_reason(piece("fg1", T[3]), protection) is not None
