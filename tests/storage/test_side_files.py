"""Side files (timeline/storage/base.py `is_side_file`) on every fixture table: with a Hadoop
checksum file beside each file and a `.DS_Store` in each folder, the table reads exactly as
without them (Hudi's Hadoop storage never lists them): the same file slices, the same
metadata-table validation, the same doctor findings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.helpers import age_tree
from tests.helpers import FIXTURE_IDS, ours
from tests.storage.helpers import add_side_files, remove_side_files
from timeline import HudiTable
from timeline.doctor import diagnose


def _read(path: Path) -> tuple[object, ...]:
    """The latest slices, the metadata table's validation (or None without one) and the doctor's
    findings (kind, severity, summary)."""
    table = HudiTable.open(str(path))
    validation = table.inspect.validate_metadata_table() if table.config.metadata_table_enabled else None
    findings = sorted((f.kind, f.severity.value, f.summary) for f in diagnose(HudiTable.open(str(path))))
    return ours(table), validation, findings


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_side_files_every_fixture_reads_the_same_with_checksums_and_finder_files(table_copy, table_id: str) -> None:
    path = table_copy(table_id)
    remove_side_files(path)
    age_tree(path)
    plain = _read(path)
    assert add_side_files(path) > 0
    age_tree(path)
    assert _read(path) == plain
    if plain[1] is not None:
        assert plain[1].ok  # the metadata table valid
