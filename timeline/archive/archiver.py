"""Archiving chosen instants: the write half of Hudi's `HoodieTimelineArchiver.archiveIfRequired`
(`TimelineArchivers.getInstance`: `TimelineArchiverV1` for timeline layout 1, table version 6;
`TimelineArchiverV2` for layout 2, table versions 8 and 9). Which instants go is decided
elsewhere (Hudi's `getInstantsToArchive`); given them, this writes the archived timeline and
removes their state files from the active timeline, in Hudi's order:

1. each action's left-over markers, then the archived timeline's new data (v6: one archive log
   file; v8+: one layer-0 Parquet file, then `manifest_{N+1}`, then `_version_`);
2. the archived actions' requested and inflight files, then their completed files oldest first;
3. (v8+) compaction of the LSM timeline when a layer is full, and cleaning of the files no
   retained snapshot lists.

At every point a crash leaves a readable timeline: before step 1 ends the archived timeline
does not name the actions (a v6 archive file appears whole or not at all; an LSM file no
snapshot lists is ignored); from then on until step 2 ends an action may be listed in both
timelines, and a completed file is never removed before its pending files. Running the same
archival again finishes it: actions no longer on the active timeline are skipped, actions the
archived timeline holds already are not written again, their remaining files are deleted.

Call it while the table's lock is held (`Transactions.state_change`, as Hudi's
`archiveIfRequired(acquireLock=true)`): every file written or deleted is preceded by
`transition.fence`, which stops the archival once the lock is lost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from timeline.archive.actions import ActiveAction, active_actions, delete_archived_instants
from timeline.archive.lsm import COMPACTION_MAX_BYTES, Lsm
from timeline.archive.settings import ArchivalSettings
from timeline.archive.write_v1 import write_archive
from timeline.exceptions import CleanlineError
from timeline.instant import Instant

if TYPE_CHECKING:
    from timeline.archive.plan import ArchivalPlan
    from timeline.table import Table

@dataclass(frozen=True, slots=True)
class ArchiveResult:
    """What one archival did. `archived`: the actions it moved; `already_archived`: actions the
    archived timeline held already (a re-run after a crash), whose active files it removed;
    `gone`: instants no longer on the active timeline (nothing to do); `written`: the files it
    wrote (archive log file, or LSM data file, manifest and version files); `deleted`: the active
    state files it removed; `compacted`/`cleaned`: LSM files replaced and removed."""

    archived: tuple[Instant, ...] = ()
    already_archived: tuple[Instant, ...] = ()
    gone: tuple[Instant, ...] = ()
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    compacted: tuple[str, ...] = ()
    cleaned: tuple[str, ...] = ()


class ArchivalInvalidated(CleanlineError):
    """The timeline, re-read under the table's lock, no longer gives the approved archival plan:
    plan again. Nothing was written."""


@dataclass(frozen=True, slots=True)
class ArchivalOutcome:
    """An archival run: the plan made under the table's lock, and what it did (None for a dry
    run, or when the plan moved nothing); `metadata_table`: what the metadata table's own
    archival did (None: nothing to move, or no metadata table)."""

    plan: ArchivalPlan
    result: ArchiveResult | None = None
    metadata_table: ArchiveResult | None = None


def run_archival(table: Table, *, options: Mapping[str, str] | None = None,
                 expected: Sequence[str] | None = None) -> ArchivalOutcome:
    """Archive what Hudi's archiver would archive now (Hudi's `archive_commits` procedure and
    `HoodieTimelineArchiver.archiveIfRequired(acquireLock=true)`): plan with the table's settings
    over `options`, and archive that plan's instants with its writer settings; then the metadata
    table's own archival as its plan says (`ArchivalPlan.metadata_table`, made from the data
    table's timeline as this archival leaves it: what the next Hudi writer's
    `HoodieBackedTableMetadataWriter.performTableServices` would archive), each of its writes
    fenced by the data table's lock. Call it under the table's lock: the plans are made from
    the timelines read then. `expected` (the instant times of a data-table plan approved
    earlier): ArchivalInvalidated, nothing written, unless the plan made now moves exactly
    those. A plan a broken LSM history stops (`runnable` false) writes nothing; ArchivalUnsupported
    for a metadata table on its own (archive its data table)."""
    from timeline.archive.plan import ArchivalUnsupported, is_metadata_table, metadata_table_of, plan_archival

    if is_metadata_table(table):
        raise ArchivalUnsupported(f"{table.uri} is a metadata table: archive its data table, whose archival runs "
                                  "the metadata table's under the data table's lock, as Hudi's writer does")
    table.reload()
    plan = plan_archival(table, options=options)
    chosen = [i.requested_time for i in plan.instants] if plan.runnable else []
    if expected is not None and sorted(expected) != sorted(chosen):
        raise ArchivalInvalidated(
            f"{table.uri}: the timeline changed since the archival was planned (approved: {len(expected)} instants, "
            f"now: {len(chosen)}); plan it again")
    result = archive_instants(table, plan.instants, settings=plan.settings) if chosen else None
    mdt_plan = plan.metadata_table
    if mdt_plan is None or not mdt_plan.runnable or not mdt_plan.instants:
        return ArchivalOutcome(plan, result)
    mdt = metadata_table_of(table)
    assert mdt is not None  # planned above
    return ArchivalOutcome(plan, result, archive_instants(mdt, mdt_plan.instants, settings=mdt_plan.settings))


def archive_instants(table: Table, instants: Iterable[Instant], *,
                     settings: ArchivalSettings | None = None) -> ArchiveResult:
    """Move `instants` (completed instants of the active timeline, one per action: Hudi's
    instants to archive) to the archived timeline, with all their state files, and remove
    them from the active timeline (see the module's docstring for the order). Raises
    ArchiveRefused before anything changes for a pending instant or an action Hudi never
    archives, CorruptInstantError naming a state file that cannot be archived as Hudi would."""
    settings = settings or ArchivalSettings()
    actions, gone = active_actions(table, instants)
    if not actions:
        return ArchiveResult(gone=tuple(gone))
    if table.config.layout_version >= 2:
        result = _archive_lsm(table, actions, settings)
    else:
        result = _archive_v1(table, actions, settings)
    table.reload()
    return ArchiveResult(archived=result.archived, already_archived=result.already_archived, gone=tuple(gone),
                         written=result.written, deleted=result.deleted, compacted=result.compacted,
                         cleaned=result.cleaned)


def _archive_v1(table: Table, actions: list[ActiveAction], settings: ArchivalSettings) -> ArchiveResult:
    """`HoodieTimelineArchiver.archiveIfRequired` (0.14/0.15) / `TimelineArchiverV1`: `archive`,
    then `deleteArchivedInstants`. (Merging small archive files, off by default, is not done.)"""
    written = write_archive(table, actions, batch=settings.archival_batch)
    moved = {id(e.action) for e in written.written}
    deleted = delete_archived_instants(table, actions)
    return ArchiveResult(archived=tuple(a.instant for a in actions if id(a) in moved),
                         already_archived=tuple(a.instant for a in actions if id(a) not in moved),
                         written=(written.path,) if written.path else (), deleted=tuple(deleted))


def _archive_lsm(table: Table, actions: list[ActiveAction], settings: ArchivalSettings) -> ArchiveResult:
    """`TimelineArchiverV2.archiveIfRequired`: `LSMTimelineWriter.write`, then
    `deleteArchivedActions`, then `compactAndClean`."""
    lsm = Lsm(table)
    done = lsm.archived(actions)
    fresh = [a for a in actions if (a.time, a.instant.action) not in done]
    new = lsm.write(fresh)
    written = () if new is None else (lsm.path(new[0].name), *lsm.snapshot_paths(new[1]))
    deleted = delete_archived_instants(table, actions)
    compacted, cleaned = lsm.compact_and_clean(batch=settings.compaction_batch, max_bytes=COMPACTION_MAX_BYTES)
    moved = {id(a) for a in fresh}
    return ArchiveResult(archived=tuple(a.instant for a in fresh),
                         already_archived=tuple(a.instant for a in actions if id(a) not in moved),
                         written=written, deleted=tuple(deleted), compacted=tuple(compacted), cleaned=tuple(cleaned))


__all__ = ["ArchivalInvalidated", "ArchivalOutcome", "ArchiveResult", "archive_instants", "run_archival"]
