"""Savepoints, restores and rollbacks of failed writes, run as jobs."""

from __future__ import annotations

import json
import time

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import F
from django.utils import timezone

from console.lake import open_table
from console.models import (
    Job,
    JobStatus,
    Table,
)
from console.services.audit import audit
from console.services.locks import check_table_free, table_lock
from console.services.queue import RUN_JOB, enqueue_on_commit
from console.services.refusals import Refused
from console.services.runs import _run_claim, _run_stopped
from console.services.tables import table_services, table_sync_after_change
from timeline import (
    CleanlineError,
    Progress,
)


def _stopped(writers_stopped: bool) -> dict[str, bool]:
    """The override as an audit parameter: present only when given."""
    return {"writers_stopped": True} if writers_stopped else {}


def savepoint_create(*, table: Table, user: User | None, instant_time: str, comment: str,
                     writers_stopped: bool = False) -> str:
    with table_lock(table, f"savepoint:{instant_time}"):
        try:
            done = table_services(table, writers_stopped=writers_stopped).create_savepoint(
                instant_time, user=user.get_username() if user else "cleanline", comment=comment)
        except CleanlineError as exc:
            audit(user=user, action="savepoint.refused", table=table, parameters={"instant": instant_time},
                  result=str(exc))
            raise ValidationError(str(exc)) from exc
    audit(user=user, action="savepoint.created", table=table,
          parameters={"instant": instant_time, "comment": comment, **_stopped(writers_stopped)})
    table_sync_after_change(table=table, files=False)
    return done.requested_time


def savepoint_delete(*, table: Table, user: User | None, instant_time: str, writers_stopped: bool = False) -> None:
    with table_lock(table, f"savepoint:{instant_time}"):
        try:
            table_services(table, writers_stopped=writers_stopped).delete_savepoint(instant_time)
        except CleanlineError as exc:
            raise ValidationError(str(exc)) from exc
    audit(user=user, action="savepoint.deleted", table=table,
          parameters={"instant": instant_time, **_stopped(writers_stopped)})
    table_sync_after_change(table=table, files=False)


def job_request(*, table: Table, user: User | None, kind: str, target: str, confirm_name: str | None = None,
                writers_stopped: bool = False, enqueue: bool = True) -> Job:
    """Queue a restore (the table's name typed as confirmation), the rollback of a failed
    write (its instant time typed; anything but a failed write is refused, as is a rollback
    plan naming a path outside the table), or the run of a pending clean found on the timeline
    (`clean.pending.run`): the job's row, and its task sent on commit. Every refusal is audited
    (`<kind>.refused`). `writers_stopped` (the admin's word that the table's Hudi writers are
    stopped) is recorded on the job and lets it go on beside a live writer when no lock is
    known. `enqueue=False`: no task is sent, the caller runs the job itself (`job_run`: tests)."""
    if kind == Job.Kind.CLEAN:
        check_table_free(table)
        job = Job.objects.create(table=table, kind=kind, target=target, requested_by=user,
                                 writers_stopped=writers_stopped)
        audit(user=user, action="clean.pending.run", table=table,
              parameters={"clean": target, "job": job.pk, **_stopped(writers_stopped)})
        return _queued(job, enqueue)
    try:
        if kind == Job.Kind.RESTORE and confirm_name != table.name:
            raise Refused(f"Type the table's name ({table.name}) to confirm the restore.",
                          api=f'Send "confirm": "{table.name}" (the table\'s name) to confirm the restore.')
        if kind == Job.Kind.ROLLBACK:
            if confirm_name != target:
                raise Refused(f"Type the failed write's instant time ({target}) to confirm the rollback.",
                              api=f'Send "confirm": "{target}" (the failed write\'s instant time) to confirm the '
                                  'rollback.')
            try:
                table_services(table).preview_rollback(target)
            except CleanlineError as exc:
                raise ValidationError(str(exc)) from exc
        try:  # a live writer with no lock known: refused now, not by the job once it runs
            table_services(table, writers_stopped=writers_stopped).preflight()
        except CleanlineError as exc:
            raise ValidationError(str(exc)) from exc
        check_table_free(table)
    except ValidationError as exc:
        audit(user=user, action=f"{kind}.refused", table=table, parameters={"target": target},
              result="; ".join(exc.messages))
        raise
    job = Job.objects.create(table=table, kind=kind, target=target, requested_by=user, writers_stopped=writers_stopped)
    audit(user=user, action=f"{kind}.requested", table=table,
          parameters={"target": target, "job": job.pk, **_stopped(writers_stopped)})
    return _queued(job, enqueue)


def _queued(job: Job, enqueue: bool) -> Job:
    if enqueue:
        enqueue_on_commit(RUN_JOB, job)
    return job


def job_holder(job: Job) -> str:
    """What holds the table's lock while the job runs."""
    return f"{job.kind}:{job.pk}"


