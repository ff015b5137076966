"""The public surface, read by type checkers and by `lazy_loader` (timeline/__init__.py): each name
is imported from its module on first use, so a command loads only what it needs."""

from .clean.config import CleanConfig, CleanPolicy
from .clean.executor import CleanRefused, CleanResult, FileOutcome, PlanInvalidated, Progress
from .clean.planner import CleanPlan, FileDecision
from .clean.retention import RetentionTooShort
from .config import TableConfig
from .exceptions import CleanlineError, CorruptInstantError, NotAHudiTableError, StorageError
from .fsview import FileGroup, FileSlice, FileSystemView
from .hudi_table import HudiTable
from .inspect import Inspect, InstantSummary, SliceProtection, StateFile
from .instant import Instant, State
from .locks.live import LiveWriterUnlocked
from .maintenance import Maintenance
from .mdt.reader import MetadataTableState
from .mdt.validate import Validation
from .restore import RestorePreview, RestoreRefused, RestoreVerification
from .rollback import FailedWrite, RollbackPreview, RollbackRefused
from .savepoint import SavepointInfo, SavepointRefused
from .storage import OutsideTableError
from .timeline import Timeline

__version__: str
# One screen: the table and its two namespaces, their typed results, the errors, the settings.
# Everything else is imported from its module (timeline.storage, timeline.metadata.records,
# timeline.internal.plan_store, timeline.internal.engine, ...); tests/test_boundaries.py lists the public modules.
__all__ = [
    "HudiTable", "Inspect", "Maintenance", "TableConfig", "Timeline", "Instant", "State",
    "CleanConfig", "CleanPolicy", "CleanPlan", "FileDecision", "CleanResult", "FileOutcome", "Progress",
    "FileSystemView", "FileGroup", "FileSlice",
    "InstantSummary", "SliceProtection", "StateFile", "SavepointInfo", "RestorePreview", "RestoreVerification",
    "RollbackPreview", "FailedWrite", "MetadataTableState", "Validation",
    "CleanlineError", "CorruptInstantError", "NotAHudiTableError", "StorageError", "OutsideTableError",
    "CleanRefused", "PlanInvalidated", "RetentionTooShort", "RestoreRefused", "RollbackRefused", "SavepointRefused",
    "LiveWriterUnlocked", "__version__",
]
