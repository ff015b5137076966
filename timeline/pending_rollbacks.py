"""Pending rollbacks finished as Hudi finishes them: of a write, of a pending compaction or
clustering (which then reverts to requested, `failed_writes.keeps_plan`), or of an instant whose
files are gone already. The rollback itself is timeline/rollback.py's."""

from __future__ import annotations

from collections.abc import Mapping

from timeline import transition
from timeline.failed_writes import ROLLBACKABLE, is_table_service, keeps_plan
from timeline.instant import DELTA_COMMIT, ROLLBACK, Instant, State
from timeline.mdt.reader import metadata_table
from timeline.mdt.writer import check_metadata_rollback
from timeline.rollback import (
    RollbackRefused,
    check_not_running,
    pending_rollback_of,
    plan_rollback,
    rollback,
    run_rollback,
)
from timeline.table import Table


def finish_rollback(table: Table, requested_time: str, *, options: Mapping[str, str] | None = None) -> Instant:
    """Finish the pending rollback of `requested_time` from its plan, as Hudi finishes one:
    of a write, `BaseHoodieTableServiceClient.rollback` with the pending rollback's plan
    (`rollbackFailedWrites` re-runs every pending rollback of a write, whatever the failed-writes
    policy); when the rolled-back instant's files are gone already (a rollback that died after
    deleting them), with that instant reconstructed from the plan, deleting no instant file;
    of a pending compaction or clustering, `keeps_plan`'s revert to requested; of a pending log
    compaction, its instant files go with it (`rollbackInflightLogCompaction`: deleteInstants).
    RollbackRefused when no rollback of it is pending."""
    table.reload()
    existing = pending_rollback_of(table, requested_time)
    if existing is None:
        raise RollbackRefused(f"{table.uri}: no pending rollback of {requested_time}")
    rollback_instant, plan = existing
    target = next((i for i in table.timeline if i.requested_time == requested_time and i.action != ROLLBACK), None)
    if target is not None and target.action in ROLLBACKABLE and not keeps_plan(table, target):
        return rollback(table, requested_time, options=options)  # a write: Hudi's sequence rule first
    table.ensure_intact()
    if target is None:
        ref = plan.instant_to_rollback
        target = Instant(requested_time, ref.action if ref is not None and ref.action else DELTA_COMMIT,
                         State.INFLIGHT)
    else:
        check_not_running(table, target)
    mdt = metadata_table(table)
    if mdt is not None:
        check_metadata_rollback(mdt, requested_time)
    return run_rollback(table, rollback_instant, plan, target, mdt)


def rollback_table_service(table: Table, requested_time: str, *, options: Mapping[str, str] | None = None
                           ) -> Instant:
    """Roll back an inflight compaction, log compaction or clustering as Hudi's
    `run_rollback_inflight_tableservice` and `cleanup_stale_inflight_commits` procedures do
    (`HoodieTable.rollbackInflightCompaction`, `rollbackInflightClustering`: `rollbackInflightInstant`,
    a rollback scheduled with deleteInstants=false, then `revertInstantFromInflightToRequested`;
    `rollbackInflightLogCompaction`: its instant files go with it). The files it wrote go (from
    its markers, else by listing: `plan_rollback(table_service=True)`, a compaction's base files
    only), the metadata table's part first as for a write, and a compaction or clustering is
    left requested with its plan as it was, to be run again. A pending rollback of it is
    finished instead (`getPendingRollbackInfo(..., false)`). Callers hold the table's lock.
    RollbackRefused when it is not an inflight table service, or its heartbeat is alive."""
    table.reload()
    if pending_rollback_of(table, requested_time) is not None:
        return finish_rollback(table, requested_time, options=options)
    target = next((i for i in table.timeline.pending() if i.requested_time == requested_time
                   and i.action != ROLLBACK), None)
    if target is None or not target.is_inflight or not is_table_service(table, target):
        raise RollbackRefused(f"{table.uri}: no inflight compaction, log compaction or clustering {requested_time} "
                              "on the active timeline")
    table.ensure_intact()
    check_not_running(table, target)
    mdt = metadata_table(table)
    if mdt is not None:  # before anything is deleted
        check_metadata_rollback(mdt, requested_time)
    plan = plan_rollback(table, target, table_service=True).plan
    rollback_instant = transition.request(table, ROLLBACK, plan.to_raw())
    return run_rollback(table, rollback_instant, plan, target, mdt)


__all__ = ["finish_rollback", "rollback_table_service"]
