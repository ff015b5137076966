"""One real Spark session (local[2], UI off) for the whole test run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from timeline.spark.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = spark_session(app_name="cleanline-tests", master="local[2]")
    yield session
    session.stop()
