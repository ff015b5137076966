"""Cleans of real tables written by Apache Hudi, with aggressive settings. hudi-rs reads the
latest snapshot and every instant at or after the earliest retained commit with exactly the
rows it read before, and every file named by a retained instant still exists."""

from __future__ import annotations

from pathlib import Path

import hudi
import pytest

from tests.readers import hudi_read
from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.mdt import MetadataTableEnabledError
from timeline.metadata import avro
from timeline.table import HudiTable

TABLES = [
    "sample_table/mor/avro/v9_txns_simple_nometa",
    "sample_table/cow/v9_txns_complex_nometa",
    "sample_table/mor/avro/v9_txns_nonpart_nometa",
    "sample_table/cow/v9_txns_simple_nometa",
    "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable",
    "sample_table/mor/parquet/v6_simplekeygen_nonhivestyle_overwritetable",
    "quickstart_trips_table/mor/avro/v6_trips_8i1u",
    "quickstart_trips_table/mor/avro/v8_trips_8i3u1d",  # metadata table: dropped first
    "sample_table/mor/avro/v9_txns_complex_meta",
]
CONFIGS = {
    "retain-1-commit": CleanConfig(commits_retained=1),
    "retain-2-commits": CleanConfig(commits_retained=2),
    "keep-1-version": CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, file_versions_retained=1),
}


def rows(path: Path, as_of: str | None = None) -> list[tuple]:
    """Every row hudi-rs reads (all columns but the file name), sorted."""
    table = hudi_read(path, as_of)
    if table is None:
        return []
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


def retained_files(table: HudiTable, since: str) -> list[Path]:
    """Every data file written by a completed write at or after `since`."""
    found = []
    for instant in table.timeline.writes().completed():
        if instant.requested_time >= since:
            for stats in ((table.read_instant(instant) or {}).get("partitionToWriteStats") or {}).values():
                found += [Path(table.base) / s["path"] for s in stats or () if s.get("path")]
    return found


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("table_id", TABLES)
def test_fixture_clean_keeps_every_retained_read_identical(table_copy, table_id: str, config_name: str) -> None:
    path = table_copy(table_id)
    config = CONFIGS[config_name]
    table = HudiTable.open(str(path))
    plan = plan_clean(table, config)
    ectr = plan.earliest_instant_to_retain
    since = ectr.requested_time if ectr else (table.timeline.writes().completed().last().requested_time)  # type: ignore[union-attr]
    instants = [i.requested_time for i in table.timeline.writes().completed() if i.requested_time >= since]
    before = {t: rows(path, t) for t in instants}
    latest = rows(path)
    if plan.is_empty:
        assert schedule_clean(table, plan, config) is None and not table.reload().timeline.cleans()
        return
    clean = schedule_clean(table, plan, config, drop_metadata=table.config.metadata_table_enabled)
    (result,) = run_pending_cleans(table)
    assert result.failed == 0 and result.deleted == len(plan.files_to_delete)
    assert all(not Path(d.path.removeprefix("file:")).exists() for d in plan.files_to_delete)
    assert rows(path) == latest
    for t in instants:
        assert rows(path, t) == before[t], t
    for file in retained_files(table, since):
        assert file.exists(), file
    folder = Path(table.timeline.folder)
    requested = (folder / f"{clean.requested_time}.clean.requested").read_bytes()
    assert avro.record_name(requested) == "org.apache.hudi.avro.model.HoodieCleanerPlan"
    (completed,) = [p for p in folder.iterdir()
                    if p.name.startswith(clean.requested_time) and p.name.endswith(".clean")]
    assert avro.record_name(completed.read_bytes()) == "org.apache.hudi.avro.model.HoodieCleanMetadata"
    assert hudi.HudiTable(str(path)).get_timeline().get_completed_commits() is not None


def test_fixture_clean_of_a_table_with_a_metadata_table_is_refused_then_drops_it(table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_meta")
    table = HudiTable.open(str(path))
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    with pytest.raises(MetadataTableEnabledError, match="metadata table is enabled"):
        schedule_clean(table, plan, config)
    assert (path / ".hoodie" / "metadata").exists()
    latest = rows(path)
    schedule_clean(table, plan, config, drop_metadata=True)
    assert not (path / ".hoodie" / "metadata").exists()
    run_pending_cleans(table)
    assert rows(path) == latest
