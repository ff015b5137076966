"""`pip install cleanline` gives the library and the `cleanline` command without Django, Celery
or PySpark: the base dependencies name none of them, and the library and the command work in
a process where importing them fails. `cleanline[spark]` and `cleanline[console]` add them;
`cleanline[test]` (what `make setup` installs) pulls in everything."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import tree_snapshot

ROOT = Path(__file__).resolve().parents[1]
TABLE = "sample_table/cow/v9_txns_simple_nometa"

# The console's and Spark's packages, and what they bring (Celery's broker client, Spark's bridge).
EXTRAS_ONLY = {"django", "celery", "pyspark", "redis", "kombu", "axes", "psycopg", "py4j"}

# Loaded by `site` at start-up from PYTHONPATH: from then on importing any of EXTRAS_ONLY fails,
# as it would where only `pip install cleanline` ran.
BLOCKER = f"""
import importlib.abc
import sys

BLOCKED = {sorted(EXTRAS_ONLY)!r}


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked: not a base dependency)", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
"""

LIBRARY_ALONE = """
import sys

from sitecustomize import BLOCKED

for name in ("django", "celery", "pyspark"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        raise SystemExit(f"the import blocker let {name} through")
import timeline

assert timeline.HudiTable and timeline.CleanConfig
loaded = sorted({m.split(".")[0] for m in sys.modules} & set(BLOCKED))
print("loaded:", loaded)
"""


def requirement_name(requirement: str) -> str:
    """`celery[redis]>=5.4,<6; extra == "x"` -> `celery` (normalised as pip does)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]  # type: ignore[no-any-return]


def test_packaging_base_dependencies_leave_out_django_celery_and_pyspark() -> None:
    meta = project()
    base = {requirement_name(r) for r in meta["dependencies"]}  # type: ignore[attr-defined]
    assert base.isdisjoint({"django", "celery", "pyspark", "redis", "django-axes", "psycopg"}), base
    extras: dict[str, list[str]] = meta["optional-dependencies"]  # type: ignore[assignment]
    assert {requirement_name(r) for r in extras["spark"]} == {"pyspark"}
    assert {"django", "celery", "redis", "django-axes", "psycopg"} <= {requirement_name(r) for r in extras["console"]}
    assert "cleanline[console,spark]" in extras["test"]  # `make setup` installs `.[test]`: everything
    assert '-m pip install -e ".[test]"' in (ROOT / "scripts" / "setup.sh").read_text()  # what `make setup` runs


def run_without_extras(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "blocker").mkdir(exist_ok=True)
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "blocker"), str(ROOT)])
    return subprocess.run([sys.executable, *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def test_packaging_library_imports_without_django_celery_or_pyspark(tmp_path: Path) -> None:
    done = run_without_extras(tmp_path, "-c", LIBRARY_ALONE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "loaded: []"


def test_packaging_cli_runs_without_django_celery_or_pyspark(tmp_path: Path, table_copy) -> None:
    helped = run_without_extras(tmp_path, "-m", "timeline.cli", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "usage: cleanline" in helped.stdout and "timeline" in helped.stdout
    path = table_copy(TABLE)
    before = tree_snapshot(path)
    listed = run_without_extras(tmp_path, "-m", "timeline.cli", "timeline", str(path), "--json")
    assert listed.returncode == 0, listed.stderr
    instants = json.loads(listed.stdout)
    assert instants and {"requestedTime", "action", "state"} <= set(instants[0])
    planned = run_without_extras(tmp_path, "-m", "timeline.cli", "clean", "plan", str(path), "--json")
    assert planned.returncode == 0, planned.stderr
    assert json.loads(planned.stdout)["files"]  # every file of the considered slices, with its decision
    assert tree_snapshot(path) == before  # read-only: nothing written
