"""The preflight on every real fixture table (written by Apache Hudi at versions 6, 8 and 9) to
each other version: the blockers found are exactly those the table has, told independently:
log files in a merge-on-read table's latest slices (hudi-rs's file slices) on every step, and
indexing instants (the timeline folder's file names) on the step 8 -> 6; nothing else stands in
a fixture (no pending instant, no metadata table on another version). Reads only."""

from __future__ import annotations

from pathlib import Path

import hudi
import pytest

from tests.helpers import FIXTURE_ZIPS, fixture_id, tree_snapshot
from timeline import HudiTable
from timeline.versions import VERSIONS, BlockerKind

IDS = [fixture_id(z) for z in FIXTURE_ZIPS]


def hudi_rs_groups_with_logs(path: Path) -> list[tuple[str, str]]:
    return sorted((s.partition_path, s.file_id) for s in hudi.HudiTable(str(path)).get_file_slices()
                  if s.log_file_names)


def has_indexing(path: Path) -> bool:
    folder = path / ".hoodie" / "timeline"
    return folder.is_dir() and any(".indexing" in p.name for p in folder.iterdir())


@pytest.mark.parametrize("table_id", IDS)
def test_version_check_fixture_blockers_are_exactly_the_tables_own(fixture_lake: dict[str, Path],
                                                                   table_id: str) -> None:
    path = fixture_lake[table_id]
    before = tree_snapshot(path)
    table = HudiTable.open(str(path))
    with_logs = hudi_rs_groups_with_logs(path)
    indexing = has_indexing(path)
    for target in VERSIONS:
        answer = table.inspect.version_check(target)
        if target == table.version:
            assert answer.steps == () and answer.ready
            continue
        for step in answer.steps:
            expected = {BlockerKind.LOG_FILES} if with_logs else set()
            if (step.step.from_version, step.step.to_version) == (8, 6) and indexing:
                expected.add(BlockerKind.INDEXING_ON_TIMELINE)
            assert {b.kind for b in step.blockers if b.blocking} == expected, (table_id, step.step)
            for blocker in step.blockers:
                if blocker.kind is BlockerKind.LOG_FILES:
                    assert sorted(blocker.file_groups) == with_logs
        assert answer.ready == (not with_logs and not (indexing and target == 6))
    assert tree_snapshot(path) == before


def test_version_check_fixtures_cover_every_blocker_a_fixture_can_have(fixture_lake: dict[str, Path]) -> None:
    """The fixtures hold both kinds (so the test above checks both against something)."""
    assert any(hudi_rs_groups_with_logs(p) for p in fixture_lake.values())
    assert sum(has_indexing(p) for p in fixture_lake.values()) == 7
