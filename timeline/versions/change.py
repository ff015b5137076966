"""Table version changes as Hudi's `UpgradeDowngrade.run` makes them (the rules and what each
step rewrites: `timeline.versions.layout`), one step at a time (6 -> 8 -> 9, 9 -> 8 -> 6), under
the table's lock (`timeline.transactions`, as clean takes it), after the preflight
(`timeline.versions.version_check`) found nothing standing: `change_version` returns the same
`VersionChangePlan` whether it is a dry run (the default) or ran (`dry_run=False`).

Crash safety. Each step is recorded before it writes anything in a journal,
`.hoodie/.cleanline/version-change.json` (the step, its target and what it may drop). The
place: the journal must travel with the table (the next run may be another host, the console or
the CLI), and no Hudi reader opens it: Hudi's layout-1 timeline lists `.hoodie` keeping only
instant file names (`ActiveTimelineV1.VALID_EXTENSIONS_IN_ACTIVE_TIMELINE`), its layout-2 timeline
lists `.hoodie/timeline`, and nothing of Hudi's looks into a `.cleanline` folder. Cleanline keeps
no other crash journal (its other changes are redone from what the timeline shows).

A step's writes are each idempotent and ordered so that `hoodie.properties` (the version every
reader goes by) is written last, by the backup protocol: the metadata table first (as Hudi does),
each instant file written in the target layout before its source is deleted, then the data
table's properties, then the journal removed. The next run finding a journal finishes the step
(every write again where not yet made) before anything else: a crash at any point ends, after the
next run, with the table wholly at the step's target version; until then a dry run names the
step it will finish first (`VersionChangePlan.interrupted`)."""

from __future__ import annotations

import json
import os  # getpid only: the journal names its run
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from timeline import transition
from timeline.archive.write_v1 import DEFAULT_ARCHIVAL_BATCH
from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, read_config, update_config
from timeline.exceptions import CleanlineError, FileNotFound
from timeline.storage import Storage
from timeline.table import Table
from timeline.transactions import Transactions
from timeline.versions.archives import has_archive, lsm_to_v1_entries, v1_to_lsm_rows, write_lsm, write_v1
from timeline.versions.check import VersionCheck, version_check
from timeline.versions.layout import (
    FileMove,
    convert_content,
    index_definitions_with_versions,
    metadata_table_updates,
    property_updates,
    timeline_moves,
)
from timeline.versions.rules import Step, steps_between

JOURNAL_FOLDER = ".cleanline"
JOURNAL_FILE = "version-change.json"


class VersionChangeRefused(CleanlineError):
    """The change did not start: a preflight blocker stands, or the step needs what Cleanline
    does not do (names the table and the reasons); nothing was written."""

    def __init__(self, table: str, reasons: list[str]) -> None:
        super().__init__(f"{table}: the version change is refused, nothing was written: " + "; ".join(reasons))
        self.table = table
        self.reasons = tuple(reasons)


class StopRequested(Exception):  # noqa: N818 - a test's injected crash, not an error of the library
    """Raised by a `checkpoint` callback to stop a change at a point (tests' crash injection)."""


@dataclass(frozen=True, slots=True)
class StepPlan:
    """One step: the instant files moved into the target layout (`moves`), the properties set
    and removed (`properties`: None removes), the metadata table's fate ("none", "changed",
    "dropped"), the index definitions given a version (8 -> 9) and the metadata partitions
    dropped with their index (9 -> 8, `dropNonV1IndexPartitions`), and whether an archived
    timeline is converted (6 <-> 8: v1 archive <-> LSM, `timeline.versions.archives`)."""

    step: Step
    moves: tuple[FileMove, ...]
    properties: Mapping[str, str | None]
    metadata_table: str
    index_definitions: bool = False
    index_partitions_dropped: tuple[str, ...] = ()
    archive_converted: bool = False

    def describe(self) -> str:
        converted = sum(1 for m in self.moves if m.convert != "rename")
        dropped = f" (index partitions dropped: {', '.join(self.index_partitions_dropped)})" \
            if self.index_partitions_dropped else ""
        archive = (", archived timeline converted to " + ("LSM" if self.step.to_version == 8 else "a v1 archive")) \
            if self.archive_converted else ""
        return (f"{self.step.from_version} -> {self.step.to_version}: {len(self.moves)} instant file(s) moved "
                f"({converted} converted), {len(self.properties)} propert(ies) rewritten, metadata table "
                f"{self.metadata_table}{dropped}{archive}")


