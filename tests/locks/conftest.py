"""Fixtures of the lock tests: a v9 fixture table with a metadata table, copied for each test,
and a real ZooKeeper server on 127.0.0.1 (tests/locks/helpers.py), one per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.locks.helpers import ZooKeeperServer

V9_WITH_MDT = "sample_table/cow/v9_txns_simple_meta"


@pytest.fixture
def v9_table(table_copy) -> Path:  # type: ignore[no-untyped-def]
    return table_copy(V9_WITH_MDT)


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    yield server
    server.stop()
