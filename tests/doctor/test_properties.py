"""`hoodie.properties` that only its backup makes valid, and a leftover backup
(timeline/doctor/properties.py), on copies of real tables as an interrupted
`HoodieTableConfig.modify` leaves them."""

from __future__ import annotations

import shutil

import pytest

from tests.doctor.helpers import age_tree, reads, round_trip
from tests.helpers import rows
from timeline import HudiTable
from timeline.doctor import diagnose
from timeline.doctor.properties import PropertiesEvidence

V9_COW = "sample_table/cow/v9_txns_simple_nometa"
KIND = "table-properties"


@pytest.mark.parametrize("damage", ["missing", "bad checksum"])
def test_properties_restored_from_the_backup(table_copy, damage: str) -> None:
    path = table_copy(V9_COW)
    before = rows(path)
    readable = reads(path)  # hudi-rs reads no table without its hoodie.properties
    main = path / ".hoodie" / "hoodie.properties"
    backup = path / ".hoodie" / "hoodie.properties.backup"
    shutil.copy(main, backup)
    good = main.read_bytes()
    if damage == "missing":
        main.unlink()
    else:
        main.write_bytes(good.replace(b"hoodie.table.checksum=", b"hoodie.table.checksum=1"))
    age_tree(path)
    assert HudiTable.open(str(path)).config.path.endswith("hoodie.properties.backup")
    found, plan, result, after = round_trip(path, KIND, before=readable)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, PropertiesEvidence) and evidence.read_from_backup
    assert evidence.problem.startswith("missing" if damage == "missing" else "hoodie.table.checksum")
    assert [(c.action, c.target.rsplit("/", 1)[-1], c.bytes) for c in plan.changes] == [
        ("write", "hoodie.properties", len(good)), ("delete", "hoodie.properties.backup", len(good))]
    assert result.ok and main.read_bytes() == good and not backup.exists()
    assert after == []
    assert HudiTable.open(str(path)).config.path.endswith("/hoodie.properties")
    assert rows(path) == before


def test_properties_leftover_backup_and_an_update_in_progress(table_copy) -> None:
    path = table_copy(V9_COW)
    backup = path / ".hoodie" / "hoodie.properties.backup"
    shutil.copy(path / ".hoodie" / "hoodie.properties", backup)
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []  # just written: an update may be running
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND)
    (finding,) = found
    assert finding.severity.value == "info" and [c.action for c in plan.changes] == ["delete"]
    assert result.ok and not backup.exists() and after == []
