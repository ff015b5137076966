"""Races, locks and stuck states in the console, on real processes: twenty approvals of one
plan at once (SQLite and PostgreSQL), Celery workers on Redis paused with SIGSTOP while a
re-delivered copy of their task arrives, the table lock's expiry, take-over and owner-only
release, the stale-lock page, a busy table at run time, syncs that meet bad metadata or any
error, and every page of a table whose folder was removed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console import services
from console.models import AuditEvent, CleanPlan, Job, JobStatus, SyncStatus, Table, TableLock
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, login, person, wait_for
from timeline import HudiTable

ROOT = Path(__file__).resolve().parents[3]
POSTGRES_URL = os.environ.get("CLEANLINE_TEST_POSTGRES_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres")



def registered(path: Path) -> Table:
    """The table registered and synced here, in the test's process (no sync queued)."""
    table = services.table_register(path=str(path), user=None, enqueue=False)
    services.table_sync(table=table)
    return table


def drafted(table: Table) -> CleanPlan:
    """A draft plan built here, in the test's process (no build queued): a worker started later
    gets only the tasks the test sends."""
    plan = services.plan_request(table=table, user=person("op", "operator"), overrides=SHORT_RETENTION,
                                 enqueue=False)
    plan = services.plan_build(plan=plan)
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    return plan


def timeline_names(table: Table) -> list[str]:
    """The file names in the table's timeline folder (.hoodie/timeline for v8+, .hoodie for v6)."""
    base = Path(table.path.removeprefix("file:")) / ".hoodie"
    folder = base / "timeline" if (base / "timeline").is_dir() else base
    return sorted(p.name for p in folder.iterdir() if p.is_file())


def completed_cleans(table: Table, instant: str) -> list[str]:
    return [n for n in timeline_names(table) if n.startswith(instant) and n.endswith(".clean")]


def events(table: Table, action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(table=table, action=action).order_by("pk"))


def database_url() -> str:
    """The URL of the database this test uses (the test database), for other processes."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return (f"postgres://{quote(s['USER'])}:{quote(s['PASSWORD'])}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/"
            f"{quote(s['NAME'])}")


# Approvals

APPROVERS = r"""
import json, os, sys, time
import django
django.setup()
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connections
from console import services
from console.models import CleanPlan

plan_id, user_id, count, go, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
user = User.objects.get(pk=user_id)
plan = CleanPlan.objects.select_related("table").get(pk=plan_id)  # every request saw the plan as a draft
connections.close_all()
children = []
for i in range(count):
    pid = os.fork()
    if pid == 0:
        while not os.path.exists(go):
            time.sleep(0.001)
        try:
            outcome = {"status": services.plan_approve(plan=plan, user=user).status}
        except ValidationError as exc:
            outcome = {"refused": "; ".join(exc.messages)}
        except BaseException as exc:
            outcome = {"crashed": f"{type(exc).__name__}: {exc}"}
        with open(f"{out}/{i}.json", "w") as f:
            json.dump(outcome, f)
        os._exit(0)
    children.append(pid)
print("ready", flush=True)
sys.exit(max(os.waitpid(pid, 0)[1] for pid in children))
"""


def test_hardening_approve_concurrent_exactly_one_wins(transactional_db, settings, tmp_path: Path,
                                                       table_copy) -> None:
    """Twenty approvals of one draft in twenty processes released at once: one APPROVED, one
    requested clean on the timeline, every other approval refused with a clear reason."""
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = registered(table_copy("sample_table/cow/v9_txns_simple_nometa"))
    plan = drafted(table)
    requested_before = [n for n in timeline_names(table) if n.endswith(".clean.requested")]
    go, out = tmp_path / "go", tmp_path / "outcomes"
    out.mkdir()
    env = {**os.environ, "DATABASE_URL": database_url(), "DJANGO_SETTINGS_MODULE": "console.settings",
           "CLEANLINE_ALLOWED_ROOTS": str(tmp_path)}
    launcher = subprocess.Popen([sys.executable, "-c", APPROVERS, str(plan.pk), str(person("boss", "admin").pk), "20",
                                 str(go), str(out)], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    assert launcher.stdout is not None and launcher.stdout.readline().strip() == "ready"
    go.touch()
    assert launcher.wait(timeout=120) == 0
    outcomes = [json.loads(p.read_text()) for p in sorted(out.iterdir())]
    assert len(outcomes) == 20
    assert [o for o in outcomes if "status" in o] == [{"status": ApprovalStatus.APPROVED}], outcomes
    refusals = [o.get("refused", str(o)) for o in outcomes if "status" not in o]
    assert all("already being approved" in r or "Only a draft plan can be approved; this one is approved" in r
               for r in refusals), refusals
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.APPROVED and plan.clean_instant
    requested = [n for n in timeline_names(table) if n.endswith(".clean.requested")]
    assert len(requested) == len(requested_before) + 1 and requested.count(f"{plan.clean_instant}.clean.requested") == 1
    assert len(events(table, "clean.plan.approved")) == 1
    assert not TableLock.objects.filter(table=table).exists()


def test_hardening_approve_concurrent_on_postgres() -> None:
    """The same twenty approvals against PostgreSQL (a test database of this test's own)."""
    url = POSTGRES_URL.rsplit("/", 1)[0] + "/cleanline_races"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--create-db",
                          f"{Path(__file__).relative_to(ROOT)}::test_hardening_approve_concurrent_exactly_one_wins"],
                         cwd=ROOT, env={**os.environ, "DATABASE_URL": url}, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]


