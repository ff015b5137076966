"""Record-level conversions of a table version change (`timeline.versions`): commit metadata
from Avro to v6 JSON (`CommitMetadataSerDeV1`), the v1 archive's entries of one instant to an
LSM timeline row (`LegacyArchivedMetaEntryReader` + `MetadataConversionUtils.createLSMTimelineInstant`)
and an LSM row to a v1 archive entry (`MetadataConversionUtils.createMetaWrapper(metaClient,
lsmTimelineRecord)`). The field names of Hudi's records are spelled here, in `timeline/metadata/`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
)
from timeline.metadata import avro
from timeline.metadata.archived import ENTRY_RECORD, ArchivedEntry, commit_metadata_avro, lsm_row
from timeline.metadata.written import _STAT_DEFAULTS

# HoodieWriteStat's fields as Hudi 1.x's Jackson writes them (prevBaseFile, a 1.x field, before
# runtimeStats), then HoodieDeltaWriteStat's; the Avro record's other fields are not the POJO's.
_POJO_STAT: Mapping[str, Any] = {**{k: v for k, v in _STAT_DEFAULTS.items() if k != "runtimeStats"},
                                 "prevBaseFile": None, "runtimeStats": None}
_DELTA_STAT = ("logVersion", "logOffset", "baseFile", "logFiles")


def commit_metadata_json(record: Mapping[str, Any], *, replace: bool) -> dict[str, Any]:
    """`CommitMetadataSerDeV1`: the v6 JSON of commit metadata (`HoodieCommitMetadata.toJsonString`:
    the POJO's fields, write stats in `HoodieWriteStat`'s field order and the delta-stat fields
    after) from its Avro record (`readCommitMetadata`)."""
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition, items in (record.get("partitionToWriteStats") or {}).items():
        converted = []
        for item in items or ():
            stat = {k: (item.get(k) if item.get(k) is not None else v) for k, v in _POJO_STAT.items()}
            stat.update({k: item[k] for k in _DELTA_STAT if item.get(k) is not None})
            converted.append(stat)
        stats[partition] = converted
    out: dict[str, Any] = {"partitionToWriteStats": stats, "compacted": bool(record.get("compacted")),
                           "extraMetadata": dict(record.get("extraMetadata") or {}),
                           "operationType": record.get("operationType") or "UNKNOWN"}
    if replace:
        out["partitionToReplaceFileIds"] = dict(record.get("partitionToReplaceFileIds") or {})
    return out


# LegacyArchivedMetaEntryReader.getMetadataKey, and the record each field holds
METADATA_KEYS = {CLEAN: "hoodieCleanMetadata", COMMIT: "hoodieCommitMetadata", DELTA_COMMIT: "hoodieCommitMetadata",
                 ROLLBACK: "hoodieRollbackMetadata", SAVEPOINT: "hoodieSavePointMetadata",
                 COMPACTION: "hoodieCompactionPlan", LOG_COMPACTION: "hoodieCompactionPlan",
                 REPLACE_COMMIT: "hoodieReplaceCommitMetadata", CLUSTERING: "hoodieReplaceCommitMetadata",
                 INDEXING: "hoodieIndexCommitMetadata"}
RECORDS = {"hoodieCleanMetadata": "HoodieCleanMetadata", "hoodieCommitMetadata": "HoodieCommitMetadata",
           "hoodieRollbackMetadata": "HoodieRollbackMetadata", "hoodieSavePointMetadata": "HoodieSavepointMetadata",
           "hoodieCompactionPlan": "HoodieCompactionPlan", "hoodieReplaceCommitMetadata": "HoodieReplaceCommitMetadata",
           "hoodieIndexCommitMetadata": "HoodieIndexCommitMetadata"}


def _details(entry: Mapping[str, Any], action: str) -> bytes | None:
    """`readInstant`'s details: the field `getMetadataKey(action)` names, as an Avro container
    (a JSON string, from archives older than the Avro conversion, read as v6 commit metadata)."""
    key = METADATA_KEYS.get(action)
    value = entry.get(key) if key else None
    if value is None or key is None:
        return None
    if isinstance(value, str):
        return avro.encode("HoodieCommitMetadata", commit_metadata_avro(json.loads(value) if value.strip() else None))
    return avro.encode(RECORDS[key], value)


def lsm_row_of_entries(time: str, entries: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """`createLSMTimelineInstant` of the action the v1 archive's entries of one instant time make
    (`ActiveActionWithDetails`): the completed entry's details as `metadata`, its
    `stateTransitionTime` as the completion time, and a compaction's plan from its requested
    entry (a clean's or replace's plan sits in a field the metadata key does not name: none).
    None for entries with no completed one."""
    states = [ArchivedEntry.from_raw(e) for e in entries]
    done = [e for e, s in zip(entries, states, strict=True) if s.state == "COMPLETED"]
    if not done:
        return None
    completed = done[-1]
    action = ArchivedEntry.from_raw(completed).action
    pending = [e for e, s in zip(entries, states, strict=True) if s.state != "COMPLETED"]
    requested = next((e for e in pending if ArchivedEntry.from_raw(e).state == "REQUESTED"),
                     pending[0] if pending else None)
    plan = None
    if requested is not None and ArchivedEntry.from_raw(requested).action in (COMPACTION, LOG_COMPACTION):
        plan = _details(requested, ArchivedEntry.from_raw(requested).action)
    return lsm_row(time=time, completion_time=ArchivedEntry.from_raw(completed).completion_time or None,
                   action=action, metadata=_details(completed, action), plan=plan)


def lsm_row_key(row: Mapping[str, Any]) -> tuple[str, str]:
    """(instant time, action) of an LSM row (`lsm_row`)."""
    return str(row["instantTime"]), str(row["action"])


def entry_key(entry: Mapping[str, Any]) -> tuple[str, str, str]:
    """(instant time, action, state) of a v1 archive entry."""
    found = ArchivedEntry.from_raw(entry)
    return found.time, found.action, found.state


def _decode(data: bytes | None, record: str, path: str) -> dict[str, Any] | None:
    return avro.decode_as(data, record, path=path) if data else None


def entry_of_lsm_row(time: str, completion: str | None, action: str, metadata: bytes | None, plan: bytes | None,
                     *, path: str) -> dict[str, Any]:
    """`createMetaWrapper(metaClient, lsmTimelineRecord)`: one completed entry (commit metadata
    through the POJO, `convertCommitMetadataToAvro`; a replace's metadata also as its inflight
    metadata; cleans, rollbacks and savepoints decoded; plans as the cleaner or compaction plan).
    ValueError for an action Java refuses too ("Action not fully supported yet")."""
    entry: dict[str, Any] = dict.fromkeys(f["name"] for f in avro.schema(ENTRY_RECORD)["fields"])
    entry.update(commitTime=time, actionState="COMPLETED", stateTransitionTime=completion)
    if action == CLEAN:
        entry.update(hoodieCleanMetadata=_decode(metadata, "HoodieCleanMetadata", path),
                     hoodieCleanerPlan=_decode(plan, "HoodieCleanerPlan", path), actionType=CLEAN)
    elif action in (COMMIT, DELTA_COMMIT):
        decoded = avro.decode(metadata, path=path) if metadata else None
        entry.update(hoodieCommitMetadata=commit_metadata_avro(decoded), actionType=action,
                     hoodieCompactionPlan=_decode(plan, "HoodieCompactionPlan", path))
    elif action in (REPLACE_COMMIT, CLUSTERING):
        decoded = avro.decode(metadata, path=path) if metadata else None
        entry.update(hoodieReplaceCommitMetadata=commit_metadata_avro(decoded, replace=True), actionType=REPLACE_COMMIT)
        if metadata:
            entry["HoodieInflightReplaceMetadata"] = commit_metadata_avro(decoded)
    elif action == ROLLBACK:
        entry.update(hoodieRollbackMetadata=_decode(metadata, "HoodieRollbackMetadata", path), actionType=action)
    elif action == SAVEPOINT:
        entry.update(hoodieSavePointMetadata=_decode(metadata, "HoodieSavepointMetadata", path), actionType=action)
    elif action in (COMPACTION, LOG_COMPACTION):
        entry.update(hoodieCompactionPlan=_decode(plan, "HoodieCompactionPlan", path), actionType=action)
    else:
        raise ValueError(f"{path}: {action} {time}: Action not fully supported yet "
                         "(MetadataConversionUtils.createMetaWrapper)")
    return entry