@dataclass(frozen=True, slots=True)
class VersionChangePlan:
    """A change of `table_uri` from `current` to `target`: the preflight (`check`), the steps
    (planned from the table as it is: a later step's detail is planned when it runs), whether it
    ran (`dry_run` False and `done`), a step an earlier run left and this one finished
    (`resumed`), or, in a dry run, the step a run will finish first (`interrupted`: until then
    the preflight may name what the finishing clears)."""

    table_uri: str
    current: int
    target: int
    check: VersionCheck
    steps: tuple[StepPlan, ...]
    refused: tuple[str, ...] = ()
    dry_run: bool = True
    done: bool = False
    resumed: tuple[int, int] | None = None
    ran: tuple[StepPlan, ...] = field(default_factory=tuple)
    interrupted: tuple[int, int] | None = None

    @property
    def ready(self) -> bool:
        return not self.refused


Checkpoint = Callable[[str], None]


def _journal_path(table: Table) -> str:
    return table.path(".hoodie", JOURNAL_FOLDER, JOURNAL_FILE)


def read_journal(table: Table) -> dict[str, Any] | None:
    """The step an interrupted change left (None: none)."""
    try:
        return dict(json.loads(table.storage.read(_journal_path(table))))
    except FileNotFound:
        return None


def _metadata_table(table: Table) -> Table | None:
    base = table.path(".hoodie", "metadata")
    if not table.storage.exists(table.path(".hoodie", "metadata", ".hoodie", "hoodie.properties")):
        return None
    return Table.load(table.storage, base)


def _index_definitions(table: Table) -> dict[str, Any]:
    path = _index_defs_path(table)
    if not table.storage.exists(path):
        return {}
    return dict(json.loads(table.storage.read(path)))


def non_v1_partitions(table: Table) -> list[str]:
    """`UpgradeDowngradeUtils.dropNonV1IndexPartitions`: the metadata partitions whose index
    definition has a version above V1 (`getIndexForMetadataPartition`), still listed in
    `hoodie.table.metadata.partitions` or still on storage (a dropping an interrupted run began)."""
    defs = _index_definitions(table).get("indexDefinitions") or {}
    names = sorted(str(d.get("indexName", n)) for n, d in defs.items()
                   if isinstance(d, dict) and str(d.get("version") or "V1").upper() not in ("V1", ""))
    return [p for p in names if p in table.config.metadata_partitions
            or table.storage.exists(table.path(".hoodie", "metadata", p))]


def _drop_index_partitions(table: Table, partitions: list[str], checkpoint: Checkpoint | None) -> None:
    """Drop metadata partitions as Hudi's `HoodieTableMetadataUtil.deleteMetadataTablePartition`
    does (the partition taken out of `hoodie.table.metadata.partitions` first, so readers stop
    using it, then its folder deleted), then their index definitions (`deleteIndexDefinition`).
    Hudi's 9 -> 8 drops them through a write client's `dropIndex`, which also commits the
    deletion on the metadata table's timeline; Cleanline writes no metadata-table commit."""
    listed = table.config.metadata_partitions
    if any(p in listed for p in partitions):
        _at(table, checkpoint, "index-partitions-properties")
        update_config(table.storage, table.base, {MDT_PARTITIONS: ",".join(p for p in listed if p not in partitions)})
        table.reload()
    for partition in partitions:
        folder = table.containment.meta_path("metadata", partition)
        if table.storage.exists(folder):
            _at(table, checkpoint, f"index-partition {partition}")
            table.storage.delete_dir(folder)
    defs = _index_definitions(table)
    kept = {n: d for n, d in (defs.get("indexDefinitions") or {}).items()
            if not (isinstance(d, dict) and str(d.get("indexName", n)) in partitions)}
    if defs and len(kept) != len(defs.get("indexDefinitions") or {}):
        _at(table, checkpoint, "index-definitions")
        table.storage.write(_index_defs_path(table), json.dumps({**defs, "indexDefinitions": kept}, indent=2).encode(),
                            overwrite=True)


