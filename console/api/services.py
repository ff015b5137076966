"""Table services over the API (issue 41): a table's pending compactions, log compactions and
clusterings with their plans, its compaction backlog and its metadata table's compaction, and
why no compaction is scheduled, read from the lake now with the table's writers' options
(`console.selectors.table_services`), exactly as `cleanline compaction show --json` and
`cleanline compaction why --json` print them. Both only read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from console.api.schemas import Problem
from console.api.tables import ERRORS, table_of
from console.selectors import table_services as selectors

router = Router(tags=["table services"])


class ServicesOut(Schema):
    table_id: int
    read_at: datetime
    services: dict[str, Any]


class WhyOut(Schema):
    table_id: int
    read_at: datetime
    why: dict[str, Any]


@router.get("/tables/{table_id}/services", response={200: ServicesOut, 409: Problem, **ERRORS},
            summary="A table's services and compaction backlog")
def services(request: HttpRequest, table_id: int) -> dict[str, Any]:
    """`services` as `cleanline compaction show --json` prints it: `pending` (each compaction, log
    compaction and clustering with its `instant`, `kind`, `strategy`, `ageSeconds`,
    `heartbeatAgeSeconds` and plan `slices`; here also `heartbeat`: alive, expired or none, and
    `stuck`: the table doctor's stuck-table-service finding about it, from the last sync's check),
    `deltaCommitsSinceCompaction` with `countedFrom`, `backlog` (log files and bytes per partition
    and per file group) and `metadataTable` (its compaction state; null without one). 409 when the
    table cannot be read."""
    return selectors.services_json(table_of(request, table_id))


@router.get("/tables/{table_id}/services/why", response={200: WhyOut, 409: Problem, **ERRORS},
            summary="Why nothing is compacting")
def why(request: HttpRequest, table_id: int) -> dict[str, Any]:
    """`why` as `cleanline compaction why --json` prints it: `wouldSchedule`, the `candidate`
    instant time, the `settings` read, the trigger's count, the file groups a plan would take
    (`compactable`) and every reason (`kind`, `blocking`, `why`, `change`: what would change it,
    `setting` or `instant` it names, the Hudi `rule`). 409 when the table cannot be read."""
    return selectors.why_json_of(table_of(request, table_id))
