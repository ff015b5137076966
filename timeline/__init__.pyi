"""The public surface, read by type checkers and by `lazy_loader` (timeline/__init__.py): each name
is imported from its module on first use, so a command loads only what it needs."""

from . import remote
from .clean.config import CleanConfig, CleanConfigError, CleanPolicy
from .clean.executor import (
    CleanRefused,
    CleanResult,
    FileOutcome,
    FileStatus,
    PlanInvalidated,
    Progress,
    ProgressCallback,
)
from .clean.planner import CleanPlan, FileDecision
from .clean.retention import RetentionTooShort, retention_shortfall
from .clean.store import FileRow, PartitionSums, StoredPlan, StoreError, compare_stored
from .clean.whatif import RetentionCost, WhatIf, reclaimable, what_if
from .config import TableConfig
from .demo import DEMO_TABLES, demo_tables_to_build
from .engine import build_demo_lake, engine_for, spark_min_files, spark_session
from .exceptions import (
    CleanlineError,
    CorruptInstantError,
    FileNotFound,
    InvalidInstantError,
    NotAHudiTableError,
    StorageError,
    TableConfigError,
)
from .forks import local_processes
from .fsview import FileGroup, FileSlice, FileSystemView, TableListing
from .inspect import Inspect, InstantSummary, SliceProtection, StateFile
from .instant import Instant, State, format_instant_time, instant_time_of, moment_of, parse_instant_time
from .locks.discovery import configure_hudi_options, parse_hudi_options
from .locks.live import LiveWriterUnlocked
from .maintenance import Maintenance
from .mdt import MetadataTableEnabledError
from .mdt.reader import MetadataTableMissing, MetadataTableState
from .mdt.validate import PartitionDifference, Validation
from .mdt.writer import CLEAN_PARTITIONS
from .metadata.records import (
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
from .restore import RestorePreview, RestoreRefused, RestoreVerification
from .rollback import FailedWrite, RollbackPreview, RollbackRefused
from .savepoint import SavepointInfo, SavepointRefused
from .storage import (
    OutsideTableError,
    S3ConfigError,
    S3Settings,
    UnsupportedLocationError,
    configure_s3,
    parse_location,
    parse_s3_roots,
    within_roots,
)
from .table import HudiTable
from .timeline import Timeline

__version__: str
__all__ = [
    "CLEAN_PARTITIONS",
    "FileRow", "PartitionSums", "StoreError", "StoredPlan", "compare_stored",
    "CleanMetadata", "CleanerPlan", "CommitMetadata", "CompactionPlan", "FileOutcome", "FileStatus", "InstantRef",
    "InstantSummary", "Record", "RequestedReplace", "RestoreMetadata", "RestorePlan", "RollbackMetadata",
    "PlanInvalidated", "RetentionTooShort", "RollbackPlan", "SavepointMetadata", "WriteStat",
    "CleanConfig", "CleanConfigError", "CleanPlan", "CleanPolicy", "CleanRefused", "CleanResult", "CleanlineError",
    "CorruptInstantError", "FailedWrite", "FileDecision", "FileGroup", "FileNotFound", "FileSlice", "FileSystemView",
    "HudiTable", "Inspect", "Instant", "InvalidInstantError", "LiveWriterUnlocked", "Maintenance",
    "MetadataTableEnabledError", "MetadataTableMissing", "MetadataTableState", "NotAHudiTableError",
    "PartitionDifference", "Validation", "OutsideTableError", "Progress", "ProgressCallback",
    "RestorePreview", "RestoreRefused", "RestoreVerification", "RollbackPreview", "RollbackRefused",
    "S3ConfigError", "S3Settings", "SavepointInfo", "SavepointRefused", "SliceProtection", "State", "StateFile",
    "StorageError", "TableConfig", "TableConfigError", "Timeline", "UnsupportedLocationError", "__version__",
    "DEMO_TABLES", "build_demo_lake", "demo_tables_to_build", "configure_hudi_options", "configure_s3", "engine_for",
    "local_processes", "spark_min_files",
    "format_instant_time", "moment_of",
    "parse_hudi_options", "parse_instant_time", "parse_location", "parse_s3_roots", "remote", "retention_shortfall",
    "spark_session",
    "within_roots", "instant_time_of",
    "RetentionCost", "TableListing", "WhatIf", "reclaimable", "what_if",
]
