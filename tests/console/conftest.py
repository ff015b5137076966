"""Console test fixtures: Celery worker processes on the test Redis and database."""

from __future__ import annotations

import email
import email.policy
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import redis
from django.db import connection
from playwright.sync_api import Browser, Page, Route, sync_playwright

from tests.console.helpers import (
    ARCHIVABLE_TABLE,
    ARGS,
    KEEP_FEW,
    LDAP_PASSWORDS,
    OIDC_ROLES,
    ROOT,
    OidcProvider,
    Sinks,
    Slapd,
    use_ldap,
)
from tests.helpers import free_port


@pytest.fixture(autouse=True)
def plan_store(settings, plan_store_folder: str) -> None:  # type: ignore[no-untyped-def]
    """Plans of this test run go to its temporary plan store (tests/conftest.py), never var/."""
    settings.CLEANLINE_PLAN_STORE = plan_store_folder


@pytest.fixture(autouse=True)
def roles(request: pytest.FixtureRequest) -> None:
    """The role groups, also after a transactional test flushed what migrations created."""
    names = set(request.fixturenames)
    if names & {"live_server", "transactional_db"}:
        request.getfixturevalue("transactional_db")
    elif "db" in names or request.node.get_closest_marker("django_db"):
        request.getfixturevalue("db")
    else:
        return
    from console.roles import ensure_roles

    ensure_roles()


@pytest.fixture
def start_worker(transactional_db, settings) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start Celery workers sharing the test database; with `spark=True` every table is planned
    and cleaned by PySpark jobs (local[2]); keyword arguments are more environment variables
    (e.g. CLEANLINE_LOCK_EXPIRY_SECONDS="3"). A dead worker's task is delivered again after 3 s,
    its table lock expires after 5 s."""
    redis.Redis.from_url(settings.REDIS_URL).flushdb()
    started: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "DATABASE_URL": f"sqlite:///{connection.settings_dict['NAME']}",
           "SPARK_MASTER": "local[2]", "CLEANLINE_REDELIVERY_SECONDS": "3",
           # a dead worker's table lock expires after 5 s; a task finding the table busy retries within 2 s
           "CLEANLINE_LOCK_EXPIRY_SECONDS": "5", "CLEANLINE_BUSY_RETRY_SECONDS": "1",
           "CLEANLINE_BUSY_RETRY_MAX_SECONDS": "2"}

    def start(*, spark: bool = False, **extra_env: str) -> subprocess.Popen[bytes]:
        # the allowed roots as the test has them when the worker starts (every change checks them)
        roots = {"CLEANLINE_ALLOWED_ROOTS": ",".join(settings.CLEANLINE_ALLOWED_ROOTS)}
        engine = {"CLEANLINE_SPARK_MIN_FILES": "1" if spark else "0"}
        process = subprocess.Popen([sys.executable, "-m", "celery", "-A", "console", "worker", "--pool", "solo",
                                    "--loglevel", "WARNING", "--without-gossip", "--without-mingle"],
                                   env={**env, **roots, **extra_env, **engine},
                                   cwd=ROOT,
                                   start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def console_table(settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, table_copy) -> Callable[[str], Any]:
    """Factory: a registered copy of a fixture table, synced here (no sync task queued), Celery
    tasks run eagerly."""
    from console import services
    from console.celery import app

    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    monkeypatch.setitem(app.conf, "task_always_eager", True)

    def make(table_id: str) -> Any:
        table = services.table_register(path=str(table_copy(table_id)), user=None, enqueue=False)
        services.table_sync(table=table)
        return table

    return make


COW_TABLE = "sample_table/cow/v9_txns_simple_nometa"


@pytest.fixture
def table(console_table, request: pytest.FixtureRequest) -> Any:
    """The registered, synced copy of the test module's `TABLE` (a fixture table's id; the
    copy-on-write table when the module names none): the one `table` fixture of the console's tests."""
    return console_table(getattr(request.module, "TABLE", COW_TABLE))


