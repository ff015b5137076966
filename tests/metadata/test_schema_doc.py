"""Our Avro schemas carry every field hudi-format.md §3.3 lists, in the same order."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT
from timeline.metadata import avro

DOC = (ROOT.parent / "shared" / "docs" / "hudi-format.md").read_text()
FIELD = re.compile(r"`(\w+)`\**\s+(?:\(capital R!\)\s+)?(?:string|long|int|boolean|map|array|Hoodie\w+)")
ROW = re.compile(r"^\|(\d+)\|(\w+)\|", re.M)

RECORDS = ["HoodieActionInstant", "HoodieCleanFileInfo", "HoodieCleanerPlan", "HoodieCleanPartitionMetadata",
           "HoodieCleanMetadata", "HoodieSavepointPartitionMetadata", "HoodieSavepointMetadata",
           "HoodieInstantInfo", "HoodieRollbackRequest", "HoodieRollbackPlan", "HoodieRollbackPartitionMetadata",
           "HoodieRollbackMetadata", "HoodieRestorePlan", "HoodieRestoreMetadata"]


def documented_fields(name: str) -> list[str]:
    """The field names of a record's entry: its table's rows, or its prose list of fields."""
    start = DOC.index(f"**{name}**")
    section = DOC[start:DOC.index("\n**", start + 1)]
    rows = ROW.findall(section)
    return [field for _, field in rows] if rows else FIELD.findall(section)


def schema_fields(name: str) -> list[str]:
    return [f["name"] for f in avro.schema(name)["fields"]]


@pytest.mark.parametrize("name", RECORDS)
def test_schema_fields_follow_the_documented_order(name: str) -> None:
    documented = documented_fields(name)
    assert documented, f"no fields parsed for {name}"
    ours = schema_fields(name)
    positions = [ours.index(field) for field in documented if field in ours]
    assert [f for f in documented if f not in ours] == []
    assert positions == sorted(positions), (documented, ours)


def test_schema_version_defaults_are_hudis() -> None:
    defaults = {name: next(f.get("default") for f in avro.schema(name)["fields"] if f["name"] == "version")
                for name in ("HoodieCleanerPlan", "HoodieCleanMetadata", "HoodieRollbackPlan",
                             "HoodieRollbackMetadata", "HoodieRestorePlan", "HoodieRestoreMetadata",
                             "HoodieSavepointMetadata")}
    assert defaults == {"HoodieCleanerPlan": 1, "HoodieCleanMetadata": 1, "HoodieRollbackPlan": 1,
                        "HoodieRollbackMetadata": 1, "HoodieRestorePlan": 2, "HoodieRestoreMetadata": 1,
                        "HoodieSavepointMetadata": 1}
