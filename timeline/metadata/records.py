"""Typed, frozen records for every instant payload Cleanline reads or writes. Each record is
decoded once from what `timeline.metadata.decode` returns (`from_raw`, keeping the payload as
`.raw` for the JSON view) and, where Cleanline writes it, encoded back in Hudi's field order
(`to_raw`). This module and the schemas beside it are the only place Hudi's payload field names
are spelled; everything else reads attributes. The lenient readers of a payload's values are
`raw.py`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, NamedTuple, TypeVar

from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    State,
)
from timeline.metadata.raw import Raw, camel, extra, file_name_of, mapping, number, text, texts


def hudi_fields(kind: type[Record], attributes: Iterable[str]) -> list[str]:
    """Hudi's top-level field names of record attributes, for partial Avro reads."""
    known = {f.name for f in fields(kind)}
    names = []
    for attribute in attributes:
        if attribute not in known or attribute == "raw":
            raise ValueError(f"{kind.__name__} has no field {attribute}")
        names.append(kind.renamed.get(attribute, camel(attribute)))
    return names


@dataclass(frozen=True, slots=True)
class Record:
    """Base of every payload record: `raw` is the decoded payload, as Hudi wrote it."""

    raw: Raw = field(default_factory=dict, repr=False, compare=False)
    # attributes whose Hudi field name is not their camelCase form
    renamed: ClassVar[Mapping[str, str]] = {}


R = TypeVar("R", bound=Record)


@dataclass(frozen=True, slots=True)
class InstantRef:
    """An instant named inside a payload (HoodieActionInstant, HoodieInstantInfo)."""

    time: str
    action: str
    state: str = ""

    def action_instant(self) -> dict[str, Any]:
        return {"timestamp": self.time, "action": self.action, "state": self.state or State.COMPLETED.name}

    def instant_info(self) -> dict[str, Any]:
        return {"commitTime": self.time, "action": self.action}

    @classmethod
    def from_action_instant(cls, raw: Raw | None) -> InstantRef | None:
        if not raw or not raw.get("timestamp"):
            return None
        return cls(text(raw, "timestamp"), text(raw, "action"), text(raw, "state"))

    @classmethod
    def from_instant_info(cls, raw: Raw) -> InstantRef:
        return cls(text(raw, "commitTime"), text(raw, "action"))


# Clean

class CleanFileInfo(NamedTuple):
    """One file of a clean plan, with its partition (a NamedTuple: a plan names one per file
    it deletes, and the executor works on them as they are)."""

    partition: str
    path: str
    is_bootstrap_base_file: bool = False


