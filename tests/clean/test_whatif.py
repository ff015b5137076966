"""What-if retention (timeline/clean/whatif.py): for every setting the figures are exactly the
totals of `plan_clean` with that setting, on fixture tables written by Hudi (COW and MOR, v6,
v8, v9), on generated tables and on a table with an earlier clean (incremental planning); the
table is listed once and nothing is written; retaining more never frees more; the
`cleanline clean what-if` command prints the same figures."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bench.common import CleanShape, avro_schema, generate_clean_table, schedule_full_plan, write_versions
from tests.helpers import FIXTURE_IDS, Lake, tree_snapshot
from timeline import CleanConfig, CleanPlan, CleanPolicy, HudiTable
from timeline.clean.config import CleanConfigError
from timeline.clean.executor import run_pending_cleans
from timeline.clean.planner import plan_clean
from timeline.clean.whatif import RetentionCost, WhatIf, what_if
from timeline.cli import main
from timeline.instant import format_instant_time, moment_of, parse_instant_time
from timeline.storage import FileStatus
from timeline.storage.arrow import LocalStorage

SHAPE = CleanShape(partitions=12, groups=2, versions=4, trickle=3, hot=3, new_commits=2, retained=3)
COMMITS = range(1, 13)
HOURS = (0, 1, 2, 24, 24 * 3650)
VERSIONS = (1, 2, 3, 4)


# ----------------------------------------------------------------------------------------
# Helpers

def totals(plan: CleanPlan) -> dict[str, object]:
    ectr = plan.earliest_instant_to_retain
    return {"policy": plan.policy, "earliest_commit_to_retain": ectr.requested_time if ectr else None,
            "files_to_delete": len(plan.files_to_delete), "bytes_to_delete": plan.bytes_to_delete,
            "files_kept": len(plan.files_kept), "bytes_kept": sum(d.size for d in plan.files_kept),
            "partitions_to_delete": len(plan.partitions_to_delete),
            "partitions_considered": len(plan.partitions_considered), "incremental": plan.incremental,
            "notes": plan.notes}


def figures(cost: RetentionCost) -> dict[str, object]:
    return {"policy": cost.policy, "earliest_commit_to_retain": cost.earliest_commit_to_retain,
            "files_to_delete": cost.files_to_delete, "bytes_to_delete": cost.bytes_to_delete,
            "files_kept": cost.files_kept, "bytes_kept": cost.bytes_kept,
            "partitions_to_delete": cost.partitions_to_delete,
            "partitions_considered": cost.partitions_considered, "incremental": cost.incremental,
            "notes": cost.notes}


def config_of(result: WhatIf, cost: RetentionCost) -> CleanConfig:
    field = {CleanPolicy.KEEP_LATEST_COMMITS: "commits_retained", CleanPolicy.KEEP_LATEST_BY_HOURS: "hours_retained",
             CleanPolicy.KEEP_LATEST_FILE_VERSIONS: "file_versions_retained"}[cost.policy]
    return result.base.with_overrides(policy=cost.policy, **{field: cost.retained})


def assert_equals_plan_clean(path: str, result: WhatIf) -> None:
    """Every setting's figures are the totals of plan_clean with that setting (a fresh table
    object, listed on its own)."""
    assert result.costs
    for cost in result.costs:
        plan = plan_clean(HudiTable.open(path), config_of(result, cost), now=result.now)
        assert figures(cost) == totals(plan), (cost.policy, cost.retained)
        assert cost.frees_nothing == plan.is_empty
        assert (cost.why_nothing is None) == (not plan.is_empty)


def after_history(table: HudiTable) -> datetime | None:
    """An hour after the last completed commit: the 1-hour setting retains from it, and the
    2-hour one from earlier (the fixture tables were written within minutes)."""
    completed = table.timeline.commits_and_compaction().completed().last()
    if completed is None:
        return None
    return moment_of(completed.requested_time, table.config.timezone) + timedelta(hours=1)


class CountingStorage(LocalStorage):
    """Local storage that counts the calls that list or probe data folders (outside `.hoodie`)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[tuple[str, str]] = Counter()

    def _count(self, call: str, path: str) -> None:
        if "/.hoodie" not in path:
            self.calls[(call, path)] += 1

    def list(self, path: str) -> list[FileStatus]:
        self._count("list", path)
        return super().list(path)

    def list_recursive(self, path: str) -> Iterator[FileStatus]:
        self._count("list_recursive", path)
        return super().list_recursive(path)

    def exists(self, path: str) -> bool:
        self._count("exists", path)
        return super().exists(path)

    def status(self, path: str) -> FileStatus:
        self._count("status", path)
        return super().status(path)


