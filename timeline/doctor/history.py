"""The archived timeline as the doctor reads it: the LSM timeline's folder state (the `_version_`
file, every `manifest_N`, every Parquet file; `LSMTimeline.latestSnapshotVersion` and
`latestSnapshotManifest`), and every archived instant with what its payload names (v6
HoodieArchivedMetaEntry records, v8+ HoodieLSMTimelineInstant rows), for the orphan rule."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from timeline import metadata
from timeline.archive.reader import archived_entries
from timeline.exceptions import CleanlineError, CorruptInstantError, FileNotFound
from timeline.instant import State
from timeline.metadata.archived import ArchivedEntry, decode_lsm_manifest
from timeline.metadata.references import (
    LSM_PAYLOAD_COLUMNS,
    LSM_PLAN_ACTION,
    References,
    archived_entry_references,
    references_of,
)
from timeline.storage import FileStatus, Storage

if TYPE_CHECKING:
    from timeline.table import Table

VERSION_FILE = "_version_"        # LSMTimeline.VERSION_FILE_NAME
MANIFEST_PREFIX = "manifest_"     # LSMTimeline.MANIFEST_FILE_PREFIX
TEMP_SUFFIX = ".tmp"              # LSMTimeline.TEMP_FILE_SUFFIX (skipped by getManifestFilePathFilter)
_MANIFEST = re.compile(r"^manifest_([0-9]+)$", re.ASCII)
_DATA_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$", re.ASCII)  # LSMTimeline.ARCHIVE_FILE_PATTERN


@dataclass(frozen=True, slots=True)
class LsmState:
    """The LSM timeline folder as listed: the number `_version_` holds (None when the file is
    missing or unreadable), every manifest by version, every Parquet file by name, and the
    snapshot readers use (`latest`: `_version_`'s number, else the highest manifest)."""

    folder: str
    version: int | None
    manifests: Mapping[int, FileStatus] = field(default_factory=dict)
    data_files: Mapping[str, FileStatus] = field(default_factory=dict)
    version_status: FileStatus | None = None

    @property
    def latest(self) -> int | None:
        """LSMTimeline.latestSnapshotVersion."""
        if self.version is not None:
            return self.version
        return max(self.manifests) if self.manifests else None


def lsm_state(storage: Storage, folder: str) -> LsmState:
    """List the LSM timeline folder once (an absent folder is an empty timeline)."""
    try:
        entries = storage.list(folder) if storage.exists(folder) else []
    except FileNotFound:
        entries = []
    manifests: dict[int, FileStatus] = {}
    data: dict[str, FileStatus] = {}
    version_status = None
    for status in entries:
        if status.is_dir:
            continue
        if status.name == VERSION_FILE:
            version_status = status
        elif (match := _MANIFEST.match(status.name)) is not None:
            manifests[int(match.group(1))] = status
        elif _DATA_FILE.match(status.name):
            data[status.name] = status
    version = None
    if version_status is not None:
        try:
            version = int(storage.read(version_status.path).decode().strip())
        except (CleanlineError, ValueError, UnicodeDecodeError):
            version = None  # LSMTimeline.latestSnapshotVersion: "fallback to manifest file listing"
    return LsmState(folder, version, manifests, data, version_status)


def manifest_file_names(storage: Storage, folder: str, version: int) -> list[str]:
    """The Parquet files snapshot `version` lists (`latestSnapshotManifest`); CorruptInstantError
    when the manifest is missing or does not parse (Hudi fails to read the archive then too)."""
    path = Storage.join(folder, f"{MANIFEST_PREFIX}{version}")
    try:
        return [entry.name for entry in decode_lsm_manifest(storage.read(path), path=path)]
    except FileNotFound:
        raise CorruptInstantError(path, "the manifest the archived timeline's version names is missing") from None


@dataclass(slots=True)
class ArchiveRead:
    """Every archived instant (requested time -> action) with what the payloads name, which
    completed writes carry write details, and why the archive could not be read (`error`:
    the doctor then proves no file unreferenced)."""

    instants: dict[str, str] = field(default_factory=dict)
    detailed: set[str] = field(default_factory=set)
    references: References = field(default_factory=References)
    error: str | None = None


def read_archive(table: Table) -> ArchiveRead:
    """Read the whole archived timeline with its payloads (v6 archive log files or the LSM
    timeline's latest snapshot)."""
    found = ArchiveRead()
    folder = table.path(table.config.archive_folder)
    try:
        if table.config.layout_version >= 2:
            _read_lsm(table.storage, folder, found)
        elif table.storage.exists(folder):
            _read_v6(table.storage, folder, found)
    except CleanlineError as exc:
        found.error = str(exc)
    return found


def _read_v6(storage: Storage, folder: str, found: ArchiveRead) -> None:
    for raw in archived_entries(storage, folder):
        entry = ArchivedEntry.from_raw(raw)
        if not entry.time:
            continue
        named = archived_entry_references(raw)
        found.references.update(named)
        if (entry.state or "COMPLETED") == "COMPLETED":
            found.instants[entry.time] = entry.action
            if named.details:
                found.detailed.add(entry.time)
        else:
            found.instants.setdefault(entry.time, entry.action)


def _read_lsm(storage: Storage, folder: str, found: ArchiveRead) -> None:
    import pyarrow as pa  # here: a table without an LSM timeline never loads pyarrow's Parquet reader
    import pyarrow.parquet as pq

    state = lsm_state(storage, folder)
    if state.latest is None:
        return
    for name in manifest_file_names(storage, folder, state.latest):
        path = Storage.join(folder, name)
        try:
            table = pq.read_table(pa.BufferReader(storage.read(path)), columns=list(LSM_PAYLOAD_COLUMNS))
            rows = zip(*(table.column(c).to_pylist() for c in LSM_PAYLOAD_COLUMNS))
        except (pa.ArrowException, KeyError) as exc:
            raise CorruptInstantError(path, f"unreadable LSM timeline file: {exc}") from exc
        for time, action, completed, plan in rows:
            if not time or not action:
                continue
            found.instants[time] = action
            where = f"{path} ({time} {action})"
            raw = metadata.decode(completed or b"", path=where, action=action, state=State.COMPLETED, layout=2)
            named = references_of(raw, action=action, state=State.COMPLETED)
            found.references.update(named)
            if named.details:
                found.detailed.add(time)
            plan_action = LSM_PLAN_ACTION.get(action)
            if plan and plan_action is not None:
                raw_plan = metadata.decode(plan, path=where, action=plan_action, state=State.REQUESTED, layout=2)
                found.references.update(references_of(raw_plan, action=plan_action, state=State.REQUESTED))
