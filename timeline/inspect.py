"""`HudiTable.inspect`: everything the console and the CLI read about a table, as typed
results, in the manner of PyIceberg's `table.inspect`. Each answer comes from the one module
that holds its rule; this namespace only gathers them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from timeline.archive import load_archived_timeline
from timeline.clean.planner import Protection, read_protection, why_protected
from timeline.config import MDT_PARTITIONS_INFLIGHT
from timeline.fsview import FileGroup, FileSlice, FileSystemView
from timeline.instant import Instant, State
from timeline.restore import RestorePreview, preview_restore
from timeline.rollback import FailedWrite, preview_failed_writes
from timeline.savepoint import SavepointInfo, list_savepoints
from timeline.timeline import Timeline

if TYPE_CHECKING:
    from timeline.table import HudiTable


@dataclass(frozen=True, slots=True)
class SliceProtection:
    """One file slice and why no clean may take it now (None: only the policy decides)."""

    group: FileGroup
    slice: FileSlice
    protected_by: str | None


@dataclass(frozen=True, slots=True)
class StateFile:
    """One state file of an instant and its decoded content."""

    state: State
    path: str
    content: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class MetadataTableState:
    """Whether the table keeps a metadata table, and which of its partitions are available."""

    enabled: bool
    partitions: tuple[str, ...]
    inflight: tuple[str, ...]


class Inspect:
    """Read-only questions about one table."""

    def __init__(self, table: HudiTable) -> None:
        self.table = table

    def instants(self) -> Timeline:
        """The active timeline, oldest first."""
        return self.table.timeline

    def archived_instants(self) -> Timeline:
        return load_archived_timeline(self.table)

    def state_files(self, instant: Instant) -> list[StateFile]:
        """Every state file of an instant, newest state first, read by name (the timeline is
        not loaded, so a page about one instant stays cheap on a large table)."""
        found = sorted(self.table.state_files(instant).items(), reverse=True)
        return [StateFile(state, path, self.table.read_state_file(path)) for state, path in found]

    def file_system_view(self, *, as_of: str | None = None) -> FileSystemView:
        return self.table.file_system_view(as_of=as_of)

    def protection(self) -> Protection:
        return read_protection(self.table)

    @staticmethod
    def why_protected(group: FileGroup, piece: FileSlice, protection: Protection) -> str | None:
        """What keeps a slice from any clean now (a savepoint, a pending table service)."""
        return why_protected(group, piece, protection)

    def file_slices(self, partition: str | None = None) -> Iterator[SliceProtection]:
        """Every committed slice of every file group with what protects it (a savepoint, a
        pending compaction, log compaction or clustering)."""
        protection = self.protection()
        for group in self.file_system_view().all_file_groups(partition):
            for piece in group.slices:
                yield SliceProtection(group, piece, why_protected(group, piece, protection))

    def savepoints(self) -> list[SavepointInfo]:
        return list_savepoints(self.table)

    def restore_preview(self, savepoint: str) -> RestorePreview:
        return preview_restore(self.table, savepoint)

    def failed_writes(self) -> list[FailedWrite]:
        return preview_failed_writes(self.table)

    def metadata_table(self) -> MetadataTableState:
        config = self.table.config
        inflight = tuple(p for p in (config.get(MDT_PARTITIONS_INFLIGHT) or "").split(",") if p)
        return MetadataTableState(config.metadata_table_enabled, tuple(config.metadata_partitions), inflight)
