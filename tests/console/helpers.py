"""Helpers of the console tests (fixtures are in conftest.py): people and logins, the retention
most plans are made with, waiting for other processes, where screenshots go and how Chromium runs."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.models import Alert

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]


def person(name: str, role: str, password: str = "a long enough password 1") -> Any:
    """A new user with `role`."""
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user(name, password=password)
    user.groups.add(Group.objects.get(name=role))
    return user


def login(role: str) -> Any:
    """A test client logged in as a new user with `role`."""
    from django.contrib.auth.models import Group, User
    from django.test import Client

    user = User.objects.create_user(f"u-{role}", password="pw")
    user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


class TokenCaller:
    """Calls /api/v1 with a new personal API token of `user` (named `name`); the tasks a call
    queues run (eagerly) as on commit."""

    def __init__(self, user: Any, name: str = "t") -> None:
        from django.test import Client

        from console.services import tokens

        self.client, self.token = Client(), tokens.token_create(actor=user, owner=user, name=name)[1]

    def __call__(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        from django.test import TestCase

        headers = {"HTTP_AUTHORIZATION": f"Bearer {self.token}"}
        with TestCase.captureOnCommitCallbacks(execute=True):
            if method == "GET":
                return self.client.get("/api/v1" + path, **headers)
            return self.client.post("/api/v1" + path, json.dumps(body or {}), content_type="application/json",
                                    **headers)


# Screenshots go to var/screenshots (untracked) unless CLEANLINE_SCREENSHOTS names another
# folder: `make screenshots` points it at docs/screenshots to refresh the README's pictures.
SHOTS = Path(os.environ.get("CLEANLINE_SCREENSHOTS") or Path(__file__).resolve().parents[2] / "var" / "screenshots")


ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


# The plan settings most console tests use: one commit retained, below the table's configured
# retention (Hudi's default 10), so the requester allows it explicitly (the library refuses it
# otherwise: timeline/clean/retention.py).
SHORT_RETENTION = {"commits_retained": 1, "allow_short_retention": True}
SHORT_RETENTION_FORM = {"commits_retained": "1", "allow_short_retention": "on"}


# Hudi writer options under which archival moves instants of a small fixture table: keep 2 to 3
# commits (Hudi's defaults, 20 to 30, keep every instant of the fixtures), the cleaner retaining
# one (its retention would raise the keep counts otherwise). On a copy of
# sample_table/cow/v9_txns_nonpart_nometa (11 commits) archival moves 9.
KEEP_FEW = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}
ARCHIVABLE_TABLE = "sample_table/cow/v9_txns_nonpart_nometa"


def completed_commits(table: Any) -> list[str]:
    """The completed commits of a registered table's active timeline, read from the lake."""
    from timeline import HudiTable

    return [i.requested_time for i in HudiTable.open(table.path).timeline.commits().completed()]


def hoodie_files(table: Any) -> dict[str, int]:
    """Every file under a registered local table's .hoodie folder with its size (what an
    archival writes or deletes), to compare before and after."""
    root = Path(table.path.removeprefix("file:")) / ".hoodie"
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def signed_in(browser: Any, url: str, name: str, role: str, width: int, scheme: str) -> Any:
    """A new browser page (its own context) logged in through the login form as a new user
    `name` with `role`, on the dashboard."""
    from django.contrib.auth.models import Group, User

    User.objects.create_user(name, password="correct horse").groups.add(Group.objects.get(name=role))
    page = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme).new_page()
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    return page


