"""A whole lake at once (`timeline.discover`, `cleanline discover`): every Hudi table under a
root at any depth, found by its hoodie.properties (or only the backup), never descending into a
table (its metadata table and partitions are not tables of their own), with its name, type,
version, data files and bytes; an unreadable table is listed with its reason."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.helpers import FIXTURES, unzip_table
from timeline import HudiTable
from timeline.discover import discover, find_tables


def lake(root: Path) -> dict[str, Path]:
    """A lake: tables at two depths, one with a metadata table, one whose hoodie.properties is
    only its backup, one unreadable, and folders that hold no table."""
    made = {
        "cow": unzip_table(FIXTURES / "sample_table/cow/v8_nonpartitioned.zip", root / "sales"),
        "mor": unzip_table(FIXTURES / "sample_table/mor/avro/v9_txns_simple_nometa.zip", root / "ops" / "deep"),
        "mdt": unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", root / "ops"),
        "backup": unzip_table(FIXTURES / "sample_table/cow/v6_nonpartitioned.zip", root / "old"),
    }
    properties = made["backup"] / ".hoodie" / "hoodie.properties"
    properties.rename(properties.with_name("hoodie.properties.backup"))
    broken = root / "broken" / "t"
    (broken / ".hoodie").mkdir(parents=True)
    (broken / ".hoodie" / "hoodie.properties").write_text("not a properties file \\u0000\n")
    made["broken"] = broken
    (root / "raw" / "csv").mkdir(parents=True)  # no table
    (root / "raw" / "csv" / "a.csv").write_text("a\n")
    nested = made["cow"] / "inner" / ".hoodie"  # inside a table: never looked at
    nested.mkdir(parents=True)
    shutil.copy(made["cow"] / ".hoodie" / "hoodie.properties", nested / "hoodie.properties")
    return made


def test_discover_finds_every_table_and_descends_into_none(tmp_path: Path) -> None:
    made = lake(tmp_path / "lake")
    assert find_tables(str(tmp_path / "lake")) == sorted(f"file:{p}" for p in made.values())
    assert (made["mdt"] / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").exists()  # a table inside: skipped
    found = {t.uri: t for t in discover(str(tmp_path / "lake"))}
    for key in ("cow", "mor", "mdt"):
        table, row = HudiTable.open(str(made[key])), found[f"file:{made[key]}"]
        data = [p for p in made[key].rglob("*") if p.is_file() and p.relative_to(made[key]).parts[0] != ".hoodie"]
        assert (row.name, row.table_type, row.version) == (table.config.name, table.config.table_type.value,
                                                           table.version)
        assert (row.files, row.bytes) == (len(data), sum(p.stat().st_size for p in data)) and not row.error
    assert found[f"file:{made['backup']}"].version == 6  # read from the backup, as Hudi does
    broken = found[f"file:{made['broken']}"]
    assert broken.error and not broken.name


def test_discover_command_lists_the_lake_and_as_json(tmp_path: Path) -> None:
    made = lake(tmp_path / "lake")
    cleanline = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "cleanline")
    shown = subprocess.run([cleanline, "discover", str(tmp_path / "lake")], capture_output=True, text=True, check=True)
    header, rule, *rows = shown.stdout.splitlines()
    assert header.split() == ["path", "name", "type", "version", "files", "size"] and len(rows) == len(made)
    assert any("unreadable:" in row for row in rows)
    data = json.loads(subprocess.run([cleanline, "discover", str(tmp_path / "lake"), "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    assert [d["path"] for d in data] == sorted(f"file:{p}" for p in made.values())
    assert {d["name"] for d in data if not d["error"]} == {HudiTable.open(str(p)).config.name for k, p in made.items()
                                                          if k != "broken"}
    empty = subprocess.run([cleanline, "discover", str(tmp_path / "lake" / "raw")], capture_output=True, text=True)
    assert empty.returncode == 0 and empty.stdout.startswith("no Hudi table under")