@pytest.mark.django_db
def test_hardening_approve_failure_returns_the_claim_to_draft(console_table, tmp_path: Path) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    plan = drafted(table)
    shutil.rmtree(Path(table.path.removeprefix("file:")) / ".hoodie")
    with pytest.raises(ValidationError, match="not a Hudi table"):
        services.plan_approve(plan=plan, user=person("boss", "admin"))
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and "not a Hudi table" in plan.error and plan.decided_by is None
    assert not TableLock.objects.filter(table=table).exists()


# Celery workers paused while a re-delivered copy of their task arrives

def result_state(task_id: str) -> tuple[str, object]:
    from console.celery import app

    result = app.AsyncResult(task_id)
    return result.state, result.result


def approved_on_worker(start_worker, settings, tmp_path: Path, table_copy, **env: str):  # type: ignore[no-untyped-def]
    """An approved plan, its clean sent to a first worker (cleaning on Spark, whose start-up
    gives the test time to pause it) and paused with SIGSTOP once it claimed the plan; then
    the broker's 3 s visibility timeout is let pass, so that the next worker started gets a
    copy of the task as soon as it starts (Redis's transport looks for such messages then)."""
    from console.tasks import run_clean_plan

    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = registered(table_copy("sample_table/mor/avro/v9_txns_simple_nometa"))
    plan = services.plan_approve(plan=drafted(table), user=person("boss", "admin"))
    first = start_worker(spark=True, **env)
    sent, sent_at = run_clean_plan.delay(plan.pk), time.monotonic()
    wait_for(lambda: CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.RUNNING, 120,
             "the first worker's claim")
    os.killpg(first.pid, signal.SIGSTOP)
    token = TableLock.objects.get(table=table).token
    assert token and not completed_cleans(table, plan.clean_instant)
    time.sleep(max(0.0, sent_at + 4 - time.monotonic()))
    return table, plan, first, sent.id, token


def test_hardening_redelivered_clean_waits_while_the_paused_worker_holds_a_live_lock(
        start_worker, settings, tmp_path: Path, table_copy) -> None:
    """Paused for less than the lock's expiry: the re-delivered copy finds the table busy and
    retries; the first worker, resumed, completes the clean; the copy then does nothing."""
    env = {"CLEANLINE_LOCK_EXPIRY_SECONDS": "30", "CLEANLINE_BUSY_RETRY_SECONDS": "0.5",
           "CLEANLINE_BUSY_RETRY_MAX_SECONDS": "1", "CLEANLINE_BUSY_MAX_RETRIES": "200"}
    table, plan, first, task_id, token = approved_on_worker(start_worker, settings, tmp_path, table_copy, **env)
    try:
        start_worker(**env)  # cleans in-process
        wait_for(lambda: result_state(task_id)[0] == "RETRY", 60, "the re-delivered copy to find the table busy")
        assert CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.RUNNING
        assert TableLock.objects.get(table=table).token == token  # not taken over
        assert not completed_cleans(table, plan.clean_instant)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    wait_for(lambda: CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.COMPLETED, 180, "the resumed clean")
    settled = [time.monotonic()]

    def copy_settled() -> bool:  # the copy's retries stopped: it found the plan completed and did nothing
        if result_state(task_id)[0] != "SUCCESS":
            settled[0] = time.monotonic()
        return time.monotonic() - settled[0] > 3
    wait_for(copy_settled, 60, "the copy to see the completed plan")
    assert first.poll() is None
    plan.refresh_from_db()
    assert plan.run_token == token and plan.progress_done == plan.files_to_delete
    assert len(completed_cleans(table, plan.clean_instant)) == 1
    assert len(events(table, "clean.run.completed")) == 1
    assert not events(table, "clean.run.failed") and not events(table, "clean.run.stopped")
    assert not events(table, "table.lock.taken-over") and not TableLock.objects.filter(table=table).exists()


