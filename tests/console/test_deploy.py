"""The documented deployment: `manage.py check --deploy` reports no issues with the production
environment file of deploy/ once its SECRET_KEY is replaced (OIDC on; and with its LDAP lines
too), and refuses to start with the file's own placeholder key; the systemd units run
`cleanline-console` with that file, and every setting the console reads from the environment is
in the README's Configuration table."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def example_file(*, ldap: bool = False) -> dict[str, str]:
    """deploy/cleanline.env.example's variables as written (its commented LDAP lines too with
    `ldap`), with PATH and HOME to run a command."""
    env = {}
    for line in (DEPLOY / "cleanline.env.example").read_text().splitlines():
        if ldap and line.startswith("#CLEANLINE_LDAP_"):
            line = line[1:]
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            env[name] = value
    return {**env, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp")}


def example_env(*, ldap: bool = False) -> dict[str, str]:
    """deploy/cleanline.env.example as a server's environment: a fresh SECRET_KEY in place of
    the placeholder, as its comment asks."""
    return {**example_file(ldap=ldap), "SECRET_KEY": secrets.token_urlsafe(50)}


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)


def test_deploy_example_environment_passes_check_deploy() -> None:
    env = example_env()
    assert env["CLEANLINE_HTTPS"] == "true" and env["CLEANLINE_OIDC_ISSUER"].startswith("https://")
    for settings in (env, example_env(ldap=True)):
        run = check_deploy(settings)  # nothing reaches the OIDC provider or the directory at start-up
        assert run.returncode == 0, run.stdout + run.stderr
        assert "System check identified no issues" in run.stdout and "WARNINGS" not in run.stdout + run.stderr


def test_deploy_example_files_own_secret_key_is_refused() -> None:
    """A server that copies the file without replacing its placeholder key does not start: the
    key is in this repository for anyone to read."""
    env = example_file()
    assert "change-me" in env["SECRET_KEY"]
    run = check_deploy(env)
    assert run.returncode != 0, run.stdout
    assert "SECRET_KEY is a published key" in run.stderr and "deploy/cleanline.env.example" in run.stderr
    run = check_deploy({**env, "SECRET_KEY": env["SECRET_KEY"].replace("change-me-to", "we-will-change-me-to")})
    assert run.returncode != 0 and "SECRET_KEY is a published key" in run.stderr  # a placeholder, edited


def test_deploy_units_run_cleanline_console_with_the_environment_file() -> None:
    commands = {"web": "serve", "worker": "worker", "beat": "beat"}
    for unit, command in commands.items():
        text = (DEPLOY / f"cleanline-{unit}.service").read_text()
        assert f"ExecStart=/opt/cleanline/bin/cleanline-console {command}" in text
        assert "EnvironmentFile=/etc/cleanline/cleanline.env" in text and "User=cleanline" in text
        assert "[Install]" in text and "WantedBy=multi-user.target" in text


def test_deploy_every_setting_read_from_the_environment_is_in_the_readme() -> None:
    sources = [ROOT / "console" / "settings.py", ROOT / "console" / "signin" / "config.py",
               ROOT / "console" / "command.py"]
    names = {name for source in sources for name in re.findall(r'"((?:CLEANLINE|EMAIL)_[A-Z0-9_]+)"',
                                                             source.read_text())}
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Configuration"):readme.index("## Deploying")]
    assert not sorted(name for name in names if name not in table)


def bare_env(**extra: str) -> dict[str, str]:
    """An environment without SECRET_KEY, DEBUG or pytest's marker (a server's first start)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "PYTEST_VERSION")}
    return {**env, "DJANGO_SETTINGS_MODULE": "console.settings", **extra}


def test_deploy_a_missing_or_placeholder_secret_key_is_one_line_naming_it() -> None:
    """Issue 43: a missing SECRET_KEY printed a 58-line traceback."""
    for env, words in ((bare_env(), "SECRET_KEY is not set"),
                       (bare_env(SECRET_KEY=example_file()["SECRET_KEY"]), "SECRET_KEY is a published key")):
        for command, program in (([sys.executable, "-m", "console.command", "serve"], "cleanline-console"),
                                 ([sys.executable, "-m", "console.command", "manage", "check"], "cleanline-console"),
                                 ([sys.executable, "manage.py", "check"], "manage.py")):
            run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
            lines = run.stderr.strip().splitlines()
            assert run.returncode == 2 and len(lines) == 1, (command, run.stderr[-2000:])
            assert lines[0].startswith(f"{program}: {words}"), lines


def test_deploy_files_writes_the_units_and_environment_file_of_this_install(tmp_path: Path) -> None:
    """`cleanline-console deploy-files DIR`: the units run this install's cleanline-console with
    the environment file named, the worker may write to the lake given, the environment file
    (mode 600) has the lake and a fresh key; nothing is overwritten; deploy/ names no lake."""
    assert not [p.name for p in DEPLOY.iterdir() if "/data/lake" in p.read_text()]
    lake, units = tmp_path / "lake", tmp_path / "units"

    def deploy_files(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "console.command", "deploy-files", str(units), *args], cwd=ROOT,
                              env=bare_env(), capture_output=True, text=True, timeout=60)

    made = deploy_files("--lake", str(lake), "--env-file", "/etc/lake-console/env")
    assert made.returncode == 0, made.stderr
    assert sorted(p.name for p in units.iterdir()) == ["cleanline-beat.service", "cleanline-web.service",
                                                       "cleanline-worker.service", "env"]
    console = Path(sys.executable).parent / "cleanline-console"
    for unit, command in {"web": "serve", "worker": "worker", "beat": "beat"}.items():
        text = (units / f"cleanline-{unit}.service").read_text()
        assert f"ExecStart={console} {command}" in text and "EnvironmentFile=/etc/lake-console/env" in text
        assert ("ReadWritePaths=" + str(lake) in text) == (unit == "worker"), unit
    env = (units / "env").read_text()
    assert f"\nCLEANLINE_ALLOWED_ROOTS={lake}\n" in env and (units / "env").stat().st_mode & 0o777 == 0o600
    key = re.search(r"^SECRET_KEY=(\S+)$", env, re.MULTILINE)
    assert key and len(key.group(1)) >= 50 and "change-me" not in key.group(1)
    again = deploy_files("--lake", str(lake))
    assert again.returncode != 0 and "nothing written" in again.stderr
    assert (units / "env").read_text() == env