def _mdt_behind(table: Table, mdt: Table) -> bool:
    """`UpgradeDowngradeUtils.isMetadataTableBehindDataTable`."""
    if not table.config.metadata_partitions:
        return False
    data = table.timeline.commits().completed().last()
    meta = mdt.timeline.commits().completed().last()
    return data is not None and meta is not None and meta.requested_time < data.requested_time


def _metadata_fate(table: Table, step: Step, drop: bool, options: Mapping[str, str]) -> tuple[str, list[str]]:
    """What the step does with the metadata table, and why it is refused when it cannot."""
    mdt = _metadata_table(table)
    if mdt is None:
        return "none", []
    enabled = (options.get("hoodie.metadata.enable") or "true").strip().lower() != "false"
    if step.upgrade and enabled and _mdt_behind(table, mdt):
        return "dropped", []  # checkAndHandleMetadataTable
    needs: list[str] = []
    if {step.from_version, step.to_version} == {6, 8}:
        needs.append(f"the step {step.from_version} -> {step.to_version} compacts the metadata table and moves its "
                     "timeline (UpgradeDowngrade.run on it, UpgradeDowngradeUtils.rollbackFailedWritesAndCompact)")
    if not needs:
        return "changed", []
    if drop:
        return "dropped", []
    return "kept", [f"{n}; Cleanline does not: drop the metadata table with the change (drop_metadata_table, "
                    "--drop-metadata-table; Hudi writers rebuild it) or change the version with Hudi" for n in needs]


def plan_step(table: Table, step: Step, *, drop_metadata_table: bool = False,
              options: Mapping[str, str] | None = None) -> tuple[StepPlan, list[str]]:
    """What one step would write on `table` as it is now, and why it is refused (empty: it may run)."""
    opts = dict(options or {})
    fate, refused = _metadata_fate(table, step, drop_metadata_table, opts)
    kept = () if fate == "dropped" else table.config.metadata_partitions
    try:
        props = property_updates(table.config, step.to_version, options=opts, metadata_partitions=kept)
    except ValueError as exc:
        refused.append(str(exc))
        props = {}
    if fate == "dropped":
        props = {**props, MDT_PARTITIONS: "", MDT_PARTITIONS_INFLIGHT: ""}
    moves = tuple(timeline_moves(table.storage, table.base, table.config, step.to_version))
    archive = {step.from_version, step.to_version} == {6, 8} and has_archive(table, step.to_version)
    defs = (step.from_version, step.to_version) == (8, 9) and _index_defs_to_write(table) is not None
    dropped = tuple(non_v1_partitions(table)) if (step.from_version, step.to_version) == (9, 8) and fate == "changed" \
        else ()
    if dropped:
        props = {**props, MDT_PARTITIONS: ",".join(p for p in table.config.metadata_partitions if p not in dropped)}
    return StepPlan(step, moves, props, fate, defs, dropped, archive), refused


def _index_defs_path(table: Table) -> str:
    relative = table.config.get("hoodie.table.index.defs.path") or ".hoodie/.index_defs/index.json"
    return table.path(*relative.split("/"))


def _index_defs_to_write(table: Table) -> bytes | None:
    path = _index_defs_path(table)
    if not table.storage.exists(path):
        return None
    return index_definitions_with_versions(table.storage.read(path))