@dataclass(frozen=True, slots=True)
class CleanerPlan(Record):
    """HoodieCleanerPlan (`<t>.clean.requested` / `.inflight`). `files` holds version-2 full
    paths; `legacy_file_names` a version-1 plan's names relative to their partition."""

    renamed: ClassVar[Mapping[str, str]] = {"last_completed_commit": "lastCompletedCommitTimestamp",
                                            "files": "filePathsToBeDeletedPerPartition",
                                            "legacy_file_names": "filesToBeDeletedPerPartition",
                                            "partitions_to_delete": "partitionsToBeDeleted"}
    earliest_instant_to_retain: InstantRef | None = None
    last_completed_commit: str = ""
    policy: str = ""
    files: Mapping[str, tuple[CleanFileInfo, ...]] = field(default_factory=dict)
    legacy_file_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    partitions_to_delete: tuple[str, ...] = ()
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    version: int = 2

    @classmethod
    def from_raw(cls, raw: Raw) -> CleanerPlan:
        files = {str(p): tuple(CleanFileInfo(str(p), i.get("filePath") or "", bool(i.get("isBootstrapBaseFile")))
                               for i in infos or ())  # one per planned file: no helper call per file
                 for p, infos in mapping(raw, "filePathsToBeDeletedPerPartition").items()}
        legacy = {str(p): texts(names) for p, names in mapping(raw, "filesToBeDeletedPerPartition").items()}
        return cls(raw, InstantRef.from_action_instant(raw.get("earliestInstantToRetain")),
                   text(raw, "lastCompletedCommitTimestamp"), text(raw, "policy"), files, legacy,
                   tuple(p for p in texts(raw.get("partitionsToBeDeleted")) if p), extra(raw),
                   number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        ectr = self.earliest_instant_to_retain
        return {
            "earliestInstantToRetain": None if ectr is None else ectr.action_instant(),
            "lastCompletedCommitTimestamp": self.last_completed_commit,
            "policy": self.policy,
            "filesToBeDeletedPerPartition": {p: list(n) for p, n in self.legacy_file_names.items()},
            "version": self.version,
            "filePathsToBeDeletedPerPartition": {
                p: [{"filePath": i.path, "isBootstrapBaseFile": i.is_bootstrap_base_file} for i in infos]
                for p, infos in self.files.items()},
            "partitionsToBeDeleted": list(self.partitions_to_delete),
            "extraMetadata": dict(self.extra_metadata),
        }

    def to_json(self) -> dict[str, Any]:
        """The plan's fields as the CLI shows them: without the deprecated version-1 map."""
        raw = self.to_raw()
        del raw["filesToBeDeletedPerPartition"]
        return raw


@dataclass(frozen=True, slots=True)
class CleanPartitionMetadata:
    partition: str
    policy: str = ""
    delete_path_patterns: tuple[str, ...] = ()
    success_delete_files: tuple[str, ...] = ()
    failed_delete_files: tuple[str, ...] = ()
    is_partition_deleted: bool = False

    @classmethod
    def from_raw(cls, partition: str, raw: Raw) -> CleanPartitionMetadata:
        return cls(text(raw, "partitionPath") or partition, text(raw, "policy"),
                   texts(raw.get("deletePathPatterns")), texts(raw.get("successDeleteFiles")),
                   texts(raw.get("failedDeleteFiles")), bool(raw.get("isPartitionDeleted")))

    def to_raw(self) -> dict[str, Any]:
        return {"partitionPath": self.partition, "policy": self.policy,
                "deletePathPatterns": list(self.delete_path_patterns),
                "successDeleteFiles": list(self.success_delete_files),
                "failedDeleteFiles": list(self.failed_delete_files), "isPartitionDeleted": self.is_partition_deleted}


@dataclass(frozen=True, slots=True)
class CleanMetadata(Record):
    """HoodieCleanMetadata (a completed clean). Bootstrap source files (full paths) are kept in
    `bootstrap_partitions`, as CleanerUtils.convertCleanMetadata writes them."""

    renamed: ClassVar[Mapping[str, str]] = {"time_taken_ms": "timeTakenInMillis",
                                            "last_completed_commit": "lastCompletedCommitTimestamp",
                                            "partitions": "partitionMetadata",
                                            "bootstrap_partitions": "bootstrapPartitionMetadata"}
    start_clean_time: str = ""
    time_taken_ms: int = 0
    total_files_deleted: int = 0
    earliest_commit_to_retain: str = ""
    last_completed_commit: str = ""
    partitions: Mapping[str, CleanPartitionMetadata] = field(default_factory=dict)
    bootstrap_partitions: Mapping[str, CleanPartitionMetadata] = field(default_factory=dict)
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    version: int = 2

    @classmethod
    def from_raw(cls, raw: Raw) -> CleanMetadata:
        return cls(raw, text(raw, "startCleanTime"), number(raw, "timeTakenInMillis"), number(raw, "totalFilesDeleted"),
                   text(raw, "earliestCommitToRetain").strip(), text(raw, "lastCompletedCommitTimestamp"),
                   {str(p): CleanPartitionMetadata.from_raw(str(p), m or {})
                    for p, m in mapping(raw, "partitionMetadata").items()},
                   {str(p): CleanPartitionMetadata.from_raw(str(p), m or {})
                    for p, m in mapping(raw, "bootstrapPartitionMetadata").items()},
                   extra(raw), number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        return {
            "startCleanTime": self.start_clean_time,
            "timeTakenInMillis": self.time_taken_ms,
            "totalFilesDeleted": self.total_files_deleted,
            "earliestCommitToRetain": self.earliest_commit_to_retain,
            "lastCompletedCommitTimestamp": self.last_completed_commit,
            "partitionMetadata": {p: m.to_raw() for p, m in self.partitions.items()},
            "version": self.version,
            "bootstrapPartitionMetadata": {p: m.to_raw() for p, m in self.bootstrap_partitions.items()},
            "extraMetadata": dict(self.extra_metadata),
        }

    def deleted_files(self) -> list[tuple[str, str]]:
        """(partition, file name) of every file the clean reports deleted."""
        return [(p, n) for p, m in self.partitions.items() for n in m.success_delete_files]

    def failed_files(self) -> list[tuple[str, str]]:
        return [(p, n) for p, m in self.partitions.items() for n in m.failed_delete_files]


# Writes

@dataclass(frozen=True, slots=True)
class WriteStat:
    """One file's HoodieWriteStat (HoodieDeltaWriteStat for a log): the fields Cleanline reads."""

    partition: str
    file_id: str
    path: str
    prev_commit: str = "null"
    num_writes: int = 0
    num_inserts: int = 0
    num_update_writes: int = 0
    num_deletes: int = 0
    total_write_bytes: int = 0
    file_size: int = 0

    @property
    def file_name(self) -> str:
        return file_name_of(self.path)

    @property
    def updates_a_group(self) -> bool:
        """The write replaced or appended to an existing file group (`prevCommit` set)."""
        return (self.prev_commit or "null") != "null"

    @classmethod
    def from_raw(cls, partition: str, raw: Raw) -> WriteStat:
        return cls(text(raw, "partitionPath") or partition, text(raw, "fileId"), text(raw, "path"),
                   text(raw, "prevCommit") or "null", number(raw, "numWrites"), number(raw, "numInserts"),
                   number(raw, "numUpdateWrites"), number(raw, "numDeletes"), number(raw, "totalWriteBytes"),
                   number(raw, "fileSizeInBytes"))


# A commit's write stats by partition: the field `timeline.metadata.stream_write_stats` reads as a stream
WRITE_STATS_FIELD = "partitionToWriteStats"


@dataclass(frozen=True, slots=True)
class CommitMetadata(Record):
    """HoodieCommitMetadata / HoodieReplaceCommitMetadata: a completed write's stats, or an
    inflight write's workload profile (same fields in Hudi's v6 JSON and v8 Avro)."""

    write_stats: Mapping[str, tuple[WriteStat, ...]] = field(default_factory=dict)
    replaced_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    operation_type: str = ""
    extra_metadata: Mapping[str, str] = field(default_factory=dict)
    has_write_stats: bool = False

    @classmethod
    def from_raw(cls, raw: Raw) -> CommitMetadata:
        stats = {str(p): tuple(WriteStat.from_raw(str(p), s) for s in group or ())
                 for p, group in mapping(raw, WRITE_STATS_FIELD).items() if p is not None}
        replaced = {str(p): texts(ids) for p, ids in mapping(raw, "partitionToReplaceFileIds").items() if p is not None}
        return cls(raw, stats, replaced, text(raw, "operationType"), extra(raw), WRITE_STATS_FIELD in raw)

    @property
    def partitions(self) -> set[str]:
        return set(self.write_stats) | set(self.replaced_file_ids)

    def stats(self) -> list[WriteStat]:
        return [s for group in self.write_stats.values() for s in group]


@dataclass(frozen=True, slots=True)
class SliceInfo:
    """A file slice named by a compaction operation or a clustering group (file names as the
    plan gives them: relative to the partition, or full paths in older plans)."""

    partition: str
    file_id: str
    base_instant_time: str = ""
    data_file: str = ""
    log_files: tuple[str, ...] = ()
    # a compaction operation's metrics as its plan generator recorded them (TOTAL_LOG_FILES_SIZE, ...)
    metrics: Mapping[str, float] = field(default_factory=dict)

    @property
    def file_names(self) -> list[str]:
        return [file_name_of(p) for p in (self.data_file, *self.log_files) if p]

    @classmethod
    def from_raw(cls, raw: Raw) -> SliceInfo:
        metrics = {str(k): float(v) for k, v in mapping(raw, "metrics").items() if isinstance(v, (int, float))}
        return cls(text(raw, "partitionPath"), text(raw, "fileId"), text(raw, "baseInstantTime"),
                   text(raw, "dataFilePath"), texts(raw.get("deltaFilePaths")), metrics)

    def compaction_operation(self, metrics: Mapping[str, float]) -> dict[str, Any]:
        """A HoodieCompactionOperation (plan version 2) for this slice (`CompactionUtils.
        buildHoodieCompactionOperation`: no data file path for a slice without a base file)."""
        return {"baseInstantTime": self.base_instant_time, "deltaFilePaths": list(self.log_files),
                "dataFilePath": self.data_file or None, "fileId": self.file_id, "partitionPath": self.partition,
                "metrics": dict(metrics), "bootstrapFilePath": None}


@dataclass(frozen=True, slots=True)
class CompactionPlan(Record):
    """HoodieCompactionPlan (compaction and log compaction). `strategy` is the execution
    strategy's class the plan names (HoodieCompactionStrategy; "" when it names none)."""

    operations: tuple[SliceInfo, ...] = ()
    strategy: str = ""

    @classmethod
    def from_raw(cls, raw: Raw) -> CompactionPlan:
        return cls(raw, tuple(SliceInfo.from_raw(op) for op in raw.get("operations") or ()),
                   text(mapping(raw, "strategy"), "compactorClassName"))

    @staticmethod
    def build(operations: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        return {"operations": list(operations), "extraMetadata": None, "version": 2, "strategy": None,
                "preserveHoodieMetadata": False}

    @staticmethod
    def scheduled(operations: Iterable[Mapping[str, Any]],
                  missing_partitions: Iterable[str] | None) -> dict[str, Any]:
        """The plan Hudi's scheduler writes: version 2 (`CompactionUtils.LATEST_COMPACTION_METADATA_VERSION`),
        no strategy, empty extra metadata (`BaseHoodieCompactionPlanGenerator.getExtraMetadata`),
        and `missingSchedulePartitions` (`CompactionStrategy.generateCompactionPlan`, Hudi 1.x: a
        list; None for a Hudi 0.x plan, whose schema has no such field)."""
        return {"operations": list(operations), "extraMetadata": {}, "version": 2, "strategy": None,
                "preserveHoodieMetadata": False,
                "missingSchedulePartitions": None if missing_partitions is None else list(missing_partitions)}


@dataclass(frozen=True, slots=True)
class RequestedReplace(Record):
    """HoodieRequestedReplaceMetadata: a clustering's plan (`operation_type` "cluster"), or the
    empty one an insert_overwrite requests."""

    operation_type: str = ""
    input_slices: tuple[SliceInfo, ...] = ()
    strategy: str = ""  # the clustering plan's strategy class (HoodieClusteringStrategy)

    @classmethod
    def from_raw(cls, raw: Raw) -> RequestedReplace:
        plan = mapping(raw, "clusteringPlan")
        groups = plan.get("inputGroups") or ()
        slices = tuple(SliceInfo.from_raw(s) for g in groups for s in (g or {}).get("slices") or ())
        return cls(raw, text(raw, "operationType"), slices, text(mapping(plan, "strategy"), "strategyClassName"))

    @property
    def is_clustering(self) -> bool:
        return self.operation_type == "cluster"

    @staticmethod
    def empty() -> dict[str, Any]:
        """What insert_overwrite requests: every field null, even the version."""
        return {"operationType": None, "clusteringPlan": None, "extraMetadata": None, "version": None}


# Savepoint

@dataclass(frozen=True, slots=True)
class SavepointMetadata(Record):
    """HoodieSavepointMetadata: the file names each partition holds at the savepoint."""

    savepointed_by: str = ""
    savepointed_at_ms: int = 0
    comments: str = ""
    files: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    version: int = 1

    @classmethod
    def from_raw(cls, raw: Raw) -> SavepointMetadata:
        files = {str(p): texts((m or {}).get("savepointDataFile"))
                 for p, m in mapping(raw, "partitionMetadata").items()}
        return cls(raw, text(raw, "savepointedBy"), number(raw, "savepointedAt"), text(raw, "comments"), files,
                   number(raw, "version"))

    def file_names(self) -> list[tuple[str, str]]:
        return [(p, n) for p, names in self.files.items() for n in names]

    def to_raw(self) -> dict[str, Any]:
        return {"savepointedBy": self.savepointed_by, "savepointedAt": self.savepointed_at_ms,
                "comments": self.comments,
                "partitionMetadata": {p: {"partitionPath": p, "savepointDataFile": list(n)}
                                      for p, n in self.files.items()},
                "version": self.version}


# Rollback

@dataclass(frozen=True, slots=True)
class RollbackRequest:
    """One HoodieRollbackRequest: files to delete, or log files to mark with a rollback block
    (path -> size)."""

    partition: str
    file_id: str = ""
    latest_base_instant: str = ""
    files_to_delete: tuple[str, ...] = ()
    log_blocks_to_delete: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_raw(cls, raw: Raw) -> RollbackRequest:
        blocks = {str(k): int(v or 0) for k, v in mapping(raw, "logBlocksToBeDeleted").items()}
        return cls(text(raw, "partitionPath"), text(raw, "fileId"), text(raw, "latestBaseInstant"),
                   texts(raw.get("filesToBeDeleted")), blocks)

    def to_raw(self) -> dict[str, Any]:
        return {"partitionPath": self.partition, "fileId": self.file_id, "latestBaseInstant": self.latest_base_instant,
                "filesToBeDeleted": list(self.files_to_delete),
                "logBlocksToBeDeleted": dict(self.log_blocks_to_delete)}


@dataclass(frozen=True, slots=True)
class RollbackPlan(Record):
    """HoodieRollbackPlan (`<t>.rollback.requested`)."""

    instant_to_rollback: InstantRef | None = None
    requests: tuple[RollbackRequest, ...] = ()
    version: int = 1

    @classmethod
    def from_raw(cls, raw: Raw) -> RollbackPlan:
        target = raw.get("instantToRollback")
        return cls(raw, InstantRef.from_instant_info(target) if target else None,
                   tuple(RollbackRequest.from_raw(r) for r in raw.get("RollbackRequests") or ()),
                   number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        return {"instantToRollback": None if self.instant_to_rollback is None else
                self.instant_to_rollback.instant_info(),
                "RollbackRequests": [r.to_raw() for r in self.requests], "version": self.version}

    def with_raw(self) -> RollbackPlan:
        """The same plan with `raw` filled from its fields (for a plan built in memory)."""
        return RollbackPlan(self.to_raw(), self.instant_to_rollback, self.requests, self.version)


@dataclass(frozen=True, slots=True)
class RollbackPartitionMetadata:
    partition: str
    success_delete_files: tuple[str, ...] = ()
    failed_delete_files: tuple[str, ...] = ()
    rollback_log_files: Mapping[str, int] = field(default_factory=dict)
    log_files_from_failed_commit: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_raw(cls, partition: str, raw: Raw) -> RollbackPartitionMetadata:
        return cls(text(raw, "partitionPath") or partition, texts(raw.get("successDeleteFiles")),
                   texts(raw.get("failedDeleteFiles")),
                   {str(k): int(v or 0) for k, v in mapping(raw, "rollbackLogFiles").items()},
                   {str(k): int(v or 0) for k, v in mapping(raw, "logFilesFromFailedCommit").items()})

    def to_raw(self) -> dict[str, Any]:
        return {"partitionPath": self.partition, "successDeleteFiles": list(self.success_delete_files),
                "failedDeleteFiles": list(self.failed_delete_files), "rollbackLogFiles": dict(self.rollback_log_files),
                "logFilesFromFailedCommit": dict(self.log_files_from_failed_commit)}


@dataclass(frozen=True, slots=True)
class RollbackMetadata(Record):
    """HoodieRollbackMetadata (a completed rollback, and each entry of a restore)."""

    start_rollback_time: str = ""
    time_taken_ms: int = 0
    commits_rollback: tuple[str, ...] = ()
    partitions: Mapping[str, RollbackPartitionMetadata] = field(default_factory=dict)
    instants_rollback: tuple[InstantRef, ...] = ()
    version: int = 1

    @property
    def total_files_deleted(self) -> int:
        return sum(len(m.success_delete_files) for m in self.partitions.values())

    @classmethod
    def from_raw(cls, raw: Raw) -> RollbackMetadata:
        return cls(raw, text(raw, "startRollbackTime"), number(raw, "timeTakenInMillis"),
                   texts(raw.get("commitsRollback")),
                   {str(p): RollbackPartitionMetadata.from_raw(str(p), m or {})
                    for p, m in mapping(raw, "partitionMetadata").items()},
                   tuple(InstantRef.from_instant_info(i) for i in raw.get("instantsRollback") or ()),
                   number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        return {"startRollbackTime": self.start_rollback_time, "timeTakenInMillis": self.time_taken_ms,
                "totalFilesDeleted": self.total_files_deleted, "commitsRollback": list(self.commits_rollback),
                "partitionMetadata": {p: m.to_raw() for p, m in self.partitions.items()},
                "version": self.version, "instantsRollback": [i.instant_info() for i in self.instants_rollback]}


# Restore

@dataclass(frozen=True, slots=True)
class RestorePlan(Record):
    """HoodieRestorePlan: the instants to roll back, newest first, and the savepoint."""

    instants_to_rollback: tuple[InstantRef, ...] = ()
    savepoint: str = ""
    version: int = 1

    @classmethod
    def from_raw(cls, raw: Raw) -> RestorePlan:
        return cls(raw, tuple(InstantRef.from_instant_info(i) for i in raw.get("instantsToRollback") or ()),
                   text(raw, "savepointToRestoreTimestamp"), number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        return {"instantsToRollback": [i.instant_info() for i in self.instants_to_rollback],
                "version": self.version, "savepointToRestoreTimestamp": self.savepoint}


@dataclass(frozen=True, slots=True)
class RestoreMetadata(Record):
    """HoodieRestoreMetadata: per rolled-back instant, its rollback metadata."""

    start_restore_time: str = ""
    time_taken_ms: int = 0
    rolled_back: Mapping[str, tuple[RollbackMetadata, ...]] = field(default_factory=dict)
    instants: tuple[InstantRef, ...] = ()
    version: int = 1

    @classmethod
    def from_raw(cls, raw: Raw) -> RestoreMetadata:
        rolled = {str(t): tuple(RollbackMetadata.from_raw(m or {}) for m in ms or ())
                  for t, ms in mapping(raw, "hoodieRestoreMetadata").items()}
        return cls(raw, text(raw, "startRestoreTime"), number(raw, "timeTakenInMillis"), rolled,
                   tuple(InstantRef.from_instant_info(i) for i in raw.get("restoreInstantInfo") or ()),
                   number(raw, "version"))

    def to_raw(self) -> dict[str, Any]:
        return {"startRestoreTime": self.start_restore_time, "timeTakenInMillis": self.time_taken_ms,
                "instantsToRollback": [i.time for i in self.instants],
                "hoodieRestoreMetadata": {t: [m.to_raw() for m in ms] for t, ms in self.rolled_back.items()},
                "version": self.version, "restoreInstantInfo": [i.instant_info() for i in self.instants]}


@dataclass(frozen=True, slots=True)
class Opaque(Record):
    """A payload Cleanline shows but does not interpret (indexing, schema commits)."""

    @classmethod
    def from_raw(cls, raw: Raw) -> Opaque:
        return cls(raw)


_R, _I, _C = State.REQUESTED, State.INFLIGHT, State.COMPLETED
_WRITES = (COMMIT, DELTA_COMMIT)

RECORDS: Mapping[tuple[str, State], type[Record]] = {
    **{(a, s): CommitMetadata for a in _WRITES for s in (_R, _I, _C)},
    (REPLACE_COMMIT, _R): RequestedReplace, (REPLACE_COMMIT, _I): CommitMetadata, (REPLACE_COMMIT, _C): CommitMetadata,
    (CLUSTERING, _R): RequestedReplace, (CLUSTERING, _I): CommitMetadata, (CLUSTERING, _C): CommitMetadata,
    (COMPACTION, _R): CompactionPlan, (COMPACTION, _I): CompactionPlan, (COMPACTION, _C): CommitMetadata,
    (LOG_COMPACTION, _R): CompactionPlan, (LOG_COMPACTION, _I): CompactionPlan,
    (LOG_COMPACTION, _C): CommitMetadata,
    (CLEAN, _R): CleanerPlan, (CLEAN, _I): CleanerPlan, (CLEAN, _C): CleanMetadata,
    (ROLLBACK, _R): RollbackPlan, (ROLLBACK, _I): RollbackPlan, (ROLLBACK, _C): RollbackMetadata,
    (RESTORE, _R): RestorePlan, (RESTORE, _I): RestorePlan, (RESTORE, _C): RestoreMetadata,
    (SAVEPOINT, _I): SavepointMetadata, (SAVEPOINT, _C): SavepointMetadata,
}


def record_type(action: str, state: State) -> type[Record]:
    return RECORDS.get((action, state), Opaque)


def to_record(raw: Raw, *, action: str, state: State) -> Record:
    """The typed record of one decoded payload."""
    cls = record_type(action, state)
    return cls.from_raw(raw)  # type: ignore[attr-defined, no-any-return]  # every Record has from_raw; the Protocol does not say so


def expect(record: Record | None, cls: type[R]) -> R:
    """`record` as `cls`, or an empty `cls` for a missing or empty payload."""
    if record is None:
        return cls()
    if not isinstance(record, cls):
        raise TypeError(f"expected {cls.__name__}, found {type(record).__name__}")
    return record


__all__ = [
    "RECORDS", "WRITE_STATS_FIELD", "CleanFileInfo", "CleanMetadata", "CleanPartitionMetadata", "CleanerPlan",
    "CommitMetadata", "CompactionPlan", "InstantRef", "Opaque", "Record", "RequestedReplace", "RestoreMetadata",
    "RestorePlan", "RollbackMetadata", "RollbackPartitionMetadata", "RollbackPlan", "RollbackRequest",
    "SavepointMetadata", "SliceInfo", "WriteStat", "expect", "hudi_fields", "record_type", "to_record"
]
