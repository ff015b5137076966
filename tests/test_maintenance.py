"""`Maintenance.clean`: the one-call clean with a dry run (delta-rs's `vacuum(dry_run=True)`),
returning the same plan as the three steps; a dry run writes nothing."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import tree_snapshot
from timeline import CleanConfig, HudiTable

TABLE = "sample_table/cow/v9_txns_simple_nometa"


def test_maintenance_clean_dry_run_is_the_three_steps_plan_and_writes_nothing(table_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(TABLE)
    config = CleanConfig(commits_retained=1)
    before = tree_snapshot(path)
    table = HudiTable.open(str(path))
    dry = table.maintenance().clean(config, dry_run=True, enforce_retention=False)
    three_steps = table.maintenance().plan_clean(config, enforce_retention=False)
    assert dry.files_to_delete and dry.decisions == three_steps.decisions
    assert tree_snapshot(path) == before

    done = HudiTable.open(str(path)).maintenance().clean(config, enforce_retention=False)
    assert done.decisions == dry.decisions
    gone = {d.path.rsplit("/", 1)[-1] for d in done.files_to_delete}
    assert gone and not gone & {p.name for p in path.rglob("*") if p.is_file()}
    cleans = HudiTable.open(str(path)).timeline.cleans().completed()
    assert len(cleans) == 1


def test_maintenance_clean_defaults_to_the_tables_own_settings(table_copy) -> None:  # type: ignore[no-untyped-def]
    path: Path = table_copy(TABLE)
    table = HudiTable.open(str(path))
    own = CleanConfig.from_properties(table.config.props)
    assert table.maintenance().clean(dry_run=True).decisions == table.maintenance().plan_clean(own).decisions