def counted(path: str) -> tuple[HudiTable, CountingStorage]:
    storage = CountingStorage()
    return HudiTable.load(storage, path), storage


def one_listing(path: str) -> Counter[tuple[str, str]]:
    """The data-folder calls of one `list_partitions` of the table."""
    table, storage = counted(path)
    storage.calls.clear()
    table.list_partitions()
    return storage.calls


def add_hot_commits(base: str, shape: CleanShape, previous: dict[tuple[int, int], str]) -> None:
    """`new_commits` commits rewriting the hot partitions, after everything on the (v6) timeline."""
    start = parse_instant_time(HudiTable.open(base).new_instant_time())
    times = [format_instant_time(start + timedelta(seconds=1 + n)) for n in range(shape.new_commits)]
    write_versions(base, f"{base}/.hoodie", avro_schema(["city"]), shape, shape.hot_partitions(),
                   [(shape.commits + n, t) for n, t in enumerate(times)], previous)


@pytest.fixture
def generated(tmp_path: Path) -> str:
    path = str(tmp_path / "generated")
    generate_clean_table(path, SHAPE)
    return path


@pytest.fixture
def cleaned(tmp_path: Path) -> str:
    """The generated v6 table after a full clean retaining 3 commits and two more commits to
    its hot partitions: a plan with the table's settings is incremental."""
    path = str(tmp_path / "cleaned")
    previous = generate_clean_table(path, SHAPE)
    schedule_full_plan(path, SHAPE)
    (result,) = run_pending_cleans(HudiTable.open(path))
    assert result.deleted > 0
    add_hot_commits(path, SHAPE, previous)
    return path


# ----------------------------------------------------------------------------------------
# The key property: the figures are plan_clean's

@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_whatif_every_setting_equals_plan_clean_on_fixture_tables(fixture_lake: dict[str, Path],
                                                                   table_id: str) -> None:
    path = str(fixture_lake[table_id])
    table = HudiTable.open(path)
    now = after_history(table)
    result = what_if(table, commits=COMMITS, hours=HOURS if now else (), file_versions=VERSIONS,
                     now=now, source="storage")  # as plan_clean lists by default
    assert [(c.policy, c.retained) for c in result.costs] == (
        [(CleanPolicy.KEEP_LATEST_COMMITS, n) for n in COMMITS]
        + [(CleanPolicy.KEEP_LATEST_BY_HOURS, h) for h in (HOURS if now else ())]
        + [(CleanPolicy.KEEP_LATEST_FILE_VERSIONS, v) for v in VERSIONS])
    assert_equals_plan_clean(path, result)


def test_whatif_fixture_figures_are_not_trivial(fixture_lake: dict[str, Path]) -> None:
    """The equality above is not an equality of zeros: on the tables with history, short
    retentions free files, by commits, by hours and by file versions, COW and MOR."""
    for table_id in ("sample_table/cow/v9_txns_simple_nometa", "sample_table/mor/avro/v9_txns_complex_nometa",
                     "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"):
        table = HudiTable.open(str(fixture_lake[table_id]))
        result = what_if(table, commits=(1,), hours=(1,), file_versions=(1,), now=after_history(table))
        assert all(c.files_to_delete > 0 and c.bytes_to_delete > 0 for c in result.costs), (table_id, result.costs)
    # v6: an INSERT_OVERWRITE of the table left whole partitions to delete
    table = HudiTable.open(str(fixture_lake["sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"]))
    (versions,) = what_if(table, commits=(), file_versions=(1,)).costs
    assert versions.files_to_delete > 0 and versions.partitions_to_delete > 0


