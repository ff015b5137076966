"""Publishing a write on the timeline: its commit metadata (write stats in Hudi's field order) and
its instant files — requested, inflight holding the workload profile, completed holding every
file's write stat — in the metadata format of the table version (v6 JSON, v8 Avro)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from timeline import metadata
from timeline.config import META_FOLDER
from timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant, State
from timeline.metadata.records import CommitMetadata, RequestedReplace
from timeline.spark.writer.model import Operation
from timeline.storage import Storage
from timeline.table import Table


def action(operation: Operation, is_mor: bool) -> str:
    """The action of a write: replacecommit for overwrites, else deltacommit or commit."""
    if operation.replaces:
        return REPLACE_COMMIT
    return DELTA_COMMIT if is_mor else COMMIT


def publish(table: Table, instant: Instant, content: Mapping[str, Any] | None) -> None:
    """Create one instant state file (never overwritten) in the table's metadata format."""
    if table.publish_check is not None:
        table.publish_check()  # LockLost: the table's lock is no longer ours, publish nothing
    layout = table.config.layout_version
    data = b"" if content is None else metadata.encode(content, action=instant.action, state=instant.state,
                                                       layout=layout)
    table.storage.write(Storage.join(table.base, table.config.timeline_folder, instant.file_name(layout)), data)


def _markers(table: Table, instant: str) -> str:
    return Storage.join(table.base, META_FOLDER, ".temp", instant)


def _remove_unlisted(table: Table, instant: str, written: set[str]) -> None:
    """Delete the data files of failed task attempts: marked, but in no write stat (Hudi's
    marker reconciliation before a commit)."""
    markers = _markers(table, instant)
    if not table.storage.exists(markers):
        return
    for marker in table.storage.list_recursive(markers):
        relative = marker.path[len(markers) + 1:].rsplit(".marker.", 1)[0]
        if relative not in written:
            table.storage.delete(Storage.join(table.base, relative))


def request(table: Table, requested: Instant) -> None:
    """Publish the requested instant (an overwrite's with its empty replace metadata)."""
    publish(table, requested, RequestedReplace.empty() if requested.action == REPLACE_COMMIT else None)


def start(table: Table, requested: Instant, workload: dict[str, Any]) -> Instant:
    """Publish the inflight instant holding the workload profile."""
    inflight = requested.at(State.INFLIGHT)
    publish(table, inflight, workload)
    return inflight


def complete(table: Table, inflight: Instant, content: dict[str, Any]) -> Instant:
    """Publish the completed instant (v8: with a fresh completion time), then drop its markers."""
    written = {stat.path for stat in CommitMetadata.from_raw(content).stats()}
    _remove_unlisted(table, inflight.requested_time, written)
    layout = table.config.layout_version
    completion = table.new_instant_time(after=inflight.requested_time) if layout >= 2 else None
    done = inflight.at(State.COMPLETED, completion)
    publish(table, done, content)
    table.storage.delete_dir(_markers(table, inflight.requested_time))
    return done
