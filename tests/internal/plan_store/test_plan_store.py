"""Plan stores (timeline/internal/plan_store/__init__.py): a plan written as Parquet parts holds exactly the
in-memory plan, file by file; it pages, filters and searches like a list of the decisions in plan
order; a stale plan is told apart partition by partition; outcomes are recorded per file; the
store may live on S3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.common import CleanShape, full_config, generate_clean_table
from tests.helpers import FIXTURES, S3Server, unzip_table
from timeline import CleanConfig, CleanPolicy, HudiTable
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import CleanPlan, FileDecision
from timeline.internal.plan_store import FileRow, StoredPlan, compare_stored, plan_clean_stored
from timeline.internal.plan_store.files import StoreError, names_of

SHAPE = CleanShape(partitions=40, groups=3, versions=4, trickle=2, hot=4, retained=3)


@pytest.fixture
def generated(tmp_path: Path) -> tuple[HudiTable, CleanConfig]:
    path = tmp_path / "generated"
    generate_clean_table(str(path), SHAPE)
    return HudiTable.open(str(path)), full_config(SHAPE)


def row_of(d: FileDecision) -> FileRow:
    return FileRow(d.partition, d.file_name, d.path, d.size, d.delete, d.reason, d.file_id, d.base_instant_time,
                   d.is_bootstrap_base_file)


def in_order(plan: CleanPlan) -> list[FileRow]:
    return sorted(map(row_of, plan.decisions), key=lambda r: (r.partition, r.file_name))


def test_a_stored_plan_holds_the_plan_file_by_file_in_parts(generated: Any, tmp_path: Path) -> None:
    table, config = generated
    memory = table.maintenance().plan_clean(config, enforce_retention=False)
    stored = plan_clean_stored(table, config, str(tmp_path / "store" / "p1"), part_rows=100)
    assert len(stored.parts) > 3  # the small part size splits the plan
    assert list(stored.iter_rows()) == in_order(memory)
    assert (stored.files, stored.files_to_delete, stored.bytes_to_delete) == (
        len(memory.decisions), len(memory.files_to_delete), memory.bytes_to_delete)
    assert stored.partitions_considered == memory.partitions_considered
    # a partition lies in exactly one part, and the parts follow the partition order
    assert [p.first for p in stored.parts] == sorted(p.first for p in stored.parts)
    assert all(a.last < b.first for a, b in zip(stored.parts, stored.parts[1:], strict=False))
    # reopened from its folder: the same plan; the executor's plan is the same Hudi plan
    again = StoredPlan.open(stored.uri)
    assert again == stored
    # (a partition's files in name order: the order of a plan's list carries no meaning to Hudi)
    scheduled, expected = again.to_clean_plan().to_record(), memory.to_record()
    assert {p: sorted(f) for p, f in scheduled.files.items()} == {p: sorted(f) for p, f in expected.files.items()}
    assert scheduled.to_raw().keys() == expected.to_raw().keys()
    assert {k: v for k, v in scheduled.to_raw().items() if k != "filePathsToBeDeletedPerPartition"} == \
        {k: v for k, v in expected.to_raw().items() if k != "filePathsToBeDeletedPerPartition"}


def test_pages_filters_and_searches_read_like_the_list_of_decisions(generated: Any, tmp_path: Path) -> None:
    table, config = generated
    rows = in_order(table.maintenance().plan_clean(config, enforce_retention=False))
    stored = plan_clean_stored(table, config, str(tmp_path / "p"), part_rows=64)
    partition = rows[len(rows) // 2].partition
    name = rows[7].file_name
    cases: list[tuple[dict[str, Any], list[FileRow]]] = [
        ({}, rows),
        ({"delete": True}, [r for r in rows if r.delete]),
        ({"delete": False}, [r for r in rows if not r.delete]),
        ({"partition": partition}, [r for r in rows if r.partition == partition]),
        ({"partition": partition, "delete": True}, [r for r in rows if r.partition == partition and r.delete]),
        ({"partition": "city=none"}, []),
        ({"search": name[3:12].upper()}, [r for r in rows if name[3:12] in r.file_name]),
        ({"search": "_1-1", "delete": False}, [r for r in rows if "_1-1" in r.file_name and not r.delete]),
        ({"search": ".parquet"}, [r for r in rows if ".parquet" in r.file_name]),  # in every name: the dense path
        ({"search": name[3:12], "partition": rows[7].partition, "delete": rows[7].delete},
         [r for r in rows if name[3:12] in r.file_name and r.partition == rows[7].partition
          and r.delete == rows[7].delete]),
    ]
    # a needle made of one name's end and the next name's start is in the names file's bytes, not in a name
    across = rows[0].file_name[-4:] + rows[1].file_name[:4]
    assert not any(across in r.file_name for r in rows)
    cases.append(({"search": across}, []))

    def check() -> None:
        for filters, expected in cases:
            assert expected or filters.get("partition") == "city=none" or filters.get("search") == across
            assert stored.count(**filters) == len(expected), filters
            for offset, limit in [(0, 25), (25, 25), (len(expected) - 3, 25), (len(expected) + 5, 10), (0, None)]:
                assert stored.rows(**filters, offset=max(0, offset), limit=limit) == \
                    expected[max(0, offset):None if limit is None else max(0, offset) + limit], (filters, offset)

    check()
    for part in stored.parts:  # a store written before names files: searched from the parts
        (tmp_path / "p" / names_of(part.name)).unlink()
    check()


def test_comparing_stores_names_every_difference_partition_by_partition(generated: Any, tmp_path: Path) -> None:
    table, config = generated
    first = plan_clean_stored(table, config, str(tmp_path / "a"), part_rows=50)
    same = plan_clean_stored(table, config, str(tmp_path / "b"), part_rows=500)
    assert compare_stored(first, same) == []
    doomed = list(first.deletes())
    # a savepoint now holds one planned file; another planned file disappeared from storage
    protected, missing = doomed[0], doomed[-1]
    commit = protected.file_name.rsplit("_", 1)[1].split(".")[0]
    table.maintenance().create_savepoint(commit)
    Path(missing.path.removeprefix("file:")).unlink()
    table.reload()
    now = plan_clean_stored(table, config, str(tmp_path / "c"), part_rows=70)
    reasons = compare_stored(first, now)
    assert f"{protected.path}: now kept (savepoint {commit})" in reasons
    assert f"{missing.path}: no longer in the table's listing" in reasons
    # every difference, as the two plans' delete sets say
    before = {r.path for r in first.deletes()}
    after = {r.path for r in now.deletes()}
    assert len(reasons) == len(before ^ after) > 2
    assert [r for r in reasons if "would now also be deleted" in r] == [] or after - before
    # and the other way round: files the new plan would also delete
    assert len(compare_stored(now, first)) == len(before ^ after)


def test_outcomes_are_recorded_per_file_and_read_with_the_pages(generated: Any, tmp_path: Path) -> None:
    table, config = generated
    stored = plan_clean_stored(table, config, str(tmp_path / "p"), part_rows=100)
    clean = schedule_clean(table, stored.to_clean_plan(), config, force=True)
    assert clean is not None
    gone = next(stored.deletes())
    Path(gone.path.removeprefix("file:")).unlink()  # deleted by someone else before the run
    sizes = stored.sizes()
    assert sizes == {r.path: r.size for r in stored.deletes()} and len(sizes) == stored.files_to_delete
    (result,) = run_pending_cleans(table, sizes=sizes)
    assert result.bytes_deleted == stored.bytes_to_delete - gone.size
    sums = stored.write_outcomes(result.outcomes)
    assert stored.outcome_counts() == {"deleted": stored.files_to_delete - 1, "gone": 1}
    assert sum(deleted + gone for deleted, gone, _ in sums.values()) == stored.bytes_to_delete
    assert sum(gone for _, gone, _ in sums.values()) == gone.size and not any(f for _, _, f in sums.values())
    rows = list(stored.iter_rows())
    assert {r.outcome for r in rows if r.delete} == {"deleted", "gone"}
    assert {r.outcome for r in rows if not r.delete} == {""}
    page = stored.rows(delete=True, partition=gone.partition)
    assert [r.outcome for r in page if r.path == gone.path] == ["gone"]
    assert {r.outcome for r in page if r.path != gone.path} == {"deleted"}


def test_a_fixture_table_and_an_empty_plan_store_too(tmp_path: Path) -> None:
    path = unzip_table(FIXTURES / "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable.zip", tmp_path)
    table = HudiTable.open(str(path))
    config = CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1)
    memory = table.maintenance().plan_clean(config, enforce_retention=False)
    stored = table.maintenance().plan_clean_stored(config, str(tmp_path / "s"), enforce_retention=False)
    assert list(stored.iter_rows()) == in_order(memory) and memory.files_to_delete
    assert stored.partitions_to_delete == memory.partitions_to_delete
    # a retention the window cannot meet: no partition considered, the note kept
    nothing = table.maintenance().plan_clean_stored(CleanConfig(commits_retained=50), str(tmp_path / "e"),
                                                    enforce_retention=False)
    assert nothing.parts == () and nothing.is_empty and nothing.notes
    assert nothing.rows(delete=True) == [] and nothing.count(search="x") == 0


def test_a_folder_without_a_plan_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no stored plan here"):
        StoredPlan.open(str(tmp_path / "nothing"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "plan.json").write_text("{}")
    with pytest.raises(StoreError, match="damaged"):
        StoredPlan.open(str(tmp_path / "bad"))


def test_a_plan_store_on_s3(s3_server: S3Server, generated: Any) -> None:
    table, config = generated
    bucket = s3_server.new_bucket("plans")
    written = plan_clean_stored(table, config, f"s3://{bucket}/store/plan-1", part_rows=100)
    assert len(written.parts) > 1
    assert any(k.startswith("store/plan-1/part-") for k in s3_server.keys(bucket))
    again = StoredPlan.open(f"s3://{bucket}/store/plan-1")
    memory = table.maintenance().plan_clean(config, enforce_retention=False)
    assert list(again.iter_rows()) == in_order(memory)
    assert again.rows(search="_2-1", delete=True, limit=5) == [r for r in in_order(memory)
                                                                if "_2-1" in r.file_name and r.delete][:5]
    again.delete()
    assert s3_server.keys(bucket, "store/plan-1") == {}


def test_a_folder_that_is_not_a_plan_store_is_never_emptied(generated: Any, tmp_path: Path) -> None:
    """Planning into (or removing) a folder that holds anything but a plan store's own files is
    refused and deletes nothing: a mistyped store location must never remove a table."""
    table, config = generated
    before = sorted(p for p in Path(table.base).rglob("*"))
    with pytest.raises(StoreError, match="not a plan store's folder"):
        plan_clean_stored(table, config, table.base)
    with pytest.raises(StoreError, match="not a plan store's folder"):
        StoredPlan.remove(table.base)
    assert sorted(p for p in Path(table.base).rglob("*")) == before
    first = plan_clean_stored(table, config, str(tmp_path / "p"), part_rows=100)
    assert len(first.parts) > 1
    again = plan_clean_stored(table, config, str(tmp_path / "p"), part_rows=1000)  # an old plan's folder: emptied
    assert sorted(f.name for f in (tmp_path / "p").iterdir()) == sorted(
        ["plan.json", *(p.name for p in again.parts), *(names_of(p.name) for p in again.parts)])
    again.delete()
    assert not (tmp_path / "p").exists()
