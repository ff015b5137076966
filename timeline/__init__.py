"""Cleanline's library: reads and changes Apache Hudi tables the way Apache Hudi does. Knows
nothing of Django or Celery; PySpark is imported only by `timeline.spark`, when asked for.

The public surface is what this module exports: open a table with `HudiTable.open(uri)`, ask
`table.inspect` and act through `table.maintenance()`. The console and the `cleanline`
command use nothing else (tests/test_boundaries.py checks it)."""

from __future__ import annotations

from timeline import remote
from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy
from timeline.clean.executor import CleanRefused, CleanResult, FileOutcome, PlanInvalidated, Progress, ProgressCallback
from timeline.clean.executor import Status as FileStatus
from timeline.clean.planner import CleanPlan, FileDecision
from timeline.clean.retention import RetentionTooShort, retention_shortfall
from timeline.clean.store import FileRow, PartitionSums, StoredPlan, StoreError, compare_stored
from timeline.clean.whatif import RetentionCost, WhatIf, reclaimable, what_if
from timeline.config import TableConfig
from timeline.engine import (
    DEMO_TABLES,
    build_demo_lake,
    demo_tables_to_build,
    engine_for,
    spark_min_files,
    spark_session,
)
from timeline.exceptions import (
    CleanlineError,
    CorruptInstantError,
    FileNotFound,
    InvalidInstantError,
    NotAHudiTableError,
    StorageError,
    TableConfigError,
)
from timeline.fsview import FileGroup, FileSlice, FileSystemView, TableListing
from timeline.inspect import Inspect, InstantSummary, SliceProtection, StateFile
from timeline.instant import Instant, State, format_instant_time, instant_time_of, moment_of, parse_instant_time
from timeline.maintenance import Maintenance
from timeline.mdt import MetadataTableEnabledError
from timeline.mdt.reader import MetadataTableMissing, MetadataTableState
from timeline.mdt.validate import PartitionDifference, Validation
from timeline.mdt.writer import CLEAN_PARTITIONS
from timeline.metadata.records import (
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    CompactionPlan,
    InstantRef,
    Record,
    RequestedReplace,
    RestoreMetadata,
    RestorePlan,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
    WriteStat,
)
from timeline.restore import RestorePreview, RestoreRefused, RestoreVerification
from timeline.rollback import FailedWrite, RollbackPreview, RollbackRefused
from timeline.savepoint import SavepointInfo, SavepointRefused
from timeline.storage import (
    OutsideTableError,
    S3ConfigError,
    S3Settings,
    UnsupportedLocationError,
    configure_s3,
    parse_location,
    parse_s3_roots,
    within_roots,
)
from timeline.table import HudiTable
from timeline.timeline import Timeline

__version__ = "0.1.0"

__all__ = [
    "CLEAN_PARTITIONS",
    "FileRow", "PartitionSums", "StoreError", "StoredPlan", "compare_stored",
    "CleanMetadata", "CleanerPlan", "CommitMetadata", "CompactionPlan", "FileOutcome", "FileStatus", "InstantRef",
    "InstantSummary", "Record", "RequestedReplace", "RestoreMetadata", "RestorePlan", "RollbackMetadata",
    "PlanInvalidated", "RetentionTooShort", "RollbackPlan", "SavepointMetadata", "WriteStat",
    "CleanConfig", "CleanConfigError", "CleanPlan", "CleanPolicy", "CleanRefused", "CleanResult", "CleanlineError",
    "CorruptInstantError", "FailedWrite", "FileDecision", "FileGroup", "FileNotFound", "FileSlice", "FileSystemView",
    "HudiTable", "Inspect", "Instant", "InvalidInstantError", "Maintenance", "MetadataTableEnabledError",
    "MetadataTableMissing", "MetadataTableState", "NotAHudiTableError",
    "PartitionDifference", "Validation", "OutsideTableError", "Progress", "ProgressCallback",
    "RestorePreview", "RestoreRefused", "RestoreVerification", "RollbackPreview", "RollbackRefused",
    "S3ConfigError", "S3Settings", "SavepointInfo", "SavepointRefused", "SliceProtection", "State", "StateFile",
    "StorageError", "TableConfig", "TableConfigError", "Timeline", "UnsupportedLocationError", "__version__",
    "DEMO_TABLES", "build_demo_lake", "demo_tables_to_build", "configure_s3", "engine_for", "spark_min_files",
    "format_instant_time", "moment_of",
    "parse_instant_time", "parse_location", "parse_s3_roots", "remote", "retention_shortfall", "spark_session",
    "within_roots", "instant_time_of",
    "RetentionCost", "TableListing", "WhatIf", "reclaimable", "what_if",
]
