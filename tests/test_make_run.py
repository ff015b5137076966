"""`make run` from a fresh clone: the console answers, served by gunicorn with DEBUG off (a 404
without the debug page, static files by WhiteNoise), the login printed last after the ready line,
no Celery root warning; a second start answers too. Quietly: one progress line per set-up step
(installers' and tools' output in var/log/), "ready" said once with the URL and the logins, the
demo tables' build announced, and Ctrl-C ends with "stopped" (not make's nor a crash's words).
The seconds are written to var/make-run-times.json (not asserted: `python bench/startup.py
--record` records them in bench/RESULTS.md).
And `cleanline demo` on a lake whose tables are there starts no Spark (no Java to start)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from bench.startup import READY, ROOT, Console, clone_checkout, free_port

# Not the tests' database (15, REDIS_URL) nor make run's (0): the started console's own.
CONSOLE_REDIS_URL = os.environ.get("CLEANLINE_MAKE_RUN_REDIS_URL", "redis://127.0.0.1:6379/13")


def _login_is_last(lines: list[str]) -> None:
    ready = max(i for i, line in enumerate(lines) if line.startswith(READY))
    after = lines[ready + 1:]
    logins = [line for line in after if line.startswith("login:")]
    assert logins and after[:len(logins)] == logins, lines  # right after the URL, nothing between
    assert not any(line.startswith("login:") for line in lines[:ready]), lines


STEPS = ("Redis at ", "the demo lake's fixture tables", "the database, migrated", "static files, collected",
         "the admin accounts and the lake's tables", "the web server (gunicorn")


def _quiet(lines: list[str], *, building: bool) -> None:
    """One line per step, in order, each done; "ready" once, with the URL; the logins; the
    demo lake's build announced (first start) or not (every table there); nothing else."""
    ready = [i for i, line in enumerate(lines) if line.startswith(READY)]
    assert len(ready) == 1 and re.match(r"Cleanline console ready: http://127\.0\.0\.1:\d+/ ", lines[ready[0]]), lines
    steps = lines[:ready[0]]
    assert [s.removeprefix("cleanline: ")[:len(p)] for s, p in zip(steps, STEPS)] == list(STEPS), lines
    assert len(steps) == len(STEPS) and all(re.fullmatch(r"cleanline: .+ \.\.\. done \(\d+ s(; .+)?\)", s)
                                            for s in steps), steps
    after = lines[ready[0] + 1:]
    logins = [line for line in after if line.startswith("login:")]
    rest = after[len(logins):]
    assert len(logins) == 2 and rest[0].startswith("two-person approval:"), lines
    announced = [line for line in rest if line.startswith("demo lake: building 3 Spark tables in the background")]
    assert len(announced) == (1 if building else 0), lines
    noise = [line for line in lines if re.search(r"warn|error|traceback|pip|apt|java|spark-|log4j", line, re.I)
             and not line.startswith("demo lake:")]
    assert not noise, noise


def _stopped(console: Console) -> None:
    """Ctrl-C: the last line says what stopped, then "stopped."; no crash words, nothing left."""
    status = console.interrupt()
    lines = [line for line in console.lines if line.strip()]
    assert re.fullmatch(r"(\^C)?cleanline: stopping the web server, worker and beat( and the demo lake build)? "
                        r"\.\.\. stopped\.", lines[-1]), lines[-5:]
    assert not [line for line in lines if "a process stopped" in line or line.startswith("make:")], lines
    assert status in (0, -2, 130), status  # make ends by the signal it was sent, silently