def job_run(*, job: Job, task_id: str = "") -> Job:
    """Run a queued restore or rollback under the table lock; a re-run resumes it (the library
    resumes pending restores and rollbacks). A restore is checked afterwards: the latest file
    slices must be those the table had as of the savepoint."""
    table = job.table
    with table_lock(table, job_holder(job)) as lease, _run_claim(
            job, lease, ready=(JobStatus.QUEUED, JobStatus.RUNNING), failed_action=f"{job.kind}.failed",
            task_id=task_id, error="") as mine:
        if mine is None:  # an earlier run settled it: nothing to do
            job.refresh_from_db()
            return job
        lake = open_table(table.path)
        had_metadata_table = lake.config.metadata_table_enabled
        last = [0.0]

        def progress(p: Progress) -> None:  # a clean's files, on the row at most twice a second
            if time.monotonic() - last[0] > 0.5 or p.files_done == p.files_total:
                last[0] = time.monotonic()
                mine.update(progress_done=p.files_done, progress_total=p.files_total)

        result: dict[str, object]
        try:
            services = table_services(table, lake, writers_stopped=job.writers_stopped)
            if job.kind == Job.Kind.CLEAN:
                (done_clean,) = services.run_cleans(instant=job.target, progress=progress)
                result = {"deleted": done_clean.deleted, "already_gone": done_clean.already_gone,
                          "failed": done_clean.failed, "bytes": done_clean.bytes_deleted}
            elif job.kind == Job.Kind.RESTORE:
                # the metadata table goes only where Hudi deletes it too (the preview says so); otherwise refused
                mine.update(progress_total=len(lake.inspect.restore_preview(job.target).instants))
                done = services.restore(job.target)
                check = table_services(table).verify_restore(job.target)
                result = {"restore": done.requested_time, "verified": check.verified,
                          "missing": list(check.missing[:50]), "unexpected": list(check.unexpected[:50]),
                          "metadata_table_dropped": had_metadata_table and not lake.reload().config.metadata_partitions}
            else:
                done = services.rollback_failed_write(job.target)
                result = {"rollback": done.requested_time, "metadata_table_updated": lake.config.metadata_table_enabled}
            result["lock"] = [decision.describe() for decision in services.decisions]  # how each change went on
        except CleanlineError as exc:
            if mine.update(status=JobStatus.FAILED, error=str(exc), finished_at=timezone.now()):
                audit(user=None, action=f"{job.kind}.failed", table=table, parameters={"job": job.pk}, result=str(exc))
            else:
                _run_stopped(job, f"{job.kind}.stopped", lease, f"lost the table's lock, then: {exc}")
            job.refresh_from_db()
            return job
        completed = mine.update(status=JobStatus.COMPLETED, result=result, finished_at=timezone.now(),
                                progress_done=F("progress_total") if job.kind != Job.Kind.ROLLBACK else 1,
                                **({"progress_total": 1} if job.kind == Job.Kind.ROLLBACK else {}))
    if not completed:
        _run_stopped(job, f"{job.kind}.stopped", lease, "lost the table's lock to another run; recorded nothing")
        job.refresh_from_db()
        return job
    audit(user=None, action=f"{job.kind}.completed", table=table, parameters={"job": job.pk, "target": job.target},
          result=json.dumps(result))
    table_sync_after_change(table=table, files=True)  # the pages show what the run changed at once
    job.refresh_from_db()
    return job


def metadata_table_drop(*, table: Table, user: User | None, confirm_name: str | None,
                        writers_stopped: bool = False) -> list[str]:
    """The repair action: delete the table's metadata table (Hudi writers rebuild it), with the
    table's name typed as confirmation, under the table's lock (and the Hudi lock its writers
    share); audited with the partitions that were dropped. Returns them."""
    if confirm_name != table.name:
        raise ValidationError(f"Type the table's name ({table.name}) to confirm dropping its metadata table.")
    with table_lock(table, f"metadata-table-drop:{user.get_username() if user else 'system'}"):
        try:
            maintenance = table_services(table, writers_stopped=writers_stopped)
        except CleanlineError as exc:
            raise ValidationError(str(exc)) from exc
        config = maintenance.table.config
        partitions = list(config.metadata_partitions) + list(config.metadata_partitions_inflight)
        if not partitions:
            raise ValidationError(f"{table.name} has no metadata table.")
        try:
            maintenance.drop_metadata_table(dry_run=False)
        except CleanlineError as exc:
            audit(user=user, action="metadata_table.drop.failed", table=table, parameters={"partitions": partitions},
                  result=str(exc))
            raise ValidationError(str(exc)) from exc
    Table.objects.filter(pk=table.pk).update(metadata_table_enabled=False)
    audit(user=user, action="metadata_table.dropped", table=table,
          parameters={"partitions": partitions, **_stopped(writers_stopped)})
    return partitions
