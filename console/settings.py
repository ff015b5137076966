"""Django settings, all from the environment with safe defaults.

DATABASE_URL      sqlite:///path/to/db.sqlite3 (default: db.sqlite3 beside manage.py) or
                  postgres://user:password@host:port/name
REDIS_URL         Celery broker and result backend (default redis://127.0.0.1:6379/0)
SPARK_MASTER      where Spark jobs run (default local[*])
CLEANLINE_ALLOWED_ROOTS  comma-separated paths/URIs tables may be registered from
                  (default: the demo lake, var/demo-lake)
CLEANLINE_HUDI_OPTIONS  Hudi writer options for every table under a root, a JSON object keyed by
                  root (default: none), e.g. {"s3://lake": {"hoodie.write.concurrency.mode":
                  "optimistic_concurrency_control", "hoodie.write.lock.provider":
                  "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"}}: the lock
                  the tables' writers use, below a table's own settings and above hoodie.properties
CLEANLINE_S3_ROOTS  per-root S3 settings, a JSON object keyed by s3:// root (default: none; every
                  s3:// table then uses the AWS_* variables), e.g.
                  {"s3://lake-bucket/warehouse": {"endpoint_url": "https://minio.internal:9000",
                   "region": "us-east-1", "access_key_id_env": "LAKE_KEY_ID",
                   "secret_access_key_env": "LAKE_SECRET"}}
                  Keys, all optional: endpoint_url, region, and credentials as the names of
                  environment variables holding them (access_key_id_env, secret_access_key_env,
                  session_token_env) or a profile of the AWS config files (profile). Secrets are
                  never written inline (refused). A table at or below a root uses the longest
                  such root's settings; what a root leaves unset comes from AWS_ENDPOINT_URL(_S3),
                  AWS_REGION and the AWS default credential chain. Read at start-up by every
                  process (web, worker, beat): a bad value, or a named variable that is unset,
                  stops start-up naming the root and key.
CLEANLINE_SYNC_INTERVAL_SECONDS, CLEANLINE_AUTO_CLEAN_INTERVAL_SECONDS  beat's schedules
                  (default 300 and 3600)
CLEANLINE_HEALTH_INTERVAL_SECONDS  a sync runs the whole table doctor again once its last full check is
                  this old (default 3600; 0: at every sync); before that a changed timeline is
                  checked by the doctor's timeline checks only (no listing of the table's files)
CLEANLINE_APPROVAL_EXPIRY_DAYS  a change waiting for approval (a clean plan, an archival, a repair) longer
                  than this goes stale, audited (default 0: never); beat looks hourly
CLEANLINE_DOCTOR_STALE_AFTER_MINUTES, CLEANLINE_DOCTOR_ORPHAN_MIN_AGE_HOURS, CLEANLINE_DOCTOR_CLEAN_LAG_COMMITS
                  the table doctor's thresholds (as `cleanline doctor --stale-after --orphan-min-age
                  --clean-lag` give them): a pending instant with no live heartbeat is stale once
                  this old (default 180), an unreferenced file an orphan once this old (default
                  72), a clean covering this many commits lags and is capped to this many per
                  step when the table sets no hoodie.clean.max.commits.to.clean (default 100)
CLEANLINE_HISTORY_DAYS  the History charts' snapshots (one per sync that changed something, at least
                  one a day per table) are kept this many days (default 400; a table's newest stays)
CLEANLINE_ARCHIVAL_SUMMARY_SECONDS  a sync that only added completed writes plans archival again (for the
                  overview's summary) once the summary is this old (default 600; 0: at every changed sync)
CLEANLINE_APPROVER_MUST_DIFFER  an approver must differ from the plan's requester (default true)
CLEANLINE_LOCK_EXPIRY_SECONDS  a table lock whose run stopped heartbeating is free after this (default 120)
CLEANLINE_BUSY_RETRY_SECONDS, CLEANLINE_BUSY_RETRY_MAX_SECONDS  a task finding its table busy
                  retries after this, doubling up to the max (default 30 and 600)
CLEANLINE_BUSY_MAX_RETRIES  after this many retries its plan or job fails with the reason (default 20)
CLEANLINE_SPARK_MIN_FILES  tables with at least this many files run on Spark (default 1000000)
CLEANLINE_PLAN_STORE  where clean plans keep their files as Parquet, a local folder or an
                  s3:// prefix that the Celery workers and every Spark executor reach at the same
                  URI (default var/plan-store beside manage.py; a cluster on several machines
                  needs a shared folder or an object store). One folder per plan:
                  <store>/table-<id>/plan-<id>
CLEANLINE_INSTANT_INLINE_MAX_BYTES  an instant's state files up to this size are decoded and shown
                  whole on its page and in the API (default 4194304, 4 MiB); a larger one is
                  never read whole in a request: its size, the sync's summary, its write
                  stats a page at a time (commits) and a download of the raw file instead
CLEANLINE_DEMO_STATUS  the JSON file `manage.py demo_lake --status` keeps the demo lake's background
                  build in (make run sets it); the dashboard and catalog show its progress
CLEANLINE_TASK_TIME_LIMIT, CLEANLINE_REDELIVERY_SECONDS  Celery's hard time limit per task and
                  when a dead worker's task is delivered again (default 21600 and limit + 600)
LOG_LEVEL         the root logger's level (default WARNING)
CLEANLINE_VAR_DIR  where the console writes: collected static files, the plan store's default, beat's
                  schedule, SQLite's default database (default: var/ in a checkout; an installed
                  console's var/ under its working directory)

Signing in (console/signin/; every refused sign-in audited as signin.refused)
CLEANLINE_LOCAL_SIGNIN  "false": local passwords only for CLEANLINE_BREAK_GLASS_USERS (default true)
CLEANLINE_BREAK_GLASS_USERS  comma-separated local usernames that keep signing in with a password
CLEANLINE_OIDC_ISSUER  the OIDC provider's issuer URL (default none: OIDC off); its endpoints are
                  read from <issuer>/.well-known/openid-configuration at the first sign-in
CLEANLINE_OIDC_CLIENT_ID, CLEANLINE_OIDC_CLIENT_SECRET  the console's client at the provider
CLEANLINE_OIDC_PROVIDER_NAME  the login button's "Sign in with ..." (default single sign-on)
CLEANLINE_OIDC_SCOPES  (default "openid email profile"; add the scope of the role claim if needed)
CLEANLINE_OIDC_ROLE_CLAIM  the claim that gives the role (default groups)
CLEANLINE_OIDC_CLAIM_ROLES  JSON: claim value -> viewer/operator/admin (default none: no role)
CLEANLINE_OIDC_USERNAME_CLAIM  the new user's username (default preferred_username, else email)
CLEANLINE_OIDC_SIGN_ALGO, CLEANLINE_OIDC_TIMEOUT  the ID token's algorithm (RS256), seconds (10)
CLEANLINE_OIDC_TRUSTED_AUDIENCES  comma-separated audiences an ID token may name besides the client
                  (default none: a token also for anyone else is refused; with one, its azp must be the client)
CLEANLINE_LDAP_SERVER_URI  ldap:// or ldaps:// (default none: LDAP off; needs cleanline[ldap])
CLEANLINE_LDAP_BIND_DN, CLEANLINE_LDAP_BIND_PASSWORD  the service account that searches
CLEANLINE_LDAP_USER_SEARCH_BASE, CLEANLINE_LDAP_USER_FILTER  (required; default (uid=%(user)s))
CLEANLINE_LDAP_GROUP_SEARCH_BASE, CLEANLINE_LDAP_GROUP_FILTER, CLEANLINE_LDAP_GROUP_TYPE  (required;
                  (objectClass=*); groupOfNames, groupOfUniqueNames or posixGroup)
CLEANLINE_LDAP_GROUP_ROLES  JSON: group DN -> viewer/operator/admin (default none: no role)
CLEANLINE_LDAP_START_TLS, CLEANLINE_LDAP_CA_FILE, CLEANLINE_LDAP_TLS_REQUIRE_CERT  StartTLS on ldap://
                  (default false), the CA file (default the system's), demand/hard/allow/never
CLEANLINE_LDAP_TIMEOUT  seconds (default 10); CLEANLINE_LDAP_ATTR_FIRST_NAME, _LAST_NAME, _EMAIL the
                  attributes copied to the user (givenName, sn, mail)
CLEANLINE_TEST_DB  the SQLite file tests use (default var/test-db.sqlite3); two test runs in one
                  checkout need two files and two REDIS_URL databases

SECRET_KEY        required when DEBUG is off: start-up fails without it. Generate one with
                  `python -c "import secrets; print(secrets.token_urlsafe(50))"`. With DEBUG on a
                  development key is used; under pytest (PYTEST_VERSION set) a random key for the run.
                  With DEBUG off a published key (the development key, the placeholder of
                  deploy/cleanline.env.example, `django-insecure-...`, any key containing
                  "change-me") is refused at start-up.
DEBUG             off unless "1"/"true"/"yes" (Django's debug pages: never where others can reach it)
HOST, PORT        the address and port `make run` serves the console on with gunicorn (default
                  127.0.0.1 and 8000; HOST=0.0.0.0 for every interface). A HOST other than 127.0.0.1,
                  localhost, 0.0.0.0 and :: is also an allowed host by default.
ALLOWED_HOSTS     comma-separated (default 127.0.0.1,localhost and HOST)
Static files      served by WhiteNoise from STATIC_ROOT (var/static beside manage.py), which
                  `manage.py collectstatic` fills (`make run` does); until it exists, and with DEBUG,
                  from the apps' static folders themselves
CSRF_TRUSTED_ORIGINS  comma-separated origins allowed to POST, e.g. https://cleanline.example.com
                  (needed when the console is reached through another host name or port)
CLEANLINE_HTTPS   "true" when the console is served over HTTPS only (by itself or behind a
                  TLS-terminating proxy): redirects HTTP to HTTPS, secure session and CSRF
                  cookies, HSTS with includeSubDomains (default off)
CLEANLINE_HSTS_SECONDS  HSTS max-age with CLEANLINE_HTTPS (default 31536000, one year)
CLEANLINE_HSTS_PRELOAD  "true" adds HSTS preload (default off: the browsers' preload list is a
                  commitment hard to undo, so `check --deploy`'s W021 is silenced until it is on)
CLEANLINE_TRUSTED_PROXY_SSL_HEADER  the header a TLS-terminating proxy sets on HTTPS requests,
                  `X-Forwarded-Proto` (value https) or `Name=value`; set it only when that proxy
                  always sets or strips the header, else a client could claim HTTPS. Behind such a
                  proxy CLEANLINE_HTTPS needs it, or every request is redirected again.
CLEANLINE_LOGIN_FAILURE_LIMIT  failed logins of one username (whatever its case) from one IP address
                  before both are locked out, and refused OIDC callbacks or API tokens from one IP
                  address before it is answered 429 (django-axes; default 5)
CLEANLINE_LOGIN_COOLOFF_MINUTES  how long a lockout lasts (default 15)
Passwords are checked by Django's four validators (at least 12 characters).

Metrics (/metrics, Prometheus text format; console/metrics.py)
CLEANLINE_METRICS_ALLOW  comma-separated client addresses and networks (CIDR) that may scrape
                  /metrics (default 127.0.0.1,::1; empty: none). The address is the connection's
                  (REMOTE_ADDR): behind a reverse proxy that is the proxy's, so use the token there.
CLEANLINE_METRICS_TOKEN  a bearer token that also allows scraping from any address
                  (`Authorization: Bearer <token>`; default none). Anything else gets 403.
PROMETHEUS_MULTIPROC_DIR  set (to an empty directory) when the web server runs several worker
                  processes, so that request latencies are summed over all of them (prometheus_client)

Alerts (console/alerts.py; checked by beat every CLEANLINE_ALERT_INTERVAL_SECONDS, default 300)
CLEANLINE_ALERT_EMAILS  comma-separated recipients of alert e-mails (default none: no e-mail); a
                  plan waiting for approval is also e-mailed to every admin who may approve it
                  and has an e-mail address
CLEANLINE_URL     the console's address in the links it sends (an approval notice), e.g.
                  https://cleanline.example.com (default http://HOST:PORT)
CLEANLINE_ALERT_FROM  the alert e-mails' sender (default cleanline@localhost)
CLEANLINE_ALERT_WEBHOOKS  comma-separated http(s) URLs each alert is POSTed to as JSON with a
                  `text` field (Slack-compatible incoming webhooks; default none). The URLs are
                  secrets to Slack and the like: the console shows only their host names.
CLEANLINE_ALERT_WEBHOOK_TIMEOUT_SECONDS  per webhook request (default 10)
CLEANLINE_ALERT_ALLOWED_HOSTS  comma-separated host names, IP addresses and networks (CIDR), each
                  with an optional :port ([v6]:port for IPv6), that webhooks may reach although
                  they are loopback, private, link-local or otherwise not public (default none:
                  public addresses only; console/outbound.py). Checked after name resolution, at
                  every send; redirects are never followed.
CLEANLINE_ALERT_WRITE_PENDING_HOURS  default threshold: a write pending longer fires (default 12)
CLEANLINE_ALERT_SAVEPOINT_DAYS  default threshold: a table's earliest savepoint older than this
                  fires, as Hudi's archival stops at it (default 30)
CLEANLINE_ALERT_RECLAIMABLE_BYTES  default threshold: more reclaimable bytes fire (default
                  107374182400, 100 GiB)
CLEANLINE_ALERT_ACTIVE_INSTANTS  default threshold: an active timeline holding more instants
                  fires, naming what holds archival back (default 200)
CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS  default threshold: a merge-on-read table with more delta
                  commits since its last compaction fires (default 30; Hudi compacts at 5)
CLEANLINE_ALERT_BACKLOG_BYTES  default threshold: more log bytes waiting for compaction fire
                  (default 10737418240, 10 GiB)
CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS  default threshold: a compaction, log compaction or
                  clustering inflight longer fires, one alert per instant (default 6)
                  Admins change each table's rules (on/off, threshold) on the alerts page, and the
                  lake-wide defaults and the channels (which then replace CLEANLINE_ALERT_EMAILS and
                  CLEANLINE_ALERT_WEBHOOKS) on the alert set-up page; these settings are the defaults.
EMAIL_HOST, EMAIL_PORT  the SMTP server alert e-mails go through (Django's SMTP backend;
                  default localhost and 25); EMAIL_HOST_USER, EMAIL_HOST_PASSWORD, EMAIL_USE_TLS,
                  EMAIL_USE_SSL when it needs them; EMAIL_TIMEOUT in seconds (default 10)"""

