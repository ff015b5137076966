"""Hand-made timelines for the archiver's rules, in the manner of Hudi's `HoodieTestTable` (the
helper `TestHoodieTimelineArchiver` builds its timelines with): numbered commits, delta commits,
cleans whose plan retains from the clean itself, rollbacks, savepoints, pending clusterings and
compactions, and a metadata table holding only a compaction (`createCompactionCommitInMetadataTable`).
`archive` stands in for the archiver's last step: the chosen instants' state files are deleted."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tests.helpers import Lake
from timeline import HudiTable
from timeline.archive.plan import ArchivalPlan
from timeline.instant import Instant, State
from timeline.metadata.archived import decode_lsm_manifest
from timeline.storage import MemoryStorage

BASE = "/t"


def t(n: int) -> str:
    """The n-th instant time (17 digits, in order): minute n of a day well clear of clock changes."""
    return f"20260615{n // 60:02d}{n % 60:02d}00000"


class ArchivalLake:
    """A table (version 6 or 8) whose timeline a test writes instant by instant."""

    def __init__(self, version: int, *, mor: bool = False, metadata_table: bool = False,
                 props: Mapping[str, str] | None = None) -> None:
        extra = {"hoodie.table.metadata.partitions": "files"} if metadata_table else {}
        self.lake = Lake(MemoryStorage(), BASE, version=version, table_type="MERGE_ON_READ" if mor else "COPY_ON_WRITE",
                         extra_props={**extra, **(props or {})})
        self.mdt: Lake | None = None
        if metadata_table:
            self.mdt = Lake(self.lake.storage, f"{BASE}/.hoodie/metadata", version=version, table_type="MERGE_ON_READ",
                            partitioned=False)

    @property
    def v2(self) -> bool:
        return self.lake.version >= 8

    def table(self) -> HudiTable:
        return HudiTable.load(self.lake.storage, BASE)

    def plan(self, **options: object) -> ArchivalPlan:
        """The archival plan with these Hudi options (`min=4` for hoodie.keep.min.commits, `max`,
        `retain` for the cleaner's commits, `beyond` for hoodie.archive.beyond.savepoint; any
        other keyword names a Hudi key with dots as underscores after `hoodie_`)."""
        short = {"min": "hoodie.keep.min.commits", "max": "hoodie.keep.max.commits",
                 "retain": "hoodie.clean.commits.retained", "beyond": "hoodie.archive.beyond.savepoint",
                 "delta": "hoodie.compact.inline.max.delta.commits"}
        given = {"hoodie.clean.commits.retained": "1"}  # as TestHoodieTimelineArchiver's write configs
        for key, value in options.items():
            name = short.get(key) or key.replace("_", ".")
            given[name] = str(value).lower() if isinstance(value, bool) else str(value)
        return self.table().inspect.archival(given)

    def archive(self, plan: ArchivalPlan) -> list[str]:
        """Delete the state files of the plan's instants (pending states first, as Hudi's
        `deleteArchivedInstants`); returns the archived instants' times."""
        for action in plan.actions:
            for _, path in action.state_files:
                self.lake.storage.delete(path)
        return [a.instant.requested_time for a in plan.actions]

    def plan_and_archive(self, **options: object) -> list[str]:
        return self.archive(self.plan(**options))

    # Writes

    def commit(self, n: int, *, state: State = State.COMPLETED, action: str | None = None) -> Instant:
        """A write (commit on COW, delta commit on MOR) at t(n), up to `state`."""
        return self.lake.commit(t(n), action=action, state=state)

    def replace(self, n: int, *, state: State = State.COMPLETED, clustering: bool = True) -> Instant:
        """A clustering (or an insert_overwrite) at t(n): pending as Hudi's own writer leaves it
        (table version 8: action clustering; 6: a replacecommit with a clustering plan)."""
        time_ = t(n)
        if state is State.COMPLETED:
            return self.lake.commit(time_, replaced={}, operation="CLUSTER" if clustering else "INSERT_OVERWRITE")
        action = "clustering" if self.v2 and clustering else "replacecommit"
        plan = ({"operationType": "cluster", "clusteringPlan": {"inputGroups": [], "version": 1}, "version": 1}
                if clustering else {"operationType": None, "clusteringPlan": None, "extraMetadata": None,
                                    "version": None})
        self.lake.instant_file(Instant(time_, action, State.REQUESTED), plan)
        if state is State.INFLIGHT:
            self.lake.instant_file(Instant(time_, action, State.INFLIGHT))
        return Instant(time_, action, state)

    def compaction(self, n: int, *, state: State = State.INFLIGHT) -> Instant:
        return self.lake.schedule_compaction(t(n), [("city=sf", "fg1", t(n - 1))], state)

    def complete_compaction(self, n: int, *, completed_at: int | None = None) -> Instant:
        completion = t(completed_at)[:-3] + "999" if completed_at is not None and self.v2 else None
        return self.lake.complete_compaction(t(n), {}, completion)

    def clean(self, n: int, *, retain: int | None = None, savepointed: str | None = None,
              state: State = State.COMPLETED) -> Instant:
        """A clean at t(n) as `HoodieTestTable.doClean` writes one: its plan's earliest instant
        to retain is the clean itself (or t(retain)), its extra metadata the savepoints it saw."""
        time_ = t(n)
        extra = {"savepointed_timestamps": savepointed} if savepointed is not None else None
        plan = {"earliestInstantToRetain": {"timestamp": t(retain) if retain is not None else time_,
                                            "action": "clean" if retain is None else "commit", "state": ""},
                "lastCompletedCommitTimestamp": "", "policy": "KEEP_LATEST_COMMITS",
                "filesToBeDeletedPerPartition": {}, "version": 2, "filePathsToBeDeletedPerPartition": {},
                "partitionsToBeDeleted": [], "extraMetadata": extra}
        self.lake.instant_file(Instant(time_, "clean", State.REQUESTED), plan)
        if state is State.REQUESTED:
            return Instant(time_, "clean", state)
        self.lake.instant_file(Instant(time_, "clean", State.INFLIGHT), plan)
        if state is State.INFLIGHT:
            return Instant(time_, "clean", state)
        done = Instant(time_, "clean", State.COMPLETED, time_[:-3] + "997" if self.v2 else None)
        self.lake.instant_file(done, {"startCleanTime": time_, "timeTakenInMillis": 1, "totalFilesDeleted": 0,
                                      "earliestCommitToRetain": plan["earliestInstantToRetain"]["timestamp"],
                                      "lastCompletedCommitTimestamp": "", "partitionMetadata": {}, "version": 2,
                                      "extraMetadata": extra})
        return done

    def rollback(self, n: int, *, of: int) -> Instant:
        """A completed rollback at t(n) of the write at t(of) (the write stays, as
        `HoodieTestTable.doRollback` leaves it); its state files are empty."""
        time_ = t(n)
        for state in (State.REQUESTED, State.INFLIGHT):
            self.lake.instant_file(Instant(time_, "rollback", state))
        done = Instant(time_, "rollback", State.COMPLETED, time_[:-3] + "997" if self.v2 else None)
        self.lake.instant_file(done)
        return done

    def savepoint(self, n: int) -> Instant:
        return self.lake.savepoint(t(n), {})

    def delete_savepoint(self, n: int) -> None:
        for status in list(self.lake.storage.list(self.lake.timeline_folder)):
            if status.name.startswith(t(n)) and "savepoint" in status.name:
                self.lake.storage.delete(status.path)

    def metadata_compaction(self, time_: str) -> None:
        """A completed compaction (a commit) at `time_` on the metadata table's timeline."""
        assert self.mdt is not None
        completion = time_[:17] if self.v2 else None
        self.mdt.instant_file(Instant(time_, "commit", State.COMPLETED, completion))

    # Reads

    def active(self, *, actions: frozenset[str] = frozenset({"commit", "deltacommit", "replacecommit"})) -> list[str]:
        """The requested times of the completed instants of `actions` on the active timeline."""
        return [i.requested_time for i in self.table().timeline.completed() if i.action in actions]

    def active_of(self, action: str) -> list[str]:
        return self.active(actions=frozenset({action}))


