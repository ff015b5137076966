"""Metadata-table drift: the `files` partition of the metadata table lists files storage does not
hold, misses committed files, or records other sizes (`cleanline mdt validate`,
`timeline/mdt/validate.py`, after Hudi CLI's `MetadataCommand.validateFiles`). Readers that
trust the metadata table then fail on missing files or miss data (apache/hudi #11773).
"Committed" is `timeline/committed.py`'s definition, the one the orphan check shares: a file no
completed write names is not drift (it is the orphan check's), and the repair adds only files
commit metadata names (`HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`, what
fills the `files` partition); a committed file older than every known instant that the metadata
table misses is left to a metadata table initialised from a listing.

The repair is the smallest correct one Hudi has: one deltacommit on the metadata table that
brings its `files` partition to what storage holds, the records `timeline/mdt/writer.py`'s
`sync_updates` computes (`HoodieBackedTableMetadataWriter`'s
`fetchOutofSyncFilesRecordsFromMetadataTable`, which a restore ends with; column-stats
deletions for files gone), written at a new time (table version 6: with the restore suffix
"003", as 0.14/0.15's `createRestoreTimestamp`, so 0.x readers count it). It is not offered
when only a Hudi writer can bring the index partitions along: files to add while the table
keeps a record index, secondary, expression or bloom-filter index or partition stats (their
entries for the new files would be missing), or a file group or partition to remove while it
keeps a record or secondary index (keys would point nowhere); nor while files of pending writes
lie on storage (the sync would list them before their writes complete)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from timeline.committed import Commitment, CommittedFiles
from timeline.doctor.check import Check, Session, no_repair, repairable_plan
from timeline.doctor.findings import (
    NO_REPAIR,
    Change,
    Evidence,
    Finding,
    RepairInvalidated,
    RepairPlan,
    RepairResult,
    RepairUnavailable,
    Severity,
)
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.mdt.reader import FILES, MetadataTable, metadata_table
from timeline.mdt.validate import Validation, validate_files
from timeline.mdt.writer import COLUMN_STATS, RESTORE_SUFFIX, MdtUpdate, is_v6, sync_updates, write_update
from timeline.metadata.mdt_payload import PARTITION_LIST_KEY, partition_of
from timeline.table import Table

KIND = "metadata-table-drift"
# Index partitions whose entries for new files only a Hudi writer can write.
NEEDS_ENTRIES_FOR_NEW_FILES = ("record_index", "bloom_filters", "partition_stats", "secondary_index",
                               "expression_index")
# Index partitions whose keys point at file groups.
POINTS_AT_FILE_GROUPS = ("record_index", "secondary_index")


@dataclass(frozen=True, slots=True)
class SizeDrift(Evidence):
    file: str
    storage_bytes: int
    metadata_bytes: int


@dataclass(frozen=True, slots=True)
class PartitionDrift(Evidence):
    partition: str
    only_on_storage: tuple[str, ...]
    only_in_metadata: tuple[str, ...]
    sizes: tuple[SizeDrift, ...]


@dataclass(frozen=True, slots=True)
class DriftEvidence(Evidence):
    """Per partition, the files only on storage, only in the metadata table, and sizes that
    differ; totals; files of pending writes on storage (not drift); the metadata table's
    partitions."""

    partitions: tuple[PartitionDrift, ...]
    only_on_storage: int
    only_in_metadata: int
    sizes: int
    uncommitted: int
    metadata_partitions: tuple[str, ...]
    not_committed: int = 0  # files on storage no completed write names: not drift (see orphan-files)


@dataclass(frozen=True, slots=True)
class UnreadableEvidence(Evidence):
    error: str
    metadata_partitions: tuple[str, ...]


def _indexes(table: Table, prefixes: Sequence[str]) -> list[str]:
    enabled = (*table.config.metadata_partitions, *table.config.metadata_partitions_inflight)
    return [p for p in enabled if any(p == x or p.startswith(x + "_") for x in prefixes)]


def _file_id(name: str) -> str:
    """A data file's file id (FSUtils.getFileId, getFileIdFromLogPath): its name up to the first
    "_", a log file's without its leading "." (file ids hold no "_")."""
    return name.removeprefix(".").partition("_")[0]


