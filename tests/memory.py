"""Memory measured as the growth of this process's peak resident set (VmHWM of /proc/self/status,
reset through /proc/self/clear_refs): what a call adds above what the process held before it."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


def peak_growth(work: Callable[[], T]) -> tuple[T, int]:
    """What `work` returns, and how many bytes its run added to this process's peak resident set."""
    gc.collect()
    before = _status_kib("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")  # the peak (VmHWM) starts again from the current resident set
    result = work()
    return result, (_status_kib("VmHWM") - before) * 1024
