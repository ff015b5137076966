"""Writing the LSM timeline of a table of version 8 or 9 (timeline layout 2) as Hudi 1.x writes it
(`LSMTimelineWriter`, driven by `TimelineArchiverV2.archiveIfRequired`), in
`.hoodie/timeline/history` (`hoodie.timeline.history.path`):

- `write`: the archived actions as rows of one layer-0 Parquet file
  `${min}_${max}_0.parquet` (`HoodieLSMTimelineInstant`, `createLSMTimelineInstant`), then
  `updateManifest`: `manifest_{N+1}` listing the latest snapshot's files plus the new one, then
  `_version_` (deleted, then written) naming N+1. A reader goes `_version_` -> manifest -> files
  (falling back to the highest manifest when `_version_` is missing or unreadable), so a file
  no manifest of the latest snapshot lists is never read: a crash after the Parquet file, or
  after the manifest but before `_version_`, leaves the previous snapshot in force.
- `compactAndClean`, after the active files are deleted: when a layer holds
  `hoodie.timeline.compaction.batch.size` (10) files, the oldest of them (at most that many, at
  most 1 GB together) are merged into one file of the next layer and a new snapshot replaces
  them; then `clean` keeps the files of the latest 3 snapshots (plus one per layer compacted
  in this run) and deletes older manifests, then every Parquet file none of those lists.

The Parquet files are written as parquet-avro writes them for Hudi (`HoodieAvroParquetWriter`):
gzip (`hoodie.parquet.compression.codec`), dictionary encoding, format 1.0 pages, the schema
parquet-avro derives from HoodieLSMTimelineInstant and its `parquet.avro.schema` footer. Each
file is uploaded whole (a crash leaves all of it or none)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from timeline import transition
from timeline.archive.actions import ActiveAction, LeftoverMarkers
from timeline.archived_timeline import (
    VERSION_FILE,
    latest_snapshot_version,
    manifest_path,
    snapshot_files,
    snapshot_versions,
)
from timeline.exceptions import CorruptInstantError
from timeline.instant import CLEAN, CLUSTERING, COMPACTION, LOG_COMPACTION, REPLACE_COMMIT, State
from timeline.metadata.archived import (
    LSM_COLUMNS,
    LSM_FILE_METADATA,
    LSM_INSTANT_COLUMNS,
    LsmFileEntry,
    encode_lsm_manifest,
    lsm_arrow_schema,
    lsm_row,
)

if TYPE_CHECKING:
    from timeline.table import Table

FILE_LAYER_ZERO: Final = 0
# `hoodie.timeline.compaction.batch.size`
DEFAULT_COMPACTION_BATCH: Final = 10
# `LSMTimelineWriter.clean`: "if there are more than 3 version of snapshots, clean the oldest files"
MANIFEST_VERSIONS_RETAINED: Final = 3
# `getCandidateFiles`: "restricted by the gross file size by 1GB"
COMPACTION_MAX_BYTES: Final = 1024 * 1024 * 1024
_DATA_FILE = re.compile(r"^(\d+)_(\d+)_(\d)\.parquet", re.ASCII)


class Lsm:
    """The LSM timeline of one table, written through its storage: every path inside
    `.hoodie/` (Containment.meta_path), each write and delete right after `transition.fence`."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.storage = table.storage
        self._parts = table.config.archive_folder.split("/")[1:]  # the history folder below `.hoodie`
        self.folder = table.containment.meta_path(*self._parts)

    def path(self, name: str) -> str:
        return self.table.containment.meta_path(*self._parts, name)

    # snapshots

    def latest_version(self) -> int | None:
        """`LSMTimeline.latestSnapshotVersion` (None: no snapshot yet, Java's -1)."""
        return latest_snapshot_version(self.storage, self.folder)

    def latest_files(self) -> list[LsmFileEntry]:
        """`LSMTimeline.latestSnapshotManifest`."""
        return snapshot_files(self.storage, self.folder, self.latest_version())

    def is_committed(self, name: str) -> bool:
        """`isFileCommitted`: whether the latest snapshot lists the file."""
        return any(entry.name == name for entry in self.latest_files())

    def update_manifest(self, to_remove: Sequence[str], to_add: LsmFileEntry) -> int:
        """`updateManifest`: a new snapshot = the latest one's files minus `to_remove` plus
        `to_add`, written as `manifest_{N+1}` (a leftover of that name, from a run that died
        before its `_version_`, is replaced), then `_version_` deleted and written again.
        Returns the new version."""
        latest = self.latest_version()
        files = [f for f in snapshot_files(self.storage, self.folder, latest) if f.name not in to_remove]
        files.append(to_add)
        version = 1 if latest is None else latest + 1
        manifest = self.path(manifest_path("", version))
        self._delete_if_exists(manifest)
        transition.fence(self.table)
        self.storage.write(manifest, encode_lsm_manifest(files))
        version_file = self.path(VERSION_FILE)
        transition.fence(self.table)
        self.storage.delete(version_file)
        # a crash here leaves no `_version_`: readers and writers then take the highest manifest
        transition.fence(self.table)
        self.storage.write(version_file, str(version).encode())
        return version

    def snapshot_paths(self, version: int) -> tuple[str, str]:
        """The manifest of snapshot `version` and the version file."""
        return self.path(manifest_path("", version)), self.path(VERSION_FILE)

    def _delete_if_exists(self, path: str) -> None:
        """`deleteIfExists`: a file a failed run left where a new one goes."""
        if self.storage.exists(path):
            transition.fence(self.table)
            self.storage.delete(path)

    # write

    def archived(self, actions: Sequence[ActiveAction]) -> set[tuple[str, str]]:
        """(instant time, action) of the actions the latest snapshot holds already, reading
        only the files whose name range meets theirs (a re-run after a crash between the
        snapshot and the end of the deletes finds its actions there)."""
        if not actions:
            return set()
        low, high = min(a.time for a in actions), max(a.time for a in actions)
        found: set[tuple[str, str]] = set()
        for entry in self.latest_files():
            match = _DATA_FILE.match(entry.name)
            if match and (match.group(2) < low or match.group(1) > high):
                continue
            table = self._read(entry.name, LSM_INSTANT_COLUMNS)
            times, actions_ = table.column(0).to_pylist(), table.column(2).to_pylist()
            found.update((t, a) for t, a in zip(times, actions_) if t and a)
        return found

    def write(self, actions: Sequence[ActiveAction]) -> tuple[LsmFileEntry, int] | None:
        """`LSMTimelineWriter.write`: the rows of `actions` (oldest first) in a new layer-0 file
        named by their first and last instant times, each action's left-over markers removed
        before its row is built, then `updateManifest`. A file of that name the latest snapshot
        lists already is left as it is (the archiving committed before); one it does not list
        (a crashed write) is replaced. Returns the file and the new snapshot's version (None
        when nothing was written)."""
        if not actions:
            return None
        rows = []
        markers = LeftoverMarkers(self.table)
        for action in actions:
            markers.delete(action.time)
            rows.append(self.row(action))
        return self.write_rows(rows, actions[0].time, actions[-1].time)

    def write_rows(self, rows: Sequence[dict[str, Any]], first: str, last: str) -> tuple[LsmFileEntry, int] | None:
        """The second half of `write`: `rows` (`lsm_row`) in the layer-0 file named by `first`
        and `last`, then `updateManifest` (also the rows a version change converts from a v1
        archive, `SevenToEightUpgradeHandler.upgradeToLSMTimeline`)."""
        name = data_file_name(first, last, FILE_LAYER_ZERO)
        path = self.path(name)
        if self.storage.exists(path):
            if self.is_committed(name):
                return None
            transition.fence(self.table)
            self.storage.delete(path)
        data = parquet_bytes(rows_table(rows))
        transition.fence(self.table)
        self.storage.write(path, data)
        entry = LsmFileEntry(name, len(data))
        return entry, self.update_manifest((), entry)

    def row(self, action: ActiveAction) -> dict[str, Any]:
        """`MetadataConversionUtils.createLSMTimelineInstant` over `ActiveAction`: the completed
        file's bytes as `metadata` (none when empty), and as `plan`, by the pending action: a
        clean's requested (else inflight) file; a compaction's or log compaction's requested
        file; a replace or clustering's requested file, or its inflight file when that one is
        not empty (Java sets the requested content, then the inflight content over it)."""
        completed = action.instant
        data = self._bytes(action, State.COMPLETED)
        plan: bytes | None = None
        pending = action.pending_action()
        if pending == CLEAN:
            plan = self._bytes(action, State.REQUESTED if State.REQUESTED in action.files else State.INFLIGHT)
        elif pending in (COMPACTION, LOG_COMPACTION):
            plan = self._bytes(action, State.REQUESTED) if State.REQUESTED in action.files else None
        elif pending in (REPLACE_COMMIT, CLUSTERING):
            plan = self._bytes(action, State.REQUESTED) or None
            plan = self._bytes(action, State.INFLIGHT) or plan
        return lsm_row(time=completed.requested_time, completion_time=completed.completion_time,
                       action=completed.action, metadata=data or None, plan=plan)

    def _bytes(self, action: ActiveAction, state: State) -> bytes:
        found = action.files.get(state)
        return b"" if found is None else self.storage.read(found[1].path)

    def _read(self, name: str, columns: Sequence[str]) -> Any:
        import pyarrow as pa  # here: only a table with an LSM timeline needs it
        import pyarrow.parquet as pq

        path = self.path(name)  # a name a manifest gives, held inside `.hoodie/` too
        try:
            table = pq.read_table(pa.BufferReader(self.storage.read(path)))
            return pa.table({c: _column(table, c) for c in columns})
        except pa.ArrowException as exc:
            raise CorruptInstantError(path, f"unreadable LSM timeline file: {exc}") from exc

    # compaction and cleaning

    def compact_and_clean(self, *, batch: int = DEFAULT_COMPACTION_BATCH,
                          max_bytes: int = COMPACTION_MAX_BYTES) -> tuple[list[str], list[str]]:
        """`compactAndClean`: compact layer 0 when it is full, then each next layer a
        compaction filled, then `clean`. Returns the files compacted away and the files
        cleaned (manifests and Parquet files)."""
        files = self.latest_files()
        compacted: list[str] = []
        layer = 0
        merged = self._compact(files, layer, batch, max_bytes, compacted)
        while merged is not None:
            files.append(merged)  # as Java: the old snapshot plus the new file, layer by layer
            layer += 1
            merged = self._compact(files, layer, batch, max_bytes, compacted)
        return compacted, self.clean(layer)

    def _compact(self, files: list[LsmFileEntry], layer: int, batch: int, max_bytes: int,
                 compacted: list[str]) -> LsmFileEntry | None:
        """`doCompact` of one layer: None when it holds fewer than `batch` files or no two fit."""
        in_layer = sorted((f for f in files if file_layer(f.name) == layer), key=lambda f: f.name)
        if len(in_layer) < batch:
            return None
        candidates = candidate_files(in_layer, batch, max_bytes)
        if len(candidates) < 2:
            return None
        name = compacted_file_name(candidates)
        entry = self.compact_files(candidates, name)
        self.update_manifest(candidates, entry)
        compacted.extend(candidates)
        return entry

    def compact_files(self, candidates: Sequence[str], name: str) -> LsmFileEntry:
        """`compactFiles`: the rows of the candidate files, in their order, in one file."""
        import pyarrow as pa

        path = self.path(name)
        self._delete_if_exists(path)
        merged = pa.concat_tables([self._read(c, LSM_COLUMNS) for c in candidates])
        data = parquet_bytes(merged)
        transition.fence(self.table)
        self.storage.write(path, data)
        return LsmFileEntry(name, len(data))

    def clean(self, compacted_layers: int, *, retained: int = MANIFEST_VERSIONS_RETAINED) -> list[str]:
        """`LSMTimelineWriter.clean`: with more than `retained` + `compacted_layers` snapshots,
        the manifests of the older ones are deleted first, then every Parquet file in the
        folder that no kept snapshot lists (what compaction replaced, what a crashed write left)."""
        versions = sorted(snapshot_versions(self.storage, self.folder), reverse=True)
        keep = retained + compacted_layers
        if len(versions) <= keep:
            return []
        kept = versions[:keep]
        kept_files = {f.name for v in kept for f in snapshot_files(self.storage, self.folder, v)}
        cleaned = []
        for version in versions[keep:]:
            path = self.path(manifest_path("", version))
            transition.fence(self.table)
            if self.storage.delete(path):
                cleaned.append(path)
        for status in self.storage.list(self.folder):
            if status.is_dir or not status.name.endswith(".parquet") or status.name in kept_files:
                continue
            path = self.path(status.name)
            transition.fence(self.table)
            if self.storage.delete(path):
                cleaned.append(path)
        return cleaned