def refusal(table: Table, validation: Validation, storage_files: dict[str, set[str]],
            committed: CommittedFiles) -> str | None:
    """Why the `files` sync is not the repair (None: it is)."""
    if validation.uncommitted:
        files = sum(len(d.uncommitted) for d in validation.uncommitted)
        return (f"{NO_REPAIR}{files} file(s) of pending writes are on storage and a sync would list them; roll back "
                "or finish the pending writes first (see stale-pending)")
    adds = [n for d in validation.differences for n in d.only_on_storage]
    unnamed = [n for n in adds if committed.of(n) is not Commitment.NAMED]
    if unnamed:
        return (f"{NO_REPAIR}{len(unnamed)} file(s) older than every instant the timelines know (first: {unnamed[0]}) "
                "are missing from the metadata table; no commit metadata names them, so only a metadata table "
                "initialised from a storage listing lists them (`cleanline mdt drop`; Hudi writers rebuild it)")
    blocking = _indexes(table, NEEDS_ENTRIES_FOR_NEW_FILES)
    if adds and blocking:
        return (f"{NO_REPAIR}{len(adds)} committed file(s) are missing from the metadata table, and its index "
                f"partitions {', '.join(blocking)} would lack their entries: a Hudi writer must rebuild them (or "
                "`cleanline mdt drop` removes the metadata table for Hudi writers to rebuild)")
    pointing = _indexes(table, POINTS_AT_FILE_GROUPS)
    if pointing:
        for drift in validation.differences:
            present = storage_files.get(drift.partition)
            if present is None and drift.only_in_metadata:
                return (f"{NO_REPAIR}partition {drift.partition!r} is gone from storage while {', '.join(pointing)} "
                        "may still point into it: a Hudi writer must rebuild the index")
            kept = {_file_id(n) for n in present or ()}
            gone = sorted({_file_id(n) for n in drift.only_in_metadata} - kept)
            if gone:
                return (f"{NO_REPAIR}file group {gone[0]} of {drift.partition!r} is gone from storage while "
                        f"{', '.join(pointing)} may still point at it: a Hudi writer must rebuild the index")
    return None


def diagnose(survey: Survey) -> list[Finding]:
    table = survey.table
    if not table.config.metadata_table_enabled:
        return []
    partitions = (*table.config.metadata_partitions, *table.config.metadata_partitions_inflight)
    try:
        mdt = metadata_table(table)
        assert mdt is not None
        validation = validate_files(mdt, listing=survey.sized_listing, committed=survey.committed)
    except CleanlineError as exc:
        return [Finding(KIND, Severity.ERROR, "the metadata table cannot be read",
                        UnreadableEvidence(str(exc), partitions),
                        "Readers and writers that use the metadata table fail on it.",
                        f"{NO_REPAIR}drop the metadata table (cleanline mdt drop); Hudi writers rebuild it")]
    if validation.ok:
        return []
    drifts = tuple(PartitionDrift(d.partition, d.only_on_storage, d.only_in_metadata,
                                  tuple(SizeDrift(f, a, b) for f, a, b in d.sizes)) for d in validation.differences)
    only_storage = sum(len(d.only_on_storage) for d in drifts)
    only_mdt = sum(len(d.only_in_metadata) for d in drifts)
    sizes = sum(len(d.sizes) for d in drifts)
    stored = {p: {s.name for s in files} for p, files in survey.listing.partitions.items()}
    repair = refusal(table, validation, stored, survey.committed) or uncovered(
        validation, changes_of(_sync_updates(mdt, survey))) or (
        "write one deltacommit on the metadata table bringing its files partition to storage "
        "(fetchOutofSyncFilesRecordsFromMetadataTable, as a restore ends)")
    return [Finding(
        KIND, Severity.ERROR,
        f"the metadata table differs from storage in {len(drifts)} partition(s): {only_mdt} file(s) listed but gone, "
        f"{only_storage} committed file(s) missing, {sizes} size(s) differ",
        DriftEvidence(drifts, only_storage, only_mdt, sizes, sum(len(d.uncommitted) for d in validation.uncommitted),
                      partitions, sum(len(d.not_committed) for d in validation.not_committed)),
        "Readers that list files through the metadata table fail on files it lists that are gone, or miss "
        "committed data it does not list.",
        repair)]


