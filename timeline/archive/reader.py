"""The archived timeline: v6 `.hoodie/archived/.commits_.archive.N_*` log files holding
HoodieArchivedMetaEntry records, and the v8+ LSM timeline in `.hoodie/timeline/history`
(`_version_` -> `manifest_N` -> Parquet files of HoodieLSMTimelineInstant rows)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from timeline.exceptions import CorruptInstantError, FileNotFound
from timeline.instant import Instant, State, comparable_action
from timeline.logformat import BlockType, HeaderKey, decode_avro_records, read_blocks
from timeline.metadata.archived import LSM_INSTANT_COLUMNS, ArchivedEntry, LsmFileEntry, decode_lsm_manifest
from timeline.storage import Storage
from timeline.timeline import Timeline

if TYPE_CHECKING:
    from timeline.table import Table

ARCHIVE_FILE = re.compile(r"^\.commits_\.archive\.([0-9]+)", re.ASCII)
_STATES = {"REQUESTED": State.REQUESTED, "INFLIGHT": State.INFLIGHT, "COMPLETED": State.COMPLETED}
VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"


def load_archived_timeline(table: Table) -> Timeline:
    """Every archived instant (at its highest archived state), oldest first."""
    folder = table.path(table.config.archive_folder)
    if not table.storage.exists(folder):
        return Timeline()
    if table.config.layout_version >= 2:
        return Timeline.of(_lsm_instants(table.storage, folder))
    return Timeline.of(_v6_instants(table.storage, folder))


def v6_archive_files(storage: Storage, folder: str) -> list[str]:
    """The `.commits_.archive.N_*` files of a v6 archive folder, by version (oldest first)."""
    files = []
    for status in storage.list(folder):
        match = ARCHIVE_FILE.match(status.name)
        if match and not status.is_dir:
            files.append((int(match.group(1)), status.name, status.path))
    return [path for _, _, path in sorted(files)]


def archived_entries(storage: Storage, folder: str) -> Iterator[dict[str, Any]]:
    """The HoodieArchivedMetaEntry records of a v6 archive folder, file by file."""
    for path in v6_archive_files(storage, folder):
        yield from file_entries(storage, path)


def file_entries(storage: Storage, path: str) -> Iterator[dict[str, Any]]:
    """The HoodieArchivedMetaEntry records of one archive file, block by block (blocks other
    than Avro data, e.g. a crashed write's corrupt tail, are skipped as Hudi's reader does)."""
    for block in read_blocks(storage.read(path), path=path):
        if block.block_type is not BlockType.AVRO_DATA:
            continue
        schema = block.header.get(HeaderKey.SCHEMA)
        if not schema:
            raise CorruptInstantError(path, f"data block at {block.offset} has no schema")
        yield from decode_avro_records(block.content, schema, path=path)


def _v6_instants(storage: Storage, folder: str) -> list[Instant]:
    best: dict[tuple[str, str], tuple[State, ArchivedEntry]] = {}
    for raw in archived_entries(storage, folder):
        entry = ArchivedEntry.from_raw(raw)
        if not entry.time or not entry.action:
            continue
        state = _STATES.get(entry.state, State.COMPLETED)
        key = (entry.time, comparable_action(entry.action))
        if key not in best or state > best[key][0]:
            best[key] = (state, entry)
    instants = []
    for (time, _), (state, entry) in best.items():
        completion = entry.completion_time if state is State.COMPLETED else None
        instants.append(Instant(time, entry.action, state, completion or None))
    return instants


_MANIFEST = re.compile(r"^manifest_([0-9]+)$", re.ASCII)


def latest_snapshot_version(storage: Storage, folder: str) -> int | None:
    """LSMTimeline.latestSnapshotVersion: the number in `_version_`, or, when that file is
    missing or unreadable, the highest `manifest_N` (None: an empty archive)."""
    try:
        return int(storage.read(Storage.join(folder, VERSION_FILE)).decode().strip())
    except (FileNotFound, ValueError, UnicodeDecodeError):
        pass
    versions = snapshot_versions(storage, folder)
    return max(versions) if versions else None


def snapshot_versions(storage: Storage, folder: str) -> list[int]:
    """`LSMTimeline.allSnapshotVersions`: the N of every `manifest_N` (none when the folder is missing)."""
    try:
        return [int(m.group(1)) for s in storage.list(folder) if (m := _MANIFEST.match(s.name)) and not s.is_dir]
    except FileNotFound:
        return []


def manifest_path(folder: str, version: int) -> str:
    """`LSMTimeline.getManifestFilePath`."""
    return Storage.join(folder, f"{MANIFEST_PREFIX}{version}")


def snapshot_files(storage: Storage, folder: str, version: int | None) -> list[LsmFileEntry]:
    """`LSMTimeline.latestSnapshotManifest`: the files of snapshot `version` (none for None).
    Raises CorruptInstantError naming the manifest when it is missing or unreadable."""
    if version is None:
        return []
    path = manifest_path(folder, version)
    try:
        data = storage.read(path)
    except FileNotFound as exc:
        raise CorruptInstantError(path, "the LSM timeline's latest manifest is missing") from exc
    return decode_lsm_manifest(data, path=path)


def _lsm_files(storage: Storage, folder: str) -> list[str]:
    files = snapshot_files(storage, folder, latest_snapshot_version(storage, folder))
    return [Storage.join(folder, entry.name) for entry in files]


def _lsm_instants(storage: Storage, folder: str) -> Iterable[Instant]:
    import pyarrow as pa  # here: a table without an LSM timeline never loads pyarrow's Parquet reader
    import pyarrow.parquet as pq

    for path in _lsm_files(storage, folder):
        try:
            read = pq.read_table(pa.BufferReader(storage.read(path)), columns=list(LSM_INSTANT_COLUMNS))
            columns = [read.column(name) for name in LSM_INSTANT_COLUMNS]
        except (pa.ArrowException, KeyError) as exc:
            raise CorruptInstantError(path, f"unreadable LSM timeline file: {exc}") from exc
        for time, completion, action in zip(*(c.to_pylist() for c in columns)):
            if time and action:
                yield Instant(time, action, State.COMPLETED, completion)