@pytest.fixture
def archivable_table(console_table) -> Any:
    """A registered copy of ARCHIVABLE_TABLE whose writer options (KEEP_FEW, saved as an admin
    saves them) make archival move 9 of its 11 instants."""
    from console import services

    table = console_table(ARCHIVABLE_TABLE)
    return services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                          auto_max_bytes=1000, write_options=KEEP_FEW)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Playwright's sync API keeps an event loop on this thread; the ORM calls the test makes
    # meanwhile are still synchronous (Django's documented switch for this case).
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is installed by `make test` (scripts/ensure-system.sh)"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=ARGS)
        yield browser
        browser.close()
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def sinks(settings) -> Iterator[Sinks]:
    """A real SMTP server and a real webhook receiver on 127.0.0.1; the settings point alerts at them."""
    from aiosmtpd.controller import Controller

    found = Sinks()

    class Mailbox:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            message = email.message_from_bytes(envelope.content, policy=email.policy.default)
            found.mails.append((list(envelope.rcpt_tos), message))
            return "250 OK"

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status = found.fail_hooks.pop(0) if found.fail_hooks else 200
            if status == 200:
                assert self.headers["Content-Type"] == "application/json"
                found.hooks.append(json.loads(body))
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    smtp = Controller(Mailbox(), hostname="127.0.0.1", port=free_port())
    smtp.start()
    web = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"  # pytest-django's default is locmem
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    settings.CLEANLINE_ALERT_EMAILS = ["ops@cleanline.test", "lead@cleanline.test"]
    settings.CLEANLINE_ALERT_FROM = "alerts@cleanline.test"
    settings.CLEANLINE_ALERT_WEBHOOKS = [f"http://127.0.0.1:{web.server_address[1]}/hooks/T000/B000/secret-part"]
    settings.CLEANLINE_ALERT_ALLOWED_HOSTS = [f"127.0.0.1:{web.server_address[1]}"]  # on loopback: listed
    try:
        yield found
    finally:
        web.shutdown()
        web.server_close()
        smtp.stop()


@pytest.fixture(scope="module")
def provider(live_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    """The test OIDC provider (oidc-provider on Node), redirecting back to the live server."""
    server = OidcProvider(tmp_path_factory.mktemp("oidc"), redirect_uri=f"{live_server.url}/oidc/callback/",
                          post_logout_redirect_uri=f"{live_server.url}/login/").start()
    yield server
    server.stop()


@pytest.fixture
def oidc_on(settings, provider: OidcProvider) -> OidcProvider:  # type: ignore[no-untyped-def]
    """The console's settings with CLEANLINE_OIDC_* naming the test provider (groups claim: OIDC_ROLES)."""
    settings.CLEANLINE_OIDC_ISSUER = provider.issuer
    settings.CLEANLINE_OIDC_CLIENT_ID = provider.client_id
    settings.CLEANLINE_OIDC_CLIENT_SECRET = provider.client_secret
    settings.CLEANLINE_OIDC_PROVIDER_NAME = "Test IdP"
    settings.CLEANLINE_OIDC_CLAIM_ROLES = OIDC_ROLES
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    return provider


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context that reaches 127.0.0.1 and localhost only."""
    context = browser.new_context(viewport={"width": 1100, "height": 800})

    def local_only(route: Route) -> None:
        if urlparse(route.request.url).hostname in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            route.abort()

    context.route("**/*", local_only)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    """The test directory (slapd): the people of LDAP_PASSWORDS (mail uid@example.org), alice an
    admin, bob an operator and a viewer, carol in no mapped group."""
    server = Slapd(tmp_path_factory.mktemp("slapd")).start(people=LDAP_PASSWORDS, groups={
        "cleanline-admins": ["alice"], "cleanline-operators": ["bob"], "cleanline-viewers": ["bob"],
        "unrelated": ["carol"]})
    yield server
    server.stop()


@pytest.fixture
def ldap_on(settings, directory: Slapd) -> Slapd:  # type: ignore[no-untyped-def]
    """The console's settings with CLEANLINE_LDAP_* naming the test directory (plain LDAP)."""
    use_ldap(settings, directory.env())
    directory.set_members("cleanline-admins", ["alice"])
    directory.set_members("cleanline-operators", ["bob"])
    return directory


@pytest.fixture
def odd_receiver() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that answers by the path's status: /302?to=<url> (and the
    other 3xx) redirect there, /401 refuses, /200 takes it, /hangup closes the connection
    without an answer. Yields its base URL and what it was asked ("POST /302?to=...")."""
    from urllib.parse import parse_qs, urlsplit

    asked: list[str] = []

    class Odd(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            parts = urlsplit(self.path)
            if parts.path == "/hangup":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            status = int(parts.path.strip("/"))
            self.send_response(status)
            if status in (301, 302, 303, 307, 308):
                self.send_header("Location", parse_qs(parts.query)["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST  # a redirect followed as a GET is seen too

        def log_message(self, *args: Any) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{web.server_address[1]}", asked
    finally:
        web.shutdown()
        web.server_close()


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[int, Path, list[dict[str, Any]]]]:
    """A real HTTPS webhook receiver on 127.0.0.1 with a self-signed certificate for the name
    `localhost` only (made by the openssl command). Yields its port, the certificate (to trust
    it: SSL_CERT_FILE) and the JSON bodies it got."""
    import ssl

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    got: list[dict[str, Any]] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    web.socket = context.wrap_socket(web.socket, server_side=True)
    thread = threading.Thread(target=web.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(web.server_address[1]), cert, got
    finally:
        web.shutdown()
        web.server_close()
