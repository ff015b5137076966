"""A pytest plugin for `make mutation` (scripts/mutation.py loads it with `-p scripts.mutation_order`
in each module's copy): while mutmut runs a mutant, the tests it chose run fastest first, by the
durations its stats run recorded (mutants/mutmut-stats.json), so the first failing test, which
ends the run (`-x`), is usually a quick one. mutmut passes them in a set's order.

It changes nothing outside a mutant's run (the stats run, the clean run and the forced failure run
as mutmut orders them) and never leaves a test out."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

_NOT_A_MUTANT = {"", "stats", "fail", "mutant_generation"}


def _durations() -> dict[str, float]:
    try:
        return dict(json.loads(Path("mutmut-stats.json").read_text())["duration_by_test"])
    except (OSError, ValueError, KeyError):
        return {}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.environ.get("MUTANT_UNDER_TEST", "") in _NOT_A_MUTANT:
        return
    durations = _durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, math.inf))
