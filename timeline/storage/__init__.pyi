"""What `timeline.storage` exports, read by type checkers and by `lazy_loader`: each name loads
its module on first use (the S3 backend, and pyarrow with it, only for an `s3://` table)."""

from .base import FileStatus, FolderIdentity, Storage
from .containment import (
    Containment,
    OutsideTableError,
    TableMovedError,
    UnsupportedLocationError,
    parse_location,
    within_roots,
)
from .memory import MemoryStorage
from .registry import storage_for
from .s3 import S3ConfigError, S3Settings, parse_s3_roots, s3_settings_for

__all__ = ["Containment", "FileStatus", "FolderIdentity", "MemoryStorage", "OutsideTableError", "S3ConfigError",
           "S3Settings", "Storage", "TableMovedError", "UnsupportedLocationError", "parse_location",
           "parse_s3_roots", "s3_settings_for", "storage_for", "within_roots"]
