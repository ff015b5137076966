"""All I/O on the lake goes through one `Storage` interface, chosen by URI scheme."""

from __future__ import annotations

from timeline.storage.base import FileStatus, Storage, storage_for
from timeline.storage.memory import MemoryStorage

__all__ = ["FileStatus", "MemoryStorage", "Storage", "storage_for"]