def change_version(table: Table, to: int, *, dry_run: bool = True, options: Mapping[str, str] | None = None,
                   drop_metadata_table: bool = False, writers_stopped: bool = False,
                   checkpoint: Checkpoint | None = None, transactions: Transactions | None = None) -> VersionChangePlan:
    """Move `table` to table version `to` (6, 8 or 9) as Hudi's `UpgradeDowngrade.run` does, one
    step at a time. A dry run unless told: the plan of what would be written. With
    `dry_run=False`: a step an interrupted run left is finished first; then the preflight's
    blockers (and what Cleanline does not do) refuse the change (VersionChangeRefused) or every
    step runs under the table's lock, one state change each (`transactions`, else one made of
    `options` and `writers_stopped`; its `decisions` record each lock taken or override used).
    `checkpoint(label)` is called before each write (tests stop a change there)."""
    opts = dict(options or {})
    transactions = transactions or Transactions(table, opts, writers_stopped=writers_stopped)
    resumed: tuple[int, int] | None = None
    journal = read_journal(table)
    if journal is not None and not dry_run:
        with transactions.state_change():
            _resume(table, journal, checkpoint)
        resumed = (int(journal["from"]), int(journal["to"]))
        table.reload()
    check = version_check(table, to, options=opts)
    steps: list[StepPlan] = []
    refused = [f"{b.kind.value}: {b.why} (clears: {b.clears})" for b in check.blockers]
    if journal is not None and dry_run:
        refused.append(f"an interrupted change {journal['from']} -> {journal['to']} is recorded in "
                       f"{_journal_path(table)}: the next run finishes it first")
    for step in steps_between(table, table.version, to):
        if not steps:
            planned, why = plan_step(table, step, drop_metadata_table=drop_metadata_table, options=opts)
        else:  # a later step is planned when it runs; what would refuse it refuses the change now
            fate, why = _metadata_fate(table, step, drop_metadata_table, opts)
            planned = StepPlan(step, (), {}, f"{fate} (planned when the step before has run)")
        steps.append(planned)
        refused += why
    interrupted = (int(journal["from"]), int(journal["to"])) if journal is not None and dry_run else None
    plan = VersionChangePlan(table.uri, table.version, to, check, tuple(steps), tuple(refused), dry_run,
                             resumed=resumed, interrupted=interrupted)
    if dry_run:
        return plan
    if refused:
        raise VersionChangeRefused(table.uri, refused)
    ran: list[StepPlan] = []
    for step in steps_between(table, table.version, to):
        with transactions.state_change():
            table.reload()
            step_plan, why = plan_step(table, step, drop_metadata_table=drop_metadata_table, options=opts)
            if why:
                raise VersionChangeRefused(table.uri, why)
            _run_step(table, step_plan, checkpoint)
            ran.append(step_plan)
        table.reload()
    return VersionChangePlan(table.uri, plan.current, to, check, plan.steps, (), False, True, resumed, tuple(ran))


def _journal(table: Table, plan: StepPlan) -> dict[str, Any]:
    return {"from": plan.step.from_version, "to": plan.step.to_version, "metadataTable": plan.metadata_table,
            "started": datetime.now(UTC).isoformat(), "by": f"cleanline-{os.getpid()}"}


def _run_step(table: Table, plan: StepPlan, checkpoint: Checkpoint | None) -> None:
    table.storage.makedirs(table.path(".hoodie", JOURNAL_FOLDER))
    _at(table, checkpoint, "journal")
    table.storage.write(_journal_path(table), json.dumps(_journal(table, plan), indent=2).encode(), overwrite=True)
    _finish(table, plan.step.from_version, plan.step.to_version, plan.metadata_table, checkpoint)


def _resume(table: Table, journal: Mapping[str, Any], checkpoint: Checkpoint | None) -> None:
    """Finish the step an interrupted run recorded (each write again where not yet made)."""
    _finish(table, int(journal["from"]), int(journal["to"]), str(journal.get("metadataTable") or "none"), checkpoint)


