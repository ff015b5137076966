"""Archiving as an operator does it (`cleanline archive plan|run`, `Maintenance.archive`): the plan
made again under the table's lock, then Hudi's archiver's choice written. On copies of real tables
(v6, v8 and v9, COW and MOR, with and without a metadata table) with small keep settings: the file
system view is unchanged (`cleanline fsview --json` equal), hudi-rs reads the same rows now and as
of every instant it could read before, the archived timeline lists every moved instant, a clean
afterwards plans the same files, and `cleanline mdt validate` is clean. A savepoint that blocks
archival shows as the blocker; deleting it lets archival shorten the timeline. An approved plan
the timeline no longer gives is refused, nothing written. (Each moved instant's archived content
is compared byte for byte with its state files in test_lsm.py and test_write_v1.py; the metadata
table's own archival in test_metadata_table.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import rows, tree_snapshot
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.archive.archiver import ArchivalInvalidated
from timeline.cli import main

SMALL = ["--hoodie-conf", "hoodie.keep.min.commits=2", "--hoodie-conf", "hoodie.keep.max.commits=3",
         "--hoodie-conf", "hoodie.clean.commits.retained=1"]
SMALL_OPTIONS = {"hoodie.keep.min.commits": "2", "hoodie.keep.max.commits": "3", "hoodie.clean.commits.retained": "1"}
# The v6 fixtures hold three instants at most: archiving any of them needs keep counts of 1 and 2,
# a cleaner that does not raise them (KEEP_LATEST_FILE_VERSIONS) and, on MOR, a compaction
# trigger that keeps no delta commits for it (TIME_ELAPSED), all settings Hudi accepts.
V6_SMALL = ["--hoodie-conf", "hoodie.keep.min.commits=1", "--hoodie-conf", "hoodie.keep.max.commits=2",
            "--hoodie-conf", "hoodie.clean.policy=KEEP_LATEST_FILE_VERSIONS",
            "--hoodie-conf", "hoodie.compact.inline.trigger.strategy=TIME_ELAPSED"]
TABLES = [
    ("quickstart_trips_table/mor/avro/v8_trips_8i3u1d", SMALL),  # v8 MOR, metadata table
    ("sample_table/cow/v9_txns_simple_meta", SMALL),             # v9 COW, metadata table, replacecommits
    ("sample_table/mor/avro/v9_txns_nonpart_nometa", SMALL),     # v9 MOR, compaction, no metadata table
    ("sample_table/cow/v9_txns_complex_nometa", SMALL),          # v9 COW, no metadata table
    ("sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable", V6_SMALL),        # v6 COW, replacecommit
    ("sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable", V6_SMALL),  # v6 MOR, replacecommit
]


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code = main([*args, "--json"])
    out = capsys.readouterr().out
    assert code in (0, None), out
    return json.loads(out)


def deletes(plan: dict[str, Any]) -> list[str]:
    return sorted(f["filePath"] for f in plan["files"] if f["delete"])


@pytest.mark.parametrize(("table_id", "small"), TABLES)
def test_archive_run_changes_nothing_a_reader_or_a_clean_sees(table_copy: Callable[[str], Path], table_id: str,
                                                              small: list[str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = str(table_copy(table_id))
    table = HudiTable.open(path)
    readable = [i.requested_time for i in table.timeline.writes().completed()]
    rows_before = {t: rows(Path(path), t) for t in readable}
    latest_before = rows(Path(path))
    fsview_before = cli_json(capsys, "fsview", path)
    clean_before = deletes(cli_json(capsys, *small, "clean", "plan", path))
    plan = cli_json(capsys, *small, "archive", "plan", path)
    assert plan["archivable"] > 0 and plan["activeAfter"] < plan["activeBefore"]
    completed = {i["requestedTime"]: i["completionTime"] for i in plan["instants"]}

    done = cli_json(capsys, *small, "archive", "run", path, "--yes")
    moved = [i["requestedTime"] for i in done["archived"]]
    assert moved == [i["requestedTime"] for i in plan["instants"]]

    table = HudiTable.open(path)
    assert not set(moved) & {i.requested_time for i in table.timeline}, "moved off the active timeline"
    archived = {i.requested_time: i for i in load_archived_timeline(table)}
    for instant in moved:  # their content, byte for byte: tests/archive/test_lsm.py
        assert archived[instant].completion_time == completed[instant]
    assert cli_json(capsys, "fsview", path) == fsview_before
    assert deletes(cli_json(capsys, *small, "clean", "plan", path)) == clean_before
    assert rows(Path(path)) == latest_before
    for instant, expected in rows_before.items():
        assert rows(Path(path), instant) == expected, f"as of {instant}"
    if table.config.metadata_table_enabled:
        assert cli_json(capsys, "mdt", "validate", path)["ok"]
    assert cli_json(capsys, *small, "archive", "plan", path)["archivable"] == 0, "nothing left to archive now"


def test_a_savepoint_blocks_archival_until_it_is_deleted(table_copy: Callable[[str], Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = str(table_copy("sample_table/cow/v9_txns_nonpart_nometa"))
    table = HudiTable.open(path)
    first = table.timeline.commits().completed().instants[1].requested_time
    main(["savepoint", "create", path, "--instant", first, "--user", "ops"])
    capsys.readouterr()
    plan = cli_json(capsys, *SMALL, "archive", "plan", path)
    [savepoint] = [b for b in plan["blockers"] if b["kind"] == "savepoint"]
    assert savepoint["instant"]["requestedTime"] == first
    assert [i["requestedTime"] for i in plan["instants"]] < [first], "nothing at or past the savepoint"
    before = plan["activeAfter"]
    main(["savepoint", "delete", path, "--instant", first, "--yes"])
    capsys.readouterr()
    done = cli_json(capsys, *SMALL, "archive", "run", path, "--yes")
    assert done["plan"]["activeAfter"] < before, "deleting the savepoint let archival shorten the timeline"
    assert not [b for b in done["plan"]["blockers"] if b["kind"] == "savepoint"]


def test_an_approved_plan_the_timeline_no_longer_gives_is_refused(table_copy: Callable[[str], Path]) -> None:
    path = table_copy("sample_table/cow/v9_txns_nonpart_nometa")
    maintenance = HudiTable.open(str(path)).maintenance(options=SMALL_OPTIONS)
    plan = maintenance.archive(dry_run=True).plan
    assert plan.archivable > 1 and plan.instants
    before = tree_snapshot(path)
    with pytest.raises(ArchivalInvalidated, match="plan it again"):
        maintenance.archive(expected=[i.requested_time for i in plan.instants[:-1]], dry_run=False)
    assert tree_snapshot(path) == before, "nothing written"
    outcome = maintenance.archive(expected=[i.requested_time for i in plan.instants], dry_run=False)
    assert outcome.result is not None and len(outcome.result.archived) == plan.archivable
