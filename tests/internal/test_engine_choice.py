"""The engine choice lives in one place (`timeline.internal.engine.engine_for`), used by the CLI's
`--engine auto` and by the console alike."""

from __future__ import annotations

import pytest

from timeline import CleanlineError
from timeline.internal.engine import DEFAULT_SPARK_MIN_FILES, engine_for, spark_min_files


def test_engine_for_counts_files_against_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert engine_for(10, 100) == "local" and engine_for(100, 100) == "spark" and engine_for(10**9, 0) == "local"
    monkeypatch.delenv("CLEANLINE_SPARK_MIN_FILES", raising=False)
    assert spark_min_files() == DEFAULT_SPARK_MIN_FILES
    assert engine_for(DEFAULT_SPARK_MIN_FILES - 1) == "local" and engine_for(DEFAULT_SPARK_MIN_FILES) == "spark"
    monkeypatch.setenv("CLEANLINE_SPARK_MIN_FILES", "5")
    assert engine_for(5) == "spark" and engine_for(4) == "local"
    monkeypatch.setenv("CLEANLINE_SPARK_MIN_FILES", "many")
    with pytest.raises(CleanlineError, match="CLEANLINE_SPARK_MIN_FILES"):
        engine_for(5)


@pytest.mark.django_db
def test_the_console_asks_the_library(settings) -> None:
    from console.models import Table
    from console.services.plans import _on_spark

    table = Table(path="/t", name="t", table_type="COPY_ON_WRITE", table_version=6, layout_version=1, total_files=50)
    settings.CLEANLINE_SPARK_MIN_FILES = 50
    assert _on_spark(table)
    settings.CLEANLINE_SPARK_MIN_FILES = 51
    assert not _on_spark(table)
    settings.CLEANLINE_SPARK_MIN_FILES = 0
    assert not _on_spark(table)


def test_cli_engine_auto_takes_spark_from_the_threshold_on(spark, fixture_lake, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Below CLEANLINE_SPARK_MIN_FILES the plan runs in this process (no Spark job); from it on,
    on Spark (jobs run); the plans are the same."""
    import json

    from timeline.cli import main

    path = fixture_lake["sample_table/mor/avro/v9_txns_simple_nometa"]
    args = ["clean", "plan", str(path), "--engine", "auto", "--retain-commits", "1", "--allow-short-retention",
            "--json"]
    tracker = spark.sparkContext.statusTracker()
    plans = []
    for threshold, spark_jobs in (("1000000", False), ("1", True)):
        monkeypatch.setenv("CLEANLINE_SPARK_MIN_FILES", threshold)
        before = len(tracker.getJobIdsForGroup(None))
        assert main(args) == 0
        plans.append(json.loads(capsys.readouterr().out))
        assert (len(tracker.getJobIdsForGroup(None)) > before) is spark_jobs
    assert plans[0] == plans[1]