def times(*numbers: int) -> list[str]:
    return [t(n) for n in numbers]


# The LSM timeline read back as it is on storage

def lsm_rows(folder: Path) -> list[dict[str, Any]]:
    """Every row of the files the latest snapshot lists, in file order."""
    version = int((folder / "_version_").read_text())
    files = decode_lsm_manifest((folder / f"manifest_{version}").read_bytes(), path="manifest")
    return [row for f in files for row in pq.read_table(folder / f.name).to_pylist()]


def expected_row(table: HudiTable, instant: Instant) -> dict[str, Any]:
    """createLSMTimelineInstant, worked out from the state files as they are before archiving."""
    files = table.timeline.files_of(instant)

    def data(state: State) -> bytes | None:
        return table.storage.read(files[state].path) if state in files else None

    pending = files.get(State.REQUESTED) or files.get(State.INFLIGHT)
    pending_action = pending.name.split(".")[1] if pending is not None else None
    plan = None
    if pending_action in ("replacecommit", "clustering"):
        plan = data(State.INFLIGHT) or data(State.REQUESTED) or None
    elif pending_action in ("compaction", "logcompaction"):
        plan = data(State.REQUESTED)
    elif pending_action == "clean":
        plan = data(State.REQUESTED) if State.REQUESTED in files else data(State.INFLIGHT)
    return {"instantTime": instant.requested_time, "completionTime": instant.completion_time,
            "action": instant.action, "metadata": data(State.COMPLETED) or None, "plan": plan, "version": 1}
