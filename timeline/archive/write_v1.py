"""Writing the archived timeline of a table of version 6 (timeline layout 1) as Hudi 0.14/0.15
writes it (`HoodieTimelineArchiver.archive`; Hudi 1.x `TimelineArchiverV1.archive` for tables
it keeps at version 6): every state file of the archived actions becomes one
HoodieArchivedMetaEntry (`MetadataConversionUtils.createMetaWrapper`,
`timeline.metadata.archived.meta_entry`), and the entries are appended to the archive folder
(`hoodie.archivelog.folder`, `.hoodie/archived`) as Avro data blocks of
`hoodie.commits.archival.batch` records in a Hudi log file `.commits_.archive.N_1-0-1`.

The log writer (`HoodieLogFormat.WriterBuilder.build`) finds the latest archive file; on a store
that cannot append (a local disk, S3: `StorageSchemes.isAppendSupported` is false for both) it
rolls over to version N+1 with the write token `1-0-1` (`UNKNOWN_WRITE_TOKEN`), so each archival
writes one new file. Cleanline writes that file whole, in one request: a crash leaves the whole
file or none. Hudi reads every `.commits_.archive*` file and keeps each instant once (a set), so
entries written twice would be harmless; a re-run after a crash still writes none twice
(`archived_keys`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from timeline import transition
from timeline.archive.actions import ActiveAction, LeftoverMarkers
from timeline.archived_timeline import ARCHIVE_FILE, file_entries, v6_archive_files
from timeline.instant import State, instant_time_from_epoch_ms, zone_of
from timeline.logformat import BlockType, HeaderKey, encode_avro_records, encode_block
from timeline.metadata import avro
from timeline.metadata.archived import ENTRY_RECORD, ArchivedEntry, meta_entry
from timeline.storage import Storage

if TYPE_CHECKING:
    from timeline.table import Table

# `HoodieArchivedTimeline.HOODIE_COMMIT_ARCHIVE_LOG_FILE_PREFIX` as the log file's id, the
# archive extension, an empty base instant and `HoodieLogFormat.UNKNOWN_WRITE_TOKEN`.
ARCHIVE_FILE_ID: Final = "commits"
ARCHIVE_EXTENSION: Final = ".archive"
WRITE_TOKEN: Final = "1-0-1"
# `hoodie.commits.archival.batch`
DEFAULT_ARCHIVAL_BATCH: Final = 10


def archive_file_name(version: int) -> str:
    """`FSUtils.makeLogFileName("commits", ".archive", "", version, "1-0-1")`."""
    return f".{ARCHIVE_FILE_ID}_{ARCHIVE_EXTENSION}.{version}_{WRITE_TOKEN}"


@dataclass(frozen=True, slots=True)
class V1Entry:
    """One entry to archive: the state file it comes from and its HoodieArchivedMetaEntry."""

    action: ActiveAction
    state: State
    path: str
    record: dict[str, Any]

    @property
    def key(self) -> tuple[str, str, str]:
        entry = ArchivedEntry.from_raw(self.record)
        return (entry.time, entry.action, entry.state)


def entries(table: Table, actions: Sequence[ActiveAction]) -> list[V1Entry]:
    """Every state file of `actions` as its entry, in Hudi's order: actions by instant
    (`instantsToArchive.stream().sorted()`), each action's files requested, inflight,
    completed (the raw active timeline's order). Reads the files; writes nothing. Raises
    CorruptInstantError naming a file whose content Hudi's archiver could not convert."""
    zone = zone_of(table.config.timezone)
    found = []
    for action in actions:
        for state in State:
            if state not in action.files:
                continue
            instant, status = action.files[state]
            record = meta_entry(time=instant.requested_time, action=instant.action, state=state,
                                transition_time=instant_time_from_epoch_ms(status.mtime_ms, zone),
                                data=table.storage.read(status.path), path=status.path)
            found.append(V1Entry(action, state, status.path, record))
    return found


def archived_keys(storage: Storage, folder: str, since: str) -> set[tuple[str, str, str]]:
    """(time, action, state) of the entries archived already at or after `since`: the archive
    files newest first, until one holds nothing that recent (what a crashed run of this writer
    left is always its newest file)."""
    keys: set[tuple[str, str, str]] = set()
    for path in reversed(v6_archive_files(storage, folder)):
        newest = ""
        for raw in file_entries(storage, path):
            entry = ArchivedEntry.from_raw(raw)
            keys.add((entry.time, entry.action, entry.state))
            newest = max(newest, entry.time)
        if newest < since:
            break
    return keys


def _next_version(storage: Storage, folder: str) -> int:
    """`FSUtils.getLatestLogVersion` plus the roll-over to a new file: the latest version + 1."""
    versions = [int(m.group(1)) for p in v6_archive_files(storage, folder)
                if (m := ARCHIVE_FILE.match(p.rsplit("/", 1)[-1]))]
    return max(versions, default=0) + 1


def archive_blocks(records: Sequence[dict[str, Any]], batch: int) -> bytes:
    """`writeToFile` per batch: Avro data blocks of at most `batch` entries, each with the
    single header SCHEMA = HoodieArchivedMetaEntry's schema (no instant time)."""
    schema_json = avro.writer_schema_json(ENTRY_RECORD)
    blocks = []
    for start in range(0, len(records), max(batch, 1)):
        chunk = records[start:start + max(batch, 1)]
        blocks.append(encode_block(BlockType.AVRO_DATA, {HeaderKey.SCHEMA: schema_json},
                                   encode_avro_records(chunk, schema_json)))
    return b"".join(blocks)


@dataclass(frozen=True, slots=True)
class V1Written:
    """What `write_archive` did: the archive file written (None: every entry was archived
    already) and the entries it holds."""

    path: str | None
    written: tuple[V1Entry, ...]
    skipped: tuple[V1Entry, ...]


def write_archive(table: Table, actions: Sequence[ActiveAction], *, batch: int = DEFAULT_ARCHIVAL_BATCH) -> V1Written:
    """`HoodieTimelineArchiver.archive`: the entries of `actions` appended to the archive as a new
    `.commits_.archive.N_1-0-1`, after each action's left-over markers are removed. Entries
    found archived already (a re-run after a crash) are not written again. Fenced before each
    file written or deleted; every path inside `.hoodie/` (Containment.meta_path)."""
    todo = entries(table, actions)  # everything read and converted before anything changes
    folder_parts = table.config.archive_folder.split("/")[1:]
    folder = table.containment.meta_path(*folder_parts)
    done = archived_keys(table.storage, folder, min(a.time for a in actions)) if actions else set()
    fresh = [e for e in todo if e.key not in done]
    markers = LeftoverMarkers(table)
    for action in actions:
        markers.delete(action.time)
    if not fresh:
        return V1Written(None, (), tuple(todo))
    path = table.containment.meta_path(*folder_parts, archive_file_name(_next_version(table.storage, folder)))
    data = archive_blocks([e.record for e in fresh], batch)
    transition.fence(table)
    table.storage.write(path, data)
    return V1Written(path, tuple(fresh), tuple(e for e in todo if e.key in done))
