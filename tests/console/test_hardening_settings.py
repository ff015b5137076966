"""Production settings: a required SECRET_KEY, password validators, login lockout, HTTPS settings
that pass `check --deploy`, the audit log append-only in the database (SQLite and PostgreSQL),
and a CSV download whatever the table's name."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, Table
from tests.console.helpers import SHORT_RETENTION, login

ROOT = Path(__file__).resolve().parents[2]
# The database PostgreSQL's run of these tests uses (its test database: test_cleanline_hardening).
POSTGRES_URL = urlparse(os.environ.get("CLEANLINE_TEST_POSTGRES_URL",
                                       "postgres://postgres:postgres@127.0.0.1:5432/postgres"))._replace(
    path="/cleanline_hardening").geturl()
STRONG_PASSWORD = "correct horse battery staple 42"
PRODUCTION = {"SECRET_KEY": secrets.token_urlsafe(50), "CLEANLINE_HTTPS": "true",
              "CLEANLINE_TRUSTED_PROXY_SSL_HEADER": "X-Forwarded-Proto",
              "ALLOWED_HOSTS": "cleanline.example.com", "CSRF_TRUSTED_ORIGINS": "https://cleanline.example.com"}


def clean_env(**extra: str) -> dict[str, str]:
    """An environment as a server gets it: no DEBUG, no SECRET_KEY, not under pytest."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **extra}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_settings_start_up_without_secret_key_and_debug_off_fails_clearly() -> None:
    refused = manage("check", env=clean_env())
    assert refused.returncode != 0
    assert refused.stderr.startswith("manage.py: SECRET_KEY is not set and DEBUG is off")  # one line (issue 43)
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert "Set the SECRET_KEY environment variable" in refused.stderr
    assert manage("check", env=clean_env(SECRET_KEY=secrets.token_urlsafe(50))).returncode == 0
    assert manage("check", env=clean_env(DEBUG="1")).returncode == 0


def test_settings_alert_allowed_hosts_are_checked_at_start_up() -> None:
    """CLEANLINE_ALERT_ALLOWED_HOSTS: host names, addresses and networks with an optional port;
    anything else stops the start naming the entry (console/outbound.py reads them)."""
    good = "hooks.internal:8443, 10.0.0.0/8, [fd00::1]:443, 192.168.1.5"
    assert manage("check", env=clean_env(DEBUG="1", CLEANLINE_ALERT_ALLOWED_HOSTS=good)).returncode == 0
    refused = manage("check", env=clean_env(DEBUG="1", CLEANLINE_ALERT_ALLOWED_HOSTS="10.0.0.0/8, http://hooks/x"))
    assert refused.returncode != 0
    assert refused.stderr.startswith("manage.py: CLEANLINE_ALERT_ALLOWED_HOSTS: 'http://hooks/x'")


@pytest.mark.parametrize("key", ["cleanline-development-only-key-change-me",
                                 "cleanline-tests-only-key-never-use-it-elsewhere-0123456789",
                                 "django-insecure-" + "k" * 50,
                                 "change-me-to-a-long-random-string-of-fifty-characters-or-more",
                                 "our-own-key-CHANGE-ME-" + "k" * 40])
def test_settings_published_keys_are_refused_with_debug_off_whatever_else_is_set(key: str) -> None:
    for extra in ({}, {"PYTEST_VERSION": "8.3.0"}):
        refused = manage("check", env=clean_env(SECRET_KEY=key, **extra))
        assert refused.returncode != 0 and "SECRET_KEY is a published key" in refused.stderr
    assert manage("check", env=clean_env(SECRET_KEY=key, DEBUG="1")).returncode == 0


def test_settings_pytest_without_a_key_gets_a_random_one_never_a_published_one() -> None:
    script = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    keys = {subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env=clean_env(PYTEST_VERSION="8.3.0", DJANGO_SETTINGS_MODULE="console.settings")
                           ).stdout.strip() for _ in range(2)}
    assert len(keys) == 2 and all(len(k) > 50 for k in keys)
    assert not keys & {"cleanline-tests-only-key-never-use-it-elsewhere-0123456789"}


def test_settings_check_deploy_with_the_documented_production_env_has_no_warnings() -> None:
    run = manage("check", "--deploy", "--fail-level", "WARNING", env=clean_env(**PRODUCTION))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "System check identified no issues" in run.stdout and "WARNINGS" not in run.stdout + run.stderr
    # Without CLEANLINE_HTTPS the same check names what is missing.
    plain = manage("check", "--deploy", env=clean_env(SECRET_KEY=PRODUCTION["SECRET_KEY"]))
    assert all(code in plain.stderr for code in ("W004", "W008", "W012", "W016"))


def test_settings_https_redirects_plain_requests_and_trusts_the_proxy_header() -> None:
    script = ("import django; django.setup(); from django.test import Client; "
              "c = Client(HTTP_HOST='cleanline.example.com'); "
              "r = c.get('/login/'); print(r.status_code, r['Location']); "
              "s = c.get('/login/', HTTP_X_FORWARDED_PROTO='https'); "
              "print(s.status_code, s['Strict-Transport-Security'], s.cookies['csrftoken']['secure'])")
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env=clean_env(DJANGO_SETTINGS_MODULE="console.settings", **PRODUCTION))
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["301 https://cleanline.example.com/login/",
                                       "200 max-age=31536000; includeSubDomains True"]


