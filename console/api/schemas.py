"""Request and response bodies of the API (pydantic, through Django Ninja)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import create_model


class Problem(Schema):
    """RFC 9457 problem details: every error answer."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str


class TableOut(Schema):
    id: int
    name: str
    path: str
    table_type: str
    table_version: int
    metadata_table_enabled: bool
    sync_status: str
    sync_error: str
    synced_at: datetime | None
    total_files: int
    total_bytes: int
    failed_writes: int
    active_instants: int | None = Field(None, description="instants in the active timeline, at the last sync")
    archivable_instants: int | None = Field(None, description="instants archival would move now, at the last sync")


class TableIn(Schema):
    path: str = Field(..., description="the table's base path or URI, under CLEANLINE_ALLOWED_ROOTS")


class Accepted(Schema):
    detail: str


class InstantOut(Schema):
    id: int
    requested_time: str
    completion_time: str
    action: str
    state: str
    archived: bool
    partitions: int
    files: int
    records: int
    bytes: int


class StateContentOut(Schema):
    state: str
    file: str
    content: Any = None
    error: str = ""
    size: int = -1
    too_large: bool = False
    download: str = ""


class WriteStatOut(Schema):
    partition: str
    file_id: str
    path: str
    prev_commit: str
    num_writes: int
    num_inserts: int
    num_update_writes: int
    num_deletes: int
    total_write_bytes: int
    file_size: int


class WriteStatsPageOut(Schema):
    page: int
    page_size: int
    partition: str | None
    has_next: bool
    count: int | None
    items: list[WriteStatOut]


class InstantDetail(InstantOut):
    contents: list[StateContentOut]
    write_stats: WriteStatsPageOut | None = None


class SliceOut(Schema):
    base_instant: str
    files: list[str]
    size: int
    protected: str | None


class FileGroupOut(Schema):
    file_id: str
    replaced_by: str | None = None
    pending_compaction: str | None = None
    size: int
    slices: list[SliceOut]


class FileGroupsOut(Schema):
    partitions: list[str]
    partition: str
    file_groups: list[FileGroupOut]


class PlanIn(Schema):
    """Blank fields take the table's settings."""

    policy: str | None = Field(None, description="KEEP_LATEST_COMMITS, KEEP_LATEST_FILE_VERSIONS or "
                                                  "KEEP_LATEST_BY_HOURS")
    commits_retained: int | None = Field(None, ge=0)
    file_versions_retained: int | None = Field(None, ge=1)
    hours_retained: int | None = Field(None, ge=0)
    allow_short_retention: bool = False
    listing: Literal["auto", "metadata", "storage"] = Field(
        "auto", description="where the planner lists the table from: auto (through the metadata table when it is "
                            "valid, else storage, as Hudi does), metadata or storage")


class PlanOut(Schema):
    id: int
    table_id: int
    status: str
    automatic: bool
    settings: dict[str, Any]
    policy: str
    requested_by: str | None
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str
    earliest_retained: str
    files_to_delete: int
    bytes_to_delete: int
    files_kept: int
    partitions_with_deletes: int
    partitions_to_delete: list[str]
    partition_summary: list[dict[str, Any]]
    warnings: list[str]
    notes: list[str]
    stale_reasons: list[str]
    clean_instant: str
    listing: str
    listing_used: str
    progress_done: int
    progress_total: int
    progress_bytes: int
    error: str
    started_at: datetime | None
    finished_at: datetime | None


class ApproveIn(Schema):
    writers_stopped: bool = Field(False, description="the table's Hudi writers are stopped: needed only when no "
                                  "lock they share is known and a writer looks live; recorded and audited")
    note: str = Field("", max_length=2000, description="why, kept as the decision's note")


class DecisionIn(Schema):
    note: str = Field("", max_length=2000)


class PlanFileOut(Schema):
    partition: str
    file_name: str
    size: int
    delete: bool
    reason: str
    outcome: str
    base_instant: str