def _column(table: Any, name: str) -> Any:
    """A column of an LSM file read back, typed as Hudi's schema types it (a file missing it,
    written with an older schema, reads as its default: null, or 1 for `version`)."""
    import pyarrow as pa

    kind = lsm_arrow_schema().field(name).type
    if name in table.column_names:
        return table.column(name).cast(kind)
    return pa.array([1 if name == "version" else None] * table.num_rows, type=kind)


def data_file_name(min_instant: str, max_instant: str, layer: int) -> str:
    """`LSMTimelineWriter.newFileName`: `${min}_${max}_${layer}.parquet`."""
    return f"{min_instant}_{max_instant}_{layer}.parquet"


def file_layer(name: str) -> int:
    """`LSMTimeline.getFileLayer` (0 for a name that does not match)."""
    match = _DATA_FILE.match(name)
    return int(match.group(3)) if match else 0


def compacted_file_name(files: Sequence[str]) -> str:
    """`compactedFileName`: the lowest min and highest max instant of the files, one layer up
    from the first file's."""
    matches = [_DATA_FILE.match(f) for f in files]
    if not all(matches):
        raise ValueError(f"not LSM timeline file names: {list(files)}")
    low = min(m.group(1) for m in matches if m)
    high = max(m.group(2) for m in matches if m)
    return data_file_name(low, high, file_layer(files[0]) + 1)


