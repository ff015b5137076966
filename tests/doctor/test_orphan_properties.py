"""The orphan rule (timeline/doctor/orphans.py) against a small model written here, on tables
Hypothesis makes: commits and delta commits naming the files they wrote, pending writes with
their files, savepoints and cleans naming files, and stray files beside them (a task's duplicate
output at a completed commit's time, a file of an instant on no timeline).

Whatever the table: an orphan is never a file any instant's payload names, never a file of a
pending instant, never a file of an instant older than every instant the timeline knows; and
every stray base file of a completed commit or of an unknown instant between the known ones,
old enough, is found (RepairUtils.findInstantFilesToRemove, which Cleanline keeps stricter)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.doctor.helpers import age_tree
from tests.helpers import Lake
from timeline import HudiTable
from timeline.doctor.orphans import orphans
from timeline.doctor.survey import Survey
from timeline.instant import State
from timeline.storage.arrow import LocalStorage

EXAMPLES = settings(max_examples=30, deadline=None)
P = "city=sf"
TIMES = [f"202611010{h}{m:02d}00000" for h in range(1, 4) for m in range(0, 60, 5)]
KINDS = ["commit"] * 4 + ["pending", "savepoint", "clean", "duplicate", "unknown"]


def build(lake: Lake, steps: list[tuple[str, int]]) -> tuple[set[str], set[str], set[str]]:
    """Write the steps; return the names some instant names, the files of pending instants and
    the stray files the model says are orphans: those written before the oldest pending
    instant (the horizon: a file after it may belong to a write not yet published)."""
    named: set[str] = set()
    pending: set[str] = set()
    strays: dict[str, str] = {}  # name -> the instant its name carries
    commits: list[str] = []
    savepointed: set[str] = set()
    first_pending = None
    for (kind, group), time in zip(steps, TIMES):
        file_id = f"fg{group}"
        if kind == "commit":
            name = lake.base_file(P, file_id, time)
            lake.commit(time, {P: [name]})
            named.add(name)
            commits.append(time)
        elif kind == "pending":
            pending.add(lake.base_file(P, file_id, time))
            lake.commit(time, {P: []}, state=State.INFLIGHT)
            first_pending = first_pending or time
        elif kind == "savepoint" and commits and commits[-1] not in savepointed:
            lake.savepoint(commits[-1], {P: [n for n in named if commits[-1] in n]})
            savepointed.add(commits[-1])
        elif kind == "clean" and commits:
            lake.clean(time, commits[0])
        elif kind == "duplicate" and commits:
            # a task attempt the commit did not keep: its instant is completed, no write stat names it
            strays[lake.data_file(P, f"dup{group}-{time[-8:-5]}_9-9-9_{commits[-1]}.parquet")] = commits[-1]
        elif kind == "unknown" and commits:
            # written at an instant on no timeline, between known ones
            strays[lake.data_file(P, f"lost{group}_0-1-0_{time[:-5]}12345.parquet")] = time[:-5] + "12345"
    return named, pending, {name for name, t in strays.items() if first_pending is None or t < first_pending}


@EXAMPLES
@given(st.sampled_from([6, 8]), st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 2)), min_size=1,
                                         max_size=len(TIMES) - 1))
def test_orphans_never_named_by_an_instant_and_every_stray_found(version: int, steps: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory(prefix="orphans-") as folder:
        lake = Lake(LocalStorage(), str(Path(folder) / "t"), version=version)
        named, pending, strays = build(lake, steps)
        age_tree(Path(folder) / "t", days=60)  # older than every instant: only the rule keeps a file
        found, _, _ = orphans(Survey(HudiTable.open(lake.base)))
        names = {data.status.name for data, _ in found}
        assert not names & named, "an orphan is named by an instant"
        assert not names & pending, "an orphan is a pending instant's file"
        assert names == strays
