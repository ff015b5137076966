"""Compaction, log compaction and clustering as table services: what is pending and what it
reads (`timeline.services.pending`), the compaction backlog a snapshot read pays for
(`timeline.services.backlog`), the metadata table's own compaction (`timeline.services.mdt`),
and why no compaction is scheduled (`timeline.services.why`, over the writers' settings of
`timeline.services.settings` and the trigger of `timeline.services.trigger`). This module puts
them together for `HudiTable.inspect`: `table_services` (the "see") and `why_not_compacting`
(the "say why"), from one listing of the table; those read only. Scheduling and running a
compaction (`timeline.services.schedule`, `refusals`, `compactor`, `merge`, `bloom`,
`compaction_mdt`) are `HudiTable.maintenance().compact` and `.run_compaction`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from timeline.services.backlog import Backlog, compaction_backlog
from timeline.services.compactor import CompactionResult
from timeline.services.mdt import MetadataTableCompaction, metadata_table_compaction
from timeline.services.pending import PendingService, ServiceKind, pending_services
from timeline.services.refusals import CompactionRefused, MergeMode, MergeRules
from timeline.services.schedule import CompactionOperation, CompactionSchedule
from timeline.services.settings import CompactionSettings, compaction_settings
from timeline.services.trigger import DeltaCommitsSince, delta_commits_since_compaction, need_compact
from timeline.services.why import (
    CompactionWhy,
    Reason,
    ReasonKind,
    candidate_time,
    collect,
    compactable,
    earlier_pending_write,
    held_by_pending,
    metadata_table_reasons,
    no_log_files,
    not_merge_on_read,
    scheduling_off,
    trigger_not_met,
)
from timeline.table import Table


@dataclass(frozen=True, slots=True)
class TableServices:
    """A table's services now: its pending compactions, log compactions and clusterings with
    their plans, its compaction backlog (merge-on-read), the delta commits its compaction
    trigger counts since the last compaction (None: no delta commit), and its metadata table's
    compaction (None: no metadata table)."""

    table_uri: str
    table_type: str
    table_version: int
    pending: tuple[PendingService, ...]
    backlog: Backlog
    since_compaction: DeltaCommitsSince | None
    metadata_table: MetadataTableCompaction | None


def table_services(table: Table, *, options: Mapping[str, str] | None = None,
                   now: datetime | None = None) -> TableServices:
    """What `cleanline compaction show` prints: one listing of the table, read with the
    timeline. `options` are the writers' options (the metadata table's trigger,
    `hoodie.metadata.compact.max.delta.commits`)."""
    settings = compaction_settings(table, options)
    listing = table.list_partitions()
    view = table.file_system_view(listing=listing)
    return TableServices(table.uri, table.config.table_type.value, table.version,
                         pending_services(table, listing, now=now), compaction_backlog(table, view),
                         delta_commits_since_compaction(table.timeline, table.version),
                         metadata_table_compaction(table, settings.metadata_max_delta_commits, now=now))


def why_not_compacting(table: Table, *, options: Mapping[str, str] | None = None,
                       now: datetime | None = None) -> CompactionWhy:
    """Why a writer of `table` with the writers' `options` (over those the table was opened
    with, its root's and `hoodie.properties`) schedules no compaction at `now`, every reason Hudi's
    schedulers have (`timeline.services.why`), the metadata table's included."""
    settings = compaction_settings(table, options)
    candidate = candidate_time(table, now)
    mdt = metadata_table_compaction(table, settings.metadata_max_delta_commits, now=now)
    refused = not_merge_on_read(table)
    if refused is not None:
        return CompactionWhy(candidate, settings, None, (), collect(refused, metadata_table_reasons(mdt)), mdt)
    listing = table.list_partitions()
    slices = table.file_system_view(listing=listing).latest_slices()
    pending = pending_services(table, listing, now=now)
    check = need_compact(table.timeline, table.version, settings.trigger, settings.max_delta_commits,
                         settings.max_delta_seconds, candidate)
    reasons = collect(scheduling_off(settings), trigger_not_met(settings, check),
                      earlier_pending_write(table, settings, candidate), no_log_files(slices),
                      held_by_pending(slices, pending), metadata_table_reasons(mdt))
    return CompactionWhy(candidate, settings, check, compactable(slices, pending), reasons, mdt)


# `delta_commits_since_compaction` and `pending_services` are public too: the console's sync keeps a
# table's trigger count (over the instants it mirrors) and its pending services without a listing.
__all__ = ["Backlog", "CompactionOperation", "CompactionRefused", "CompactionResult", "CompactionSchedule",
           "CompactionSettings", "CompactionWhy", "DeltaCommitsSince", "MergeMode", "MergeRules",
           "MetadataTableCompaction", "PendingService", "Reason", "ReasonKind", "ServiceKind", "TableServices",
           "delta_commits_since_compaction", "pending_services", "table_services", "why_not_compacting"]