def test_hardening_redelivered_clean_takes_over_from_a_worker_paused_past_the_lock_expiry(
        start_worker, settings, tmp_path: Path, table_copy) -> None:
    """Paused for longer than the lock's expiry: the re-delivered copy takes the table over and
    finishes the clean; the first worker, resumed, notices it lost the table and writes nothing."""
    env = {"CLEANLINE_LOCK_EXPIRY_SECONDS": "3", "CLEANLINE_BUSY_RETRY_SECONDS": "0.5",
           "CLEANLINE_BUSY_RETRY_MAX_SECONDS": "1", "CLEANLINE_BUSY_MAX_RETRIES": "200"}
    table, plan, first, task_id, token = approved_on_worker(start_worker, settings, tmp_path, table_copy, **env)
    try:
        start_worker(**env)
        wait_for(lambda: CleanPlan.objects.get(pk=plan.pk).status == ApprovalStatus.COMPLETED, 120,
                 "the copy to take over and finish the clean")
        (taken,) = events(table, "table.lock.taken-over")
        assert taken.parameters["previous_token"] == token and taken.parameters["holder"] == f"clean-plan:{plan.pk}"
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    wait_for(lambda: bool(events(table, "clean.run.stopped")), 180, "the resumed worker to notice it lost the table")
    (stopped,) = events(table, "clean.run.stopped")
    assert stopped.parameters["token"] == token
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED and plan.run_token != token
    assert plan.progress_done == plan.files_to_delete
    assert len(completed_cleans(table, plan.clean_instant)) == 1
    assert len(events(table, "clean.run.completed")) == 1 and not events(table, "clean.run.failed")
    assert not HudiTable.open(table.path).timeline.cleans().pending()
    assert not TableLock.objects.filter(table=table).exists()


# The lock itself

def dead_lock(table: Table, holder: str = "restore:1", token: str = "dead-run") -> TableLock:
    """The row a worker that died holding the table leaves behind: no heartbeat for a while."""
    past = timezone.now() - timedelta(seconds=600)
    return TableLock.objects.create(table=table, holder=holder, token=token, heartbeat_at=past, expires_at=past)


def closing(work: Callable[[], object]) -> object:
    """`work`'s result or exception, on a thread of its own (another run, with its own
    database connection, closed after)."""
    try:
        return work()
    except Exception as exc:
        return exc
    finally:
        connection.close()


def in_thread(work: Callable[[], object]) -> object:
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(closing(work)))
    thread.start()
    thread.join(60)
    return outcome[0]


def test_hardening_lock_live_holder_is_not_taken_over_and_release_is_owner_only(
        transactional_db, console_table, settings) -> None:
    settings.CLEANLINE_LOCK_EXPIRY_SECONDS = 1.0
    table = console_table("sample_table/cow/v9_txns_simple_nometa")

    def other_run() -> str:
        with services.table_lock(table, "clean-plan:7") as lease:  # e.g. a re-delivered copy of the same task
            return lease.token

    with services.table_lock(table, "clean-plan:7") as first:
        for _ in range(2):  # also after twice the expiry: the heartbeat keeps the lock alive
            refused = in_thread(other_run)
            assert isinstance(refused, services.TableBusy) and "busy: clean-plan:7" in str(refused)
            time.sleep(1.0)
        assert TableLock.objects.get(table=table).token == first.token
        first.stop()  # the run stops heartbeating (a paused or dead worker) ...
        time.sleep(1.2)  # ... and its lock expires
        second = in_thread(other_run)
        assert isinstance(second, str) and second != first.token
        with pytest.raises(services.LockLost):
            first.check(now=True)
        (taken,) = events(table, "table.lock.taken-over")
        assert taken.parameters["previous_token"] == first.token and taken.parameters["token"] == second
        with services.table_lock(table, "savepoint:1") as third:  # the second released its own lock
            assert TableLock.objects.get(table=table).token == third.token
        assert not TableLock.objects.filter(table=table).exists()
        mine = TableLock.objects.create(table=table, holder="restore:2", token="someone-else",
                                        heartbeat_at=timezone.now(), expires_at=timezone.now() + timedelta(minutes=5))
    assert TableLock.objects.get(table=table).token == mine.token  # the first's release took only its own lock