@pytest.mark.parametrize("version", [6, 8])
def test_whatif_every_setting_equals_plan_clean_on_a_generated_table(tmp_path: Path, version: int) -> None:
    path = str(tmp_path / f"generated-v{version}")
    generate_clean_table(path, SHAPE, version=version)
    table = HudiTable.open(path)
    result = what_if(table, commits=range(1, SHAPE.commits + 2), hours=HOURS, file_versions=VERSIONS,
                     now=after_history(table))
    assert_equals_plan_clean(path, result)
    # the bench's own count for SHAPE.retained commits, from the shape alone
    (at_shape,) = [c for c in result.of(CleanPolicy.KEEP_LATEST_COMMITS) if c.retained == SHAPE.retained]
    assert (at_shape.files_to_delete, at_shape.files_kept) == SHAPE.expected_full()


def test_whatif_after_a_clean_plans_incrementally_as_plan_clean_does(cleaned: str) -> None:
    table = HudiTable.open(cleaned)
    result = what_if(table, commits=range(1, SHAPE.commits + SHAPE.new_commits + 2))
    assert_equals_plan_clean(cleaned, result)
    by_commits = {c.retained: c for c in result.costs}
    # Every setting with an earliest commit to retain plans incrementally from the clean's,
    # considering only the hot partitions at most; the others have none (too few commits).
    assert all(c.incremental == (c.earliest_commit_to_retain is not None) for c in result.costs)
    too_many = by_commits[SHAPE.commits + SHAPE.new_commits]
    assert too_many.why_nothing == "9 completed commits, not more than the 9 retained"
    hot = len(SHAPE.hot_partitions())
    assert by_commits[1].partitions_considered == hot and by_commits[1].files_to_delete > 0
    # A window that starts before the last clean's releases nothing new.
    assert by_commits[SHAPE.retained + SHAPE.new_commits].frees_nothing
    assert "incremental planning considers no partition" in (by_commits[SHAPE.retained + SHAPE.new_commits]
                                                             .why_nothing or "")
    # And the full-listing figures, on request, are plan_clean's with incremental off.
    full = what_if(table, commits=range(1, 8), base=CleanConfig.from_properties(table.config.props,
                                                                                 incremental=False))
    assert not any(c.incremental for c in full.costs)
    assert_equals_plan_clean(cleaned, full)


@pytest.mark.parametrize("version", [6, 8])
def test_whatif_incremental_figures_are_what_the_clean_frees_not_the_full_listing(tmp_path: Path,
                                                                                  version: int) -> None:
    """A past clean left an old version in partition Q (recorded window T2, Q untouched
    since): an incremental clean never looks at Q, so the what-if does not count it; with
    incremental planning off both count it."""
    t = [f"2026110100{i:02d}00000" for i in range(10)]
    lake = Lake(LocalStorage(), str(tmp_path / f"lake-v{version}"), version=version)
    for time in t[:2]:
        lake.commit(time, {"city=nyc": [lake.base_file("city=nyc", "q1", time)]})
    lake.commit(t[2], {"city=sf": [lake.base_file("city=sf", "p", t[2])]})
    lake.clean(t[3], earliest_retained=t[2])
    for time in t[4:8]:
        lake.commit(time, {"city=sf": [lake.base_file("city=sf", "p", time)]})
    table = HudiTable.open(lake.base)
    incremental = what_if(table, commits=(2,))
    full = what_if(table, commits=(2,), base=CleanConfig(incremental=False))
    assert_equals_plan_clean(lake.base, incremental)
    assert_equals_plan_clean(lake.base, full)
    (inc,), (whole,) = incremental.costs, full.costs
    assert inc.incremental and inc.partitions_considered == 1 and not whole.incremental
    assert whole.files_to_delete == inc.files_to_delete + 1 and whole.bytes_to_delete > inc.bytes_to_delete > 0


