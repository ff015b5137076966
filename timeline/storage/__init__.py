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
from timeline.storage.s3 import S3ConfigError, S3Settings, configure_s3, parse_s3_roots, s3_settings_for

__all__ = ["Containment", "FileStatus", "MemoryStorage", "OutsideTableError", "S3ConfigError", "S3Settings", "Storage",
           "UnsupportedLocationError", "configure_s3", "parse_location", "parse_s3_roots", "s3_settings_for",
           "storage_for", "within_roots"]
