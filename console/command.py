"""`cleanline-console`: the console installed from its wheel, run with the settings from the
environment (console/settings.py; the README's Configuration and Deploying sections).

    cleanline-console migrate          the database migrated, the static files collected (each upgrade)
    cleanline-console serve [ARGS]     gunicorn on HOST:PORT with WEB_CONCURRENCY workers
    cleanline-console worker [ARGS]    a Celery worker
    cleanline-console beat [ARGS]      Celery beat (syncs, automatic cleans, alerts)
    cleanline-console manage CMD ...   any `manage.py` command (createsuperuser, changepassword, check ...)

serve, worker and beat replace this process with theirs (what a systemd unit wants); ARGS are
passed on to gunicorn or Celery."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence

USAGE = __doc__.split("\n\n")[1] if __doc__ else ""


def _settings() -> None:
    """Django set up with the settings from the environment, and their var/ folder made."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django
    from django.conf import settings

    django.setup()
    settings.VAR_DIR.mkdir(parents=True, exist_ok=True)


def _exec(args: list[str]) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *args])


def migrate() -> None:
    from django.core.management import call_command

    _settings()
    call_command("migrate", interactive=False)
    call_command("collectstatic", interactive=False, verbosity=0)


def serve(extra: Sequence[str]) -> None:
    from django.conf import settings

    _settings()  # fails here, readably, on a bad setting (no SECRET_KEY, a bad CLEANLINE_* value)
    workers = os.environ.get("WEB_CONCURRENCY", "").strip() or "2"
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # several gunicorn workers sum their request latencies here (console/metrics.py); emptied at each start
        folder = settings.VAR_DIR / "prometheus"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
    _exec(["-m", "gunicorn", "console.wsgi:application", "--bind", f"{settings.HOST}:{settings.PORT}",
           "--workers", workers, "--access-logfile", "-", *extra])


def worker(extra: Sequence[str]) -> None:
    _settings()
    _exec(["-m", "celery", "-A", "console", "worker", "--loglevel", "INFO", *extra])


def beat(extra: Sequence[str]) -> None:
    from django.conf import settings

    _settings()
    _exec(["-m", "celery", "-A", "console", "beat", "--loglevel", "INFO",
           "--schedule", str(settings.VAR_DIR / "celerybeat-schedule"), *extra])


def manage(extra: Sequence[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["cleanline-console manage", *extra])


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "migrate" and not rest:
        migrate()
    elif command in ("serve", "worker", "beat", "manage"):
        {"serve": serve, "worker": worker, "beat": beat, "manage": manage}[command](rest)
    else:
        print(f"usage: cleanline-console COMMAND\n\n{USAGE}", file=sys.stderr)
        sys.exit(0 if command in ("-h", "--help") else 2)


if __name__ == "__main__":
    main()
