"""The archived timeline as the doctor reads it: every archived instant with what its payload
names (v6 HoodieArchivedMetaEntry records, v8+ HoodieLSMTimelineInstant rows), for the orphan
rule, read through the archived timeline's one reader (`timeline.archived_timeline`: the v6 archive
files, the LSM timeline's folder state and the rows of its latest snapshot)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from timeline import metadata
from timeline.archived_timeline import archived_entries, lsm_file_rows
from timeline.exceptions import CleanlineError
from timeline.instant import CLUSTERING, REPLACE_COMMIT, State
from timeline.metadata import AVRO_MAGIC, avro
from timeline.metadata.archived import ArchivedEntry
from timeline.metadata.references import (
    LSM_PAYLOAD_COLUMNS,
    LSM_PLAN_ACTION,
    References,
    archived_entry_references,
    references_of,
)
from timeline.storage import Storage
from timeline.timeline import WRITE_ACTIONS

if TYPE_CHECKING:
    from timeline.table import Table

@dataclass(slots=True)
class ArchiveRead:
    """Every archived instant (requested time -> action) with what the payloads name, which
    completed writes carry write details, and why the archive could not be read (`error`:
    the doctor then proves no file unreferenced)."""

    instants: dict[str, str] = field(default_factory=dict)
    detailed: set[str] = field(default_factory=set)
    references: References = field(default_factory=References)
    error: str | None = None
    committed: set[str] = field(default_factory=set)  # what archived completed writes' write stats name


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
            if entry.action in WRITE_ACTIONS:
                found.committed |= named.names
            if named.details:
                found.detailed.add(entry.time)
        else:
            found.instants.setdefault(entry.time, entry.action)


def _read_lsm(storage: Storage, folder: str, found: ArchiveRead) -> None:
    for path, rows in lsm_file_rows(storage, folder, LSM_PAYLOAD_COLUMNS):
        for time, action, completed, plan in rows:
            if not time or not action:
                continue
            found.instants[time] = action
            where = f"{path} ({time} {action})"
            raw = metadata.decode(completed or b"", path=where, action=action, state=State.COMPLETED, layout=2)
            named = references_of(raw, action=action, state=State.COMPLETED)
            found.references.update(named)
            if action in WRITE_ACTIONS:
                found.committed |= named.names
            if named.details:
                found.detailed.add(time)
            plan_action = LSM_PLAN_ACTION.get(action)
            if plan and plan_action is not None:
                state = _plan_state(plan, plan_action, where)
                raw_plan = metadata.decode(plan, path=where, action=plan_action, state=state, layout=2)
                found.references.update(references_of(raw_plan, action=plan_action, state=state))


def _plan_state(plan: bytes, action: str, where: str) -> State:
    """The state file an LSM row's `plan` was taken from. `MetadataConversionUtils.
    createLSMTimelineInstant` stores a replacecommit's or clustering's requested
    HoodieRequestedReplaceMetadata there, then overwrites it with the inflight file when that
    is not empty (`getInflightCommitMetadata`: an insert_overwrite's HoodieCommitMetadata, or
    v6 JSON for an instant carried over from a version-6 table); every other plan is the
    requested one."""
    if action not in (REPLACE_COMMIT, CLUSTERING):
        return State.REQUESTED
    if not plan.startswith(AVRO_MAGIC):
        return State.INFLIGHT
    name = avro.record_name(plan, path=where).rsplit(".", 1)[-1]
    return State.REQUESTED if name == "HoodieRequestedReplaceMetadata" else State.INFLIGHT