# ----------------------------------------------------------------------------------------
# One listing, nothing written

@pytest.mark.parametrize("which", ["fixture", "cleaned"])
def test_whatif_lists_the_table_once(which: str, fixture_lake: dict[str, Path], request: pytest.FixtureRequest
                                     ) -> None:
    path = str(fixture_lake["sample_table/mor/avro/v9_txns_complex_nometa"]) if which == "fixture" \
        else request.getfixturevalue("cleaned")
    once = one_listing(path)
    assert once and all(n == 1 for n in once.values())
    table, storage = counted(path)
    what_if(table, commits=range(1, 16), hours=(1, 24), file_versions=(1, 2, 3))
    assert storage.calls == once
    if which == "cleaned":
        # the counter sees what plan_clean does per setting: an incremental plan lists its partitions again
        table, storage = counted(path)
        for n in (1, 2, 3):
            plan_clean(table, CleanConfig(commits_retained=n))
        assert sum(storage.calls.values()) > 0


@pytest.mark.parametrize("which", ["fixture", "cleaned"])
def test_whatif_writes_nothing(which: str, table_copy: Callable[[str], Path], request: pytest.FixtureRequest) -> None:
    path = Path(table_copy("sample_table/mor/avro/v9_txns_simple_nometa") if which == "fixture"
                else request.getfixturevalue("cleaned"))
    before = tree_snapshot(path)
    folders = sorted(p for p in path.rglob("*") if p.is_dir())
    result = what_if(HudiTable.open(str(path)), commits=range(1, 16), hours=(0, 1, 24, 100000), file_versions=(1, 2))
    assert any(c.files_to_delete for c in result.costs)
    assert tree_snapshot(path) == before
    assert sorted(p for p in path.rglob("*") if p.is_dir()) == folders


# ----------------------------------------------------------------------------------------
# Sanity of the figures

def test_whatif_retaining_more_never_frees_more(generated: str, cleaned: str) -> None:
    """Among the settings that have an earliest commit to retain (file versions always plan):
    a setting without one frees nothing at all (Hudi cleans nothing by hours when no commit is
    inside the window, e.g. 0 hours), however short it is."""
    for path in (generated, cleaned):
        table = HudiTable.open(path)
        result = what_if(table, commits=range(1, 25), hours=(0, 1, 2, 5, 24, 1000), file_versions=range(1, 8),
                         now=after_history(table))
        for policy in CleanPolicy:
            planned = [c for c in result.of(policy) if c.earliest_commit_to_retain or
                       policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS]
            freed = [(c.bytes_to_delete, c.files_to_delete, c.partitions_to_delete) for c in planned]
            assert len(freed) > 1 and freed == sorted(freed, reverse=True), (path, policy, freed)
            assert all(c.frees_nothing for c in result.of(policy) if c not in planned)
        assert result.of(CleanPolicy.KEEP_LATEST_COMMITS)[0].bytes_to_delete > 0
        assert result.of(CleanPolicy.KEEP_LATEST_BY_HOURS)[0].frees_nothing  # 0 hours: no commit inside


def test_whatif_flags_settings_below_the_tables_own(generated: str) -> None:
    result = what_if(HudiTable.open(generated), commits=(1, 9, 10, 11), hours=(23, 24), file_versions=(2, 3))
    flagged = {(c.policy, c.retained) for c in result.costs if c.below_table_setting}
    assert flagged == {(CleanPolicy.KEEP_LATEST_COMMITS, 1), (CleanPolicy.KEEP_LATEST_COMMITS, 9),
                       (CleanPolicy.KEEP_LATEST_BY_HOURS, 23), (CleanPolicy.KEEP_LATEST_FILE_VERSIONS, 2)}
    first = result.costs[0]
    assert first.below_table_setting == "retains 1 commits, fewer than the table's configured 10"


