"""The console installed from its wheel, as the README's "Deploying" section installs it: a wheel built
by `python -m build` from a copy of the sources (the sdist, then the wheel from it), installed with
its `console` extra into a fresh virtual environment outside the checkout, and run with
`cleanline-console` from a temporary working directory, PYTHONPATH unset and the settings from the
environment only, against PostgreSQL and Redis: it migrates (collecting the static files),
bootstraps two admins and a fixture table, serves with gunicorn, runs a Celery worker and beat; one
admin signs in and plans a clean, the other approves it, and the worker runs it. Nothing is read
from the checkout."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import pytest
import redis
import requests

from tests.helpers import FIXTURES, unzip_table

ROOT = Path(__file__).resolve().parents[1]
TABLE = "sample_table/cow/v9_txns_simple_nometa"
POSTGRES_URL = os.environ.get("CLEANLINE_TEST_POSTGRES_URL", "postgres://postgres:postgres@127.0.0.1:5432/postgres")
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "var", "build", "dist", "*.egg-info", "node_modules",
                                     "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", "docs", "bench")
pytestmark = pytest.mark.slow


def run(args: list[str], *, env: dict[str, str] | None = None, cwd: Path, timeout: float = 600) -> str:
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


@pytest.fixture
def database() -> Iterator[str]:
    """A new PostgreSQL database for the installed console, dropped afterwards."""
    name = f"cleanline_wheel_{secrets.token_hex(4)}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    yield urlparse(POSTGRES_URL)._replace(path=f"/{name}").geturl()
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


class Browser:
    """A signed-in HTTP session against the installed console (forms with their CSRF token)."""

    def __init__(self, url: str, username: str, password: str) -> None:
        self.url, self.session = url, requests.Session()
        self.session.get(f"{url}/login/", timeout=30)
        signed = self.post("/login/", {"username": username, "password": password})
        assert signed.status_code == 302, signed.text[-2000:]

    def get(self, path: str) -> requests.Response:
        return self.session.get(f"{self.url}{path}", timeout=30)

    def post(self, path: str, data: dict[str, str]) -> requests.Response:
        token = self.session.cookies["csrftoken"]
        return self.session.post(f"{self.url}{path}", data={**data, "csrfmiddlewaretoken": token},
                                 allow_redirects=False, timeout=60)


def test_wheel_installed_console_migrates_serves_and_runs_a_clean(tmp_path: Path, database: str,
                                                                  processes: list[subprocess.Popen[bytes]]) -> None:
    # the wheel, built from a copy of the sources (the checkout stays as it is) as the README
    # builds it: `python -m build` makes the sdist, then the wheel from the sdist
    sources = tmp_path / "sources"
    shutil.copytree(ROOT, sources, ignore=NOT_SOURCES)
    run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(sources)], cwd=tmp_path)
    (sdist,) = (tmp_path / "dist").glob("cleanline-*.tar.gz")
    with tarfile.open(sdist) as archive:  # deploy/ travels in the sdist too (issue 43)
        assert {"cleanline-web.service", "cleanline.env.example"} <= {Path(n).name for n in archive.getnames()
                                                                      if "/deploy/" in n}
    wheel = next((tmp_path / "dist").glob("cleanline-*.whl"))
    shutil.rmtree(sources)

    # installed into a fresh virtual environment, used from a folder outside the checkout
    venv, cwd = tmp_path / "venv", tmp_path / "run"
    cwd.mkdir()
    base = {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}", "HOME": os.environ.get("HOME", "/tmp")}
    run([sys.executable, "-m", "venv", str(venv)], env=base, cwd=cwd)
    run([str(venv / "bin" / "pip"), "install", "-q", f"{wheel}[console]"], env=base, cwd=cwd, timeout=900)
    where = run([str(venv / "bin" / "python"), "-c", "import console, timeline; print(console.__file__); "
                 "print(timeline.__file__)"], env=base, cwd=cwd).split()
    assert all(path.startswith(str(venv)) for path in where), where
    # the systemd units and the environment file for this install, from the wheel alone (issue 43)
    units = tmp_path / "units"
    run([str(venv / "bin" / "cleanline-console"), "deploy-files", str(units), "--lake", str(tmp_path / "lake")],
        env=base, cwd=cwd)
    worker_unit, env_file = (units / "cleanline-worker.service").read_text(), (units / "cleanline.env").read_text()
    assert f"ExecStart={venv / 'bin' / 'cleanline-console'} worker" in worker_unit
    assert f"ReadWritePaths={tmp_path / 'lake'}" in worker_unit and "/data/lake" not in worker_unit + env_file
    assert f"CLEANLINE_ALLOWED_ROOTS={tmp_path / 'lake'}" in env_file and "change-me-to" not in env_file

    lake = tmp_path / "lake"
    table = unzip_table(FIXTURES / f"{TABLE}.zip", lake)
    redis_url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
    redis.Redis.from_url(redis_url).flushdb()
    port = free_port()
    env = {**base, "SECRET_KEY": secrets.token_urlsafe(50), "DATABASE_URL": database, "REDIS_URL": redis_url,
           "CLEANLINE_ALLOWED_ROOTS": str(lake), "CLEANLINE_VAR_DIR": str(tmp_path / "var"), "HOST": "127.0.0.1",
           "PORT": str(port), "WEB_CONCURRENCY": "2", "CLEANLINE_SPARK_MIN_FILES": "0"}
    console = str(venv / "bin" / "cleanline-console")
    run([console, "migrate"], env=env, cwd=cwd)
    assert (tmp_path / "var" / "static" / "console" / "style.css").is_file()  # collected from the wheel
    logins = dict(re.findall(r"^login: (\S+) / (\S+)$", run([console, "manage", "bootstrap", str(lake)], env=env,
                                                               cwd=cwd), re.MULTILINE))
    assert set(logins) == {"admin", "admin2"}

    def start(command: str) -> subprocess.Popen[bytes]:
        log = (tmp_path / f"{command}.log").open("wb")
        process = subprocess.Popen([console, command], env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        processes.append(process)
        return process

    web, worker, beat = start("serve"), start("worker"), start("beat")
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        assert web.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
        try:
            return requests.get(f"{url}/login/", timeout=10).status_code == 200
        except requests.RequestException:  # not listening yet, or its first answer slow on a busy machine
            return False

    wait_for(answers, 60, "gunicorn to answer")
    assert "Log in" in requests.get(f"{url}/login/", timeout=10).text  # the template from the wheel
    assert requests.get(f"{url}/static/console/style.css", timeout=10).status_code == 200  # WhiteNoise

    admin = Browser(url, "admin", logins["admin"])
    table_id = re.search(r'href="/tables/(\d+)/"', admin.get("/tables").text)
    assert table_id, "the bootstrapped table is in the catalog"
    pk = int(table_id.group(1))
    planned = admin.post(f"/tables/{pk}/plans", {"commits_retained": "1", "allow_short_retention": "on"})
    assert planned.status_code == 302, planned.text[-2000:]
    plan_path = urlparse(planned.headers["Location"]).path

    def status(browser: Browser) -> str:
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
        found = re.search(r'class="badge plan-(\w+)"', browser.get(f"{plan_path}/progress").text)
        return found.group(1) if found else ""

    wait_for(lambda: status(admin) == "draft", 120, "the worker to make the plan")
    assert "another admin must approve" in admin.get(plan_path).text  # two-person approval, installed too
    before = {p for p in table.rglob("*.parquet")}
    second = Browser(url, "admin2", logins["admin2"])
    approved = second.post(f"{plan_path}/approve", {})
    assert approved.status_code == 302, approved.text[-2000:]
    wait_for(lambda: status(second) in ("completed", "failed", "stale"), 180, "the worker to run the clean")
    assert status(second) == "completed", second.get(plan_path).text[-3000:]
    after = {p for p in table.rglob("*.parquet")}
    assert after < before, "the clean deleted files of the table"
    assert list((table / ".hoodie").glob("*.clean")) or list((table / ".hoodie" / "timeline").glob("*.clean"))
    wait_for(lambda: (tmp_path / "var" / "celerybeat-schedule").exists()
             or any((tmp_path / "var").glob("celerybeat-schedule*")), 60, "beat to keep its schedule")
    assert beat.poll() is None, (tmp_path / "beat.log").read_text()[-3000:]
