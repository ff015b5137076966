"""Fixtures of the lock tests: a v9 fixture table with a metadata table, copied for each test,
and the lake-wide Hudi options of this process cleared after each test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from timeline.locks.discovery import configure_hudi_options

V9_WITH_MDT = "sample_table/cow/v9_txns_simple_meta"


@pytest.fixture
def v9_table(table_copy) -> Path:  # type: ignore[no-untyped-def]
    return table_copy(V9_WITH_MDT)


@pytest.fixture(autouse=True)
def no_root_options() -> Iterator[None]:
    previous = configure_hudi_options({})
    yield
    configure_hudi_options(previous)
