"""The archived timeline converted by a 6 <-> 8 step, as Hudi's handlers convert it.

6 -> 8, `SevenToEightUpgradeHandler.upgradeToLSMTimeline`: `LegacyArchivedMetaEntryReader` reads
every HoodieArchivedMetaEntry of the v1 archive (`.hoodie/archived/.commits_.archive*`), groups
the entries of one instant time into an action (`ActiveActionWithDetails`), each entry's details
being the content of the field `getMetadataKey(action)` names (hoodieCommitMetadata for commits and
delta commits, hoodieCleanMetadata for cleans, hoodieCompactionPlan for compactions, ...) as an
Avro container file (`convertIndexedRecordToAvroFileFormat`); `LSMTimelineWriter.write` then writes
`hoodie.commits.archival.batch` actions at a time as LSM rows (`createLSMTimelineInstant`: the
completed entry's details as `metadata`, its `stateTransitionTime` as the completion time, a
compaction's plan from its requested entry; a clean's or replace's plan comes from a field the
metadata key does not name, so it stays empty) under `.hoodie/timeline/history`, each batch
followed by `compactAndClean`.

8 -> 6, `EightToSevenDowngradeHandler.downgradeFromLSMTimeline`: every row of the LSM timeline's
latest snapshot (`ArchivedTimelineLoaderV2`, FULL) becomes one completed HoodieArchivedMetaEntry
(`MetadataConversionUtils.createMetaWrapper(metaClient, lsmTimelineRecord)`: commit metadata
through the POJO, `convertCommitMetadataToAvro`; a replace's metadata also as its inflight
metadata; cleans, rollbacks and savepoints decoded; plans as the cleaner or compaction plan),
flushed to the v1 archive (`TimelineArchiverV1.flushArchiveEntries`) in blocks of
`hoodie.commits.archival.batch`.

Neither handler deletes the archive it converts from, nor does Cleanline. Cleanline differs in
two ways, both to write no history twice and lose none: entries the target holds already (an
earlier change, or a run that stopped) are not written again, and every row is written (Hudi's
`ArchiveEntryFlusher.accept` drops the entry that arrives when its buffer is full)."""

from __future__ import annotations

from typing import Any

from timeline.archive.lsm import DEFAULT_COMPACTION_BATCH, Lsm
from timeline.archive.write_v1 import DEFAULT_ARCHIVAL_BATCH, archive_blocks, archive_file_name
from timeline.archived_timeline import (
    ARCHIVE_FILE,
    _lsm_instants,
    archived_entries,
    lsm_file_rows,
    v6_archive_files,
)
from timeline.config import LAYOUT, TIMELINE_PATH, VERSION, TableConfig
from timeline.metadata.archived import LSM_COLUMNS, ArchivedEntry
from timeline.metadata.conversion import entry_key, entry_of_lsm_row, lsm_row_key, lsm_row_of_entries
from timeline.table import Table


class ArchiveConversionError(ValueError):
    """An archived entry Hudi's conversion cannot convert either ("Action not fully supported yet")."""


def v1_folder(table: Table) -> str:
    return table.path(".hoodie", table.config.get("hoodie.archivelog.folder") or "archived")


def v1_to_lsm_rows(table: Table) -> list[dict[str, Any]]:
    """The LSM rows of every completed action of the v1 archive, oldest first
    (`getActiveActionsIterator`: the entries of one instant time make one action)."""
    folder = v1_folder(table)
    if not table.storage.exists(folder):
        return []
    groups: dict[str, list[dict[str, Any]]] = {}
    for raw in archived_entries(table.storage, folder):
        time = ArchivedEntry.from_raw(raw).time
        if time:
            groups.setdefault(time, []).append(raw)
    rows = [lsm_row_of_entries(time, groups[time]) for time in sorted(groups)]
    return [row for row in rows if row is not None]


def _as_version_8(table: Table) -> Table:
    """The table seen with its version 8 layout (the step writes the LSM history before
    `hoodie.properties` says 8), its lock check kept."""
    config = TableConfig({**table.config.props, VERSION: "8", LAYOUT: "2",
                          TIMELINE_PATH: table.config.props.get(TIMELINE_PATH) or "timeline"}, table.config.path)
    view = Table(table.storage, table.base, config)
    view.publish_check = table.publish_check
    return view


def write_lsm(table: Table, rows: list[dict[str, Any]], *, batch: int = DEFAULT_ARCHIVAL_BATCH) -> int:
    """`upgradeToLSMTimeline`'s writes: `batch` rows per layer-0 file, each followed by
    `compactAndClean`; rows whose (instant, action) the LSM timeline holds already are skipped.
    Returns the rows written."""
    view = _as_version_8(table)
    lsm = Lsm(view)
    held = {(i.requested_time, i.action) for i in _lsm_instants(table.storage, lsm.folder)} \
        if table.storage.exists(lsm.folder) else set()
    todo = [r for r in rows if lsm_row_key(r) not in held]
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        lsm.write_rows(chunk, lsm_row_key(chunk[0])[0], lsm_row_key(chunk[-1])[0])
        lsm.compact_and_clean(batch=DEFAULT_COMPACTION_BATCH)
    return len(todo)


def lsm_to_v1_entries(table: Table) -> list[dict[str, Any]]:
    """`createMetaWrapper(metaClient, lsmTimelineRecord)` of every row of the LSM timeline's
    latest snapshot, oldest first."""
    folder = table.path(table.config.archive_folder)
    if not table.storage.exists(folder):
        return []
    found = []
    for path, rows in lsm_file_rows(table.storage, folder, LSM_COLUMNS):
        for time, completion, action, metadata, plan, _ in rows:
            try:
                found.append(entry_of_lsm_row(time, completion, action, metadata, plan, path=path))
            except ValueError as exc:
                raise ArchiveConversionError(str(exc)) from exc
    return sorted(found, key=entry_key)


def write_v1(table: Table, entries: list[dict[str, Any]], *, batch: int = DEFAULT_ARCHIVAL_BATCH) -> int:
    """`downgradeFromLSMTimeline`'s writes: the entries the v1 archive does not hold yet, in one
    new `.commits_.archive.N_1-0-1` of `batch`-entry blocks. Returns the entries written."""
    from timeline import transition

    name = table.config.get("hoodie.archivelog.folder") or "archived"
    folder = table.containment.meta_path(name)
    held = {entry_key(e) for e in archived_entries(table.storage, folder)} \
        if table.storage.exists(folder) else set()
    todo = [e for e in entries if entry_key(e) not in held]
    if not todo:
        return 0
    transition.fence(table)
    table.storage.makedirs(folder)
    versions = [int(m.group(1)) for p in v6_archive_files(table.storage, folder)
                if (m := ARCHIVE_FILE.match(p.rsplit("/", 1)[-1]))]
    path = table.containment.meta_path(name, archive_file_name(max(versions, default=0) + 1))
    transition.fence(table)
    table.storage.write(path, archive_blocks(todo, batch))
    return len(todo)


def has_archive(table: Table, to_version: int) -> bool:
    """Whether the step 6 -> 8 (8 -> 6) has a v1 archive (an LSM history) to convert."""
    if to_version == 8:
        folder = v1_folder(table)
        return table.storage.exists(folder) and bool(v6_archive_files(table.storage, folder))
    folder = table.path(table.config.archive_folder)
    return table.storage.exists(folder) and any(not s.is_dir for s in table.storage.list(folder))


__all__ = ["ArchiveConversionError", "has_archive", "lsm_to_v1_entries", "v1_to_lsm_rows", "write_lsm", "write_v1"]
