"""Table version changes (timeline/versions/change.py) on every real fixture table, in one pass
(module-scoped): each table Cleanline may change goes round its versions one step at a time
(v6: 6 -> 8 -> 9 -> 8 -> 6; v8: 8 -> 6 -> 8 -> 9 -> 8; v9: 9 -> 8 -> 9 -> 8 -> 6 -> 8 -> 9, stopping
before 6 where an indexing instant forbids it) and after every step hudi-rs reads every row as
before, Cleanline reads the same timeline and file-system view, the metadata table (where one is
kept) validates, and Cleanline's archiver and cleaner plan on the result; each change a preflight
blocker stands in the way of is refused with nothing written. The upgraded and downgraded layouts
are compared with the tables Apache Hudi itself wrote at the target version (same shapes)."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import fastavro
import pytest

from tests.helpers import FIXTURE_IDS, rows, tree_snapshot
from timeline import HudiTable
from timeline.mdt.reader import metadata_table
from timeline.mdt.validate import validate_files
from timeline.versions.change import VersionChangeRefused, change_version
from timeline.versions.rehearse import fsview_rows, timeline_rows

ROUNDS = {6: (8, 9, 8, 6), 8: (6, 8, 9, 8), 9: (8, 9, 8, 6, 8, 9)}


@dataclass
class Journey:
    """One fixture's round: each step reached (from, to) with what was found after it."""

    version: int
    metadata_table: bool
    steps: list[tuple[int, int]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    refused: list[tuple[int, int, tuple[str, ...], bool]] = field(default_factory=list)
    mdt_validated: int = 0
    snapshots: dict[int, Path] = field(default_factory=dict)


def _check(journey: Journey, table: HudiTable, label: str, base: tuple[list, list, list]) -> None:
    path = Path(table.base)
    table.reload()
    if timeline_rows(table) != base[0]:
        journey.failures.append(f"{label}: timeline differs: {timeline_rows(table)} != {base[0]}")
    if fsview_rows(table) != base[1]:
        journey.failures.append(f"{label}: file-system view differs")
    if rows(path) != base[2]:
        journey.failures.append(f"{label}: hudi-rs rows differ")
    mdt = metadata_table(table)
    if mdt is not None:
        if not validate_files(mdt).ok:
            journey.failures.append(f"{label}: the metadata table does not validate")
        journey.mdt_validated += 1
    if table.version != int(label.rsplit(" ", 1)[-1]):
        journey.failures.append(f"{label}: table version {table.version}")


@pytest.fixture(scope="module")
def journeys(fixture_lake: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Journey]:
    root = tmp_path_factory.mktemp("version-rounds")
    found: dict[str, Journey] = {}
    for table_id in FIXTURE_IDS:
        path = shutil.copytree(fixture_lake[table_id], root / table_id, symlinks=True)
        table = HudiTable.open(str(path))
        journey = Journey(table.version, (path / ".hoodie" / "metadata" / ".hoodie").is_dir())
        found[table_id] = journey
        base = (timeline_rows(table), fsview_rows(table), rows(path))
        for target in ROUNDS[table.version]:
            frm = table.version
            if not table.inspect.version_check(target).ready:
                before = tree_snapshot(path)
                try:
                    change_version(table, target, dry_run=False, drop_metadata_table=True)
                    journey.failures.append(f"{frm} -> {target}: not refused")
                except VersionChangeRefused as exc:
                    journey.refused.append((frm, target, exc.reasons, tree_snapshot(path) == before))
                break
            plan = change_version(table, target, dry_run=False, drop_metadata_table=frm == 8 and target == 6)
            assert plan.done and [(s.step.from_version, s.step.to_version) for s in plan.ran] == [(frm, target)]
            journey.steps.append((frm, target))
            _check(journey, table, f"{frm} -> {target}", base)
            if (frm, target) in ((6, 8), (8, 6)) and target not in journey.snapshots:
                journey.snapshots[target] = shutil.copytree(path, root / "snapshots" / f"{table_id}@{target}")
        if not journey.failures and journey.steps:
            table.maintenance().plan_archival()
            table.maintenance().clean()  # a dry run: the cleaner plans on the result
    return found


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_version_change_round_trip_reads_the_same_after_every_step(journeys: dict[str, Journey],
                                                                   table_id: str) -> None:
    journey = journeys[table_id]
    assert journey.failures == []
    for frm, to, reasons, unchanged in journey.refused:
        assert reasons and unchanged, (frm, to)
    if not journey.refused:
        expected = list(zip((journey.version, *ROUNDS[journey.version]), ROUNDS[journey.version], strict=False))
        assert journey.steps == expected


def test_version_change_fixtures_cover_cow_mor_metadata_tables_and_refusals(journeys: dict[str, Journey]) -> None:
    """Every kind is met: both table types from each version round trip, metadata tables kept
    and validated through 9 -> 8 -> 9 then dropped going to 6, and the refused changes are the
    preflight's (log files to compact, an indexing instant going to 6)."""
    done = {t: j for t, j in journeys.items() if j.steps and not j.refused}
    for version in (6, 8, 9):
        assert any(j.version == version and "/cow/" in t for t, j in done.items())
    assert any(j.version == 6 and "/mor/" in t for t, j in done.items())
    assert any(j.version == 9 and "/mor/" in t for t, j in done.items())
    with_mdt = [j for j in done.values() if j.metadata_table]
    assert len(with_mdt) >= 8 and all(j.mdt_validated == 3 for j in with_mdt)  # 9->8, 8->9, 9->8; gone at 6
    refused = {(t, f, to) for t, j in journeys.items() for f, to, _, _ in j.refused}
    assert ("quickstart_trips_table/mor/avro/v6_trips_8i1u", 6, 8) in refused
    assert ("sample_table/cow/v9_txns_complex_meta", 8, 6) in refused
    assert sum(1 for j in journeys.values() if j.refused) == 16  # 10 with log files, 6 indexing going to 6
    assert all("log files" in r or "indexing" in r for j in journeys.values() for _, _, rs, _ in j.refused for r in rs)


# ------------------------------------------------------------------------------------------
# The layouts Hudi writes


def _pattern(name: str) -> str:
    return re.sub(r"\d{17}", "T", name)


def _instant_contents(folder: Path) -> dict[str, set[tuple]]:
    """Each instant file name pattern with what its files hold: an Avro record's name and field
    names, v6 JSON's top-level keys and write-stat keys, or nothing (an empty file)."""
    found: dict[str, set[tuple]] = {}
    for path in sorted(folder.iterdir()):
        if path.is_dir() or not re.match(r"\d{17}", path.name):
            continue
        data = path.read_bytes()
        if data.startswith(b"Obj\x01"):
            with path.open("rb") as stream:
                schema = fastavro.reader(stream).writer_schema
            assert isinstance(schema, dict)
            held: tuple = (schema["name"], tuple(f["name"] for f in schema["fields"]))
        elif data.strip():
            content = json.loads(data)
            stats = {k for items in content["partitionToWriteStats"].values() for s in items for k in s}
            held = ("json", tuple(sorted(content)), tuple(sorted(stats)))
        else:
            held = ("empty",)
        found.setdefault(_pattern(path.name), set()).add(held)
    return found


def _keys(path: Path) -> set[str]:
    return set(HudiTable.open(str(path)).config.props) - {"hoodie.table.checksum"}


SHAPES = ["complexkeygen_hivestyle", "empty", "nonpartitioned", "simplekeygen_hivestyle_no_metafields",
          "simplekeygen_nonhivestyle"]


@pytest.mark.parametrize("shape", SHAPES)
def test_version_change_upgraded_layout_is_the_one_hudi_writes_at_8(journeys: dict[str, Journey],
                                                                    fixture_lake: dict[str, Path], shape: str) -> None:
    upgraded = journeys[f"sample_table/cow/v6_{shape}"].snapshots[8]
    native = fixture_lake[f"sample_table/cow/v8_{shape}"]
    assert (upgraded / ".hoodie" / "timeline" / "history").is_dir()
    assert not any(re.match(r"\d{17}", p.name) for p in (upgraded / ".hoodie").iterdir())
    assert _instant_contents(upgraded / ".hoodie" / "timeline") == _instant_contents(native / ".hoodie" / "timeline")
    # SevenToEightUpgradeHandler.upgradeKeyGeneratorType keeps the class beside the type; the
    # history path is not written by the upgrade (its default)
    assert _keys(upgraded) - _keys(native) == {"hoodie.table.keygenerator.class"}
    assert _keys(native) - _keys(upgraded) == {"hoodie.timeline.history.path"}


@pytest.mark.parametrize("shape", SHAPES)
def test_version_change_downgraded_layout_is_the_one_hudi_writes_at_6(journeys: dict[str, Journey],
                                                                      fixture_lake: dict[str, Path],
                                                                      shape: str) -> None:
    downgraded = journeys[f"sample_table/cow/v8_{shape}"].snapshots[6]
    native = fixture_lake[f"sample_table/cow/v6_{shape}"]
    ours, theirs = _instant_contents(downgraded / ".hoodie"), _instant_contents(native / ".hoodie")
    assert set(ours) == set(theirs)
    for pattern, held in ours.items():
        # Hudi 1.x's HoodieWriteStat (what CommitMetadataSerDeV1 writes in the downgrade) has
        # prevBaseFile, which 0.14's did not
        assert {(h[0], h[1], tuple(k for k in h[2] if k != "prevBaseFile")) if h[0] == "json" else h
                for h in held} == theirs[pattern], pattern
    assert not any(re.match(r"\d{17}", p.name) for p in (downgraded / ".hoodie" / "timeline").iterdir())
    # Hudi's downgrade keeps the payload class the 1.x table named and the timeline paths
    assert _keys(downgraded) - _keys(native) <= {"hoodie.compaction.payload.class", "hoodie.timeline.path",
                                                 "hoodie.timeline.history.path"}
    assert _keys(native) - _keys(downgraded) == set()
