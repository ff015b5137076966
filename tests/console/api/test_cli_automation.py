"""`cleanline --api URL --token T` as a scheduler drives it (timeline/cli_automation.py), against a
real console (live_server) and a real Celery worker: clean plan -> plan wait reviewable -> plan
approve by a second token -> plan run -> plan wait completed; the requester's own token refused
(the two-person rule holds for tokens as for people, exit 1, one line); a wait that times out
(exit 3); bad input (exit 2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console import services
from console.models import Archival, AuditEvent, CleanPlan
from console.models_health import Repair
from tests.console.helpers import ARCHIVABLE_TABLE, KEEP_FEW, person

TABLE = "sample_table/cow/v9_txns_simple_nometa"
ROOT = Path(__file__).resolve().parents[3]


def cli(url: str, token: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """The worktree's CLI (`python -m timeline.cli` from its root), as a scheduler runs it."""
    return subprocess.run([sys.executable, "-m", "timeline.cli", "--api", url, "--token", token, *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.django_db(transaction=True)
def test_cli_automation_plan_wait_approve_run_and_refusals(start_worker, live_server, settings, tmp_path: Path,
                                                           table_copy) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    settings.CLEANLINE_APPROVER_MUST_DIFFER = True
    path = table_copy(TABLE)
    table = services.table_register(path=str(path), user=None, enqueue=False)
    services.table_sync(table=table)
    start_worker()
    requester = person("sched", "admin")  # an admin: its token could approve, but not what it requested
    mine = services.token_create(actor=requester, owner=requester, name="airflow")[1]
    other = services.token_create(actor=(boss := person("boss", "admin")), owner=boss, name="approver")[1]
    url = live_server.url

    made = cli(url, mine, "clean", "plan", str(table.pk), "--retain-commits", "1", "--allow-short-retention")
    assert made.returncode == 0, made.stderr
    plan_id = made.stdout.strip()
    assert CleanPlan.objects.get(pk=int(plan_id)).requested_by == requester

    timed_out = cli(url, mine, "plan", "wait", plan_id, "--until", "completed", "--timeout", "0")
    assert timed_out.returncode == 3 and "after 0 s" in timed_out.stderr

    ready = cli(url, mine, "plan", "wait", plan_id, "--until", "reviewable", "--timeout", "60")
    assert ready.returncode == 0 and ready.stdout.strip() == f"plan {plan_id}: draft", ready.stderr

    own = cli(url, mine, "plan", "approve", plan_id)  # the two-person rule, for the token's owner
    assert own.returncode == 1 and own.stderr.count("\n") == 1 and "409" in own.stderr, own.stderr
    assert AuditEvent.objects.filter(action="clean.plan.approval.refused", username="sched").exists()
    twin = person("sched-sso", "admin")  # another account of the same person: refused through the link
    services.person_link(actor=person("hr", "admin"), username="sched", other_username="sched-sso")
    linked = cli(url, services.token_create(actor=twin, owner=twin, name="sso")[1], "plan", "approve", plan_id)
    assert linked.returncode == 1 and "another account of yours" in linked.stderr, linked.stderr
    early = cli(url, mine, "plan", "run", plan_id)
    assert early.returncode == 1 and "approve it" in early.stderr

    approved = cli(url, other, "plan", "approve", plan_id, "--note", "nightly")
    assert approved.returncode == 0 and approved.stdout.strip() == f"plan {plan_id}: approving", approved.stderr
    running = cli(url, other, "plan", "run", plan_id)
    assert running.returncode == 0, running.stderr
    done = cli(url, mine, "plan", "wait", plan_id, "--until", "completed", "--timeout", "90")
    assert done.returncode == 0 and done.stdout.strip() == f"plan {plan_id}: completed", done.stderr
    plan = CleanPlan.objects.get(pk=int(plan_id))
    assert plan.decided_by == boss and plan.decision_note == "nightly" and plan.progress_done == plan.files_to_delete

    gone = cli(url, mine, "plan", "wait", "999999", "--until", "approved")
    assert gone.returncode == 2 and "404" in gone.stderr
    wrong = cli(url, mine, "plan", "wait", plan_id, "--until", "soon")
    assert wrong.returncode == 2
    archival = cli(url, mine, "archive", "request", str(table.pk))
    assert archival.returncode == 1 and "409 Refused: Nothing to archive" in archival.stderr
    archivable = services.table_register(path=str(table_copy(ARCHIVABLE_TABLE)), user=None, enqueue=False)
    services.table_sync(table=archivable)
    services.table_settings_update(table=archivable, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options=KEEP_FEW)
    archival = cli(url, mine, "archive", "request", archivable.name)
    assert archival.returncode == 0, archival.stderr
    assert Archival.objects.get(pk=int(archival.stdout)).requested_by == requester
    repair = cli(url, mine, "doctor", "repair", "request", str(table.pk), "no-such-kind")
    assert repair.returncode == 1 and "409 Refused: unknown finding kind 'no-such-kind'" in repair.stderr
    last = max(p.name.split("_")[0] for p in (path / ".hoodie" / "timeline").glob("*.commit"))
    leftover = path / ".hoodie" / ".temp" / last  # markers of a completed write: the doctor's leftover-markers
    leftover.mkdir(parents=True)
    (leftover / "x_0-1-0_1.parquet.marker.CREATE").write_bytes(b"")
    repair = cli(url, mine, "doctor", "repair", "request", str(table.pk), "leftover-markers")
    assert repair.returncode == 0, repair.stderr
    assert Repair.objects.get(pk=int(repair.stdout)).requested_by == requester


def test_cli_automation_write_commands_need_the_console(capsys: pytest.CaptureFixture[str]) -> None:
    from timeline.cli import main

    for argv in (["doctor", "repair", "request", "t", "stuck"], ["archive", "request", "t"],
                 ["plan", "approve", "1"], ["plan", "wait", "1", "--until", "approved"]):
        assert main(argv) == 2
        assert "runs against a remote console: give --api URL --token T" in capsys.readouterr().err
