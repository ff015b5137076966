"""`make run` from a fresh clone: the console answers, served by gunicorn with DEBUG off (a 404
without the debug page, static files by WhiteNoise), the login printed last after the ready line,
no Celery root warning; a second start answers too. The seconds are written to
var/make-run-times.json (not asserted: `python bench/startup.py --record` records them in bench/RESULTS.md).
And `cleanline demo` on a lake whose tables are there starts no Spark (no Java to start)."""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
def test_make_run_from_a_fresh_clone_serves_the_console(tmp_path: Path) -> None:
    checkout = tmp_path / "cleanline"
    clone_checkout(checkout)
    console = Console(checkout, port=free_port(), redis_url=CONSOLE_REDIS_URL)
    try:
        first = console.start()
        _login_is_last(first.lines)
        status, body = console.get("no-such-page/")
        assert status == 404 and "DEBUG = True" not in body and "Traceback" not in body, body
        assert console.get("static/console/style.css")[0] == 200  # WhiteNoise, DEBUG off
        assert console.get("login/")[0] == 200
    finally:
        console.stop()
    try:
        second = console.start()
        _login_is_last(second.lines)
    finally:
        console.stop()
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
    from timeline.demo import demo_tables_to_build

    for name in ("trips_cow_v6", "events_mor_v6", "orders_cow_v8"):
        (tmp_path / name / ".hoodie").mkdir(parents=True)
        (tmp_path / name / ".hoodie" / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
    assert demo_tables_to_build(str(tmp_path)) == []
    (tmp_path / ".events_mor_v6.building").write_bytes(b"")  # left by a build stopped half-way
    assert demo_tables_to_build(str(tmp_path)) == ["events_mor_v6"]
