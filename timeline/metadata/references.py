"""What an instant's payload names, for the doctor's orphan-file rule (`timeline/doctor/orphans.py`):
the data files (write stats, clean plans and metadata, rollback plans and metadata, restore
metadata, compaction and clustering plans, savepoints), the file groups (write stats, replaced
file ids, plans) and the instants (rolled back or restored) it names.

Read from the active timeline's state files, a v6 archive's HoodieArchivedMetaEntry records and
the LSM timeline's HoodieLSMTimelineInstant rows (their `metadata` and `plan` bytes). Commit
metadata, which can list every file of a table, is read from the decoded payload without
building a typed record per write stat; everything else through its typed record."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    State,
)
from timeline.metadata import AVRO_MAGIC, decode, jsonmeta
from timeline.metadata.records import (
    WRITE_STATS_FIELD,
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    CompactionPlan,
    RequestedReplace,
    RestoreMetadata,
    RestorePlan,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
    record_type,
)

Raw = Mapping[str, Any]
_REPLACED_FIELD = "partitionToReplaceFileIds"
# HoodieLSMTimelineInstant's columns the doctor reads: the instant, its action, the completed
# instant's bytes and its plan's bytes.
LSM_PAYLOAD_COLUMNS = ("instantTime", "action", "metadata", "plan")
# An LSM row's `plan` holds the requested plan of the action that completed as `action`.
LSM_PLAN_ACTION = {COMMIT: COMPACTION, DELTA_COMMIT: LOG_COMPACTION, REPLACE_COMMIT: REPLACE_COMMIT,
                   CLUSTERING: CLUSTERING, CLEAN: CLEAN}


def _name(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


@dataclass(slots=True)
class References:
    """Names gathered from payloads: data file names, file ids, and instants named as rolled
    back or restored. `details` is false when a completed write's payload holds no write stats
    (RepairUtils.findInstantFilesToRemove then removes none of its files)."""

    names: set[str] = field(default_factory=set)
    file_ids: set[str] = field(default_factory=set)
    instants: set[str] = field(default_factory=set)
    details: bool = True

    def update(self, other: References) -> None:
        self.names |= other.names
        self.file_ids |= other.file_ids
        self.instants |= other.instants


def _commit(raw: Raw) -> References:
    """Commit, delta commit, replace commit and compaction metadata (and an inflight write's
    workload profile): every write stat's file and file id, and the replaced file ids. It gives
    details when a write stat names a file (RepairUtils: no path at all is "no instant details")."""
    found = References()
    names, ids = found.names, found.file_ids
    for stats in (raw.get(WRITE_STATS_FIELD) or {}).values():
        for stat in stats or ():
            if not isinstance(stat, Mapping):
                continue
            path, file_id = stat.get("path"), stat.get("fileId")
            if path:
                names.add(_name(str(path)))
            if file_id:
                ids.add(str(file_id))
    for file_ids in (raw.get(_REPLACED_FIELD) or {}).values():
        ids.update(str(i) for i in file_ids or () if i)
    found.details = bool(names)
    return found


def _clean_plan(raw: Raw) -> References:
    plan = CleanerPlan.from_raw(raw)
    found = References()
    found.names.update(_name(info.path) for infos in plan.files.values() for info in infos)
    found.names.update(_name(n) for names in plan.legacy_file_names.values() for n in names)
    return found


def _clean(raw: Raw) -> References:
    metadata = CleanMetadata.from_raw(raw)
    found = References()
    for entry in (*metadata.partitions.values(), *metadata.bootstrap_partitions.values()):
        found.names.update(_name(n) for n in (*entry.delete_path_patterns, *entry.success_delete_files,
                                               *entry.failed_delete_files))
    return found


def _rollback_plan(raw: Raw) -> References:
    plan = RollbackPlan.from_raw(raw)
    found = References()
    if plan.instant_to_rollback is not None:
        found.instants.add(plan.instant_to_rollback.time)
    for request in plan.requests:
        found.names.update(_name(p) for p in (*request.files_to_delete, *request.log_blocks_to_delete))
        if request.file_id:
            found.file_ids.add(request.file_id)
    return found


def _rollback_metadata(metadata: RollbackMetadata) -> References:
    found = References(instants=set(metadata.commits_rollback) | {i.time for i in metadata.instants_rollback})
    for entry in metadata.partitions.values():
        found.names.update(_name(p) for p in (*entry.success_delete_files, *entry.failed_delete_files,
                                               *entry.rollback_log_files, *entry.log_files_from_failed_commit))
    return found


def _rollback(raw: Raw) -> References:
    return _rollback_metadata(RollbackMetadata.from_raw(raw))


def _restore_plan(raw: Raw) -> References:
    return References(instants={i.time for i in RestorePlan.from_raw(raw).instants_to_rollback})


def _restore(raw: Raw) -> References:
    metadata = RestoreMetadata.from_raw(raw)
    found = References(instants={i.time for i in metadata.instants})
    for entries in metadata.rolled_back.values():
        for entry in entries:
            found.update(_rollback_metadata(entry))
    return found


def _slices(operations: Iterable[Any]) -> References:
    found = References()
    for op in operations:
        found.names.update(op.file_names)
        if op.file_id:
            found.file_ids.add(op.file_id)
    return found


def _compaction_plan(raw: Raw) -> References:
    return _slices(CompactionPlan.from_raw(raw).operations)


def _requested_replace(raw: Raw) -> References:
    return _slices(RequestedReplace.from_raw(raw).input_slices)


def _savepoint(raw: Raw) -> References:
    return References(names={n for _, n in SavepointMetadata.from_raw(raw).file_names()})


# The typed record each (action, state) decodes to -> how its names are read (one registry).
_BY_RECORD: Mapping[type, Callable[[Raw], References]] = {
    CleanerPlan: _clean_plan, CleanMetadata: _clean, RollbackPlan: _rollback_plan, RollbackMetadata: _rollback,
    RestorePlan: _restore_plan, RestoreMetadata: _restore, CompactionPlan: _compaction_plan,
    RequestedReplace: _requested_replace, SavepointMetadata: _savepoint,
}
_WRITES = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION, LOG_COMPACTION})


def references_of(raw: Raw | None, *, action: str, state: State) -> References:
    """What one decoded state file names (None: an empty file, which names nothing and, for a
    completed write, gives no details)."""
    if raw is None:
        return References(details=False)
    kind = record_type(action, state)
    reader = _BY_RECORD.get(kind)
    if reader is not None:
        return reader(raw)
    if action in _WRITES:  # commit metadata, or an inflight write's workload profile
        return _commit(raw)
    return References()


# The write stats' `path` and `fileId` string values in v6 JSON, when they hold no escape
_PATH_KEY, _FILE_ID_KEY = b'"path"', b'"fileId"'
_PATHS = re.compile(_PATH_KEY + rb'\s*:\s*"([^"\\]*)"')
_FILE_IDS = re.compile(_FILE_ID_KEY + rb'\s*:\s*"([^"\\]*)"')
_FAST = frozenset({COMMIT, DELTA_COMMIT})


def references_in(data: bytes, *, path: str, action: str, state: State, layout: int) -> References:
    """What one state file names, from its bytes; CorruptInstantError when it does not decode
    (as `timeline.metadata.decode` and `Table.ensure_intact` judge it).

    A commit's or delta commit's v6 JSON metadata, which can list every file of a table, is
    validated without being built (`jsonmeta.validate`, the check `ensure_intact` makes) and its
    write stats' `path` and `fileId` values are read with a pattern: another key of the same name
    could only add a name (keep a file), never drop one; a file where a key is not followed by
    a plain string (an escape, a null), or that names no path at all, goes through the full
    decode instead."""
    if not data:
        return References(details=False)
    if action in _FAST and record_type(action, state) is CommitMetadata and not data.startswith(AVRO_MAGIC):
        jsonmeta.validate(data, path=path)
        paths, ids = _PATHS.findall(data), _FILE_IDS.findall(data)
        if paths and len(paths) == data.count(_PATH_KEY) and len(ids) == data.count(_FILE_ID_KEY):
            return References({_name(v.decode()) for v in paths if v}, {v.decode() for v in ids if v})
    return references_of(decode(data, path=path, action=action, state=state, layout=layout), action=action,
                         state=state)


# The archived timeline

# HoodieArchivedMetaEntry's payload fields -> the (action, state) whose record each holds.
_ARCHIVED_FIELDS: Mapping[str, tuple[str, State]] = {
    "hoodieCommitMetadata": (COMMIT, State.COMPLETED),
    "hoodieReplaceCommitMetadata": (REPLACE_COMMIT, State.COMPLETED),
    "HoodieInflightReplaceMetadata": (REPLACE_COMMIT, State.INFLIGHT),
    "hoodieRequestedReplaceMetadata": (REPLACE_COMMIT, State.REQUESTED),
    "hoodieCleanMetadata": (CLEAN, State.COMPLETED),
    "hoodieCleanerPlan": (CLEAN, State.REQUESTED),
    "hoodieRollbackMetadata": (ROLLBACK, State.COMPLETED),
    "hoodieSavePointMetadata": (SAVEPOINT, State.COMPLETED),
    "hoodieCompactionPlan": (COMPACTION, State.REQUESTED),
}


def archived_entry_references(raw: Raw) -> References:
    """What one v6 HoodieArchivedMetaEntry names, from whichever payload field it carries; an
    archived completed write without commit metadata gives no details."""
    found = References(details=False)
    for name, (action, state) in _ARCHIVED_FIELDS.items():
        payload = raw.get(name)
        if isinstance(payload, Mapping):
            named = references_of(payload, action=action, state=state)
            found.update(named)
            found.details = found.details or (name in ("hoodieCommitMetadata", "hoodieReplaceCommitMetadata")
                                              and named.details)
    return found


__all__ = ["LSM_PAYLOAD_COLUMNS", "LSM_PLAN_ACTION", "References", "archived_entry_references", "references_in",
           "references_of"]