class JobOut(Schema):
    id: int
    table_id: int
    kind: str
    target: str
    status: str
    requested_by: str | None
    requested_at: datetime
    finished_at: datetime | None
    result: dict[str, Any]
    error: str
    progress_done: int
    progress_total: int


class SavepointOut(Schema):
    instant: str
    savepointed_by: str
    savepointed_at_ms: int
    comments: str
    files: int
    bytes: int
    missing_files: int
    holds_back_archival: bool


class SavepointIn(Schema):
    instant: str = Field(..., pattern=r"^\d{14,17}$")
    comment: str = Field("", max_length=500)
    writers_stopped: bool = Field(False, description="the table's Hudi writers are stopped: needed only when no "
                                  "lock they share is known and a writer looks live; recorded and audited")


class RollbackPreviewOut(Schema):
    instant: str
    action: str
    files_to_delete: list[tuple[str, str, int]]
    logs_to_mark: list[tuple[str, str, int]]
    bytes_to_delete: int


class RestorePreviewOut(Schema):
    savepoint: str
    bytes_to_delete: int
    metadata_table: str
    rollbacks: list[RollbackPreviewOut]


class RestoreIn(Schema):
    savepoint: str
    confirm: str = Field(..., description="the table's name, typed")
    writers_stopped: bool = Field(False, description="the table's Hudi writers are stopped: needed only when no "
                                  "lock they share is known and a writer looks live; recorded and audited")


class FailedWriteOut(Schema):
    instant: str
    action: str
    age_seconds: int
    refusal: str
    preview: RollbackPreviewOut | None


class RollbackIn(Schema):
    instant: str
    confirm: str = Field(..., description="the failed write's instant time, typed")
    writers_stopped: bool = Field(False, description="the table's Hudi writers are stopped: needed only when no "
                                  "lock they share is known and a writer looks live; recorded and audited")


class BlockerOut(Schema):
    kind: str = Field(..., description="archival disabled, keep.max not exceeded, clean retention, savepoint, "
                      "pending instant, pending compaction, pending clustering, delta commits for the next "
                      "compaction, replaced files not cleaned, metadata-table compaction lag, broken LSM manifest")
    instant: str | None = Field(None, description="the instant that holds the others back (None: the table)")
    action: str | None = None
    since: str | None = Field(None, description="an instant time: since when")
    why: str


class KeepOut(Schema):
    min: int
    max: int
    configured_min: int
    configured_max: int
    raised: bool = Field(..., description="the cleaner's retention raised the keep counts")


class ArchivalInstantOut(Schema):
    requested_time: str
    action: str
    completion_time: str


class ArchivalPlanOut(Schema):
    """What archival would move now (read from the table with its writer options)."""

    active: int = Field(..., description="instants in the active timeline now")
    active_after: int = Field(..., description="instants left after archival")
    archivable: int
    runnable: bool = Field(..., description="false when a broken LSM history stops every archival")
    archiver: str
    keep: KeepOut
    blockers: list[BlockerOut]
    warnings: list[str]
    instants: list[ArchivalInstantOut]


class ArchivalOut(Schema):
    id: int
    table_id: int
    status: str = Field(..., description="draft (waiting for approval), rejected (declined), approved, running, "
                        "completed, stale, failed")
    instants: list[ArchivalInstantOut]
    plan: dict[str, Any] = Field(..., description="the plan as requested: active, active_after, archivable, "
                                 "archiver, keep, blockers, warnings")
    requested_by: str | None
    requested_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    decision_note: str
    writers_stopped: bool
    result: dict[str, Any]
    stale_reason: str
    error: str
    started_at: datetime | None
    finished_at: datetime | None


class AuditOut(Schema):
    id: int
    at: datetime
    username: str
    action: str
    table_id: int | None
    parameters: dict[str, Any]
    result: str


def page_of(item: type[Schema]) -> type[Schema]:
    """A page of `item`s with the totals."""
    return create_model(f"{item.__name__}Page", __base__=Schema, count=(int, ...), page=(int, ...),
                        pages=(int, ...), page_size=(int, ...),
                        items=(list[item], ...))  # type: ignore[valid-type]  # item: a class known only at run time