def test_whatif_says_why_a_setting_frees_nothing(generated: str) -> None:
    result = what_if(HudiTable.open(generated), commits=(SHAPE.commits, SHAPE.commits + 5))
    assert all(c.frees_nothing and c.earliest_commit_to_retain is None for c in result.costs)
    assert "not more than the" in (result.costs[0].why_nothing or "")
    assert result.costs[0].files_kept == 0 and result.costs[0].partitions_considered == 0


def test_whatif_refuses_a_negative_setting_before_reading(generated: str) -> None:
    with pytest.raises(CleanConfigError, match="at least 0"):
        what_if(HudiTable.open(generated), commits=(1, -1))


def test_whatif_settings_are_sorted_and_unique(generated: str) -> None:
    result = what_if(HudiTable.open(generated), commits=(5, 1, 5, 3), hours=())
    assert [c.retained for c in result.costs] == [1, 3, 5] and result.now is None
    assert result.partitions == SHAPE.partitions and result.files == SHAPE.data_files + SHAPE.partitions


# ----------------------------------------------------------------------------------------
# The command

def test_whatif_cli_text_bytes_and_json(cleaned: str, capsys: pytest.CaptureFixture[str]) -> None:
    table = HudiTable.open(cleaned)
    expected = what_if(table, commits=(1, 2, 3, 5, 10))
    assert main(["clean", "what-if", cleaned, "--commits", "1..3,5,10", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["retained"] for s in data["settings"]] == [1, 2, 3, 5, 10]
    for row, cost in zip(data["settings"], expected.costs, strict=True):
        assert (row["filesToDelete"], row["bytesToDelete"], row["filesKept"], row["partitionsToDelete"],
                row["earliestCommitToRetain"], row["incremental"]) == (
            cost.files_to_delete, cost.bytes_to_delete, cost.files_kept, cost.partitions_to_delete,
            cost.earliest_commit_to_retain, cost.incremental)
        assert isinstance(row["bytesToDelete"], int) and row["policy"] == "KEEP_LATEST_COMMITS"
    assert data["listing"] == {"partitions": expected.partitions, "files": expected.files, "bytes": expected.bytes}
    assert data["settings"][0]["belowTableSetting"] and data["settings"][-1]["belowTableSetting"] is None
    assert data["settings"][-1]["whyNothing"] and data["settings"][0]["whyNothing"] is None

    assert main(["clean", "what-if", cleaned, "--commits", "1,10"]) == 0
    text = capsys.readouterr().out
    one = expected.costs[0]
    assert "files to delete" in text and "why nothing" in text and "note: incremental" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("KEEP_LATEST_COMMITS  1 commits *"))
    assert f" {one.files_to_delete} " in line and " B " in line  # human-readable size (the files are tiny)
    assert main(["clean", "what-if", cleaned, "--commits", "1,10", "--bytes"]) == 0
    raw = capsys.readouterr().out
    line = next(ln for ln in raw.splitlines() if ln.startswith("KEEP_LATEST_COMMITS  1 commits *"))
    assert f" {one.bytes_to_delete} " in line and " B " not in line


def test_whatif_cli_hours_versions_and_bad_input(fixture_lake: dict[str, Path],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = str(fixture_lake["sample_table/cow/v9_txns_simple_nometa"])
    table = HudiTable.open(path)
    now = after_history(table)
    assert now is not None
    typed = format_instant_time(now)[:14]
    assert main(["clean", "what-if", path, "--commits", "none", "--hours", "1,24", "--file-versions", "1..2",
                 "--now", typed, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = what_if(table, commits=(), hours=(1, 24), file_versions=(1, 2),
                       now=moment_of(typed, table.config.timezone))
    assert [(s["policy"], s["retained"], s["bytesToDelete"]) for s in data["settings"]] == [
        (c.policy.value, c.retained, c.bytes_to_delete) for c in expected.costs]
    assert data["settings"][0]["bytesToDelete"] > 0
    with pytest.raises(SystemExit) as exited:
        main(["clean", "what-if", path, "--commits", "x"])
    assert exited.value.code == 2 and "1..10" in capsys.readouterr().err
    assert main(["clean", "what-if", path, "--hours", "-3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at least 0" in err[0]
