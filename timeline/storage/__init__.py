"""All I/O on the lake goes through one `Storage` interface, chosen by URI scheme."""

from __future__ import annotations

from timeline.storage.base import FileStatus, Storage, storage_for
from timeline.storage.containment import (
    Containment,
    OutsideTableError,
    UnsupportedLocationError,
    parse_location,
    within_roots,
)
from timeline.storage.memory import MemoryStorage

__all__ = ["Containment", "FileStatus", "MemoryStorage", "OutsideTableError", "Storage", "UnsupportedLocationError",
           "parse_location", "storage_for", "within_roots"]
