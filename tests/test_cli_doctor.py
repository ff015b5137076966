"""`cleanline doctor` (timeline/cli_doctor.py): exit 0 when healthy and 1 with findings, the JSON
list of findings, every table under a root, and a repair shown, asked for and run."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.doctor.helpers import OLD, age_tree, copy_base_file, grow_history
from tests.helpers import FIXTURES, fake_failed_write, tree_snapshot, unzip_table
from timeline import HudiTable
from timeline.cli import main

V9_COW = "sample_table/cow/v9_txns_simple_nometa"


def test_cli_doctor_healthy_then_findings_as_text_and_json(table_copy, capsys: pytest.CaptureFixture[str]) -> None:
    path = table_copy(V9_COW)
    assert main(["doctor", str(path)]) == 0
    assert "healthy, nothing found" in capsys.readouterr().out
    assert main(["doctor", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    fake_failed_write(path, OLD, markers=False)
    orphan = copy_base_file(path, "20261102000000000")
    age_tree(path)
    assert main(["doctor", str(path)]) == 1
    text = capsys.readouterr().out
    assert "stale-pending" in text and "orphan-files" not in text  # the pending write keeps the horizon back
    assert "why:" in text and "repair: none: under the EAGER failed-writes policy" in text  # no heartbeat to go by
    assert main(["doctor", str(path), "--include-ingestion-commits"]) == 1
    assert "repair: roll back commit 20261101000000000" in capsys.readouterr().out
    assert main(["--hoodie-conf", "hoodie.clean.failed.writes.policy=LAZY", "doctor", str(path), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert (finding["kind"], finding["severity"], finding["evidence"]["instant"]) == ("stale-pending", "warning", OLD)
    assert finding["evidence"]["files"] == 2 and finding["repairable"] is True
    assert orphan.exists()


def test_cli_doctor_repair_previews_asks_and_runs(table_copy, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = table_copy(V9_COW)
    orphan = copy_base_file(path, "20261102000000000")
    age_tree(path)
    untouched = tree_snapshot(path)
    assert main(["doctor", str(path), "--repair", "orphan-files", "--preview"]) == 0
    out = capsys.readouterr().out
    assert "repair orphan-files" in out and orphan.name in out and "delete" in out
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert main(["doctor", str(path), "--repair", "orphan-files"]) == 2  # said no: nothing changed
    assert "cancelled" in capsys.readouterr().err and tree_snapshot(path) == untouched
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert main(["doctor", str(path), "--repair", "orphan-files"]) == 0
    assert "1 change(s) made" in capsys.readouterr().err and not orphan.exists()
    assert main(["doctor", str(path), "--repair", "orphan-files", "--yes", "--json"]) == 0  # nothing left: a no-op
    assert json.loads(capsys.readouterr().out) == {"plan": None, "result": None, "remaining": []}
    assert main(["doctor", str(path), "--repair", "nonsense", "--yes"]) == 2
    assert "unknown finding kind 'nonsense'" in capsys.readouterr().err


def test_cli_doctor_repair_json_and_a_finding_without_repair(table_copy, capsys: pytest.CaptureFixture[str]) -> None:
    path = table_copy(V9_COW)
    copy_base_file(path, "20261102000000000")
    age_tree(path)
    assert main(["doctor", str(path), "--repair", "orphan-files", "--yes", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["action"] for c in data["plan"]["changes"]] == ["delete"] and data["remaining"] == []
    assert len(data["result"]["done"]) == 1 and data["result"]["failed"] == []
    completed = sorted((path / ".hoodie" / "timeline").glob("*.commit"))[-1]
    completed.write_bytes(b"Obj\x01 cut short")
    assert main(["doctor", str(path), "--repair", "unreadable-instant", "--yes"]) == 1
    assert "no repair Cleanline runs" in capsys.readouterr().out


def test_cli_doctor_tables_under_a_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lake = tmp_path / "lake"
    healthy = unzip_table(FIXTURES / "sample_table/cow/v6_nonpartitioned.zip", lake / "a")
    sick = unzip_table(FIXTURES / f"{V9_COW}.zip", lake / "b")
    broken = unzip_table(FIXTURES / "sample_table/cow/v8_nonpartitioned.zip", lake / "c")
    (broken / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=x\nhoodie.table.version=42\n")
    fake_failed_write(sick, OLD, markers=False)
    age_tree(lake)
    assert main(["doctor", str(lake), "--tables", "--json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert [r["table"].rsplit("/", 1)[-1] for r in rows] == [broken.name, sick.name, healthy.name]  # worst first
    assert rows[0]["error"] and [f["kind"] for f in rows[1]["findings"]] == ["stale-pending"]
    assert rows[2] == {"table": f"file:{healthy}", "error": None, "findings": []}
    assert main(["doctor", str(lake), "--tables"]) == 1
    text = capsys.readouterr().out
    assert "healthy" in text and "stale-pending" in text
    assert main(["doctor", str(lake / "a"), "--tables"]) == 0


def test_cli_doctor_thresholds(table_copy, capsys: pytest.CaptureFixture[str]) -> None:
    path = table_copy(V9_COW)
    fake_failed_write(path, OLD, markers=False)  # 26 days old when the tests were written
    age_tree(path)
    assert main(["doctor", str(path), "--json"]) == 1
    assert [f["kind"] for f in json.loads(capsys.readouterr().out)] == ["stale-pending"]
    never = str(10 * 365 * 24 * 60)  # ten years, in minutes
    assert main(["doctor", str(path), "--stale-after", never, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["doctor", str(path), "--repair", "stale-pending", "--stale-after", never, "--yes"]) == 0
    assert "no stale-pending finding" in capsys.readouterr().out
    assert main(["doctor", str(path), "--repair", "stale-pending", "--yes"]) == 1  # EAGER: an ingestion commit stays
    assert "no repair" in capsys.readouterr().out.lower()
    assert main(["doctor", str(path), "--repair", "stale-pending", "--include-ingestion-commits", "--yes"]) == 0
    assert HudiTable.open(str(path)).timeline.find(OLD) is None  # rolled back, on the operator's word
    capsys.readouterr()
    orphan = copy_base_file(path, "20261102000000000")
    age_tree(path)  # 10 days old
    assert main(["doctor", str(path), "--orphan-min-age", str(11 * 24), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(["doctor", str(path), "--orphan-min-age", str(9 * 24), "--json"]) == 1
    assert [f["kind"] for f in json.loads(capsys.readouterr().out)] == ["orphan-files"]
    assert main(["doctor", str(path), "--repair", "orphan-files", "--orphan-min-age", str(11 * 24), "--yes"]) == 0
    assert orphan.exists()  # younger than the age given: not an orphan, nothing deleted
    capsys.readouterr()
    recent = (datetime.now(UTC) - timedelta(hours=2)).strftime("%Y%m%d%H%M%S000")  # the table's zone is UTC
    fake_failed_write(path, recent, markers=False)
    assert main(["doctor", str(path), "--repair", "stale-pending", "--yes"]) == 0  # younger than 180 minutes
    assert "no stale-pending finding" in capsys.readouterr().out
    assert main(["doctor", str(path), "--repair", "stale-pending", "--stale-after", "60",
                 "--include-ingestion-commits", "--yes"]) == 0
    assert HudiTable.open(str(path)).timeline.find(recent) is None  # planned and run with the threshold given


def test_cli_doctor_clean_lag_threshold_and_bad_values(table_copy, capsys: pytest.CaptureFixture[str]) -> None:
    path = table_copy("sample_table/cow/v6_nonpartitioned")
    grow_history(path, 60)
    age_tree(path)
    assert main(["doctor", str(path), "--json"]) == 0  # 52 commits to clean: under the default 100
    capsys.readouterr()
    assert main(["doctor", str(path), "--clean-lag", "50", "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding["kind"] == "clean-lag" and finding["evidence"]["commitsToClean"] == 52
    assert finding["evidence"]["maxCommitsToClean"] == 50 and len(finding["evidence"]["steps"]) == 2
    for option, value in (("--clean-lag", "0"), ("--clean-lag", "1.5"), ("--stale-after", "-1"),
                          ("--orphan-min-age", "soon")):
        with pytest.raises(SystemExit) as stopped:
            main(["doctor", str(path), option, value])
        assert stopped.value.code == 2
        assert option in capsys.readouterr().err
