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
from timeline.archive.lsm import COMPACTION_MAX_BYTES, DEFAULT_COMPACTION_BATCH, Lsm
from timeline.archive.write_v1 import DEFAULT_ARCHIVAL_BATCH, write_archive
from timeline.exceptions import CleanlineError
from timeline.instant import Instant

if TYPE_CHECKING:
    from timeline.archive.plan import ArchivalPlan
    from timeline.table import Table

ARCHIVAL_BATCH_KEY = "hoodie.commits.archival.batch"
COMPACTION_BATCH_KEY = "hoodie.timeline.compaction.batch.size"


@dataclass(frozen=True, slots=True)
class ArchiveSettings:
    """The writer settings of Hudi's archiver (`HoodieArchivalConfig`): entries per Avro block
    of a v6 archive file (`hoodie.commits.archival.batch`, 10) and files of one LSM layer merged
    at once (`hoodie.timeline.compaction.batch.size`, 10)."""

    archival_batch: int = DEFAULT_ARCHIVAL_BATCH
    compaction_batch: int = DEFAULT_COMPACTION_BATCH
    compaction_max_bytes: int = COMPACTION_MAX_BYTES

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ArchiveSettings:
        """The settings in writer options (Hudi's defaults for those not given)."""
        def number(key: str, default: int) -> int:
            value = props.get(key)
            try:
                return int(value) if value is not None else default
            except ValueError:
                raise ValueError(f"{key}={value!r} is not a number") from None

        return cls(number(ARCHIVAL_BATCH_KEY, DEFAULT_ARCHIVAL_BATCH),
                   number(COMPACTION_BATCH_KEY, DEFAULT_COMPACTION_BATCH))


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
    run, or when the plan moved nothing)."""

    plan: ArchivalPlan
    result: ArchiveResult | None = None


def run_archival(table: Table, *, options: Mapping[str, str] | None = None,
                 expected: Sequence[str] | None = None) -> ArchivalOutcome:
    """Archive what Hudi's archiver would archive now (Hudi's `archive_commits` procedure and
    `HoodieTimelineArchiver.archiveIfRequired(acquireLock=true)`): plan with the table's settings
    over `options`, and archive that plan's instants with the writer settings of the same
    options. Call it under the table's lock: the plan is made from the timeline read then.
    `expected` (the instant times of a plan approved earlier): ArchivalInvalidated, nothing
    written, unless the plan made now moves exactly those. A plan a broken LSM history stops
    (`runnable` false) writes nothing."""
    from timeline.archive.plan import archival_properties, plan_archival

    table.reload()
    plan = plan_archival(table, options=options)
    chosen = [i.requested_time for i in plan.instants] if plan.runnable else []
    if expected is not None and sorted(expected) != sorted(chosen):
        raise ArchivalInvalidated(
            f"{table.uri}: the timeline changed since the archival was planned (approved: {len(expected)} instants, "
            f"now: {len(chosen)}); plan it again")
    if not chosen:
        return ArchivalOutcome(plan)
    settings = ArchiveSettings.from_properties(archival_properties(table, options))
    return ArchivalOutcome(plan, archive_instants(table, plan.instants, settings=settings))


def archive_instants(table: Table, instants: Iterable[Instant], *,
                     settings: ArchiveSettings | None = None) -> ArchiveResult:
    """Move `instants` (completed instants of the active timeline, one per action: Hudi's
    instants to archive) to the archived timeline, with all their state files, and remove
    them from the active timeline (see the module's docstring for the order). Raises
    ArchiveRefused before anything changes for a pending instant or an action Hudi never
    archives, CorruptInstantError naming a state file that cannot be archived as Hudi would."""
    settings = settings or ArchiveSettings()
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


def _archive_v1(table: Table, actions: list[ActiveAction], settings: ArchiveSettings) -> ArchiveResult:
    """`HoodieTimelineArchiver.archiveIfRequired` (0.14/0.15) / `TimelineArchiverV1`: `archive`,
    then `deleteArchivedInstants`. (Merging small archive files, off by default, is not done.)"""
    written = write_archive(table, actions, batch=settings.archival_batch)
    moved = {id(e.action) for e in written.written}
    deleted = delete_archived_instants(table, actions)
    return ArchiveResult(archived=tuple(a.instant for a in actions if id(a) in moved),
                         already_archived=tuple(a.instant for a in actions if id(a) not in moved),
                         written=(written.path,) if written.path else (), deleted=tuple(deleted))


def _archive_lsm(table: Table, actions: list[ActiveAction], settings: ArchiveSettings) -> ArchiveResult:
    """`TimelineArchiverV2.archiveIfRequired`: `LSMTimelineWriter.write`, then
    `deleteArchivedActions`, then `compactAndClean`."""
    lsm = Lsm(table)
    done = lsm.archived(actions)
    fresh = [a for a in actions if (a.time, a.instant.action) not in done]
    new = lsm.write(fresh)
    written = () if new is None else (lsm.path(new[0].name), *lsm.snapshot_paths(new[1]))
    deleted = delete_archived_instants(table, actions)
    compacted, cleaned = lsm.compact_and_clean(batch=settings.compaction_batch,
                                               max_bytes=settings.compaction_max_bytes)
    moved = {id(a) for a in fresh}
    return ArchiveResult(archived=tuple(a.instant for a in fresh),
                         already_archived=tuple(a.instant for a in actions if id(a) not in moved),
                         written=written, deleted=tuple(deleted), compacted=tuple(compacted), cleaned=tuple(cleaned))
