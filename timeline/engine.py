"""The engine, chosen in one place: table services run in this process, or as PySpark jobs
when a SparkSession is given. PySpark is imported only here and in `timeline/spark/`, and only
when asked for, so the library and the CLI work without it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def spark_session(*, master: str | None = None, app_name: str = "cleanline") -> Any:
    """A SparkSession (`SPARK_MASTER` by default) for `HudiTable.maintenance(spark=...)`."""
    from timeline.spark.session import spark_session as make

    return make(master=master, app_name=app_name)


def build_demo_lake(path: str, *, progress: Callable[[str], None] | None = None) -> list[str]:
    """Write the demo lake with the Spark table writer; the paths of its tables."""
    from timeline.spark.demo import build_demo_lake as build

    spark = spark_session(app_name="cleanline-demo")
    spark.sparkContext.setLogLevel("ERROR")
    return build(spark, path, progress=progress)
