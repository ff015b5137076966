"""Retention minimums are the library's rule (timeline/clean/retention.py): `Maintenance.plan_clean`
refuses a configuration that keeps less than the table's own clean settings unless asked not to
enforce them (as delta-rs's `vacuum(enforce_retention_duration=True)`), and then says so in the plan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Lake, T, rewrite_history
from timeline import CleanConfig, CleanPolicy, HudiTable, RetentionTooShort
from timeline.clean.retention import retention_shortfall
from timeline.storage import MemoryStorage
from timeline.storage.arrow import LocalStorage

CLEANLINE = Path(sys.executable).with_name("cleanline")


def lake_with(props: dict[str, str]) -> HudiTable:
    lake = Lake(MemoryStorage(), "/t", version=8, extra_props=props)
    rewrite_history(lake, T[:6])
    return HudiTable.load(lake.storage, "/t")


def test_retention_fewer_commits_than_the_table_configures_is_refused_by_default() -> None:
    table = lake_with({"hoodie.clean.commits.retained": "4"})
    with pytest.raises(RetentionTooShort, match="retains 2 commits, fewer than the table's configured 4"):
        table.maintenance().plan_clean(CleanConfig(commits_retained=2))
    assert table.maintenance().plan_clean(CleanConfig(commits_retained=4)).files_to_delete  # at the minimum: fine


def test_retention_unset_keys_take_hudis_defaults() -> None:
    table = lake_with({})
    with pytest.raises(RetentionTooShort, match="fewer than the table's configured 10"):
        table.maintenance().plan_clean(CleanConfig(commits_retained=3))
    assert retention_shortfall({}, CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS,
                                               file_versions_retained=2)) is not None
    assert retention_shortfall({}, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, hours_retained=1)) is not None
    # only the setting of the chosen policy counts
    assert retention_shortfall({}, CleanConfig(policy=CleanPolicy.KEEP_LATEST_BY_HOURS, commits_retained=1)) is None


def test_retention_check_off_plans_and_the_plan_says_so() -> None:
    table = lake_with({"hoodie.clean.commits.retained": "4"})
    plan = table.maintenance().plan_clean(CleanConfig(commits_retained=2), enforce_retention=False)
    assert plan.files_to_delete
    assert "retention check off: retains 2 commits, fewer than the table's configured 4" in plan.notes


def test_retention_cli_refuses_and_the_flag_allows(tmp_path: Path) -> None:
    lake = Lake(LocalStorage(), str(tmp_path / "t"), version=8)
    rewrite_history(lake, T[:6])
    before = sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir())
    refused = subprocess.run([str(CLEANLINE), "clean", "schedule", str(tmp_path / "t"), "--retain-commits", "2"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "fewer than the table's configured 10" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir()) == before  # nothing written
    allowed = subprocess.run([str(CLEANLINE), "clean", "plan", str(tmp_path / "t"), "--retain-commits", "2",
                              "--allow-short-retention"], capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0 and "retention check off" in allowed.stdout
