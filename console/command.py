"""`cleanline-console`: the console installed from its wheel, run with the settings from the
environment (console/settings.py; the README's Configuration and Deploying sections).

    cleanline-console migrate          the database migrated, the static files collected (each upgrade)
    cleanline-console serve [ARGS]     gunicorn on HOST:PORT with WEB_CONCURRENCY workers
    cleanline-console worker [ARGS]    a Celery worker
    cleanline-console beat [ARGS]      Celery beat (syncs, automatic cleans, alerts)
    cleanline-console manage CMD ...   any `manage.py` command (createsuperuser, changepassword, check ...)
    cleanline-console deploy-files DIR [--lake PATH]... [--env-file PATH]
                                       the systemd units and an environment file for this install, in DIR

serve, worker and beat replace this process with theirs (what a systemd unit wants); ARGS are
passed on to gunicorn or Celery."""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

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


UNITS = ("cleanline-web.service", "cleanline-worker.service", "cleanline-beat.service")
ENV_EXAMPLE = "cleanline.env.example"
# What the files of deploy/ say where this install puts its own paths.
EXAMPLE_CONSOLE = "/opt/cleanline/bin/cleanline-console"
EXAMPLE_ENV_FILE = "/etc/cleanline/cleanline.env"
LAKE_MARK = "# the lake (CLEANLINE_ALLOWED_ROOTS):"


def deploy_folder() -> Path:
    """deploy/ of this install: in the wheel's data (<prefix>/share/cleanline/deploy, pyproject's
    data-files), else beside the package (a checkout)."""
    for folder in (Path(sys.prefix) / "share" / "cleanline" / "deploy", Path(__file__).resolve().parents[1] / "deploy"):
        if (folder / ENV_EXAMPLE).is_file():
            return folder
    raise SystemExit("cleanline-console: deploy/ is not installed with this package (reinstall the wheel)")


def deploy_files(extra: Sequence[str]) -> None:
    """Write the systemd units and the environment file for this install into a folder: the
    units start this install's `cleanline-console` with `--env-file`, the worker may write to
    the lake's roots (`--lake`, else CLEANLINE_ALLOWED_ROOTS from the environment), and the
    environment file (mode 600) has those roots, a fresh random SECRET_KEY and the rest of
    deploy/cleanline.env.example to fill in. Nothing is overwritten."""
    parser = argparse.ArgumentParser(prog="cleanline-console deploy-files")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--lake", action="append", default=[], help="a root of the lake (repeat for several)")
    parser.add_argument("--env-file", default=EXAMPLE_ENV_FILE, help="where the units read the settings from")
    args = parser.parse_args(list(extra))
    lakes = [str(Path(p).absolute()) for p in args.lake] or [
        p.strip() for p in os.environ.get("CLEANLINE_ALLOWED_ROOTS", "").split(",") if p.strip()]
    console = str(Path(sys.executable).parent / "cleanline-console")
    source = deploy_folder()
    written = {name: (source / name).read_text() for name in (*UNITS, ENV_EXAMPLE)}
    for name in UNITS:
        text = written[name].replace(EXAMPLE_CONSOLE, console).replace(EXAMPLE_ENV_FILE, args.env_file)
        lines = []
        for line in text.splitlines():
            lines.append(line)
            if line.startswith(LAKE_MARK):  # the worker deletes files of the lake: it may write there
                lines += [f"ReadWritePaths={lake}" for lake in lakes] or ["# ReadWritePaths= (the lake's roots)"]
        written[name] = "\n".join(lines) + "\n"
    env = []
    for line in written.pop(ENV_EXAMPLE).splitlines():
        if line.startswith("SECRET_KEY="):
            line = f"SECRET_KEY={secrets.token_urlsafe(50)}"
        elif line.startswith("CLEANLINE_ALLOWED_ROOTS="):
            line = f"CLEANLINE_ALLOWED_ROOTS={','.join(lakes)}"
        elif line.startswith("# Replace the placeholder"):
            line = "# Made for this install by `cleanline-console deploy-files`: keep it secret."
        env.append(line)
    written[Path(args.env_file).name] = "\n".join(env) + "\n"
    folder: Path = args.folder
    folder.mkdir(parents=True, exist_ok=True)
    taken = [name for name in written if (folder / name).exists()]
    if taken:
        raise SystemExit(f"cleanline-console: {folder} has {', '.join(taken)} already: nothing written")
    for name, text in written.items():
        target = folder / name
        target.write_text(text)
        if not name.endswith(".service"):
            target.chmod(0o600)
        print(target)
    if not lakes:
        print("cleanline-console: no lake given (--lake): set CLEANLINE_ALLOWED_ROOTS and the worker's "
              "ReadWritePaths before starting", file=sys.stderr)


def refusing_bad_settings(work: Callable[[], None], program: str = "cleanline-console") -> None:
    """Run `work`; a setting the console refuses (ImproperlyConfigured: no SECRET_KEY, a
    published one, a bad CLEANLINE_* value) is said in one line naming it, not a traceback."""
    from django.core.exceptions import ImproperlyConfigured

    try:
        work()
    except ImproperlyConfigured as exc:
        print(f"{program}: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(2)


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "migrate" and not rest:
        refusing_bad_settings(migrate)
    elif command in ("serve", "worker", "beat", "manage"):
        run = {"serve": serve, "worker": worker, "beat": beat, "manage": manage}[command]
        refusing_bad_settings(lambda: run(rest))
    elif command == "deploy-files":
        deploy_files(rest)
    else:
        print(f"usage: cleanline-console COMMAND\n\n{USAGE}", file=sys.stderr)
        sys.exit(0 if command in ("-h", "--help") else 2)


if __name__ == "__main__":
    main()