def test_hardening_lock_expired_is_taken_over_by_exactly_one_of_many(transactional_db, console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    dead_lock(table)
    services.check_table_free(table)  # an expired lock counts as free
    barrier = threading.Barrier(8)
    holding = threading.Event()

    def take() -> str:
        barrier.wait()
        with services.table_lock(table, "rollback:3") as lease:
            holding.wait(5)
            return lease.token

    outcomes: list[object] = []
    threads = [threading.Thread(target=lambda: outcomes.append(closing(take))) for _ in range(8)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(outcomes) == 7, 60, "the losers")
    holding.set()
    for thread in threads:
        thread.join(60)
    winners = [o for o in outcomes if isinstance(o, str)]
    assert len(winners) == 1 and all(isinstance(o, services.TableBusy) for o in outcomes if o not in winners)
    (taken,) = events(table, "table.lock.taken-over")
    assert taken.parameters["previous_token"] == "dead-run" and taken.parameters["token"] == winners[0]


@pytest.mark.django_db
def test_hardening_lock_page_shows_live_lock_and_breaks_a_stale_one(console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    overview, breaking = reverse("console:overview", args=[table.pk]), reverse("console:lock_break", args=[table.pk])
    viewer, admin = login("viewer"), Client(enforce_csrf_checks=True)
    admin.force_login(person("boss", "admin"))
    with services.table_lock(table, "restore:5") as lease:
        page = viewer.get(overview).content.decode()
        assert "Busy:" in page and "restore:5" in page and "last heartbeat" in page and "Break the lock" not in page
        admin.get(overview)
        live = admin.post(breaking, {"token": lease.token, "csrfmiddlewaretoken": admin.cookies["csrftoken"].value},
                          follow=True)
        assert "only an expired lock can be broken" in live.content.decode()
        assert TableLock.objects.filter(token=lease.token).exists()
    lock = dead_lock(table)
    assert "Stale lock:" in viewer.get(overview).content.decode()
    assert "Break the lock" in admin.get(overview).content.decode()
    assert viewer.post(breaking, {"token": lock.token}).status_code == 403
    assert login("operator").post(breaking, {"token": lock.token}).status_code == 403
    outsider = Client()
    outsider.force_login(User.objects.create_user("nobody", password="pw"))
    assert outsider.post(breaking, {"token": lock.token}).status_code == 404
    assert admin.get(breaking).status_code == 405
    assert admin.post(breaking, {"token": lock.token}).status_code == 403  # no CSRF token
    assert TableLock.objects.filter(table=table).exists()
    done = admin.post(breaking, {"token": lock.token, "csrfmiddlewaretoken": admin.cookies["csrftoken"].value})
    assert done.status_code == 302 and not TableLock.objects.filter(table=table).exists()
    (broken,) = events(table, "table.lock.broken")
    assert broken.username == "boss" and broken.parameters["holder"] == "restore:1"
    assert broken.parameters["token"] == "dead-run" and broken.parameters["age_seconds"] >= 0


# A busy table at run time

def test_hardening_busy_table_at_run_time_retries_then_fails_with_the_reason(
        start_worker, settings, tmp_path: Path, table_copy) -> None:
    from console.tasks import run_clean_plan, run_job

    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    table = registered(table_copy("sample_table/cow/v9_txns_simple_nometa"))
    plan = services.plan_approve(plan=drafted(table), user=person("boss", "admin"))
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target="20990101000000000")
    start_worker(CLEANLINE_BUSY_RETRY_SECONDS="0.2", CLEANLINE_BUSY_RETRY_MAX_SECONDS="0.4",
                 CLEANLINE_BUSY_MAX_RETRIES="3")
    with services.table_lock(table, "restore:99"):  # queued while the table was free, busy when they run
        plan_task, job_task = run_clean_plan.delay(plan.pk), run_job.delay(job.pk)
        wait_for(lambda: result_state(plan_task.id)[0] == "RETRY", 60, "a retry")
        assert plan_task.get(timeout=60) == "failed" and job_task.get(timeout=60) == "failed"
    plan.refresh_from_db()
    job.refresh_from_db()
    for row in (plan, job):
        assert row.status == "failed" and "Gave up after 3 retries" in row.error and "busy: restore:99" in row.error
    (plan_failed,) = events(table, "clean.run.failed")
    (job_failed,) = events(table, "rollback.failed")
    assert plan_failed.parameters == {"plan": plan.pk} and "busy: restore:99" in plan_failed.result
    assert job_failed.parameters == {"job": job.pk} and "busy: restore:99" in job_failed.result
    assert not Job.objects.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)).exists()


