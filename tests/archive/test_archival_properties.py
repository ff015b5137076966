"""The archiver (timeline/archive/rules.py, through the plan) against a small model of Hudi's
archival bounds written here, on timelines Hypothesis makes: commits or delta commits, pending
writes, savepoints, cleans, rollbacks, clusterings and compactions, pending or completed, on table
versions 6 (HoodieTimelineArchiver, V1) and 8 (TimelineArchiverV2).

Whatever the timeline and the counts: no pending instant is archived; no write is archived from
the last completed commit before the earliest pending write on (getCommitInstantsToArchive), nor
from the first savepoint on (hoodie.archive.beyond.savepoint off), nor from the commit the
cleaner retains from on when it retains by commits (ArchivalUtils.getMinAndMaxInstantsToKeep,
HUDI-6370); and V2 archives
a clean or rollback only before the newest write it archives (getCleanAndRollbackInstantsToArchive)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.archive.helpers import ArchivalLake, t
from timeline.instant import State

EXAMPLES = settings(max_examples=150, deadline=None)
WRITES = frozenset({"commit", "deltacommit", "replacecommit", "clustering", "compaction", "logcompaction"})
KINDS = ["commit"] * 8 + ["pending", "savepoint", "clean", "rollback", "cluster", "pending cluster",
                          "compaction", "pending compaction"]


def build(lake: ArchivalLake, steps: list[str], mor: bool) -> None:
    """One instant per step at t(n), n counting up; a savepoint takes the latest completed write's
    time (Hudi savepoints a commit), a rollback the latest write's."""
    writes: list[int] = []
    savepointed: set[int] = set()
    for n, kind in enumerate(steps, 1):
        if kind == "commit":
            lake.commit(n)
            writes.append(n)
        elif kind == "pending":
            lake.commit(n, state=State.INFLIGHT)
        elif kind == "savepoint" and writes and writes[-1] not in savepointed:
            lake.savepoint(writes[-1])
            savepointed.add(writes[-1])
        elif kind == "clean":
            lake.clean(n)
        elif kind == "rollback" and writes:
            lake.rollback(n, of=writes[-1])
        elif kind == "cluster":
            lake.replace(n)
            writes.append(n)
        elif kind == "pending cluster":
            lake.replace(n, state=State.REQUESTED)
        elif kind == "compaction" and mor:
            lake.compaction(n, state=State.REQUESTED)
            lake.complete_compaction(n)
            writes.append(n)
        elif kind == "pending compaction" and mor:
            lake.compaction(n)


@EXAMPLES
@given(st.sampled_from([6, 8]), st.booleans(), st.lists(st.sampled_from(KINDS), min_size=1, max_size=24),
       st.integers(1, 3), st.integers(2, 4), st.sampled_from(["KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS"]))
def test_archival_never_passes_a_savepoint_a_pending_write_or_the_cleaners_window(
        version: int, mor: bool, steps: list[str], retained: int, keep_min: int, policy: str) -> None:
    lake = ArchivalLake(version, mor=mor)
    build(lake, steps, mor)
    timeline = lake.table().timeline
    plan = lake.plan(min=keep_min, max=keep_min + 1, retain=retained, hoodie_clean_policy=policy)
    archived = list(plan.instants)

    # The model: the bounds read straight from the instants the test wrote.
    pending = [i for i in timeline if not i.is_completed]
    completed_writes = sorted(i.requested_time for i in timeline if i.is_completed and i.action in WRITES)
    first_pending_write = min((i.requested_time for i in pending if i.action in WRITES), default=None)
    bounds = []
    if first_pending_write is not None:
        before = [w for w in completed_writes if w < first_pending_write]
        bounds.append(before[-1] if before else first_pending_write)
    savepoints = sorted(i.requested_time for i in timeline if i.action == "savepoint" and i.is_completed)
    if savepoints:
        bounds.append(savepoints[0])
    if policy == "KEEP_LATEST_COMMITS" and len(completed_writes) > retained:
        bounds.append(completed_writes[len(completed_writes) - retained])
    bound = min(bounds, default=None)

    assert not [i for i in archived if not i.is_completed], "a pending instant is archived"
    assert all(i.requested_time in {p.requested_time for p in timeline} for i in archived)
    written = [i.requested_time for i in archived if i.action in WRITES]
    if bound is not None:
        assert all(w < bound for w in written), (bound, written)
    if version >= 8:
        newest = max(written, default="")
        assert all(i.requested_time < newest for i in archived if i.action in ("clean", "rollback")), (newest, archived)
    assert t(0) < min((i.requested_time for i in archived), default=t(1))