from __future__ import annotations

import ipaddress
import os
import secrets
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

from console.outbound import allowed_entry
from console.parallel_tests import parallel_test_worker
from console.signin.config import ldap_settings, role_map
from timeline import CleanlineError
from timeline.internal.engine import spark_min_files
from timeline.locks.discovery import parse_hudi_options
from timeline.storage import S3ConfigError, S3Settings, parse_s3_roots

BASE_DIR = Path(__file__).resolve().parent.parent
# Where the console keeps what it writes (collected static files, the plan store, beat's schedule):
# a checkout's var/ (make run, the tests), or CLEANLINE_VAR_DIR; a console installed from the wheel
# (`cleanline-console`, whose BASE_DIR is site-packages) defaults to var/ under its working directory.
CHECKOUT = (BASE_DIR / "manage.py").is_file()
VAR_DIR = Path(os.environ.get("CLEANLINE_VAR_DIR", "").strip()
               or (BASE_DIR / "var" if CHECKOUT else Path.cwd() / "var"))
DEFAULT_SQLITE = BASE_DIR / "db.sqlite3" if CHECKOUT else VAR_DIR / "db.sqlite3"


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def database_from_url(url: str) -> dict[str, object]:
    """Django's DATABASES entry for a sqlite:/// or postgres:// URL."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        name = unquote(parsed.path[1:] if parsed.path.startswith("//") else parsed.path) or str(DEFAULT_SQLITE)
        # Tests use a file too, so that Celery worker processes started by them share it.
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name, "OPTIONS": {"timeout": 20},
                "TEST": {"NAME": str(BASE_DIR / (os.environ.get("CLEANLINE_TEST_DB") or "var/test-db.sqlite3"))}}
    if parsed.scheme in ("postgres", "postgresql"):
        return {"ENGINE": "django.db.backends.postgresql", "NAME": unquote(parsed.path.lstrip("/")),
                "USER": unquote(parsed.username or ""), "PASSWORD": unquote(parsed.password or ""),
                "HOST": parsed.hostname or "", "PORT": str(parsed.port or ""), "CONN_MAX_AGE": 60}
    raise ValueError(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use sqlite:/// or postgres://)")


def _list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# Keys published in this repository (or by Django's startproject): never a server's key. The
# placeholder of deploy/cleanline.env.example is one: a server that copied the file unchanged
# would sign its sessions with a key anyone can read; so is any key still saying "change-me".
DEVELOPMENT_KEY = "cleanline-development-only-key-change-me"
EXAMPLE_KEY = "change-me-to-a-long-random-string-of-fifty-characters-or-more"
PUBLISHED_KEYS = frozenset({DEVELOPMENT_KEY, EXAMPLE_KEY, "cleanline-tests-only-key-never-use-it-elsewhere-0123456789"})


def published_key(key: str) -> bool:
    """Whether `key` is published (this project's development, example or former test key, a
    `django-insecure-` key) or a placeholder left unchanged (it contains "change-me")."""
    return key in PUBLISHED_KEYS or key.startswith("django-insecure-") or "change-me" in key.lower()


def secret_key(*, debug: bool) -> str:
    """SECRET_KEY from the environment. With DEBUG off a published key (`published_key`: the
    development, example or former test key, a `django-insecure-` key, any key containing
    "change-me") is refused whatever else is set. Without a key: the development key with DEBUG
    on; under pytest a random key for the run (put into the environment so that the workers and
    servers a test starts share it); otherwise start-up fails with how to make one."""
    key = os.environ.get("SECRET_KEY", "").strip()
    if key:
        if not debug and published_key(key):
            raise ImproperlyConfigured(
                "SECRET_KEY is a published key (the development or test key, the placeholder of "
                "deploy/cleanline.env.example, a django-insecure- key or another key saying \"change-me\") and "
                "DEBUG is off: anyone could forge sessions with it. Set SECRET_KEY to a long random string kept "
                "secret, e.g. the output of "
                "`python -c \"import secrets; print(secrets.token_urlsafe(50))\"`.")
        return key
    if debug:
        return DEVELOPMENT_KEY
    # pytest sets PYTEST_VERSION for its run; a conftest cannot provide the key, as pytest-django
    # imports these settings before any conftest.py. The key is random, so never a published one.
    if os.environ.get("PYTEST_VERSION"):
        os.environ["SECRET_KEY"] = secrets.token_urlsafe(50)
        return os.environ["SECRET_KEY"]
    raise ImproperlyConfigured(
        "SECRET_KEY is not set and DEBUG is off. Set the SECRET_KEY environment variable to a long "
        "random string kept secret, e.g. the output of "
        "`python -c \"import secrets; print(secrets.token_urlsafe(50))\"` (or set DEBUG=1 for development).")


def s3_roots(text: str) -> dict[str, S3Settings]:
    """CLEANLINE_S3_ROOTS parsed, credentials read from the variables it names."""
    try:
        return parse_s3_roots(text)
    except S3ConfigError as exc:
        raise ImproperlyConfigured(f"CLEANLINE_S3_ROOTS: {exc}") from exc


def hudi_options(text: str) -> dict[str, dict[str, str]]:
    """CLEANLINE_HUDI_OPTIONS parsed: Hudi writer options per root."""
    try:
        return parse_hudi_options(text)
    except CleanlineError as exc:
        raise ImproperlyConfigured(f"CLEANLINE_HUDI_OPTIONS: {exc}") from exc


def proxy_ssl_header(value: str) -> tuple[str, str] | None:
    """`X-Forwarded-Proto` or `X-Forwarded-Proto=https` -> ("HTTP_X_FORWARDED_PROTO", "https")."""
    name, _, expected = value.partition("=")
    if not name.strip():
        return None
    return "HTTP_" + name.strip().upper().replace("-", "_"), expected.strip() or "https"


def metrics_allow(items: list[str]) -> list[str]:
    """CLEANLINE_METRICS_ALLOW checked: each an IP address or network (CIDR)."""
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError as exc:
            raise ImproperlyConfigured(f"CLEANLINE_METRICS_ALLOW: {item!r} is not an IP address or network") from exc
    return items


def webhook_urls(items: list[str]) -> list[str]:
    """CLEANLINE_ALERT_WEBHOOKS checked: absolute http(s) URLs (the message names no URL: they are secrets)."""
    for index, item in enumerate(items, 1):
        parsed = urlparse(item)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ImproperlyConfigured(f"CLEANLINE_ALERT_WEBHOOKS: entry {index} is not an http:// or https:// URL")
    return items


def alert_allowed_hosts(items: list[str]) -> list[str]:
    """CLEANLINE_ALERT_ALLOWED_HOSTS checked: each a host name, an IP address or a network, with an optional :port."""
    for item in items:
        try:
            allowed_entry(item)
        except ValueError as exc:
            raise ImproperlyConfigured(f"CLEANLINE_ALERT_ALLOWED_HOSTS: {exc}") from None
    return items


def port(value: str) -> int:
    """PORT checked: a TCP port number."""
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if not 0 < number < 65536:
        raise ImproperlyConfigured(f"PORT={value!r}: expected a TCP port number (1-65535)")
    return number


DEBUG = _flag("DEBUG")
SECRET_KEY = secret_key(debug=DEBUG)
# Where `make run` serves the console (scripts/run.sh binds gunicorn to HOST:PORT).
HOST = os.environ.get("HOST", "").strip() or "127.0.0.1"
PORT = port(os.environ.get("PORT", "") or "8000")
_SERVED_AS = [] if HOST in ("127.0.0.1", "localhost", "0.0.0.0", "::") else [HOST.strip("[]")]
ALLOWED_HOSTS = _list("ALLOWED_HOSTS", ",".join(["127.0.0.1", "localhost", *_SERVED_AS]))
CSRF_TRUSTED_ORIGINS = _list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "ninja",
    "console",
]

MIDDLEWARE = [
    # First, so that request latencies (console.metrics) include every other middleware.
    "console.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files, right after the security headers and before anything that reads sessions.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.sessions.SessionExpiredMiddleware",  # a form sent after the session ended: back to its page
    "console.zones.TimeZoneMiddleware",  # every time in the user's zone (their choice, else the browser's)
    "django.contrib.messages.middleware.MessageMiddleware",
    "console.api.common.AuditScopeMiddleware",
    "console.api.common.ApiProblemMiddleware",  # errors under /api/ as problem details, never HTML
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "console.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.sessions.session_notice",
                "console.context_processors.approvals",
                "console.zones.time_zone",
            ]
        },
    }
]

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL", f"sqlite:///{DEFAULT_SQLITE}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
CSRF_FAILURE_VIEW = "console.views_errors.csrf_failure"  # the console's page, not Django's bare one
LOGIN_REDIRECT_URL = "console:home"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Signing in (console/signin/): local accounts, LDAP and OIDC, each on when configured. Login
# throttling (django-axes, console/signin/throttle.py): its backend first refuses a locked-out
# username + IP address; refused OIDC callbacks and API tokens are counted per IP address too.
CLEANLINE_LOCAL_SIGNIN = os.environ.get("CLEANLINE_LOCAL_SIGNIN", "true").strip().lower() in ("1", "true", "yes")
CLEANLINE_BREAK_GLASS_USERS = _list("CLEANLINE_BREAK_GLASS_USERS")
CLEANLINE_OIDC_ISSUER = os.environ.get("CLEANLINE_OIDC_ISSUER", "").strip()
CLEANLINE_OIDC_CLIENT_ID = os.environ.get("CLEANLINE_OIDC_CLIENT_ID", "").strip()
CLEANLINE_OIDC_CLIENT_SECRET = os.environ.get("CLEANLINE_OIDC_CLIENT_SECRET", "")
if CLEANLINE_OIDC_ISSUER and not CLEANLINE_OIDC_CLIENT_ID:
    raise ImproperlyConfigured("CLEANLINE_OIDC_ISSUER is set: CLEANLINE_OIDC_CLIENT_ID (and usually "
                               "CLEANLINE_OIDC_CLIENT_SECRET) are needed too")
CLEANLINE_OIDC_PROVIDER_NAME = os.environ.get("CLEANLINE_OIDC_PROVIDER_NAME", "").strip() or "single sign-on"
CLEANLINE_OIDC_ROLE_CLAIM = os.environ.get("CLEANLINE_OIDC_ROLE_CLAIM", "").strip() or "groups"
CLEANLINE_OIDC_CLAIM_ROLES = role_map("CLEANLINE_OIDC_CLAIM_ROLES", os.environ.get("CLEANLINE_OIDC_CLAIM_ROLES", ""))
CLEANLINE_OIDC_USERNAME_CLAIM = os.environ.get("CLEANLINE_OIDC_USERNAME_CLAIM", "").strip() or "preferred_username"
CLEANLINE_OIDC_TIMEOUT = float(os.environ.get("CLEANLINE_OIDC_TIMEOUT", "10"))
# Audiences besides the client that an ID token may also name (OIDC Core 3.1.3.7; its azp must then be us).
CLEANLINE_OIDC_TRUSTED_AUDIENCES = _list("CLEANLINE_OIDC_TRUSTED_AUDIENCES")
# mozilla-django-oidc's own settings (console/signin/oidc.py reads the endpoints from discovery and
# the client's id and secret from the two settings above).
OIDC_RP_SCOPES = os.environ.get("CLEANLINE_OIDC_SCOPES", "").strip() or "openid email profile"
OIDC_RP_SIGN_ALGO = os.environ.get("CLEANLINE_OIDC_SIGN_ALGO", "").strip() or "RS256"
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # the hint for sign-out at the provider
OIDC_TIMEOUT = CLEANLINE_OIDC_TIMEOUT
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_authentication_callback"
OIDC_REDIRECT_REQUIRE_HTTPS = False  # `next` is a path on this host either way
# LDAP (django-auth-ldap's AUTH_LDAP_* settings from CLEANLINE_LDAP_*).
CLEANLINE_LDAP_ENABLED = bool(os.environ.get("CLEANLINE_LDAP_SERVER_URI", "").strip())
CLEANLINE_LDAP_GROUP_ROLES = role_map("CLEANLINE_LDAP_GROUP_ROLES", os.environ.get("CLEANLINE_LDAP_GROUP_ROLES", ""))
if CLEANLINE_LDAP_ENABLED:
    globals().update(ldap_settings(os.environ))
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *(["console.signin.ldap.LdapBackend"] if CLEANLINE_LDAP_ENABLED else []),
    "console.signin.local.LocalBackend",
    "console.signin.oidc.OidcBackend",  # answers only the OIDC callback, and only with CLEANLINE_OIDC_ISSUER set
]
# Every refusal counts, a GET's too (the OIDC callback, an API call with a wrong token), under the
# name console/signin/throttle.py gives it: a username whatever its case, width or hidden characters.
AXES_NEVER_LOCKOUT_GET = False
AXES_USERNAME_CALLABLE = "console.signin.throttle.username"
AXES_FAILURE_LIMIT = int(os.environ.get("CLEANLINE_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("CLEANLINE_LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

# HTTPS only (CLEANLINE_HTTPS), behind a proxy that says which requests came over HTTPS.
CLEANLINE_HTTPS = _flag("CLEANLINE_HTTPS")
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(os.environ.get("CLEANLINE_TRUSTED_PROXY_SSL_HEADER", ""))
SECURE_SSL_REDIRECT = CLEANLINE_HTTPS
SESSION_COOKIE_SECURE = CLEANLINE_HTTPS
CSRF_COOKIE_SECURE = CLEANLINE_HTTPS
SECURE_HSTS_SECONDS = int(os.environ.get("CLEANLINE_HSTS_SECONDS", "31536000")) if CLEANLINE_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = CLEANLINE_HTTPS
SECURE_HSTS_PRELOAD = CLEANLINE_HTTPS and _flag("CLEANLINE_HSTS_PRELOAD")
# W021 asks for HSTS preload, a commitment to browsers' built-in lists that is slow to undo:
# it is the operator's choice (CLEANLINE_HSTS_PRELOAD), not a deployment mistake.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# WhiteNoise serves STATIC_ROOT (compressed copies made by collectstatic), so that the production
# server (gunicorn) needs no DEBUG for the console's CSS and scripts.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
if not STATIC_ROOT.is_dir():
    # Before the first collectstatic (tests, a fresh checkout): the apps' static folders themselves,
    # looked up per request.
    WHITENOISE_USE_FINDERS = WHITENOISE_AUTOREFRESH = True
USE_TZ = True
TIME_ZONE = "UTC"


if os.environ.get("PYTEST_VERSION"):
    parallel_test_worker()
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
SPARK_MASTER = os.environ.get("SPARK_MASTER", "local[*]")
CLEANLINE_ALLOWED_ROOTS = [
    r.strip() for r in os.environ.get("CLEANLINE_ALLOWED_ROOTS", str(VAR_DIR / "demo-lake")).split(",")
    if r.strip()
]
# The library opens s3:// tables below these roots with their settings, passed with every table the
# console opens (console.lake.open_table reads them then: a test's settings override applies at once).
CLEANLINE_S3_ROOTS = s3_roots(os.environ.get("CLEANLINE_S3_ROOTS", ""))
# The Hudi writer options (the lock) of every table below a root, read like the table's own settings
# (passed the same way).
CLEANLINE_HUDI_OPTIONS = hudi_options(os.environ.get("CLEANLINE_HUDI_OPTIONS", ""))
CLEANLINE_SYNC_INTERVAL_SECONDS = int(os.environ.get("CLEANLINE_SYNC_INTERVAL_SECONDS", "300"))
# The table doctor at sync time: in full once its last full check is this old (timeline checks between).
CLEANLINE_HEALTH_INTERVAL_SECONDS = int(os.environ.get("CLEANLINE_HEALTH_INTERVAL_SECONDS", "3600"))
# A change waiting for approval longer than this goes stale (console.services.approvals; 0: never).
CLEANLINE_APPROVAL_EXPIRY_DAYS = float(os.environ.get("CLEANLINE_APPROVAL_EXPIRY_DAYS", "0"))
# The table doctor's thresholds (timeline.doctor.DoctorSettings; console.selectors.health.doctor_settings).
CLEANLINE_DOCTOR_STALE_AFTER_MINUTES = float(os.environ.get("CLEANLINE_DOCTOR_STALE_AFTER_MINUTES", "180"))
CLEANLINE_DOCTOR_ORPHAN_MIN_AGE_HOURS = float(os.environ.get("CLEANLINE_DOCTOR_ORPHAN_MIN_AGE_HOURS", "72"))
CLEANLINE_DOCTOR_CLEAN_LAG_COMMITS = int(os.environ.get("CLEANLINE_DOCTOR_CLEAN_LAG_COMMITS", "100"))
# a sync that only added completed writes re-plans archival for the overview once its summary is this old
CLEANLINE_ARCHIVAL_SUMMARY_SECONDS = int(os.environ.get("CLEANLINE_ARCHIVAL_SUMMARY_SECONDS", "600"))
# An approver must differ from the plan's requester (automatic plans excepted).
CLEANLINE_APPROVER_MUST_DIFFER = os.environ.get("CLEANLINE_APPROVER_MUST_DIFFER", "true").lower() in (
    "1", "true", "yes")
# The per-table lock is a lease: its owner heartbeats (every quarter of this, at most every 10 s);
# once it has not for this long, another run may take the table over.
CLEANLINE_LOCK_EXPIRY_SECONDS = float(os.environ.get("CLEANLINE_LOCK_EXPIRY_SECONDS", "120"))
# A task whose table is busy is retried after this many seconds, doubling up to the max, this many times.
CLEANLINE_BUSY_RETRY_SECONDS = float(os.environ.get("CLEANLINE_BUSY_RETRY_SECONDS", "30"))
CLEANLINE_BUSY_RETRY_MAX_SECONDS = float(os.environ.get("CLEANLINE_BUSY_RETRY_MAX_SECONDS", "600"))
CLEANLINE_BUSY_MAX_RETRIES = int(os.environ.get("CLEANLINE_BUSY_MAX_RETRIES", "20"))
# Tables with at least this many files are planned and cleaned by PySpark jobs (0: never).
CLEANLINE_SPARK_MIN_FILES = spark_min_files()
# State files above this size are not decoded in a request (console.selectors.instant_contents).
CLEANLINE_INSTANT_INLINE_MAX_BYTES = int(os.environ.get("CLEANLINE_INSTANT_INLINE_MAX_BYTES", str(4 << 20)))
# The demo lake's background build (`make run`): the JSON file its command keeps its progress in,
# shown on the dashboard and the catalog while it runs ("" when there is none).
CLEANLINE_DEMO_STATUS = os.environ.get("CLEANLINE_DEMO_STATUS", "").strip()
# History (console.services.history): the syncs' snapshots are kept this many days.
CLEANLINE_HISTORY_DAYS = int(os.environ.get("CLEANLINE_HISTORY_DAYS", "400"))
# Plans' files as Parquet, one folder per plan (timeline/internal/plan_store/__init__.py).
CLEANLINE_PLAN_STORE = os.environ.get("CLEANLINE_PLAN_STORE", "").strip() or str(VAR_DIR / "plan-store")

# /metrics: client addresses or networks allowed, or a bearer token (console.metrics).
CLEANLINE_METRICS_ALLOW = metrics_allow(_list("CLEANLINE_METRICS_ALLOW", "127.0.0.1,::1"))
CLEANLINE_METRICS_TOKEN = os.environ.get("CLEANLINE_METRICS_TOKEN", "").strip()
# Alerts (console.alerts): where they go (nowhere by default) and the rules' default thresholds.
# The console's address in what it sends (an approval notice's link): scheme, host and port.
_SERVED_AT = "127.0.0.1" if HOST in ("0.0.0.0", "::") else HOST
CLEANLINE_URL = (os.environ.get("CLEANLINE_URL", "").strip().rstrip("/")
                 or f"http{'s' if CLEANLINE_HTTPS else ''}://{_SERVED_AT}:{PORT}")
CLEANLINE_ALERT_EMAILS = _list("CLEANLINE_ALERT_EMAILS")
CLEANLINE_ALERT_FROM = os.environ.get("CLEANLINE_ALERT_FROM", "cleanline@localhost")
CLEANLINE_ALERT_WEBHOOKS = webhook_urls(_list("CLEANLINE_ALERT_WEBHOOKS"))
CLEANLINE_ALERT_ALLOWED_HOSTS = alert_allowed_hosts(_list("CLEANLINE_ALERT_ALLOWED_HOSTS"))
CLEANLINE_ALERT_WEBHOOK_TIMEOUT_SECONDS = float(os.environ.get("CLEANLINE_ALERT_WEBHOOK_TIMEOUT_SECONDS", "10"))
CLEANLINE_ALERT_WRITE_PENDING_HOURS = float(os.environ.get("CLEANLINE_ALERT_WRITE_PENDING_HOURS", "12"))
CLEANLINE_ALERT_SAVEPOINT_DAYS = float(os.environ.get("CLEANLINE_ALERT_SAVEPOINT_DAYS", "30"))
CLEANLINE_ALERT_RECLAIMABLE_BYTES = float(os.environ.get("CLEANLINE_ALERT_RECLAIMABLE_BYTES", str(100 * 1024**3)))
CLEANLINE_ALERT_ACTIVE_INSTANTS = float(os.environ.get("CLEANLINE_ALERT_ACTIVE_INSTANTS", "200"))
CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS = float(os.environ.get("CLEANLINE_ALERT_BACKLOG_DELTA_COMMITS", "30"))
CLEANLINE_ALERT_BACKLOG_BYTES = float(os.environ.get("CLEANLINE_ALERT_BACKLOG_BYTES", str(10 * 1024**3)))
CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS = float(os.environ.get("CLEANLINE_ALERT_SERVICE_INFLIGHT_HOURS", "6"))
# Django's SMTP backend, for alert e-mails only (a local server by default).
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = _flag("EMAIL_USE_TLS")
EMAIL_USE_SSL = _flag("EMAIL_USE_SSL")
EMAIL_TIMEOUT = float(os.environ.get("EMAIL_TIMEOUT", "10"))

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CLEANLINE_TASK_TIME_LIMIT", "21600"))
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_TASK_ALWAYS_EAGER = _flag("CELERY_TASK_ALWAYS_EAGER")
# A task whose worker died is delivered again after this many seconds (Redis keeps it unacked).
# kombu looks for such tasks every unacked_restore_interval x unacked_restore_throttle seconds
# (10 x 10 by default): a short redelivery time is looked for at a third of it, every time.
_REDELIVERY_SECONDS = int(os.environ.get("CLEANLINE_REDELIVERY_SECONDS", str(CELERY_TASK_TIME_LIMIT + 600)))
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": _REDELIVERY_SECONDS}
if _REDELIVERY_SECONDS < 300:
    CELERY_BROKER_TRANSPORT_OPTIONS |= {"unacked_restore_interval": max(1, _REDELIVERY_SECONDS // 3),
                                        "unacked_restore_throttle": 1}
CELERY_BEAT_SCHEDULE = {
    "sync-all-tables": {"task": "console.tasks.sync_all_tables", "schedule": CLEANLINE_SYNC_INTERVAL_SECONDS},
    "automatic-cleans": {"task": "console.tasks.auto_clean_tables",
                         "schedule": int(os.environ.get("CLEANLINE_AUTO_CLEAN_INTERVAL_SECONDS", "3600"))},
    "alerts": {"task": "console.tasks.check_alerts",
               "schedule": int(os.environ.get("CLEANLINE_ALERT_INTERVAL_SECONDS", "300"))},
    "approval-expiry": {"task": "console.tasks.expire_approvals", "schedule": 3600},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