@pytest.mark.slow
def test_make_run_from_a_fresh_clone_serves_the_console(tmp_path: Path) -> None:
    checkout = tmp_path / "cleanline"
    clone_checkout(checkout)
    console = Console(checkout, port=free_port(), redis_url=CONSOLE_REDIS_URL)
    try:
        first = console.start()
        _login_is_last(first.lines)
        console.wait_for_line(lambda line: line.startswith("demo lake: building"), after=READY, timeout=60)
        _quiet(console.lines, building=True)
        status, body = console.get("no-such-page/")
        assert status == 404 and "DEBUG = True" not in body and "Traceback" not in body, body
        assert console.get("static/console/style.css")[0] == 200  # WhiteNoise, DEBUG off
        assert console.get("login/")[0] == 200
        _stopped(console)
    finally:
        console.stop()
    assert console.get("login/")[0] == 0  # nothing answers: every process ended
    try:
        second = console.start()
        _login_is_last(second.lines)
        _stopped(console)
    finally:
        console.stop()
    run_log = (checkout / "var" / "log" / "run.log").read_text()
    assert "Applying console.0001_initial" in run_log and "static files copied" in run_log  # the tools' words
    logs = checkout / "var" / "log"
    assert "superuser privileges" not in (logs / "worker.log").read_text()
    assert "Listening at: http://127.0.0.1" in (logs / "web.log").read_text()  # gunicorn, not runserver
    figures = {"first_seconds": round(first.seconds, 1), "second_seconds": round(second.seconds, 1),
               "cores": os.cpu_count(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "make-run-times.json").write_text(json.dumps(figures, indent=2) + "\n")


def test_demo_starts_no_spark_when_the_tables_are_there(tmp_path: Path) -> None:
    for name in ("trips_cow_v6", "events_mor_v6", "orders_cow_v8"):
        (tmp_path / name / ".hoodie").mkdir(parents=True)
        (tmp_path / name / ".hoodie" / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
    env = os.environ | {"JAVA_HOME": str(tmp_path / "no-java"), "PATH": str(ROOT / ".venv" / "bin")}
    began = time.monotonic()
    out = subprocess.run([str(ROOT / ".venv" / "bin" / "cleanline"), "demo", str(tmp_path)], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(tmp_path / name) for name in ("trips_cow_v6", "events_mor_v6", "orders_cow_v8")]
    assert time.monotonic() - began < 10  # no JVM: Java is not even reachable here


def test_demo_redoes_a_table_whose_build_was_stopped(tmp_path: Path) -> None:
    from timeline.internal.demo import demo_tables_to_build

    for name in ("trips_cow_v6", "events_mor_v6", "orders_cow_v8"):
        (tmp_path / name / ".hoodie").mkdir(parents=True)
        (tmp_path / name / ".hoodie" / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
    assert demo_tables_to_build(str(tmp_path)) == []
    (tmp_path / ".events_mor_v6.building").write_bytes(b"")  # left by a build stopped half-way
    assert demo_tables_to_build(str(tmp_path)) == ["events_mor_v6"]


def _stub_venv(folder: Path, *, fails: bool = False) -> Path:
    """A venv whose python prints what pip prints (warnings included), or fails."""
    python = folder / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\necho 'WARNING: Running pip as the root user can result in broken permissions'\n"
                      "echo 'Successfully installed cleanline-0.1'\n" + ("echo 'ERROR: no network' >&2; exit 1\n"
                                                                          if fails else ""))
    python.chmod(0o755)
    return folder


@pytest.mark.parametrize("fails", [False, True], ids=["installed", "failed"])
def test_make_setup_says_one_line_per_step_and_keeps_the_installers_output_in_a_log(tmp_path: Path,
                                                                                     fails: bool) -> None:
    """scripts/setup.sh (make setup): a line per step, pip's and apt's words in var/log/setup.log;
    a step that fails says so and shows the end of the log."""
    (tmp_path / "scripts").mkdir()
    for name in ("setup.sh", "steps.sh", "ensure-system.sh"):
        (tmp_path / "scripts" / name).write_text((ROOT / "scripts" / name).read_text())
    venv = _stub_venv(tmp_path / "venv", fails=fails)
    out = subprocess.run(["bash", str(tmp_path / "scripts" / "setup.sh")], capture_output=True, text=True,
                         env=os.environ | {"VENV": str(venv), "PYTHON": "python3"}, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("cleanline: operating-system packages") and lines[0].endswith(")")
    assert lines[1] == f"cleanline: virtual environment ({venv}) ... done (0 s; {venv} already there)"
    log = (tmp_path / "var" / "log" / "setup.log").read_text()
    assert "WARNING: Running pip as the root user" in log and "WARNING" not in out.stdout
    if fails:
        assert out.returncode == 1 and lines[-1].endswith("... failed") and len(lines) == 3, lines
        assert "ERROR: no network" in out.stderr and "pip itself, up to date failed" in out.stderr
        assert not (venv / ".installed").exists()
    else:
        assert out.returncode == 0 and len(lines) == 4 and all(" ... done (" in line for line in lines), lines
        assert (venv / ".installed").exists()


def _supervised(end_of_beat: str) -> subprocess.CompletedProcess[str]:
    """scripts/supervise.sh (make run's last step) over a real worker-like and beat-like process."""
    script = ("source scripts/supervise.sh; pids=(); names=(); sleep 30 & pids+=($!); names+=(worker); "
              f"bash -c '{end_of_beat}' & pids+=($!); names+=(beat); "
              "if supervise; then echo stopped.; kill ${pids[0]}; exit 0; fi; kill ${pids[0]}; exit 1")
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=20,
                          env={**os.environ, "LOGS": "var/log"})


def test_make_run_a_process_stopped_with_kill_is_said_so_not_as_a_crash() -> None:
    """Issue 43: `kill` of the beat printed "the beat stopped on its own" and make's "Error 1"."""
    killed = _supervised("sleep 0.2; kill -TERM $$; sleep 30")
    assert killed.returncode == 0, killed
    assert killed.stdout.strip() == "cleanline: the beat was stopped (SIGTERM); stopping the rest ... stopped."
    assert "on its own" not in killed.stdout + killed.stderr
    asked = _supervised("sleep 0.2; exit 0")  # gunicorn and Celery exit 0 when TERM asks them to stop
    assert asked.returncode == 0 and "the beat was stopped (exited when asked to stop)" in asked.stdout
    crashed = _supervised("sleep 0.2; exit 3")
    assert crashed.returncode == 1 and "stopped." not in crashed.stdout
    assert crashed.stderr.strip() == "cleanline: the beat stopped on its own (exit 3); see var/log/beat.log"


def _redis_url(checkout: str) -> str:
    return subprocess.run(["bash", "-c", 'source scripts/redis-db.sh; checkout_redis_url "$1"', "-", checkout],
                          cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def test_make_run_uses_its_own_redis_database_per_checkout() -> None:
    """Issue 43: two checkouts on one machine shared Redis database 0, and so their tasks."""
    urls = {path: _redis_url(path) for path in ("/work/main", "/work/daytwo", "/home/ada/cleanline", "/srv/b")}
    assert len(set(urls.values())) > 1 and urls["/work/main"] == _redis_url("/work/main")  # stable per path
    for url in urls.values():
        assert re.fullmatch(r"redis://127\.0\.0\.1:6379/(\d+)", url) and 1 <= int(url.rsplit("/", 1)[1]) <= 10, url
    run_sh = (ROOT / "scripts" / "run.sh").read_text()
    assert 'REDIS_URL="${REDIS_URL:-$(checkout_redis_url "$PWD")}"' in run_sh and "6379/0" not in run_sh