def wait_for(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll `condition` every 50 ms until it holds; after `seconds`, fail naming `what` (what
    other processes, Celery workers or Spark, do to the database or the lake)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def queued_outcome(task_id: str, seconds: float) -> Any:
    """What the task a service queued on commit returned, once a Celery worker ran it (its id is
    on the row it works on: `task_id`, a table's `sync_task_id`); after `seconds`, fail."""
    from console.celery import app

    assert task_id, "no task was queued for this row"
    return app.AsyncResult(task_id).get(timeout=seconds)


# Identity providers the sign-in tests start on 127.0.0.1: the OIDC provider (the npm package
# oidc-provider run by Node, tests/console/oidc_provider/provider.mjs, installed by
# scripts/ensure-node.sh) and an OpenLDAP `slapd` (Debian's package, installed by
# scripts/ensure-system.sh) with a small directory loaded from an LDIF, over plain LDAP, StartTLS
# and LDAPS (a test CA made here).
PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
SUFFIX = "dc=example,dc=org"
ROOT_DN, ROOT_PASSWORD = f"cn=admin,{SUFFIX}", "directory-admin-password"
SERVICE_DN, SERVICE_PASSWORD = f"cn=cleanline,ou=services,{SUFFIX}", "service account password"
GROUPS = f"ou=groups,{SUFFIX}"
PEOPLE = f"ou=people,{SUFFIX}"
# The provider's groups claim and the directory's groups, mapped to roles; the directory's people.
OIDC_ROLES = {"cleanline-admins": "admin", "cleanline-operators": "operator", "cleanline-viewers": "viewer"}
LDAP_ROLES = {"cn=cleanline-admins,ou=groups,dc=example,dc=org": "admin",
              "cn=cleanline-operators,ou=groups,dc=example,dc=org": "operator",
              "CN=Cleanline-Viewers,ou=groups,dc=example,dc=org": "viewer"}  # DNs compared ignoring case
LDAP_PASSWORDS = {"alice": "alice's directory password", "bob": "bob's directory password",
                  "carol": "carol's directory password", "dave": "dave's directory password"}


def use_ldap(settings: Any, env: dict[str, str]) -> None:
    """The console's settings with the CLEANLINE_LDAP_* of `env` (`Slapd.env`), LDAP on."""
    from console.signin.config import ldap_settings

    for name, value in ldap_settings(env).items():
        setattr(settings, name, value)
    settings.CLEANLINE_LDAP_ENABLED = True
    settings.CLEANLINE_LDAP_GROUP_ROLES = LDAP_ROLES
    settings.AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "console.signin.ldap.LdapBackend",
                                        "console.signin.local.LocalBackend", "console.signin.oidc.OidcBackend"]


def provider_login(page: Any, username: str, password: str) -> None:
    """On the OIDC provider's own login page: type the username and password, submit."""
    page.wait_for_selector("#provider-submit")
    assert page.url.startswith("http://127.0.0.1:")
    page.fill("#login", username)
    page.fill("#password", password)
    page.click("#provider-submit")
    page.wait_for_load_state()


def oidc_sign_in(page: Any, live_url: str, username: str, password: str) -> None:
    """The login page's OIDC button, then the provider's login page."""
    page.goto(f"{live_url}/login/")
    page.click("#oidc-signin")
    provider_login(page, username, password)




def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