def _at(table: Table, checkpoint: Checkpoint | None, label: str) -> None:
    """Right before one write: the caller's checkpoint, then the lock still held
    (`transition.fence`: a lease lost mid-change writes nothing more)."""
    if checkpoint is not None:
        checkpoint(label)
    transition.fence(table)


def _finish(table: Table, frm: int, to: int, fate: str, checkpoint: Checkpoint | None) -> None:
    """The step's writes, each skipped where already made: the metadata table (first, as
    `UpgradeDowngrade.run`), the instant files, the index definitions, `hoodie.properties`,
    then the journal removed."""
    storage = table.storage
    config = read_config(storage, table.base)
    if config.version == frm:
        mdt = _metadata_table(table)
        if fate == "dropped" and mdt is not None:
            from timeline.mdt import drop_metadata_table

            _at(table, checkpoint, "metadata-table-drop")
            drop_metadata_table(table)
        elif fate == "changed" and mdt is not None:
            if (frm, to) == (9, 8):
                _drop_index_partitions(table, non_v1_partitions(table), checkpoint)
            if mdt.config.version == frm:
                _at(table, checkpoint, "metadata-table-properties")
                update_config(storage, mdt.base, metadata_table_updates(mdt.config, to))
        table.reload()
        config = table.config
        step_moves = timeline_moves(storage, table.base, config, to)
        if (frm, to) == (6, 8):  # HoodieTableMetaClient.createTableLayoutOnStorage(VERSION_2)
            storage.makedirs(table.path(".hoodie", "timeline", "history"))
        for move in step_moves:
            _at(table, checkpoint, f"instant {move.source.rsplit('/', 1)[-1]}")
            _apply(storage, move)
        if {frm, to} == {6, 8} and has_archive(table, to):
            _convert_archive(table, to, checkpoint)
        if (frm, to) == (8, 9):
            defs = _index_defs_to_write(table)
            if defs is not None:
                _at(table, checkpoint, "index-definitions")
                storage.write(_index_defs_path(table), defs, overwrite=True)
        kept = () if fate == "dropped" else config.metadata_partitions
        updates = property_updates(config, to, metadata_partitions=kept)
        if fate == "dropped":
            updates = {**updates, MDT_PARTITIONS: "", MDT_PARTITIONS_INFLIGHT: ""}
        _at(table, checkpoint, "properties")
        update_config(storage, table.base, {k: v for k, v in updates.items()
                                            if not (v is None and k not in config.props)})
    _at(table, checkpoint, "journal-removed")
    storage.delete(_journal_path(table))
    storage.delete_dir(table.path(".hoodie", JOURNAL_FOLDER))  # Cleanline's own folder, empty now
    table.reload()


def _convert_archive(table: Table, to: int, checkpoint: Checkpoint | None) -> None:
    """`upgradeToLSMTimeline` / `downgradeFromLSMTimeline` (`timeline.versions.archives`), with
    the table's `hoodie.commits.archival.batch`."""
    batch = int(table.config.get("hoodie.commits.archival.batch") or DEFAULT_ARCHIVAL_BATCH)
    _at(table, checkpoint, "archived-timeline")
    if to == 8:
        write_lsm(table, v1_to_lsm_rows(table), batch=batch)
    else:
        write_v1(table, lsm_to_v1_entries(table), batch=batch)


def _apply(storage: Storage, move: FileMove) -> None:
    """Write the target (converted), set its modification time, delete the source; a source
    already gone means the move was made."""
    try:
        data = storage.read(move.source)
    except FileNotFound:
        return
    storage.write(move.target, convert_content(data, move, path=move.source), overwrite=True)
    if move.mtime_ms is not None:  # an object store cannot: the completion time is then the write's
        storage.set_modification_time(move.target, move.mtime_ms)
    storage.delete(move.source)


__all__ = ["StepPlan", "StopRequested", "VersionChangePlan", "VersionChangeRefused", "change_version",
           "non_v1_partitions", "plan_step", "read_journal"]
