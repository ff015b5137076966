"""The orphan repair's re-check under the table's lock costs the planned files, not the table
(issue 38, finding 4: each target listed its whole folder again): on a folder the run holds,
no folder is listed and each folder's planned files are asked their status in one call; on a
storage that holds none, each folder the planned files are in is listed once, with sizes, and
no status call is made per file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.doctor.helpers import CountingStorage, UnheldStorage
from tests.helpers import GUARDED_TIMES as T
from tests.helpers import Lake
from timeline import HudiTable
from timeline.doctor import plan_repair, run_repair

PARTITIONS = ("p=0", "p=1", "p=2")
ORPHANS = 60


@pytest.mark.parametrize("held", [True, False], ids=["held", "unheld"])
def test_repair_listing_each_planned_folder_once(tmp_path: Path, held: bool) -> None:
    lake = Lake(CountingStorage(), str(tmp_path / "lake"), version=8)
    lake.commit(T[0], {p: [lake.base_file(p, f"fg{g}", T[0]) for g in range(20)] for p in PARTITIONS})
    for partition in PARTITIONS[:2]:  # orphans in two of the three partitions
        for g in range(ORPHANS):
            lake.base_file(partition, f"orphan{g}", "20261102000000000")
    old = 1_000_000_000
    for item in Path(lake.base).rglob("*"):
        os.utime(item, (old, old))
    plan = plan_repair(HudiTable.open(lake.base), "orphan-files")
    assert len(plan.changes) == 2 * ORPHANS
    storage = CountingStorage() if held else UnheldStorage()
    table = HudiTable.load(storage, lake.base)

    result = run_repair(table, plan, dry_run=False)

    assert result.ok and len(result.done) == 2 * ORPHANS
    listed = {f"{lake.base}/{p}": n for p in PARTITIONS if (n := storage.listed[f"{lake.base}/{p}"])}
    asked = {f"{lake.base}/{p}": n for p in PARTITIONS if (n := storage.named[f"{lake.base}/{p}"])}
    once = {f"{lake.base}/{p}": 1 for p in PARTITIONS[:2]}  # once each; the third not at all
    assert (listed, asked) == (({}, once) if held else (once, {}))
    assert storage.statuses < ORPHANS  # no status call per planned file
