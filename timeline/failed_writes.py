"""Which pending writes have failed, as Hudi's table service client finds them before rolling
them back: the failed-writes policy (EAGER, LAZY, NEVER), the writers' heartbeats, and the
pending writes that are table services rather than writes (clustering). Rolling them back is
timeline/rollback.py."""

from __future__ import annotations

import time
from collections.abc import Mapping

from timeline.exceptions import FileNotFound
from timeline.instant import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    Instant,
    State,
)
from timeline.locks.discovery import call_options, root_options, writer_properties
from timeline.metadata.records import RequestedReplace
from timeline.table import Table

ROLLBACKABLE = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT})
# HoodieTimelineCleanupUtil.inflightWriteCommitsOlderThan's ingestion commits: the writes
# cleanup_stale_inflight_commits leaves alone unless include_ingestion_commits
INGESTION_ACTIONS = frozenset({COMMIT, DELTA_COMMIT})
EAGER, LAZY, NEVER = "EAGER", "LAZY", "NEVER"
POLICY_KEYS = ("hoodie.clean.failed.writes.policy", "hoodie.cleaner.policy.failed.writes")  # the name, the old one
MULTI_WRITER_MODES = frozenset({"OPTIMISTIC_CONCURRENCY_CONTROL", "NON_BLOCKING_CONCURRENCY_CONTROL"})


def failed_writes_policy(table: Table, options: Mapping[str, str] | None = None) -> str:
    """The failed-writes policy of the table's writers, as `HoodieWriteConfig.
    getFailedWritesCleanPolicy` reads it from a writer's own config: `options` (the call's, over
    those the table was opened with), then the root's (`HudiTable.open(uri, roots=...)`), then
    `hoodie.properties` (`writer_properties`'s layers; the key is a writer setting, seldom in
    `hoodie.properties`). The highest layer that sets either name of the key
    (`hoodie.clean.failed.writes.policy`, formerly `hoodie.cleaner.policy.failed.writes`) gives
    it; EAGER by default; LAZY whenever `hoodie.write.concurrency.mode` allows several writers
    (HoodieWriteConfig infers it: other writers' pending instants are alive until their
    heartbeats expire)."""
    props = writer_properties(table, options)
    if (props.get("hoodie.write.concurrency.mode") or "").strip().upper() in MULTI_WRITER_MODES:
        return LAZY
    _, root = root_options(table)
    for layer in (call_options(table, options), root, table.config.props):
        value = (layer.get(POLICY_KEYS[0]) or layer.get(POLICY_KEYS[1]) or "").strip()
        if value:
            return value.upper()
    return EAGER


def pending_writes(table: Table) -> list[Instant]:
    """getInflightTimelineExcludeCompactionAndClustering, newest first."""
    pending = [i for i in table.timeline.pending() if i.action in ROLLBACKABLE and not is_clustering(table, i)]
    return sorted(pending, key=lambda i: i.sort_key, reverse=True)


def failed_writes(table: Table, *, now_ms: int | None = None, options: Mapping[str, str] | None = None
                  ) -> list[Instant]:
    """Pending commits, deltacommits and replacecommits that failed, newest first, as
    BaseHoodieTableServiceClient.getInstantsToRollback finds them: under EAGER (the default,
    one writer) every one of them (a writer starting up rolls back all others); under LAZY
    those whose heartbeat (`.hoodie/.heartbeat/<t>`) is older than interval x tolerable misses
    (60,000 ms x 2 by default; a missing heartbeat counts as expired); none under NEVER. The
    policy is the writers' (`failed_writes_policy`: `options` over `hoodie.properties`).
    Under either policy a write whose heartbeat is alive is left alone (see `live_writes`).
    Compaction and clustering plans are never failed writes."""
    pending = pending_writes(table)
    policy = failed_writes_policy(table, options)
    if policy == NEVER or not pending:
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
    return [(i, max(0, (now - heartbeat_ms(table, i)) // 1000)) for i in pending_writes(table)
            if heartbeat_alive(table, i, now_ms)]


def heartbeat_alive(table: Table, instant: Instant, now_ms: int | None) -> bool:
    """HoodieHeartbeatClient.isHeartbeatExpired, negated: the heartbeat file was touched within
    interval x tolerable misses (60,000 ms x 2 by default); a missing one counts as expired."""
    props = table.config.props
    interval = int(props.get("hoodie.client.heartbeat.interval_in_ms", "60000"))
    misses = int(props.get("hoodie.client.heartbeat.tolerable.misses", "2"))
    now = int(time.time() * 1000) if now_ms is None else now_ms
    beat = heartbeat_ms(table, instant)
    return beat > 0 and now - beat <= interval * misses


def heartbeat_ms(table: Table, instant: Instant) -> int:
    """When the instant's heartbeat file (`.hoodie/.heartbeat/<t>`) was last touched, in epoch
    milliseconds; 0 when there is none."""
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


def is_table_service(table: Table, instant: Instant) -> bool:
    """A compaction, log compaction or clustering (also a table-version-6 replacecommit whose
    requested plan is a clustering, `ClusteringUtils.isClusteringInstant`): an instant Hudi's
    failed-writes rollback never takes (`getInflightTimelineExcludeCompactionAndClustering`)."""
    return instant.action in (COMPACTION, LOG_COMPACTION, CLUSTERING) or is_clustering(table, instant)


def keeps_plan(table: Table, target: Instant) -> bool:
    """Whether rolling back `target` keeps its plan: a pending compaction or clustering (also a
    table-version-6 replacecommit whose plan is a clustering) reverts to requested, as
    `HoodieTable.rollbackInflightCompaction` / `rollbackInflightClustering` do
    (`rollbackInflightInstant`: the rollback with deleteInstants=false, then
    `revertInstantFromInflightToRequested`), so that its plan runs again. A log compaction's
    instants go (`rollbackInflightLogCompaction`: deleteInstants=true), as a write's do."""
    if not target.is_pending:
        return False
    return target.action in (COMPACTION, CLUSTERING) or is_clustering(table, target)
