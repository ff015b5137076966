"""The Spark session factory: master from `SPARK_MASTER` (default `local[*]`), the UI off
unless `CLEANLINE_SPARK_UI=true`, extra settings from `CLEANLINE_SPARK_CONF`
(`key=value` pairs separated by `;`). The same code runs on `local[*]`, `spark://`, YARN
and Kubernetes."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

DEFAULTS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.driver.extraJavaOptions": "-Dio.netty.tryReflectionSetAccessible=true",
}


def conf_from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings from the environment: defaults, the UI switch, CLEANLINE_SPARK_CONF."""
    env = os.environ if environ is None else environ
    conf = dict(DEFAULTS)
    conf["spark.pyspark.python"] = env.get("PYSPARK_PYTHON", sys.executable)
    conf["spark.ui.enabled"] = "true" if env.get("CLEANLINE_SPARK_UI", "").lower() == "true" else "false"
    for pair in env.get("CLEANLINE_SPARK_CONF", "").split(";"):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            conf[key.strip()] = value.strip()
    return conf


def spark_session(*, app_name: str = "cleanline", master: str | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """Get or create the session. `master` and `conf` override the environment."""
    # Python workers use this interpreter (and so the installed `timeline` package) unless the
    # environment names another; local mode reads the variable, not the setting.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master or os.environ.get("SPARK_MASTER", "local[*]"))
    for key, value in {**conf_from_env(), **(conf or {})}.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
