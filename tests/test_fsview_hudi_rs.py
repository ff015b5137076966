"""Our file-system view equals hudi-rs's file slices on every real fixture table, for the
latest snapshot and as of every completed commit."""

from __future__ import annotations

from pathlib import Path

import hudi
import pytest

from tests.helpers import FIXTURE_IDS, ours, theirs
from timeline import HudiTable


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_fsview_latest_slices_equal_hudi_rs(fixture_lake: dict[str, Path], table_id: str) -> None:
    path = fixture_lake[table_id]
    expected = theirs(path)
    assert ours(HudiTable.open(str(path))) == expected
    if "empty" not in table_id:
        assert expected, "a non-empty fixture must have slices"


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_fsview_without_sizes_has_the_same_slices(fixture_lake: dict[str, Path], table_id: str) -> None:
    """`cleanline fsview --json` lists without a stat per file (sizes unknown): the slices are
    those hudi-rs sees, and the sizes are marked unknown rather than made up."""
    table = HudiTable.open(str(fixture_lake[table_id]))
    assert ours(table, sizes=False) == theirs(fixture_lake[table_id])
    unsized = table.file_system_view(sizes=False).latest_slices()
    assert all(f.size == -1 for s in unsized for f in (s.base_file, *s.log_files) if f is not None)


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_fsview_slices_as_of_every_completed_commit_equal_hudi_rs(
    fixture_lake: dict[str, Path], table_id: str
) -> None:
    path = fixture_lake[table_id]
    table = HudiTable.open(str(path))
    commits = table.timeline.writes().completed()
    for instant in commits:
        assert ours(table, instant.requested_time) == theirs(path, instant.requested_time), instant


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_timeline_completed_commits_equal_hudi_rs(fixture_lake: dict[str, Path], table_id: str) -> None:
    path = fixture_lake[table_id]
    timeline = HudiTable.open(str(path)).timeline.completed()
    theirs_timeline = hudi.HudiTable(str(path)).get_timeline()
    for action, getter in (("commit", theirs_timeline.get_completed_commits),
                           ("deltacommit", theirs_timeline.get_completed_deltacommits),
                           ("replacecommit", theirs_timeline.get_completed_replacecommits)):
        expected = [i.timestamp for i in getter()]
        assert [i.requested_time for i in timeline.with_actions({action})] == expected, action
