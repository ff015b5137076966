"""Django settings, all from the environment with safe defaults.

DATABASE_URL      sqlite:///path/to/db.sqlite3 (default: db.sqlite3 beside manage.py) or
                  postgres://user:password@host:port/name
REDIS_URL         Celery broker and result backend (default redis://127.0.0.1:6379/0)
SPARK_MASTER      where Spark jobs run (default local[*])
CLEANLINE_ALLOWED_ROOTS  comma-separated paths/URIs tables may be registered from
                  (default: the demo lake, var/demo-lake)
SECRET_KEY        required when DEBUG is off outside tests; a development key otherwise
DEBUG             off unless "1"/"true"/"yes"
ALLOWED_HOSTS     comma-separated (default 127.0.0.1,localhost)"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

BASE_DIR = Path(__file__).resolve().parent.parent


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def database_from_url(url: str) -> dict[str, object]:
    """Django's DATABASES entry for a sqlite:/// or postgres:// URL."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        name = unquote(parsed.path[1:] if parsed.path.startswith("//") else parsed.path) or str(BASE_DIR / "db.sqlite3")
        # Tests use a file too, so that Celery worker processes started by them share it.
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": name, "OPTIONS": {"timeout": 20},
                "TEST": {"NAME": str(BASE_DIR / "var" / "test-db.sqlite3")}}
    if parsed.scheme in ("postgres", "postgresql"):
        return {"ENGINE": "django.db.backends.postgresql", "NAME": unquote(parsed.path.lstrip("/")),
                "USER": unquote(parsed.username or ""), "PASSWORD": unquote(parsed.password or ""),
                "HOST": parsed.hostname or "", "PORT": str(parsed.port or ""), "CONN_MAX_AGE": 60}
    raise ValueError(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use sqlite:/// or postgres://)")


DEBUG = _flag("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "cleanline-development-only-key-change-me")
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
            ]
        },
    }
]

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "console:catalog"
LOGOUT_REDIRECT_URL = "login"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"
USE_TZ = True
TIME_ZONE = "UTC"

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
SPARK_MASTER = os.environ.get("SPARK_MASTER", "local[*]")
CLEANLINE_ALLOWED_ROOTS = [
    r.strip() for r in os.environ.get("CLEANLINE_ALLOWED_ROOTS", str(BASE_DIR / "var" / "demo-lake")).split(",")
    if r.strip()
]
CLEANLINE_SYNC_INTERVAL_SECONDS = int(os.environ.get("CLEANLINE_SYNC_INTERVAL_SECONDS", "300"))
# An approver must differ from the plan's requester (automatic plans excepted).
CLEANLINE_APPROVER_MUST_DIFFER = os.environ.get("CLEANLINE_APPROVER_MUST_DIFFER", "true").lower() in ("1", "true", "yes")
# Tables with at least this many files are planned and cleaned by PySpark jobs (0: never).
CLEANLINE_SPARK_MIN_FILES = int(os.environ.get("CLEANLINE_SPARK_MIN_FILES", "200000"))

CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = int(os.environ.get("CLEANLINE_TASK_TIME_LIMIT", "21600"))
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_TASK_ALWAYS_EAGER = _flag("CELERY_TASK_ALWAYS_EAGER")
# A task whose worker died is delivered again after this many seconds (Redis keeps it unacked).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("CLEANLINE_REDELIVERY_SECONDS", str(CELERY_TASK_TIME_LIMIT + 600))),
}
CELERY_BEAT_SCHEDULE = {
    "sync-all-tables": {"task": "console.tasks.sync_all_tables", "schedule": CLEANLINE_SYNC_INTERVAL_SECONDS},
    "automatic-cleans": {"task": "console.tasks.auto_clean_tables",
                         "schedule": int(os.environ.get("CLEANLINE_AUTO_CLEAN_INTERVAL_SECONDS", "3600"))},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