class OidcProvider:
    """oidc-provider on 127.0.0.1 with one client (PKCE required) and the users of a JSON file
    that `set_user` rewrites (the provider reads it at every request; provider.mjs)."""

    client_id, client_secret = "cleanline-console", "test client secret, not for anything else"

    def __init__(self, folder: Path, *, redirect_uri: str, post_logout_redirect_uri: str) -> None:
        self.folder, self.port = folder, free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.users_file = folder / "users.json"
        self.users: dict[str, dict[str, Any]] = {}
        self.redirect_uri, self.post_logout_redirect_uri = redirect_uri, post_logout_redirect_uri
        self.process: subprocess.Popen[bytes] | None = None

    def set_user(self, username: str, password: str, /, *, id_token: dict[str, Any] | None = None,
                 **claims: Any) -> None:
        """A user the provider signs in, with their claims; `id_token` is set over their ID
        token's claims (an `aud` naming other audiences too, an `azp`)."""
        self.users[username] = {"password": password, "claims": claims, **({"id_token": id_token} if id_token else {})}
        tmp = self.users_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.users))
        tmp.replace(self.users_file)

    def start(self) -> OidcProvider:
        node = shutil.which("node")
        assert node, "Node.js is installed by `make test` (scripts/ensure-node.sh)"
        assert (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir(), "run scripts/ensure-node.sh (npm ci)"
        self.set_user("nobody", "-")
        log = (self.folder / "provider.log").open("wb")
        self.process = subprocess.Popen(
            [node, str(PROVIDER_DIR / "provider.mjs")], stdout=subprocess.PIPE, stderr=log, start_new_session=True,
            env={"PATH": os.environ.get("PATH", ""), "PORT": str(self.port), "CLIENT_ID": self.client_id,
                 "CLIENT_SECRET": self.client_secret, "REDIRECT_URI": self.redirect_uri,
                 "POST_LOGOUT_REDIRECT_URI": self.post_logout_redirect_uri, "USERS_FILE": str(self.users_file)})
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        assert line.startswith("ready "), (self.folder / "provider.log").read_text()
        return self

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


def _test_ca(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a certificate for 127.0.0.1 signed by it: (ca.pem, server.pem, server.key)."""
    from ipaddress import IPv4Address

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(cn: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = (x509.CertificateBuilder().subject_name(name("Cleanline test CA")).issuer_name(name("Cleanline test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (x509.CertificateBuilder().subject_name(name("127.0.0.1")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(IPv4Address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    paths[2].chmod(0o600)
    return paths


def _entry(dn: str, **attrs: str | list[str]) -> str:
    lines = [f"dn: {dn}"]
    for key, value in attrs.items():
        for item in [value] if isinstance(value, str) else value:
            lines.append(f"{key}: {item}")
    return "\n".join(lines) + "\n"


class Slapd:
    """OpenLDAP's slapd on 127.0.0.1 (a free port for ldap://, another for ldaps://; StartTLS on
    the first), with the people and groups given, loaded by slapadd before it starts."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port, self.tls_port = folder, free_port(), free_port()
        self.uri, self.ldaps_uri = f"ldap://127.0.0.1:{self.port}", f"ldaps://127.0.0.1:{self.tls_port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.ca_file = folder / "ca.pem"

    def start(self, *, people: dict[str, str], groups: dict[str, list[str]]) -> Slapd:
        slapd = shutil.which("slapd") or "/usr/sbin/slapd"
        assert Path(slapd).exists(), "Debian's slapd is installed by `make test` (scripts/ensure-system.sh)"
        ca, cert, key = _test_ca(self.folder)
        data = self.folder / "data"
        data.mkdir()
        conf = self.folder / "slapd.conf"
        schema = Path("/etc/ldap/schema")
        conf.write_text("\n".join([
            *(f"include {schema / n}.schema" for n in ("core", "cosine", "inetorgperson", "nis")),
            f"pidfile {self.folder / 'slapd.pid'}", "modulepath /usr/lib/ldap", "moduleload back_mdb",
            f"TLSCACertificateFile {ca}", f"TLSCertificateFile {cert}", f"TLSCertificateKeyFile {key}",
            "database mdb", f'suffix "{SUFFIX}"', f'rootdn "{ROOT_DN}"', f"rootpw {ROOT_PASSWORD}",
            f"directory {data}", "maxsize 10485760",
            # the service account searches; users bind as themselves; nobody else reads passwords
            "access to attrs=userPassword by anonymous auth by self read by * none",
            f'access to * by dn.exact="{SERVICE_DN}" read by self read by * none', ""]))
        entries = [_entry(SUFFIX, objectClass=["top", "dcObject", "organization"], o="Example", dc="example"),
                   _entry(PEOPLE, objectClass="organizationalUnit", ou="people"),
                   _entry(GROUPS, objectClass="organizationalUnit", ou="groups"),
                   _entry(f"ou=services,{SUFFIX}", objectClass="organizationalUnit", ou="services"),
                   _entry(SERVICE_DN, objectClass=["person", "simpleSecurityObject"], cn="cleanline", sn="service",
                          userPassword=SERVICE_PASSWORD)]
        for uid, password in people.items():
            entries.append(_entry(self.user_dn(uid), objectClass="inetOrgPerson", uid=uid, cn=uid.title(),
                                  sn="Tester", givenName=uid.title(), mail=f"{uid}@example.org", userPassword=password))
        for cn, members in groups.items():
            # groupOfNames needs a member: the service account stands in for an empty group
            entries.append(_entry(self.group_dn(cn), objectClass="groupOfNames", cn=cn,
                                  member=[self.user_dn(m) for m in members] or [SERVICE_DN]))
        ldif = self.folder / "directory.ldif"
        ldif.write_text("\n".join(entries))
        loaded = subprocess.run(["/usr/sbin/slapadd", "-f", str(conf), "-l", str(ldif)], capture_output=True,
                                text=True, timeout=60)
        assert loaded.returncode == 0, loaded.stderr
        log = (self.folder / "slapd.log").open("wb")
        self.process = subprocess.Popen([slapd, "-f", str(conf), "-h", f"{self.uri}/ {self.ldaps_uri}/", "-d", "0"],
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                assert self.process.poll() is None, (self.folder / "slapd.log").read_text()
                assert time.monotonic() < deadline, "slapd did not start"
                time.sleep(0.05)
        return self

    @staticmethod
    def user_dn(uid: str) -> str:
        return f"uid={uid},{PEOPLE}"

    @staticmethod
    def group_dn(cn: str) -> str:
        return f"cn={cn},{GROUPS}"

    def set_members(self, cn: str, members: list[str]) -> None:
        """Replace a group's members (as the directory's admin)."""
        import ldap

        connection = ldap.initialize(self.uri)
        connection.simple_bind_s(ROOT_DN, ROOT_PASSWORD)
        values = [self.user_dn(m).encode() for m in members] or [SERVICE_DN.encode()]
        connection.modify_s(self.group_dn(cn), [(ldap.MOD_REPLACE, "member", values)])
        connection.unbind_s()

    def env(self, **extra: str) -> dict[str, str]:
        """The CLEANLINE_LDAP_* variables that reach this directory."""
        return {"CLEANLINE_LDAP_SERVER_URI": self.uri, "CLEANLINE_LDAP_BIND_DN": SERVICE_DN,
                "CLEANLINE_LDAP_BIND_PASSWORD": SERVICE_PASSWORD, "CLEANLINE_LDAP_USER_SEARCH_BASE": PEOPLE,
                "CLEANLINE_LDAP_GROUP_SEARCH_BASE": GROUPS, "CLEANLINE_LDAP_TIMEOUT": "5", **extra}

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


def leave_markers(path: Path) -> str:
    """Damage a table copy as a crash after a commit does (the doctor's `leftover-markers`): a
    marker folder of its last completed instant left under `.hoodie/.temp`. Returns the instant."""
    from timeline import HudiTable

    last = HudiTable.open(str(path)).timeline.commits().completed().last()
    assert last is not None
    folder = path / ".hoodie" / ".temp" / last.requested_time / "region=eu"
    folder.mkdir(parents=True)
    (folder / "x_0-1-0_1.parquet.marker.CREATE").write_bytes(b"")
    return last.requested_time


@dataclass
class Sinks:
    """What the local SMTP server and webhook receiver got."""

    mails: list[tuple[list[str], EmailMessage]] = field(default_factory=list)
    hooks: list[dict[str, Any]] = field(default_factory=list)
    fail_hooks: list[int] = field(default_factory=list)  # status codes to answer the next POSTs with

    def mails_of(self, alert: Alert) -> list[EmailMessage]:
        return [m for _, m in self.mails if f"(alert #{alert.pk})" in m.get_content()]

    def hooks_of(self, alert: Alert) -> list[dict[str, Any]]:
        return [h for h in self.hooks if h["cleanline"]["alert"] == alert.pk]

    def counts(self) -> tuple[int, int]:
        return len(self.mails), len(self.hooks)


def browser_sign_in(browser: Any, url: str, role: str, **context: Any) -> Any:
    """A new browser page (1280 px unless `context` says otherwise) signed in as `ada` with
    `role`, on the dashboard."""
    from django.contrib.auth.models import Group, User

    User.objects.create_user("ada", password="correct horse").groups.add(Group.objects.get(name=role))
    page = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **context}).new_page()
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", "correct horse")
    page.click("button[type=submit]")
    page.wait_for_selector("h1:has-text('Lake dashboard')")
    return page


def swap_when_deleted(watched: list[Path], folder: Path, copy: Path) -> tuple[threading.Thread, list[Path]]:
    """A thread that watches `watched` (files a run deletes) and, as soon as one is gone, renames
    the table's `folder` aside and leaves a symbolic link to `copy` (outside the allowed roots) in
    its place: the swap of issue 38 in the middle of a live worker's run. The list it returns gets
    where the folder went."""
    moved: list[Path] = []

    def watch() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if not all(p.exists() for p in watched):
                aside = folder.with_name(folder.name + ".moved")
                folder.rename(aside)
                folder.symlink_to(copy, target_is_directory=True)
                moved.append(aside)
                return

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, moved


def token_for(user: Any, name: str = "ci") -> str:
    """A personal API token of `user`, as the API's tests send it."""
    from console import services

    return services.token_create(actor=user, owner=user, name=name)[1]


def draft_plan(table: Any, user: Any = None) -> Any:
    """A clean plan of `table` built to draft (short retention), requested by `user` or an operator."""
    from console import services

    plan = services.plan_request(table=table, user=user or person("requester", "operator"), overrides=SHORT_RETENTION)
    return services.plan_build(plan=plan)
