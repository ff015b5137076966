"""Which pending writes have failed, as Hudi's table service client finds them before rolling
them back: the failed-writes policy (EAGER, LAZY, NEVER), the writers' heartbeats, and the
pending writes that are table services rather than writes (clustering). Rolling them back is
timeline/rollback.py."""

from __future__ import annotations

import time

from timeline.exceptions import FileNotFound
from timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT, Instant, State
from timeline.metadata.records import RequestedReplace
from timeline.table import Table

ROLLBACKABLE = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
MULTI_WRITER_MODES = frozenset({"OPTIMISTIC_CONCURRENCY_CONTROL", "NON_BLOCKING_CONCURRENCY_CONTROL"})


def failed_writes_policy(table: Table) -> str:
    """`hoodie.clean.failed.writes.policy` (old key `hoodie.cleaner.policy.failed.writes`),
    EAGER by default; LAZY whenever `hoodie.write.concurrency.mode` allows several writers
    (HoodieWriteConfig infers it: other writers' pending instants are alive until their
    heartbeats expire)."""
    props = table.config.props
    mode = (props.get("hoodie.write.concurrency.mode") or "").upper()
    if mode in MULTI_WRITER_MODES:
        return "LAZY"
    return (props.get("hoodie.clean.failed.writes.policy") or props.get("hoodie.cleaner.policy.failed.writes")
            or "EAGER").upper()


def pending_writes(table: Table) -> list[Instant]:
    """getInflightTimelineExcludeCompactionAndClustering, newest first."""
    pending = [i for i in table.timeline.pending() if i.action in ROLLBACKABLE and not is_clustering(table, i)]
    return sorted(pending, key=lambda i: i.sort_key, reverse=True)


def failed_writes(table: Table, *, now_ms: int | None = None) -> list[Instant]:
    """Pending commits, deltacommits and replacecommits that failed, newest first, as
    BaseHoodieTableServiceClient.getInstantsToRollback finds them: under EAGER (the default,
    one writer) every one of them (a writer starting up rolls back all others); under LAZY
    those whose heartbeat (`.hoodie/.heartbeat/<t>`) is older than interval x tolerable misses
    (60,000 ms x 2 by default; a missing heartbeat counts as expired); none under NEVER.
    Under either policy a write whose heartbeat is alive is left alone (see `live_writes`).
    Compaction and clustering plans are never failed writes."""
    pending = pending_writes(table)
    policy = failed_writes_policy(table)
    if policy == "NEVER" or not pending:
        return []
    # LAZY: only expired heartbeats. EAGER (one writer, which rolls back every other pending
    # write when it starts): Cleanline is not that writer, so a write whose heartbeat is alive
    # is never taken for failed either: its writer is still running (Cleanline keeps more
    # than Hudi here; `live_writes` says which and why).
    return [i for i in pending if not heartbeat_alive(table, i, now_ms)]


def live_writes(table: Table, *, now_ms: int | None = None) -> list[tuple[Instant, int]]:
    """Pending writes whose heartbeat is alive, newest first, with the heartbeat's age in
    seconds: never rolled back, whatever the failed-writes policy."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return [(i, max(0, (now - _heartbeat_ms(table, i)) // 1000)) for i in pending_writes(table)
            if heartbeat_alive(table, i, now_ms)]


def heartbeat_alive(table: Table, instant: Instant, now_ms: int | None) -> bool:
    """HoodieHeartbeatClient.isHeartbeatExpired, negated: the heartbeat file was touched within
    interval x tolerable misses (60,000 ms x 2 by default); a missing one counts as expired."""
    props = table.config.props
    interval = int(props.get("hoodie.client.heartbeat.interval_in_ms", "60000"))
    misses = int(props.get("hoodie.client.heartbeat.tolerable.misses", "2"))
    now = int(time.time() * 1000) if now_ms is None else now_ms
    beat = _heartbeat_ms(table, instant)
    return beat > 0 and now - beat <= interval * misses


def _heartbeat_ms(table: Table, instant: Instant) -> int:
    try:
        return table.storage.status(table.path(".hoodie", ".heartbeat", instant.requested_time)).mtime_ms
    except FileNotFound:
        return 0  # a missing heartbeat counts as expired


def is_clustering(table: Table, instant: Instant) -> bool:
    if instant.action != REPLACE_COMMIT:
        return False
    if State.REQUESTED not in table.timeline.files_of(instant):
        return False
    return table.read(instant, RequestedReplace, State.REQUESTED).is_clustering
