"""Tables, their instants and file groups, and the audit log."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import FileResponse, HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from ninja import Query, Router, Schema, Status
from pydantic import ValidationInfo, field_validator

from console import permissions, selectors, services
from console.api.common import MAX_PAGE_SIZE, paged, require, role, user_of
from console.api.filters import one_of, typed_time, whole_number
from console.api.schemas import (
    Accepted,
    AuditOut,
    FileGroupsOut,
    InstantDetail,
    InstantOut,
    Problem,
    TableIn,
    TableOut,
    page_of,
)
from console.models import AuditEvent, Instant, Table
from timeline.instant import ACTIONS

router = Router(tags=["tables"])
ERRORS: dict[int, type[Schema]] = {401: Problem, 403: Problem, 404: Problem}


def table_out(table: Table) -> dict[str, Any]:
    return {f: getattr(table, f) for f in TableOut.model_fields if f != "id"} | {"id": table.pk}


def instant_out(row: Instant) -> dict[str, Any]:
    return {f: getattr(row, f) for f in InstantOut.model_fields if f != "id"} | {"id": row.pk}


def table_of(request: HttpRequest, table_id: int, permission: str = permissions.VIEW) -> Table:
    require(request, permission)
    return get_object_or_404(Table, pk=table_id)


SORTS = {"name": "name", "-name": "-name", "files": "total_files", "-files": "-total_files",
         "bytes": "total_bytes", "-bytes": "-total_bytes", "synced": "synced_at", "-synced": "-synced_at"}


class TableFilters(Schema):
    q: str = ""
    sort: str = "name"
    page: int = 1
    page_size: int = 50

    @field_validator("sort")
    @classmethod
    def _sort(cls, value: str) -> str:
        return one_of("sort", value, SORTS)


@router.get("/tables", response={200: page_of(TableOut), **ERRORS}, summary="List tables")
def list_tables(request: HttpRequest, filters: Query[TableFilters]) -> dict[str, Any]:
    """Registered tables; `q` matches name or path; `sort` one of name, files, bytes, synced
    (prefix `-` for descending)."""
    require(request)
    rows = Table.objects.all()
    if filters.q:
        from django.db.models import Q

        rows = rows.filter(Q(name__icontains=filters.q) | Q(path__icontains=filters.q))
    rows = rows.order_by(SORTS[filters.sort or "name"], "pk")
    return paged(rows, filters.page, filters.page_size, table_out)


@router.post("/tables",
             auth=role(permissions.REGISTER), response={201: TableOut, 400: Problem, 409: Problem, **ERRORS},
             summary="Register a table")
def register_table(request: HttpRequest, body: TableIn) -> Status[dict[str, Any]]:
    user = require(request, permissions.REGISTER)
    table = services.table_register(path=body.path, user=user)
    return Status(201, table_out(table))


@router.get("/tables/{table_id}", response={200: TableOut, **ERRORS}, summary="A table")
def get_table(request: HttpRequest, table_id: int) -> dict[str, Any]:
    return table_out(table_of(request, table_id))


@router.post("/tables/{table_id}/sync",
             auth=role(permissions.SYNC), response={202: Accepted, **ERRORS}, summary="Sync a table")
def sync_table(request: HttpRequest, table_id: int, full: bool = False) -> Status[dict[str, str]]:
    """`?full=true`: a full re-sync (the whole timeline read again, the table listed from storage
    when it has no metadata table)."""
    table = table_of(request, table_id, permissions.SYNC)
    services.table_sync_request(table=table, user=user_of(request), full=full)
    return Status(202, {"detail": f"{'Full re-sync' if full else 'Sync'} of {table.name} queued."})


class InstantFilters(Schema):
    action: str = ""
    state: str = ""
    since: str = ""
    until: str = ""
    search: str = ""
    page: int = 1
    page_size: int = 50

    @field_validator("action")
    @classmethod
    def _action(cls, value: str) -> str:
        return one_of("action", value, ACTIONS)

    @field_validator("state")
    @classmethod
    def _state(cls, value: str) -> str:
        if value.upper() in selectors.STATES:  # requested, inflight, completed: either case
            return value.upper()
        return one_of("state", value, selectors.STATES)

    @field_validator("since", "until")
    @classmethod
    def _time(cls, value: str, info: ValidationInfo) -> str:
        return typed_time(str(info.field_name), value)


@router.get("/tables/{table_id}/instants", response={200: page_of(InstantOut), **ERRORS}, summary="Timeline")
def list_instants(request: HttpRequest, table_id: int, filters: Query[InstantFilters]) -> dict[str, Any]:
    """The table's instants newest first, with the timeline page's filters: `action`, `state`,
    `since`/`until` (instant-time prefixes, or dates `yyyy-mm-dd[Thh:mm[:ss]]` in the console's
    time zone, both inclusive), `search` (digits anywhere in the requested or completion time)."""
    table = table_of(request, table_id)
    found = selectors.timeline_rows(table, selectors.TimelineFilters(
        action=filters.action, state=filters.state, since=filters.since, until=filters.until, search=filters.search))
    return paged(found, filters.page, filters.page_size, instant_out)


class InstantQuery(Schema):
    partition: str = ""
    page: int = 1
    page_size: int = 50


@router.get("/tables/{table_id}/instants/{instant_id}", response={200: InstantDetail, 409: Problem, **ERRORS},
            summary="An instant with its decoded state files")
def get_instant(request: HttpRequest, table_id: int, instant_id: int, query: Query[InstantQuery]) -> dict[str, Any]:
    """Each state file decoded, up to CLEANLINE_INSTANT_INLINE_MAX_BYTES: a larger one has
    `too_large` and its `size` instead of `content`, and `download` streams it raw; when the
    newest is such a file of commit metadata, `write_stats` holds a page of its write stats
    (`page`, `page_size`, `partition`), read as a stream only as far as that page."""
    table = table_of(request, table_id)
    row = get_object_or_404(table.instants, pk=instant_id)
    contents = selectors.instant_contents(table, row)
    page_size = max(1, min(query.page_size, MAX_PAGE_SIZE))
    stats = selectors.write_stats_page(table, row, contents, partition=query.partition, page=query.page,
                                       page_size=page_size)
    return instant_out(row) | {
        "contents": [{"state": c.state, "file": c.file, "content": c.json_content(), "error": c.error, "size": c.size,
                      "too_large": not c.decoded,
                      "download": reverse("api:instant_file", args=[table.pk, row.pk, c.state.lower()])}
                     for c in contents],
        "write_stats": None if stats is None else {
            "page": stats.number, "page_size": stats.page_size, "partition": stats.partition,
            "has_next": stats.has_next, "count": stats.count, "items": [asdict(s) for s in stats.stats]}}


@router.get("/tables/{table_id}/instants/{instant_id}/files/{state}", response={200: None, **ERRORS},
            url_name="instant_file", summary="An instant's state file, raw",
            openapi_extra={"responses": {200: {"description": "the state file as Hudi wrote it",
                                                 "content": {"application/octet-stream": {
                                                     "schema": {"type": "string", "format": "binary"}}}}}})
def instant_file(request: HttpRequest, table_id: int, instant_id: int, state: str) -> FileResponse:
    """The state file (`requested`, `inflight` or `completed`) as Hudi wrote it, streamed."""
    table = table_of(request, table_id)
    row = get_object_or_404(table.instants, pk=instant_id)
    name, stream = selectors.state_file_reader(table, row, state)
    response = FileResponse(stream, as_attachment=True, filename=name, content_type="application/octet-stream")
    response.block_size = 1 << 20
    return response


@router.get("/tables/{table_id}/file-groups", response={200: FileGroupsOut, 409: Problem, **ERRORS},
            summary="File groups of a partition")
def file_groups(request: HttpRequest, table_id: int, partition: str | None = None) -> dict[str, Any]:
    table = table_of(request, table_id)
    partitions, chosen, groups = selectors.file_groups(table, partition)
    return {"partitions": partitions, "partition": chosen, "file_groups": [
        {**{k: v for k, v in g.items() if k != "slices"},
         "slices": [{"base_instant": s.base_instant, "files": list(s.files), "size": s.size,
                     "protected": s.protected} for s in g["slices"]]} for g in groups]}


class AuditFilters(Schema):
    action: str = ""
    user: str = ""
    table: str = ""
    page: int = 1
    page_size: int = 50

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        return whole_number("table", value)


@router.get("/audit", response={200: page_of(AuditOut), **ERRORS}, summary="Audit log", tags=["audit"])
def audit_log(request: HttpRequest, filters: Query[AuditFilters]) -> dict[str, Any]:
    """Newest first; `action` matches a prefix (e.g. `clean.`), `user` a username, `table` an id."""
    require(request)
    rows = selectors.audit_rows(action=filters.action, username=filters.user, table_id=filters.table)

    def out(event: AuditEvent) -> dict[str, Any]:
        return {"id": event.pk, "at": event.at, "username": event.username, "action": event.action,
                "table_id": event.table_id, "parameters": event.parameters, "result": event.result}

    return paged(rows, filters.page, filters.page_size, out)