def uncovered(validation: Validation, changes: Sequence[Change]) -> str | None:
    """Why the sync would leave some of the drift (None: it covers all of it): it only brings
    along the partitions the metadata table lists, as Hudi's does."""
    keys = {c.key for c in changes}
    for drift in validation.differences:
        prefix = f"{drift.partition}/" if drift.partition else ""
        wanted = [("metadata add", prefix + n) for n in drift.only_on_storage]
        wanted += [("metadata add", prefix + n) for n, _, _ in drift.sizes]
        wanted += [("metadata remove", prefix + n) for n in drift.only_in_metadata]
        missing = [target for target in wanted if target not in keys]
        if missing:  # (a partition gone from storage is removed file by file, then from the list)
            return (f"{NO_REPAIR}the metadata table does not list partition {drift.partition!r} ({missing[0][1]}); "
                    "only a Hudi writer adds a partition to it (or `cleanline mdt drop` for Hudi writers to rebuild)")
    return None


def changes_of(updates: Sequence[MdtUpdate]) -> list[Change]:
    """What the sync's deltacommit (`sync_updates`) changes, entry by entry: files added (or
    resized) and removed in a partition's listing, partitions removed from the partition list,
    column-stats entries marked deleted."""
    found = [Change("metadata deltacommit", FILES, 0, "one deltacommit on the metadata table at a new time")]
    for update in updates:
        for record in update.records:
            if update.partition == COLUMN_STATS:
                stats = record.column_stats
                found.append(Change("metadata column-stats delete", record.key, 0,
                                    f"{stats[0]} column {stats[1]}" if stats else ""))
            elif record.key == PARTITION_LIST_KEY:
                found += [Change("metadata remove partition", partition_of(name), 0, "gone from storage")
                          for name, info in sorted((record.files or {}).items()) if info.deleted]
            else:
                partition = partition_of(record.key)
                for name, info in sorted((record.files or {}).items()):
                    target = f"{partition}/{name}" if partition else name
                    found.append(Change("metadata remove", target, 0, "listed but gone from storage") if info.deleted
                                 else Change("metadata add", target, info.size, "on storage, committed"))
    return found  # (the sync deletes no whole record: `update.deletes` is always empty)


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    if not any(f.repairable for f in findings):
        raise no_repair(KIND, findings, survey.table.uri)
    mdt = metadata_table(survey.table)
    assert mdt is not None
    return repairable_plan(survey, KIND, findings, changes_of(_sync_updates(mdt, survey)),
                           ["the deltacommit's time is chosen when it is written: later than every instant"])


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """Under the table's lock: diagnosed again; the sync computed again must change nothing the
    approved plan did not preview (RepairInvalidated otherwise), and is written only if it
    changes something (a re-run after success finds the table in sync)."""
    table = session.table
    previewed = {c.key for c in approved.changes}
    with session.transactions.state_change():
        survey = session.survey()
        try:
            fresh = plan(survey)
        except RepairUnavailable as exc:
            if diagnose(session.survey()):
                raise
            return RepairResult(table.uri, KIND, (), tuple((c, f"already in sync ({exc})") for c in approved.changes))
        extra = [c for c in fresh.changes if c.key not in previewed]
        if extra:
            raise RepairInvalidated(f"{table.uri}: the metadata table now needs {extra[0].action} {extra[0].target} "
                                    f"({len(extra)} change(s) the plan did not preview); nothing was changed")
        mdt = metadata_table(table)
        assert mdt is not None
        write_update(mdt, _sync_time(mdt), _sync_updates(mdt, survey))
        current = {c.key for c in fresh.changes}
    table.reload()
    return RepairResult(table.uri, KIND, tuple(c for c in approved.changes if c.key in current),
                        tuple((c, "already in sync") for c in approved.changes if c.key not in current))


def _sync_updates(mdt: MetadataTable, survey: Survey) -> list[MdtUpdate]:
    """The sync's records, adding only files commit metadata names (`timeline/committed.py`:
    HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords is what fills the `files`
    partition; a file no write stat names is never adopted)."""
    committed = survey.committed
    return sync_updates(mdt, admit=lambda name: committed.of(name) is Commitment.NAMED)


def _sync_time(mdt: MetadataTable) -> str:
    """A time later than every instant of the table and of its metadata table (v6: with the
    restore suffix, which 0.14/0.15 readers count as valid)."""
    data = mdt.table.timeline
    latest = max((t for i in data for t in (i.requested_time, i.completion_time or "")), default="")
    time_ = mdt.mdt.new_instant_time(after=latest)
    return time_ + RESTORE_SUFFIX if is_v6(mdt) else time_


CHECK = Check(KIND, diagnose, plan, run)
