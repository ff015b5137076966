"""The archived timeline: v6 `.hoodie/archived/.commits_.archive.N_*` log files holding
HoodieArchivedMetaEntry records, and the v8+ LSM timeline in `.hoodie/timeline/history`
(`_version_` -> `manifest_N` -> Parquet files of HoodieLSMTimelineInstant rows).

The one reader of the LSM timeline: its folder listed once (`lsm_state`: the version file read
as `LSMTimeline.latestSnapshotVersion` reads it, every manifest, every data file), a snapshot's
files (`snapshot_files`) and the rows of the latest snapshot's files (`lsm_file_rows`). The
archival plan's view of a broken history (`timeline.archive.plan.lsm_history_problems`), the
LSM writer (`timeline.archive.lsm`) and the doctor (`timeline.doctor.history`,
`timeline.doctor.archived`) read it through these."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from timeline.exceptions import CleanlineError, CorruptInstantError, FileNotFound
from timeline.instant import Instant, State, comparable_action
from timeline.logformat import BlockType, HeaderKey, decode_avro_records, read_blocks
from timeline.metadata.archived import LSM_INSTANT_COLUMNS, ArchivedEntry, LsmFileEntry, decode_lsm_manifest
from timeline.storage import FileStatus, Storage
from timeline.timeline import Timeline

if TYPE_CHECKING:
    from timeline.table import Table

ARCHIVE_FILE = re.compile(r"^\.commits_\.archive\.([0-9]+)", re.ASCII)
_STATES = {"REQUESTED": State.REQUESTED, "INFLIGHT": State.INFLIGHT, "COMPLETED": State.COMPLETED}
VERSION_FILE = "_version_"        # LSMTimeline.VERSION_FILE_NAME
MANIFEST_PREFIX = "manifest_"     # LSMTimeline.MANIFEST_FILE_PREFIX


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
_DATA_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$", re.ASCII)  # LSMTimeline.ARCHIVE_FILE_PATTERN
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def java_int(text: str) -> int | None:
    """`Integer.parseInt`: an optional sign and digits (no blanks), within 32 bits; None otherwise."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -2**31 <= value < 2**31 else None


@dataclass(frozen=True, slots=True)
class LsmState:
    """The LSM timeline folder as listed once: the number `_version_` holds (None when the
    file is missing or holds no number: `version_status` tells which), every manifest by
    version, every Parquet data file by name, and the snapshot readers use (`latest`)."""

    folder: str
    version: int | None
    manifests: Mapping[int, FileStatus] = field(default_factory=dict)
    data_files: Mapping[str, FileStatus] = field(default_factory=dict)
    version_status: FileStatus | None = None
    files: Mapping[str, FileStatus] = field(default_factory=dict)

    @property
    def latest(self) -> int | None:
        """`LSMTimeline.latestSnapshotVersion`: the number in `_version_`, or, when that file is
        missing or holds no number, the highest `manifest_N` (None: an empty archive)."""
        if self.version is not None:
            return self.version
        return max(self.manifests) if self.manifests else None


def lsm_state(storage: Storage, folder: str) -> LsmState:
    """List the LSM timeline folder once (an absent folder is an empty timeline) and read
    `_version_` as `Integer.parseInt(fromUTF8Bytes(content))` does (anything else: None, and
    readers fall back to the manifests)."""
    try:
        entries = list(storage.list(folder)) if storage.exists(folder) else []
    except FileNotFound:
        entries = []
    files = {s.name: s for s in entries if not s.is_dir}
    manifests = {int(m.group(1)): s for name, s in files.items() if (m := _MANIFEST.match(name))}
    data = {name: s for name, s in files.items() if _DATA_FILE.match(name)}
    version_status = files.get(VERSION_FILE)
    version = None
    if version_status is not None:
        try:
            version = java_int(storage.read(version_status.path).decode("utf-8", errors="replace"))
        except CleanlineError:
            version = None  # gone since the listing: "fallback to manifest file listing"
    return LsmState(folder, version, manifests, data, version_status, files)


def latest_snapshot_version(storage: Storage, folder: str) -> int | None:
    """`LSMTimeline.latestSnapshotVersion` (None: an empty archive)."""
    return lsm_state(storage, folder).latest


def snapshot_versions(storage: Storage, folder: str) -> list[int]:
    """`LSMTimeline.allSnapshotVersions`: the N of every `manifest_N` (none when the folder is missing)."""
    return sorted(lsm_state(storage, folder).manifests)


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


def lsm_file_rows(storage: Storage, folder: str, columns: Sequence[str]) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """Each file of the latest snapshot (`LSMTimeline.latestSnapshotManifest`) with its rows of
    `columns`, file by file in the manifest's order. CorruptInstantError names a manifest that
    is missing or unreadable, or a file that is missing or not an LSM timeline file."""
    import pyarrow as pa  # here: a table without an LSM timeline never loads pyarrow's Parquet reader
    import pyarrow.parquet as pq

    for entry in snapshot_files(storage, folder, latest_snapshot_version(storage, folder)):
        path = Storage.join(folder, entry.name)
        try:
            read = pq.read_table(pa.BufferReader(storage.read(path)), columns=list(columns))
            values = [read.column(name).to_pylist() for name in columns]
        except (pa.ArrowException, KeyError) as exc:
            raise CorruptInstantError(path, f"unreadable LSM timeline file: {exc}") from exc
        yield path, list(zip(*values, strict=True))


def _lsm_instants(storage: Storage, folder: str) -> Iterable[Instant]:
    for _, rows in lsm_file_rows(storage, folder, LSM_INSTANT_COLUMNS):
        for time, completion, action in rows:
            if time and action:
                yield Instant(time, action, State.COMPLETED, completion)
