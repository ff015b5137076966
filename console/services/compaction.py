"""Compaction and clustering figures kept at sync time (issue 41), for the dashboard, the history,
the metrics and the alert rules (the Table services page reads the lake itself:
`console.selectors.table_services`). Stored on `Table.services` by every sync that changed
something:

- `delta_commits` and `counted_from`: the delta commits a writer's compaction trigger counts
  since the last compaction (the library's `delta_commits_since_compaction`, over the active
  timeline's writes as the sync's rows mirror them; None for a copy-on-write table or one with
  no delta commit);
- `pending`: the pending compactions, log compactions and clusterings (instant, action, kind,
  state), read from their plans on the timeline (no listing);
- `backlog`: log files, log bytes and file groups with log files on the latest file slices, from
  the listing the sync's figures were made from (`services/figures.py`: the metadata table at
  each changed sync, storage only at a full sync for a table without one), with where and when
  that listing was made.

Nothing here decides a Hudi rule: the library counts, this keeps what it counted."""

from __future__ import annotations

import logging
from typing import Any

from console.models import WRITE_ACTIONS, Table
from timeline import CleanlineError, FileSystemView, HudiTable, Instant, State, Timeline
from timeline.fsview import TableListing
from timeline.services import delta_commits_since_compaction, pending_services

logger = logging.getLogger(__name__)

MERGE_ON_READ = "MERGE_ON_READ"
TOP_PARTITIONS = 20  # the partitions kept with the backlog figures (most log bytes first)
# The actions of pending table services on a timeline: compaction, log compaction, clustering (a
# replacecommit on table version 6, whose plan says whether it is one; the library reads it).
SERVICE_ACTIONS = ("compaction", "logcompaction", "clustering", "replacecommit")


def backlog_figures(lake: HudiTable, view: FileSystemView) -> dict[str, Any] | None:
    """The compaction backlog of a merge-on-read table as `view` (the sync's listing) shows it:
    the log files and bytes on the latest file slices (those a snapshot read merges, as the
    library's view gives them), the file groups holding them, and the partitions with the most
    log bytes. Summed from the view the figures were made from, without reading the delta
    commits' write stats (the Table services page counts the delta commits per file group with
    the library's `compaction_backlog`). None for a copy-on-write table."""
    if lake.config.table_type.value != MERGE_ON_READ:
        return None
    partitions: dict[str, list[int]] = {}
    for piece in view.latest_slices():
        if piece.log_files:
            found = partitions.setdefault(piece.partition, [0, 0, 0])
            found[0] += 1
            found[1] += len(piece.log_files)
            found[2] += sum(max(0, log.size) for log in piece.log_files)
    top = sorted(partitions.items(), key=lambda p: (-p[1][2], p[0]))[:TOP_PARTITIONS]
    return {"log_files": sum(p[1] for p in partitions.values()), "log_bytes": sum(p[2] for p in partitions.values()),
            "file_groups": sum(p[0] for p in partitions.values()),
            "partitions": [[name, found[2], found[1], found[0]] for name, found in top]}


def service_figures(lake: HudiTable, table: Table, backlog: dict[str, Any] | None) -> dict[str, Any]:
    """What `Table.services` keeps (see the module's docstring), once the sync wrote the table's
    instant rows; `backlog` is this sync's (`backlog_figures`) or the one the last listing left.
    The delta commits are counted by the library over the active timeline's writes as the rows
    mirror them (no storage read: an incremental sync does not load the whole timeline); the
    pending services are read from their plans only when a row says one is pending. Never raises
    for the lake's sake: a table the library refuses keeps the reason under `error`."""
    figures: dict[str, Any] = {"table_type": lake.config.table_type.value, "backlog": backlog, "pending": [],
                               "delta_commits": None, "counted_from": None}
    active = table.instants.filter(archived=False)
    try:
        if lake.config.table_type.value == MERGE_ON_READ:
            writes = Timeline.of(Instant(t, a, State[s], c or None) for t, a, s, c in active.filter(
                action__in=WRITE_ACTIONS).values_list("requested_time", "action", "state", "completion_time"))
            counted = delta_commits_since_compaction(writes, lake.version)
            if counted is not None:
                figures |= {"delta_commits": counted.count, "counted_from": counted.since.requested_time}
        if active.filter(action__in=SERVICE_ACTIONS).exclude(state=State.COMPLETED.name).exists():
            figures["pending"] = [
                {"instant": p.instant.requested_time, "action": p.instant.action, "kind": p.kind.value,
                 "state": p.instant.state.name.lower(), "file_groups": len(p.file_groups)}
                for p in pending_services(lake, TableListing({}))]
    except CleanlineError as exc:
        logger.warning("%s: compaction figures unavailable: %s", lake.uri, exc)
        return figures | {"error": str(exc)[:500]}
    return figures


def services_refresh(*, table: Table, lake: HudiTable, backlog: dict[str, Any] | None) -> None:
    """Keep the table's compaction figures (`service_figures`) on its row, after its sync."""
    table.services = service_figures(lake, table, backlog)
    Table.objects.filter(pk=table.pk).update(services=table.services)