def test_settings_password_validators_reject_weak_passwords() -> None:
    for weak in ("short1", "password1234", "123456789012345"):
        with pytest.raises(ValidationError):
            validate_password(weak)
    with pytest.raises(ValidationError):
        validate_password("alice.smith.2024", User(username="alice.smith", email="alice.smith@example.com"))
    validate_password(STRONG_PASSWORD)


@pytest.mark.django_db
def test_settings_bootstrap_admin_password_passes_the_validators_and_logs_in(tmp_path: Path, capsys) -> None:
    call_command("bootstrap", str(tmp_path))
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("login: admin / "))
    password = line.removeprefix("login: admin / ")
    validate_password(password, User.objects.get(username="admin"))
    response = Client().post(reverse("login"), {"username": "admin", "password": password})
    assert response.status_code == 302 and response["Location"] == reverse("console:home")


@pytest.mark.django_db
def test_settings_failed_logins_lock_out_the_username_from_that_address(settings) -> None:
    User.objects.create_user("mallory-target", password=STRONG_PASSWORD)
    assert settings.AXES_FAILURE_LIMIT == 5 and settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    url = reverse("login")
    answers = [attacker.post(url, {"username": "mallory-target", "password": f"guess {n}"}).status_code
               for n in range(settings.AXES_FAILURE_LIMIT)]
    assert answers == [200] * (settings.AXES_FAILURE_LIMIT - 1) + [429]
    # Locked out: the right password from that address is refused too.
    right = attacker.post(url, {"username": "mallory-target", "password": STRONG_PASSWORD})
    assert right.status_code == 429 and "_auth_user_id" not in attacker.session
    # The same user from another address still logs in.
    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert elsewhere.post(url, {"username": "mallory-target", "password": STRONG_PASSWORD}).status_code == 302
    assert "_auth_user_id" in elsewhere.session


def _refused(change) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        change()


@pytest.mark.django_db
def test_audit_queryset_update_and_delete_are_refused_by_the_database(console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    other = console_table("sample_table/cow/v8_nonpartitioned")
    event = services.audit(user=None, action="table.settings.changed", table=table, parameters={"auto": True})
    events = AuditEvent.objects.filter(pk=event.pk)
    _refused(lambda: events.update(result="forged"))
    _refused(lambda: events.update(action="nothing happened", table=None))
    _refused(lambda: events.update(table=other))
    _refused(lambda: events.delete())
    _refused(lambda: AuditEvent.objects.all().delete())
    with connection.cursor() as cursor:
        _refused(lambda: cursor.execute("DELETE FROM console_auditevent"))
    assert list(events.values_list("action", "table_id", "result", "parameters")) == [
        ("table.settings.changed", table.pk, "", {"auto": True})]


@pytest.mark.django_db
def test_audit_deleting_a_table_or_user_keeps_their_events(console_table) -> None:
    table = console_table("sample_table/cow/v9_txns_simple_nometa")
    user = User.objects.create_user("olga", password=STRONG_PASSWORD)
    services.plan_build(plan=services.plan_request(table=table, user=user, overrides=SHORT_RETENTION))
    before = list(AuditEvent.objects.filter(table=table).order_by("pk").values_list("pk", "username", "action",
                                                                                    "parameters", "result", "at"))
    assert len(before) >= 2
    table.delete()
    user.delete()
    after = AuditEvent.objects.filter(pk__in=[row[0] for row in before]).order_by("pk")
    assert list(after.values_list("pk", "username", "action", "parameters", "result", "at")) == before
    assert set(after.values_list("table_id", "user_id")) == {(None, None)}
    assert not Table.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_audit_flushing_the_whole_database_still_works_and_keeps_the_protection() -> None:
    services.audit(user=None, action="before.flush")
    call_command("flush", interactive=False, verbosity=0)
    assert not AuditEvent.objects.exists()
    event = services.audit(user=None, action="after.flush")
    _refused(lambda: AuditEvent.objects.filter(pk=event.pk).delete())
    _refused(lambda: AuditEvent.objects.filter(pk=event.pk).update(result="forged"))


def test_audit_protection_on_postgresql() -> None:
    env = {**os.environ, "DATABASE_URL": POSTGRES_URL}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--create-db",
                          "-k", "test_audit_ and not postgresql", __file__],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout
    vendor = subprocess.run(
        [sys.executable, "-c",
         "import django; django.setup(); from django.db import connection; print(connection.vendor)"],
        cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": "console.settings"}, capture_output=True, text=True, timeout=60)
    assert vendor.stdout.strip() == "postgresql", vendor.stderr


@pytest.mark.django_db
def test_plan_csv_downloads_when_the_table_name_has_line_breaks_quotes_or_accents(console_table) -> None:
    table = console_table("sample_table/mor/avro/v9_txns_simple_nometa")
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    Table.objects.filter(pk=table.pk).update(name='trips\r\nSet-Cookie: a="1"; été')
    response = login("viewer").get(reverse("console:plan_csv", args=[table.pk, plan.pk]))
    assert response.status_code == 200
    disposition = response["Content-Disposition"]
    assert disposition == ("attachment; filename*=utf-8''"
                           f"trips--Set-Cookie--a--1---%C3%A9t%C3%A9-clean-plan-{plan.pk}.csv")
    assert b"".join(response.streaming_content).decode().startswith("partition,file,bytes,decision")
