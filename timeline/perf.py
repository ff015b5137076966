"""Helpers for the library's hot paths."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large acyclic structure is built.

    A table listing allocates several objects per file; with the collector on, its repeated
    full collections over the growing heap cost far more than the listing itself (measured in
    bench/fsview.py). Nothing built inside is cyclic, so reference counting frees it all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
