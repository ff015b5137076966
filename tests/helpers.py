"""Helpers of the tests at this level (fixtures are in conftest.py): where the fixture tables
are, unzipping one, and proving a tree unchanged."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The fixture tables beside the checkout (CLEANLINE_FIXTURES elsewhere: scripts/mutations.py runs
# the tests in a copy of the tree).
FIXTURES = Path(os.environ.get("CLEANLINE_FIXTURES")
               or ROOT.parent / "shared" / "fixtures" / "hudi-rs-tables").resolve()
(ROOT / "var").mkdir(exist_ok=True)  # the SQLite test database lives there (console.settings)
# Clean plans' stores: one temporary folder per test run, inherited by the workers tests start
# (console/settings.py reads CLEANLINE_PLAN_STORE; tests/console/conftest.py sets it for this process).
OWN_STORE = "CLEANLINE_PLAN_STORE" not in os.environ
PLAN_STORE = os.environ.setdefault("CLEANLINE_PLAN_STORE", tempfile.mkdtemp(prefix="cleanline-plan-store-"))


def fixture_zips() -> list[Path]:
    zips = sorted(FIXTURES.rglob("*.zip"))
    if not zips:
        raise RuntimeError(f"no fixture tables found under {FIXTURES}; ../shared must sit beside the project")
    return zips


def fixture_id(archive: Path) -> str:
    return str(archive.relative_to(FIXTURES).with_suffix(""))


def unzip_table(archive: Path, dest: Path) -> Path:
    """Unpack one fixture zip (skipping macOS metadata) and return the table's base path."""
    with zipfile.ZipFile(archive) as zipped:
        members = [m for m in zipped.namelist() if not m.startswith("__MACOSX/")]
        zipped.extractall(dest, members)
    return dest / archive.stem


def fixture_readme() -> dict[str, dict[str, str]]:
    """The fixture README's table, an independent description of every zip: id -> columns."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in (FIXTURES / "README.md").read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "zip":
            header = cells
        elif header and line.startswith("| `"):
            rows[cells[0].removesuffix(".zip")] = dict(zip(header, cells))
    return rows


def tree_snapshot(path: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime ns) of every file below `path`, to prove nothing changed."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(path.rglob("*")) if p.is_file()
    }


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


FIXTURE_ZIPS = fixture_zips()
FIXTURE_IDS = [fixture_id(z) for z in FIXTURE_ZIPS]


class Intervals(logging.Handler):
    """Cleanline's side of the lock's log: who held it, from when to when."""

    def __init__(self, log: Path) -> None:
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        with self.log.open("a") as out:
            out.write(json.dumps({"holder": record.holder, "acquired": record.acquired,  # type: ignore[attr-defined]
                                  "released": record.released}) + "\n")  # type: ignore[attr-defined]