def candidate_files(files: Sequence[LsmFileEntry], batch: int, max_bytes: int) -> list[str]:
    """`getCandidateFiles`: the first consecutive files (sorted by name) up to `batch` of them,
    stopping once together they pass `max_bytes` (restarting after a single file that does)."""
    candidates: list[str] = []
    total = 0
    for entry in files:
        total += entry.length
        candidates.append(entry.name)
        if len(candidates) >= batch:
            break
        if total > max_bytes:
            if len(candidates) < 2:
                total = 0
                candidates.clear()
            else:
                break
    return candidates


def rows_table(rows: Sequence[dict[str, Any]]) -> Any:
    """LSM timeline rows (`lsm_row`) as an Arrow table of the file's schema."""
    import pyarrow as pa

    return pa.Table.from_pylist(list(rows), schema=lsm_arrow_schema())


def parquet_bytes(table: Any) -> bytes:
    """One LSM timeline file as `HoodieAvroParquetWriter` writes it: gzip, dictionary encoding,
    Parquet format 1.0 data pages, the `parquet.avro.schema` and `writer.model.name` footer
    entries of parquet-avro, no Arrow schema of its own."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = lsm_arrow_schema()
    table = table.cast(schema)
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, compression="gzip", version="1.0", use_dictionary=True,
                          data_page_version="1.0", store_schema=False) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata(LSM_FILE_METADATA)
    return bytes(sink.getvalue().to_pybytes())