# Syncs never stay running

def test_hardening_sync_with_non_numeric_metadata_and_any_failure_is_recorded(
        settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, table_copy, db) -> None:
    from console.celery import app
    from console.tasks import sync_table

    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    path = table_copy("sample_table/cow/v6_nonpartitioned")
    first, second = sorted((path / ".hoodie").glob("*.commit"))
    first.write_text(first.read_text().replace('"numWrites" : 3', '"numWrites" : "lots"', 1))
    table = services.table_register(path=str(path), user=None)
    sync_table.delay(table.pk)
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.OK, table.sync_error
    assert table.instants.get(requested_time=first.name.split(".")[0], action="commit").records == 0
    assert table.instants.get(requested_time=second.name.split(".")[0], action="commit").records > 0
    # Any error, not only the library's, leaves the sync FAILED with the message.
    other = services.table_register(path=str(table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")), user=None)
    commit = sorted(Path(other.path.removeprefix("file:"), ".hoodie").glob("*.commit"))[0]
    content = json.loads(commit.read_text())
    content["partitionToWriteStats"] = {"p": ["not a write stat"]}
    commit.write_text(json.dumps(content))
    sync_table.delay(other.pk)
    other.refresh_from_db()
    assert other.sync_status == SyncStatus.FAILED and other.sync_error.startswith("AttributeError: ")


# A table whose folder was removed

@pytest.mark.django_db
def test_hardening_pages_of_a_table_whose_folder_is_gone_never_fail(console_table,
                                                                    django_capture_on_commit_callbacks) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    plan = drafted(table)
    commit = table.instants.filter(action="commit", state="COMPLETED").order_by("requested_time").first()
    assert commit is not None
    job = Job.objects.create(table=table, kind=Job.Kind.ROLLBACK, target="20990101000000000")
    shutil.rmtree(Path(table.path.removeprefix("file:")))
    admin = Client()
    admin.force_login(person("boss", "admin"))
    reads_the_lake = [reverse("console:instant", args=[table.pk, commit.pk]),
                      reverse("console:file_groups", args=[table.pk]), reverse("console:savepoints", args=[table.pk]),
                      reverse("console:failed_writes", args=[table.pk]),
                      reverse("console:restore", args=[table.pk, commit.requested_time])]
    mirrored = [reverse("console:overview", args=[table.pk]), reverse("console:timeline", args=[table.pk]),
                reverse("console:plan", args=[table.pk, plan.pk]),
                reverse("console:plan_progress", args=[table.pk, plan.pk]),
                reverse("console:job", args=[table.pk, job.pk]), reverse("console:sync_status", args=[table.pk]),
                reverse("console:audit"), reverse("console:catalog")]
    for url in reads_the_lake + mirrored:
        response = admin.get(url)
        assert response.status_code == 200, url
        if url in reads_the_lake:
            assert "not a Hudi table" in response.content.decode(), url
    with django_capture_on_commit_callbacks(execute=True):
        approve = admin.post(reverse("console:plan_approve", args=[table.pk, plan.pk]), follow=True)
        admin.post(reverse("console:sync", args=[table.pk]))
    assert approve.status_code == 200  # the approval task ran after the answer: the plan page says why
    page = admin.get(reverse("console:plan", args=[table.pk, plan.pk]))
    assert page.status_code == 200 and "not a Hudi table" in page.content.decode()
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and "not a Hudi table" in plan.error
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.FAILED
    overview = admin.get(reverse("console:overview", args=[table.pk]))
    assert overview.status_code == 200 and "The last sync failed" in overview.content.decode()
