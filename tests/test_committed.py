"""The one definition of a committed file (timeline/committed.py): named by a completed write's
write stats, or older than every known instant; a pending instant's file is a write in flight;
a file that is neither a base nor a log file is not data. Hand-made timelines (`Lake`)."""

from __future__ import annotations

import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.committed import (
    Commitment,
    CommittedFiles,
    active_committed_files,
    committed_files,
    instant_of,
    is_data_file,
)
from timeline.files import base_file_name, log_file_name
from timeline.instant import State
from timeline.storage import MemoryStorage

T = [f"2026110100{i:02d}00000" for i in range(10)]
P = "city=sf"


def base(file_id: str, instant: str) -> str:
    return base_file_name(file_id, "0-1-0", instant)


def log(file_id: str, instant: str) -> str:
    return log_file_name(file_id, instant, 1, "0-1-0")


def test_committed_instant_of_a_base_and_a_log_file() -> None:
    assert instant_of(base("fg", T[3])) == T[3]
    assert instant_of(log("fg", T[4])) == T[4]
    assert instant_of("notes.txt") is None
    assert instant_of(".hoodie_partition_metadata") is None


@pytest.mark.parametrize(("name", "data"), [
    (base("fg", T[1]), True),
    (log("fg", T[1]), True),
    ("anything.parquet", True),              # a base file's extension is a data file to Hudi, instant or not
    ("part.0.parquet", True),                # the extension is what follows the last dot
    ("x.orc", True),
    (".hoodie_partition_metadata", False),
    (".hoodie_partition_metadata.parquet", False),  # a partition marker in a base format is no data file
    ("notes.txt", False),
    ("parquet", False),
])
def test_committed_is_data_file(name: str, data: bool) -> None:
    assert is_data_file(name) is data


def test_committed_of_each_standing() -> None:
    named_base, named_log = base("a", T[5]), log("b", T[5])
    files = committed_files([named_base, named_log, "anything.parquet"], [T[3], T[2], T[7]], [T[7]])
    assert files == CommittedFiles(frozenset({named_base, named_log, "anything.parquet"}), T[2], frozenset({T[7]}))
    assert files.of(named_base) is Commitment.NAMED
    assert files.of(named_log) is Commitment.NAMED
    assert files.of("anything.parquet") is Commitment.NAMED        # no instant, but named
    assert files.of("other.parquet") is Commitment.NOT_COMMITTED   # no instant, not named
    assert files.of("notes.txt") is Commitment.NOT_DATA
    assert files.of(base("c", T[7])) is Commitment.PENDING
    assert files.of(base("c", T[1])) is Commitment.BEFORE_HISTORY
    assert files.of(base("c", T[2])) is Commitment.NOT_COMMITTED   # the earliest instant itself is known
    assert files.of(base("c", T[5])) is Commitment.NOT_COMMITTED   # completed, no write stat names it
    assert files.of(base("c", T[9])) is Commitment.NOT_COMMITTED   # on no timeline


def test_committed_no_known_instant_makes_nothing_before_history() -> None:
    files = committed_files([], [], [])
    assert files.earliest is None
    assert files.of(base("c", T[0])) is Commitment.NOT_COMMITTED


def test_committed_only_named_and_before_history_are_committed() -> None:
    assert {c for c in Commitment if c.committed} == {Commitment.NAMED, Commitment.BEFORE_HISTORY}
    files = committed_files([base("a", T[5])], [T[2]], [T[7]])
    assert files.is_committed(base("a", T[5])) and files.is_committed(base("c", T[1]))
    assert not files.is_committed(base("c", T[7])) and not files.is_committed(base("c", T[5]))
    assert not files.is_committed("notes.txt")


def test_committed_active_names_only_completed_writes() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.storage.write(f"{lake.timeline_folder}/{T[1]}_{T[1][:-3]}999.commit", b"not avro")  # unreadable: names nothing
    first = lake.base_file(P, "a", T[2])
    lake.commit(T[2], {P: [first]})
    savepointed = lake.base_file(P, "s", T[3])        # named by a savepoint only, no write
    lake.savepoint(T[4], {P: [savepointed]})
    later = lake.base_file(P, "c", T[6])       # after the savepoint and the inflight write: still read
    lake.commit(T[6], {P: [later]})
    inflight = lake.base_file(P, "b", T[5])
    lake.commit(T[5], {P: [inflight]}, state=State.INFLIGHT)
    files = active_committed_files(HudiTable.load(lake.storage, "/t"))
    assert files.named == {first, later}
    assert files.earliest == T[1]
    assert files.pending == {T[5]}
    assert files.of(later) is Commitment.NAMED
    assert files.of(savepointed) is Commitment.NOT_COMMITTED
    assert files.of(inflight) is Commitment.PENDING
    assert files.of(base("z", T[0])) is Commitment.BEFORE_HISTORY
