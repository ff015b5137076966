"""Shared test fixtures: the real Hudi tables of ../shared/fixtures unzipped into temp dirs, this
run's plan store, a Spark session, the demo lake, and the servers on 127.0.0.1 (the S3-protocol
server, a Spark standalone cluster) the tests at several levels use."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import (
    FIXTURE_ZIPS,
    FIXTURES,
    ROOT,
    S3Server,
    StandaloneCluster,
    fixture_id,
    offline_aws_environment,
    unzip_table,
    xdist_unit,
)

if not FIXTURE_ZIPS:
    raise RuntimeError(f"no fixture tables found under {FIXTURES}; ../shared must sit beside the project")
(ROOT / "var").mkdir(exist_ok=True)  # the SQLite test database lives there (console.settings)
# Clean plans' stores: one temporary folder per test run, inherited by the workers tests start
# (console/settings.py reads CLEANLINE_PLAN_STORE; the `plan_store` fixture of tests/console/conftest.py
# sets it for this process).
OWN_STORE = "CLEANLINE_PLAN_STORE" not in os.environ
PLAN_STORE = os.environ.setdefault("CLEANLINE_PLAN_STORE", tempfile.mkdtemp(prefix="cleanline-plan-store-"))


@pytest.fixture(scope="session")
def plan_store_folder() -> str:
    """This run's plan store (CLEANLINE_PLAN_STORE): a temporary folder, removed after the run,
    unless the environment named one."""
    return PLAN_STORE


# `make test` runs the suite on several processes (pytest-xdist): a test file's tests stay together
# on one process, so its module fixtures start once, and the files that use a costly session
# fixture are one group, so it is built once (console.settings gives each process its own Redis
# database and plan store; pytest-django its own test database). A scheduler of our own, as
# pytest-xdist's `xdist_group` marks are lost under pytest 9 (the worker's renamed node ids).
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` (make test's), with the groups of `tests/helpers.py` `xdist_unit`; any
    other mode as pytest-xdist has it."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Grouped(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_unit(nodeid)

    return Grouped(config, log)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if OWN_STORE:
        shutil.rmtree(PLAN_STORE, ignore_errors=True)


@pytest.fixture(scope="session")
def fixture_lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every fixture table unzipped once per session, read-only: id -> base path."""
    root = tmp_path_factory.mktemp("lake")
    return {fixture_id(z): unzip_table(z, root / fixture_id(z)) for z in FIXTURE_ZIPS}


@pytest.fixture
def table_copy(tmp_path: Path):
    """Factory: a private, writable copy of one fixture table."""

    def make(table_id: str) -> Path:
        archive = FIXTURES / f"{table_id}.zip"
        return unzip_table(archive, tmp_path / "copy")

    return make


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One real Spark session (local[2], UI off) for the whole run."""
    from timeline.spark.session import spark_session

    session = spark_session(app_name="cleanline-tests", master="local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_lake(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    """The demo lake (`cleanline demo`), built once per run; copy a table before changing it."""
    from timeline.spark.demo import build_demo_lake

    root = tmp_path_factory.mktemp("demo-lake")
    build_demo_lake(spark, str(root))
    return root


# ----------------------------------------------------------------------------------------
# S3: a real S3-protocol server (moto_server) on 127.0.0.1; nothing else may reach a cloud.

offline_aws_environment()  # AWS_ENDPOINT_URL at a closed local port until s3_server starts


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> S3Server:  # type: ignore[misc]
    """One `moto_server` for the session; its endpoint, test credentials and region are in
    this process's environment (and so in every subprocess a test starts) while it runs."""

    server = S3Server(tmp_path_factory.mktemp("s3-server")).start()
    saved = {name: os.environ.get(name) for name in server.env}
    os.environ.update(server.env)
    yield server
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    server.stop()


@pytest.fixture
def s3_table(s3_server: S3Server, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Factory: a fixture table uploaded to a fresh bucket; returns its `s3://bucket/name` URI."""

    def make(table_id: str) -> str:
        return s3_server.upload(unzip_table(FIXTURES / f"{table_id}.zip", tmp_path / "s3-upload" / table_id))

    return make


@pytest.fixture
def no_store(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every pyarrow-backed storage object created (local, S3, HDFS, ...): a check
    that must not reach any store (the allowed-roots check) leaves it empty. A spy on the real
    class, not a stand-in: creation still happens as usual."""
    from timeline.storage.arrow import ArrowStorage

    made: list[str] = []
    original = ArrowStorage.__init__

    def spy(self: ArrowStorage, *args: object, **kwargs: object) -> None:
        made.append(type(self).__name__)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ArrowStorage, "__init__", spy)
    return made


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real Spark standalone cluster (a master, two one-core workers on 127.0.0.1), started
    once per run by the first test that asks for it (`StandaloneCluster` of tests/helpers.py)."""
    cluster = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")).start()
    yield cluster
    cluster.stop()


@pytest.fixture
def india_zone() -> Iterator[None]:
    """This process's local zone set to India's (UTC+05:30), put back afterwards."""
    import time

    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()
