"""Cleaner settings read as Hudi reads them (timeline/clean/config.py): every number a Java int
(HoodieConfig.getInt), hours within a thousand years, and the bound of a retention a person asks
for: no more commits or file versions than the table has instants."""

from __future__ import annotations

import pytest

from timeline.clean.config import (
    HOURS_RETAINED_MAX,
    JAVA_INT_MAX,
    CleanConfig,
    CleanConfigError,
    retention_bound_refusal,
)


@pytest.mark.parametrize(("key", "value", "bound"), [
    ("hoodie.clean.commits.retained", str(10**30), str(JAVA_INT_MAX)),
    ("hoodie.cleaner.fileversions.retained", str(JAVA_INT_MAX + 1), str(JAVA_INT_MAX)),
    ("hoodie.clean.hours.retained", str(HOURS_RETAINED_MAX + 1), f"{HOURS_RETAINED_MAX} hours"),
])
def test_config_numbers_above_what_hudi_reads_are_refused_with_the_bound(key: str, value: str, bound: str) -> None:
    with pytest.raises(CleanConfigError) as refused:
        CleanConfig.from_properties({key: value})
    assert f"{key}={value} is above {bound}" in str(refused.value)
    field = {"commits": "commits_retained", "fileversions": "file_versions_retained",
             "hours": "hours_retained"}[key.split(".")[-2]]
    with pytest.raises(CleanConfigError):  # an override the same
        CleanConfig().with_overrides(**{field: int(value)})
    assert getattr(CleanConfig.from_properties({key: str(JAVA_INT_MAX if field != "hours_retained"
                                                            else HOURS_RETAINED_MAX)}), field) > 0  # the bound itself


def test_config_retention_bound_refusal_names_the_table_instant_count() -> None:
    refused = retention_bound_refusal({"commits_retained": 10**30}, instants=12)
    assert refused == ("commits_retained=1000000000000000000000000000000 is above 12, the table's instant count "
                       "(active and archived timelines): no table keeps more commits than it has instants")
    assert "above 12" in (retention_bound_refusal({"file_versions_retained": "13"}, instants=12) or "")
    assert retention_bound_refusal({"commits_retained": 12, "file_versions_retained": 12, "hours_retained": 10**6},
                                   instants=12) is None  # at the bound; hours are not counted in instants
    # the table's count unknown (not synced yet): Hudi's own bound still holds
    assert f"is above {JAVA_INT_MAX}" in (retention_bound_refusal({"commits_retained": 10**30}, instants=None) or "")
    assert f"is above {HOURS_RETAINED_MAX} hours" in (
        retention_bound_refusal({"hours_retained": 10**30}, instants=12) or "")
    assert "not a whole number" in (retention_bound_refusal({"commits_retained": "1e30"}, instants=12) or "")
    assert retention_bound_refusal({"commits_retained": None, "hours_retained": ""}, instants=0) is None


def test_config_retention_bound_is_never_below_the_table_own_setting() -> None:
    """A table of 8 instants configured to keep 10 commits (Hudi's default): asking for its own
    10 is no slip, 11 is refused naming that setting."""
    props = {"hoodie.clean.commits.retained": "10"}
    assert retention_bound_refusal({"commits_retained": 10}, instants=8, table_props=props) is None
    assert retention_bound_refusal({"commits_retained": 11}, instants=8, table_props=props) == (
        "commits_retained=11 is above 10, the table's own setting (above its 8 instants, it already keeps every one)")
    assert "above 8, the table's instant count" in (
        retention_bound_refusal({"file_versions_retained": 9}, instants=8, table_props=props) or "")


def test_clean_config_a_policy_given_by_its_name_is_that_policy() -> None:
    """`CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS")` plans by file versions, as Hudi reads
    `hoodie.clean.policy` (HoodieCleanConfig: the enum's name); an unknown name is refused."""
    from timeline.clean.config import CleanConfig, CleanConfigError, CleanPolicy, FailedWritesPolicy

    config = CleanConfig(policy="KEEP_LATEST_FILE_VERSIONS", failed_writes="lazy")  # type: ignore[arg-type]
    assert config.policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS
    assert config.failed_writes is FailedWritesPolicy.LAZY
    assert config == CleanConfig(policy=CleanPolicy.KEEP_LATEST_FILE_VERSIONS, failed_writes=FailedWritesPolicy.LAZY)
    with pytest.raises(CleanConfigError, match="not a valid value"):
        CleanConfig(policy="KEEP_EVERYTHING")  # type: ignore[arg-type]
