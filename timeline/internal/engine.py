"""The engine, chosen in one place: table services run in this process, or as PySpark jobs
when a SparkSession is given. PySpark is imported only here and in `timeline/spark/`, and only
when asked for, so the library and the CLI work without it. The local engine's process pool is
`timeline/internal/forks.py`; the demo lake's tables are `timeline/internal/demo.py`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any

from timeline.exceptions import CleanlineError
from timeline.internal.demo import DEMO_TABLES, demo_tables_to_build

# The default threshold (CLEANLINE_SPARK_MIN_FILES): where bench/scale.py measured the two-worker
# cluster overtaking the local engine at planning (about 980,000 files; bench/RESULTS.md).
DEFAULT_SPARK_MIN_FILES = 1_000_000


def spark_min_files(environ: Mapping[str, str] | None = None) -> int:
    """`CLEANLINE_SPARK_MIN_FILES`: tables with at least this many files run on Spark (0: never)."""
    value = (os.environ if environ is None else environ).get("CLEANLINE_SPARK_MIN_FILES", "")
    try:
        return int(value) if value.strip() else DEFAULT_SPARK_MIN_FILES
    except ValueError:
        raise CleanlineError(f"CLEANLINE_SPARK_MIN_FILES={value!r}: expected a whole number of files") from None


def engine_for(files: int, min_files: int | None = None) -> str:
    """The engine for a table of `files` data files: "spark" from `min_files` on (default
    `CLEANLINE_SPARK_MIN_FILES`; 0 turns Spark off), else "local". The CLI's `--engine auto`
    and the console both ask here."""
    threshold = spark_min_files() if min_files is None else min_files
    return "spark" if 0 < threshold <= files else "local"


def spark_session(*, master: str | None = None, app_name: str = "cleanline") -> Any:
    """A SparkSession (`SPARK_MASTER` by default) for `HudiTable.maintenance(spark=...)`."""
    from timeline.spark.session import spark_session as make

    return make(master=master, app_name=app_name)


def build_demo_lake(path: str, *, progress: Callable[[str], None] | None = None) -> list[str]:
    """Write the demo lake with the Spark table writer; the paths of its tables. When every table
    is there already, no Spark session (no JVM) is started."""
    from timeline.storage import storage_for

    if not demo_tables_to_build(path):
        _, base = storage_for(path)
        return [str(PurePosixPath(base) / name) for name in DEMO_TABLES]
    from timeline.spark.demo import build_demo_lake as build

    spark = spark_session(app_name="cleanline-demo")
    spark.sparkContext.setLogLevel("ERROR")
    return build(spark, path, progress=progress)


__all__ = ["DEFAULT_SPARK_MIN_FILES", "build_demo_lake", "engine_for", "spark_min_files", "spark_session"]
