"""The archived timeline's entries: a v6 archive's HoodieArchivedMetaEntry (the instant it names,
and the entry Hudi's archiver builds from a state file, `MetadataConversionUtils.createMetaWrapper`)
and the LSM timeline's (table versions 8 and 9) rows (`createLSMTimelineInstant`) and manifest
(`HoodieLSMTimelineManifest`). `timeline/archived_timeline.py` loads the archived timeline with them
and `timeline/archive/write_v1.py` and `timeline/archive/lsm.py` write it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from timeline.exceptions import CorruptInstantError
from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    State,
)
from timeline.metadata import avro, jsonmeta
from timeline.metadata.raw import Raw, text

ENTRY_RECORD: Final = "HoodieArchivedMetaEntry"
LSM_RECORD: Final = "HoodieLSMTimelineInstant"


@dataclass(frozen=True, slots=True)
class ArchivedEntry:
    """One HoodieArchivedMetaEntry of a v6 archive (only the instant it names)."""

    time: str
    action: str
    state: str
    completion_time: str

    @classmethod
    def from_raw(cls, raw: Raw) -> ArchivedEntry:
        return cls(text(raw, "commitTime"), text(raw, "actionType"), text(raw, "actionState") or "COMPLETED",
                   text(raw, "stateTransitionTime"))


# --- v6: MetadataConversionUtils.createMetaWrapper ---------------------------------------------

# HoodieWriteStat's Java fields (the POJO a v6 JSON commit file is read into), with the value
# a field the JSON lacks keeps: 0 for Java `long`s, null for objects. The Avro HoodieWriteStat
# fields that the POJO lacks (a delta write's logVersion, logOffset, baseFile, logFiles, ...) are
# null: the JSON is read into HoodieWriteStat, not HoodieDeltaWriteStat, before the conversion.
_WRITE_STAT_POJO: Final[Mapping[str, int | None]] = {
    "fileId": None, "path": None, "cdcStats": None, "prevCommit": None, "numWrites": 0, "numDeletes": 0,
    "numUpdateWrites": 0, "numInserts": 0, "totalWriteBytes": 0, "totalWriteErrors": 0, "tempPath": None,
    "partitionPath": None, "totalLogRecords": 0, "totalLogFilesCompacted": 0, "totalLogSizeCompacted": 0,
    "totalUpdatedRecordsCompacted": 0, "totalLogBlocks": 0, "totalCorruptLogBlock": 0, "totalRollbackBlocks": 0,
    "fileSizeInBytes": 0, "minEventTime": None, "maxEventTime": None, "runtimeStats": None,
}
_RUNTIME_STATS_POJO: Final = ("totalScanTime", "totalUpsertTime", "totalCreateTime")


def _record_fields(name: str) -> list[str]:
    return [f["name"] for f in avro.schema(name)["fields"]]


def _write_stat(raw: Any) -> dict[str, Any]:
    stat = raw if isinstance(raw, Mapping) else {}
    converted: dict[str, Any] = {}
    for name in _record_fields("HoodieWriteStat"):
        if name not in _WRITE_STAT_POJO:
            converted[name] = None
        elif name == "runtimeStats":
            runtime = stat.get(name)
            converted[name] = None if not isinstance(runtime, Mapping) else {
                key: runtime.get(key, 0) for key in _RUNTIME_STATS_POJO}
        else:
            converted[name] = stat.get(name, _WRITE_STAT_POJO[name])
    return converted


def commit_metadata_avro(raw: Raw | None, *, replace: bool = False) -> dict[str, Any]:
    """`MetadataConversionUtils.convertCommitMetadata` / `convertReplaceCommitMetadata`: v6 JSON
    commit metadata (`HoodieCommitMetadata.fromBytes`: an empty file reads as an empty commit)
    as the Avro HoodieCommitMetadata or HoodieReplaceCommitMetadata record Jackson's
    `convertValue` makes of it. Fields the Java object lacks are null (`version` too: Avro's
    no-argument constructor sets no defaults)."""
    source: Raw = raw or {}
    defaults: dict[str, Any] = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {},
                                "operationType": "UNKNOWN", "partitionToReplaceFileIds": {}}
    record: dict[str, Any] = {}
    for name in _record_fields("HoodieReplaceCommitMetadata" if replace else "HoodieCommitMetadata"):
        value = source.get(name, defaults.get(name))
        if name == "partitionToWriteStats" and isinstance(value, Mapping):
            value = {partition: [_write_stat(s) for s in stats or ()] for partition, stats in value.items()}
        record[name] = value if name in defaults else None
    return record


# Where createMetaWrapper puts a state file's content, by (action, state): the entry field, the
# Avro record it holds, and how the file is read ("avro": Hudi's Avro content read with the
# record's schema as reader schema; "commit"/"replace": v6 JSON commit metadata converted).
# A pair not listed carries no content (e.g. a pending rollback's plan, an inflight compaction).
_COMMIT_CONTENT = ("hoodieCommitMetadata", "HoodieCommitMetadata", "commit")
ENTRY_CONTENT: Final[Mapping[tuple[str, State], tuple[str, str, str]]] = {
    **{(action, state): _COMMIT_CONTENT for action in (COMMIT, DELTA_COMMIT) for state in State},
    (REPLACE_COMMIT, State.REQUESTED): ("hoodieRequestedReplaceMetadata", "HoodieRequestedReplaceMetadata", "avro"),
    (REPLACE_COMMIT, State.INFLIGHT): ("HoodieInflightReplaceMetadata", "HoodieCommitMetadata", "commit"),
    (REPLACE_COMMIT, State.COMPLETED): ("hoodieReplaceCommitMetadata", "HoodieReplaceCommitMetadata", "replace"),
    (CLUSTERING, State.REQUESTED): ("hoodieRequestedReplaceMetadata", "HoodieRequestedReplaceMetadata", "avro"),
    (CLUSTERING, State.INFLIGHT): ("HoodieInflightReplaceMetadata", "HoodieCommitMetadata", "commit"),
    (CLEAN, State.REQUESTED): ("hoodieCleanerPlan", "HoodieCleanerPlan", "avro"),
    (CLEAN, State.INFLIGHT): ("hoodieCleanerPlan", "HoodieCleanerPlan", "avro"),
    (CLEAN, State.COMPLETED): ("hoodieCleanMetadata", "HoodieCleanMetadata", "avro"),
    (ROLLBACK, State.COMPLETED): ("hoodieRollbackMetadata", "HoodieRollbackMetadata", "avro"),
    (COMPACTION, State.REQUESTED): ("hoodieCompactionPlan", "HoodieCompactionPlan", "avro"),
    (LOG_COMPACTION, State.REQUESTED): ("hoodieCompactionPlan", "HoodieCompactionPlan", "avro"),
}
# Replace and clustering state files that may be empty (insert_overwrite's requested file, a
# clustering's inflight file): no content then, where other empty pending files read as an
# empty commit (`getRequestedReplaceMetadata`, `getInflightCommitMetadata`).
_OPTIONAL_CONTENT: Final = frozenset({(REPLACE_COMMIT, State.REQUESTED), (REPLACE_COMMIT, State.INFLIGHT),
                                      (CLUSTERING, State.REQUESTED), (CLUSTERING, State.INFLIGHT)})
# Plans that Java migrates to their current version while archiving (CleanPlanMigrator,
# CleanMetadataMigrator, CompactionPlanMigrator), which Cleanline does not do: version 1 is refused.
_MIGRATED: Final = frozenset({"HoodieCleanerPlan", "HoodieCleanMetadata", "HoodieCompactionPlan"})


def meta_entry(*, time: str, action: str, state: State, transition_time: str | None, data: bytes,
               path: str) -> dict[str, Any]:
    """`MetadataConversionUtils.createMetaWrapper`: the HoodieArchivedMetaEntry of one state file
    (`data`, its bytes, at `path`) of a v6 (timeline layout 1) table: the instant (its time,
    state, `stateTransitionTime` = the file's modification time as an instant time) and the
    content in its typed field. An empty completed file gets no content
    (`createMetaWrapperForEmptyInstant`). Raises CorruptInstantError naming `path` for content
    that is not what Hudi writes there, or a version-1 plan (which Java migrates first)."""
    entry: dict[str, Any] = {name: None for name in _record_fields(ENTRY_RECORD)}
    entry.update(commitTime=time, actionState=state.name, stateTransitionTime=transition_time, actionType=action)
    content = ENTRY_CONTENT.get((action, state))
    if content is None or (state is State.COMPLETED and not data):
        return entry
    field_name, record, how = content
    if not data and ((action, state) in _OPTIONAL_CONTENT or how == "avro"):
        return entry
    if how == "avro":
        value = avro.decode_as(data, record, path=path)
        if record in _MIGRATED and value.get("version") == 1:
            raise CorruptInstantError(path, f"a version 1 {record}, which Hudi migrates before archiving it; "
                                            "Cleanline archives version 2 only")
    else:
        if data.startswith(b"Obj\x01"):
            raise CorruptInstantError(path, f"Avro content where Hudi's archiver reads JSON commit metadata ({record})")
        value = commit_metadata_avro(jsonmeta.decode(data, path=path) if data else None, replace=how == "replace")
    entry[field_name] = value
    return entry


# --- v8+: the LSM timeline (LSMTimeline, MetadataConversionUtils.createLSMTimelineInstant) ------

# The columns of an LSM timeline file (HoodieLSMTimelineInstant) that name its instants, in
# the order (instant time, completion time, action).
LSM_INSTANT_COLUMNS = ("instantTime", "completionTime", "action")
LSM_COLUMNS: Final = (*LSM_INSTANT_COLUMNS, "metadata", "plan", "version")
LSM_TIMELINE_INSTANT_VERSION_1: Final = 1


def _java_string() -> list[Any]:
    return ["null", {"type": "string", "avro.java.string": "String"}]


# HoodieLSMTimelineInstant.getClassSchema().toString(): what parquet-avro's AvroWriteSupport
# stores as `parquet.avro.schema` in the files Hudi writes (Java's generated class marks its
# strings `"avro.java.string":"String"`).
LSM_JAVA_SCHEMA: Final = json.dumps({
    "type": "record", "name": LSM_RECORD, "namespace": avro.NAMESPACE, "fields": [
        {"name": "instantTime", "type": _java_string(), "default": None},
        {"name": "completionTime", "type": _java_string(), "default": None},
        {"name": "action", "type": _java_string(), "default": None},
        {"name": "metadata", "type": ["null", "bytes"], "default": None},
        {"name": "plan", "type": ["null", "bytes"], "default": None},
        {"name": "version", "type": "int", "default": 1},
    ]}, separators=(",", ":"))
# The footer key-values parquet-avro writes beside the schema.
LSM_FILE_METADATA: Final = {"parquet.avro.schema": LSM_JAVA_SCHEMA, "writer.model.name": "avro"}


def lsm_row(*, time: str, completion_time: str | None, action: str, metadata: bytes | None,
            plan: bytes | None) -> dict[str, Any]:
    """`createLSMTimelineInstant`: one row of an LSM timeline file (version 1)."""
    return {"instantTime": time, "completionTime": completion_time, "action": action, "metadata": metadata,
            "plan": plan, "version": LSM_TIMELINE_INSTANT_VERSION_1}


def lsm_arrow_schema() -> Any:
    """The Arrow schema of an LSM timeline file: the Parquet schema parquet-avro's
    AvroSchemaConverter makes of HoodieLSMTimelineInstant (optional UTF-8 strings, optional
    binaries, a required int32 `version`)."""
    import pyarrow as pa  # here: reading a table never needs it

    return pa.schema([pa.field("instantTime", pa.string()), pa.field("completionTime", pa.string()),
                      pa.field("action", pa.string()), pa.field("metadata", pa.binary()),
                      pa.field("plan", pa.binary()), pa.field("version", pa.int32(), nullable=False)])


@dataclass(frozen=True, slots=True)
class LsmFileEntry:
    """`HoodieLSMTimelineManifest.LSMFileEntry`: a file of a snapshot and its length."""

    name: str
    length: int


def decode_lsm_manifest(data: bytes, *, path: str) -> list[LsmFileEntry]:
    """`HoodieLSMTimelineManifest.fromJsonString`: the files of a manifest (an empty file, or
    `{}`, is an empty manifest: Jackson leaves the `files` list as the class creates it).
    Raises CorruptInstantError naming `path`."""
    if not data.strip():
        return []
    try:
        manifest = json.loads(data)
        return [LsmFileEntry(str(e["fileName"]), int(e.get("fileLen") or 0)) for e in manifest.get("files") or ()]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CorruptInstantError(path, f"invalid LSM timeline manifest: {exc!r}") from exc


def encode_lsm_manifest(files: Sequence[LsmFileEntry]) -> bytes:
    """`HoodieLSMTimelineManifest.toJsonString`: Jackson's default pretty printer over the
    `files` list of {fileName, fileLen}."""
    return jsonmeta.encode({"files": [{"fileName": f.name, "fileLen": f.length} for f in files]})
