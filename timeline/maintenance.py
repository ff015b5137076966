"""`HudiTable.maintenance`: every change Cleanline makes to a table, in the manner of
PyIceberg's `table.maintenance` and delta-rs's `vacuum(dry_run=...)`: plan first, then act.
Each action comes from the one module that holds its rule; this namespace only gathers them
and chooses the engine (the local one, or PySpark jobs for large tables) in one place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from timeline.clean.config import CleanConfig
from timeline.clean.planner import CleanPlan, plan_clean, plan_invalidations
from timeline.clean.retention import check_retention, retention_shortfall
from timeline.exceptions import InvalidInstantError
from timeline.instant import Instant
from timeline.transactions import Transactions

if TYPE_CHECKING:
    from timeline.archive.archiver import ArchivalOutcome
    from timeline.archive.plan import ArchivalPlan
    from timeline.clean.executor import CleanResult, ProgressCallback
    from timeline.doctor import DoctorSettings, RepairPlan, RepairResult
    from timeline.internal.plan_store import StoredPlan
    from timeline.locks.discovery import LockDiscovery
    from timeline.locks.live import LockDecision
    from timeline.restore import RestoreVerification
    from timeline.rollback import RollbackPreview
    from timeline.services.compactor import CompactionResult
    from timeline.services.schedule import CompactionSchedule
    from timeline.table import Table
    from timeline.versions.change import VersionChangePlan
    from timeline.versions.rehearse import Rehearsal

# The modules of the other actions are imported by the methods that use them: a command that
# only plans (`cleanline clean plan`) does not load the executor, the plan store, restore or
# rollback.


class Maintenance:
    """The table services of one table. `spark` (a SparkSession) runs planning and cleaning
    as PySpark jobs; without it they run in this process (a full plan of a table on a local disk in
`processes` forked processes: `timeline.internal.forks.local_processes`). Every change takes the table's Hudi
    lock when its writers lock, at the moments Hudi's table services take it
    (timeline/transactions.py). The lock is found from `options` (the call's writer options
    over those the table was opened with, its root's and `hoodie.properties`) and storage; with none
    known and a writer live, every change raises LiveWriterUnlocked unless `writers_stopped`
    (the caller's explicit word that no writer runs). `decisions` lists, per state change,
    the lock taken or the override used (`LockDecision`), for the plan, job and audit row."""

    def __init__(self, table: Table, *, spark: Any = None, options: Mapping[str, str] | None = None,
                 processes: int = 1, writers_stopped: bool = False) -> None:
        self.table = table
        self.spark = spark
        self.processes = processes
        self.writers_stopped = writers_stopped
        self.options = dict(options or {})
        self.transactions = Transactions(table, options, writers_stopped=writers_stopped)
        self._locked = self.transactions.state_change

    @property
    def decisions(self) -> list[LockDecision]:
        """How each state change so far went on: under which lock, or beside which live
        writers on the caller's word (`LockDecision.describe()` for an audit line)."""
        return list(self.transactions.decisions)

    def preflight(self) -> LockDecision:
        """What the next change would be taken with, without taking any lock: the lock found
        and the live writers seen. Raises LiveWriterUnlocked (naming the live instant) when a
        change would be refused now; the console can ask before it enqueues a job."""
        return self.transactions.decide()

    def lock(self) -> LockDiscovery:
        """The lock the table's writers use, where that came from and the effective settings
        (the same answer as `table.inspect.lock(options)`)."""
        return self.transactions.discover()

    # Cleaning

    def clean(self, config: CleanConfig | None = None, *, dry_run: bool = True, enforce_retention: bool = True,
              progress: ProgressCallback | None = None) -> CleanPlan:
        """Clean in one call, in the spirit of delta-rs's `vacuum(dry_run=...)`: the plan with
        `config` (the table's own clean settings, `hoodie.clean.*`, by default), the same
        `CleanPlan` the three steps return (`plan_clean`, `schedule_clean`, `run_cleans`). A dry
        run unless told: by default nothing is written; with `dry_run=False` a plan that deletes
        something is scheduled (the timeline re-read under the table's lock, PlanInvalidated if it
        changed) and run, and the plan returned is the one that ran. The console keeps the three
        steps, with an approval between the plan and the schedule."""
        config = config or CleanConfig.from_properties(self.table.config.props)
        plan = self.plan_clean(config, enforce_retention=enforce_retention)
        if dry_run:
            return plan
        instant = self.schedule_clean(plan, config)
        if instant is not None:
            self.run_cleans(instant=instant.requested_time, progress=progress)
        return plan

    def plan_clean(self, config: CleanConfig, *, now: datetime | None = None,
                   enforce_retention: bool = True, listing: str = "auto") -> CleanPlan:
        """The plan, with a reason for every file; writes nothing. With `enforce_retention`
        (the default) a configuration that keeps less than the table's own clean settings is
        refused (RetentionTooShort); without it such a plan carries a note saying so.
        `listing` (storage, metadata or auto: `timeline.mdt.listing.ListingSource`) is where the
        table is listed from, by this process or by the Spark engine: by default Hudi's choice
        (the metadata table when its `files` partition is available), as the CLI and the
        console list."""
        shortfall = retention_shortfall(self.table.config.props, config)
        if enforce_retention:
            check_retention(self.table.uri, self.table.config.props, config)
        if self.spark is not None:
            from timeline.spark.clean import plan_clean_spark

            plan = plan_clean_spark(self.spark, self.table.uri, config, now=now, source=listing, table=self.table)
        else:
            plan = plan_clean(self.table, config, now=now, processes=self.processes, source=listing)
        if shortfall is None:
            return plan
        return replace(plan, notes=(*plan.notes, f"retention check off: {shortfall}"))

    def plan_clean_stored(self, config: CleanConfig, folder: str, *, now: datetime | None = None,
                          enforce_retention: bool = True, listing: str = "auto") -> StoredPlan:
        """`plan_clean` into a plan store (a local folder or object-store prefix the engine's
        executors reach too): the file decisions are written there as Parquet where they are
        made, partition by partition; the plan returned holds only totals and per-partition
        sums. `listing` as for `plan_clean`."""
        from timeline.internal.plan_store import plan_clean_stored
        from timeline.internal.plan_store.files import store_settings

        shortfall = retention_shortfall(self.table.config.props, config)
        if enforce_retention:
            check_retention(self.table.uri, self.table.config.props, config)
        if self.spark is not None:
            from timeline.spark.clean import plan_clean_spark_stored

            plan = plan_clean_spark_stored(self.spark, self.table.uri, config, folder, now=now, source=listing,
                                           table=self.table)
        else:
            plan = plan_clean_stored(self.table, config, folder, now=now, s3=store_settings(folder, self.table.roots),
                                     source=listing)
        if shortfall is None:
            return plan
        return replace(plan, notes=(*plan.notes, f"retention check off: {shortfall}")).save()

    def revalidate(self, plan: CleanPlan) -> list[str]:
        """Why the timeline as it is now invalidates the plan (empty: it may be scheduled); the
        same check `schedule_clean` makes under the table's lock."""
        self.table.reload()
        return plan_invalidations(self.table, plan)

    def schedule_clean(self, plan: CleanPlan, config: CleanConfig, *, force: bool = False,
                       before_write: Callable[[str], None] | None = None) -> Instant | None:
        """`<t>.clean.requested` for a plan that deletes something; None otherwise. Under the
        table's lock the timeline is read again: a plan it invalidates raises PlanInvalidated.
        `before_write` is told `t` before the file is written (to find the clean after a crash)."""
        from timeline.clean.executor import schedule_clean

        with self._locked():
            return schedule_clean(self.table, plan, config, force=force, before_write=before_write)

    def run_cleans(self, *, instant: str | None = None, progress: ProgressCallback | None = None,
                   sizes: Mapping[str, int] | None = None) -> list[CleanResult]:
        """Run the pending cleans (or the one at `instant`), each checked again right before
        its first delete; the metadata table, when the table has one, is updated with each."""
        from timeline.clean.executor import run_pending_cleans

        if self.spark is not None:
            from timeline.spark.clean import run_pending_cleans_spark

            return run_pending_cleans_spark(self.spark, self.table.uri, instant=instant, progress=progress,
                                            sizes=sizes, guard=self._locked,
                                            table=self.table)
        return run_pending_cleans(self.table, instant=instant, progress=progress, sizes=sizes, guard=self._locked)

    # Compaction (merge-on-read)

    def compact(self, *, dry_run: bool = True) -> CompactionSchedule:
        """Schedule a compaction as Hudi's scheduler does with its default strategy
        (`timeline.services.schedule`), in the manner of `clean`: a dry run unless told, returning
        the plan either way. Refused (CompactionRefused, before any plan is written) for a table
        whose merge Cleanline cannot reproduce (`timeline.services.refusals`). With
        `dry_run=False` the plan is made again under the table's lock (as
        `BaseHoodieTableServiceClient.scheduleTableServiceInternal`) and written as
        `<t>.compaction.requested`; the plan returned is the one written (`scheduled` true), or
        one with no instant when there is nothing to compact (`reason`)."""
        from dataclasses import replace as with_values

        from timeline.services.schedule import plan_compaction, write_plan

        plan = plan_compaction(self.table, self.options)
        if dry_run or plan.instant is None:
            return plan
        with self._locked():
            plan = plan_compaction(self.table.reload(), self.options)
            if plan.instant is None:
                return plan
            write_plan(self.table, plan)
        return with_values(plan, scheduled=True)

    def run_compaction(self, *, instant: str | None = None,
                       after_file: Callable[[str], None] | None = None) -> CompactionResult:
        """Run the pending compaction at `instant` (the earliest pending one by default) with
        the local engine (`timeline.services.compactor`): a crashed run's inflight instant is
        rolled back to requested first (refused while its heartbeat is alive), its state changes
        and the metadata table's update are made under the table's lock."""
        from timeline.services.compactor import run_compaction

        return run_compaction(self.table, self.transactions, instant, options=self.options, after_file=after_file)

    # Savepoints, restore, rollback

    def create_savepoint(self, instant: str, *, user: str | None = None, comment: str = "") -> Instant:
        from timeline.savepoint import create_savepoint

        with self._locked():
            return create_savepoint(self.table, instant, user=user, comment=comment)

    def delete_savepoint(self, instant: str) -> None:
        from timeline.savepoint import delete_savepoint

        with self._locked():
            delete_savepoint(self.table, instant)

    def restore(self, savepoint: str) -> Instant:
        from timeline.restore import restore

        with self._locked():
            return restore(self.table, savepoint)

    def verify_restore(self, savepoint: str) -> RestoreVerification:
        from timeline.restore import verify_restore

        return verify_restore(self.table, savepoint)

    def plan_rollback(self, instant: str) -> RollbackPreview:
        """What rolling back any write on the active timeline deletes, if Hudi's sequence rule
        lets it go now (the latest completed commit, or the newest pending write)."""
        from timeline.rollback import check_not_running, check_rollback_sequence, plan_rollback

        target = next((i for i in self.table.reload().timeline if i.requested_time == instant), None)
        if target is None:
            raise InvalidInstantError(f"{self.table.uri}: no instant {instant} on the active timeline")
        check_not_running(self.table, target)
        check_rollback_sequence(self.table, target, options=self.options)
        return plan_rollback(self.table, target)

    def rollback(self, instant: str) -> Instant:
        from timeline.rollback import rollback

        with self._locked():
            return rollback(self.table, instant, options=self.options)

    def preview_rollback(self, instant: str) -> RollbackPreview:
        """What rolling back one failed write deletes; refused for anything else."""
        from timeline.rollback import preview_failed_write

        return preview_failed_write(self.table, instant, options=self.options)

    def rollback_failed_write(self, instant: str) -> Instant:
        from timeline.rollback import rollback_failed_write

        with self._locked():
            return rollback_failed_write(self.table, instant, options=self.options)

    def preview_rollback_failed_writes(self) -> list[RollbackPreview]:
        """What `rollback_failed_writes` deletes, newest first (refused whole if one cannot go)."""
        from timeline.rollback import preview_rollback_failed_writes

        return preview_rollback_failed_writes(self.table, options=self.options)

    def rollback_failed_writes(self) -> list[Instant]:
        from timeline.rollback import rollback_failed_writes

        with self._locked():
            return rollback_failed_writes(self.table, options=self.options)

    # Archival

    def plan_archival(self) -> ArchivalPlan:
        """What Hudi's archiver would move off the active timeline now and what holds the rest
        back (`timeline.archive.plan`), with this namespace's writer options."""
        from timeline.archive.plan import plan_archival

        return plan_archival(self.table, options=self.options)

    def archive(self, *, dry_run: bool = True, expected: Sequence[str] | None = None) -> ArchivalOutcome:
        """Archive in one call, as Hudi's `archive_commits` procedure does. A dry run unless told:
        by default the plan only (an `ArchivalOutcome` that archived nothing); with
        `dry_run=False`, under the table's lock, the timeline re-read and planned again
        (`expected`, the instants of an approved plan: ArchivalInvalidated unless the new plan
        moves exactly those) and its instants archived (`timeline.archive.archiver`), then the
        metadata table's own archival by its plan, under the same lock."""
        from timeline.archive.archiver import ArchivalOutcome, run_archival

        if dry_run:
            return ArchivalOutcome(self.plan_archival())
        with self._locked():
            return run_archival(self.table, options=self.options, expected=expected)

    # The doctor's repairs (timeline/doctor/)

    def plan_repair(self, kind: str, *, now: datetime | None = None,
                    settings: DoctorSettings | None = None) -> RepairPlan:
        """The repair of every finding of `kind`, before anything changes: exactly the files and
        instants it changes, with their bytes (`timeline.doctor.plan_repair`). The writer options
        given to `maintenance(options=...)` count as the doctor's settings' options."""
        from timeline.doctor import plan_repair

        return plan_repair(self.table, kind, now=now, settings=self._doctor_settings(settings))

    def repair(self, plan: RepairPlan, *, dry_run: bool = True, now: datetime | None = None,
               settings: DoctorSettings | None = None) -> RepairResult:
        """Run an approved repair plan under the table's lock, re-validated first
        (`timeline.doctor.run_repair`); every state change is in `decisions`. A dry run unless
        told: by default nothing changes and the result lists every planned change as skipped;
        `dry_run=False` runs it."""
        from timeline.doctor import run_repair

        return run_repair(self.table, plan, transactions=self.transactions, now=now,
                          settings=self._doctor_settings(settings), dry_run=dry_run)

    def _doctor_settings(self, settings: DoctorSettings | None) -> DoctorSettings:
        from dataclasses import replace as with_values

        from timeline.doctor import DoctorSettings

        settings = settings or DoctorSettings()
        return with_values(settings, options={**self.transactions.options, **settings.options})

    # Table version changes

    def change_version(self, to: int, *, dry_run: bool = True, drop_metadata_table: bool = False,
                       checkpoint: Callable[[str], None] | None = None) -> VersionChangePlan:
        """Move the table to table version `to` (6, 8 or 9) as Hudi's `UpgradeDowngrade` does,
        one step at a time under the table's lock (`timeline.versions.change`). A dry run unless
        told: the plan, the same `VersionChangePlan` a run returns; with `dry_run=False` an
        interrupted change is finished first, then the preflight's blockers refuse the change
        (VersionChangeRefused) or it runs. `drop_metadata_table`: drop the metadata table where a
        step would need Hudi to compact it or drop index partitions (refused otherwise)."""
        from timeline.versions.change import change_version

        return change_version(self.table, to, dry_run=dry_run, options=self.options,
                              drop_metadata_table=drop_metadata_table, checkpoint=checkpoint,
                              transactions=self.transactions)

    def rehearse_version_change(self, to: int, *, drop_metadata_table: bool = False, work_dir: str | None = None,
                                keep: bool = False) -> Rehearsal:
        """The same change run on a copy of the table (its `.hoodie` copied, its data files
        linked) and verified: timeline, file-system view, metadata table and hudi-rs's rows
        (`timeline.versions.rehearse`). Writes nothing to the table."""
        from timeline.versions.rehearse import rehearse

        return rehearse(self.table, to, options=self.options, drop_metadata_table=drop_metadata_table,
                        work_dir=work_dir, keep=keep)

    def drop_metadata_table(self, *, dry_run: bool = True) -> str:
        """The explicit repair action: remove `.hoodie/metadata` (Hudi writers rebuild it). A dry
        run unless told: by default nothing is removed; `dry_run=False` removes it. Returns the
        metadata table's folder (removed, or to remove) either way."""
        from timeline.mdt import drop_metadata_table

        folder = self.table.storage.uri(self.table.containment.meta_path("metadata"))
        if dry_run:
            return folder
        with self._locked():
            drop_metadata_table(self.table)
        return folder
