"""One root error for the library and specific subclasses whose messages name what is involved."""

from __future__ import annotations


class CleanlineError(Exception):
    """Root of every error the library raises on purpose."""


class StorageError(CleanlineError):
    """A storage operation failed (permission, unreachable store, ...). Names the path."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class FileNotFound(StorageError):
    """The file or folder does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "no such file or folder")


class NotAHudiTableError(CleanlineError):
    """The path holds no Hudi table (no readable `.hoodie/hoodie.properties`)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path} is not a Hudi table: {reason}")
        self.path = path


class TableConfigError(CleanlineError):
    """`hoodie.properties` is present but unusable (unknown version, bad checksum, ...)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


class InvalidInstantError(CleanlineError, ValueError):
    """A string is not a valid instant time or instant file name."""


class CorruptInstantError(CleanlineError):
    """An instant file exists but its content cannot be decoded."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: cannot decode instant content: {reason}")
        self.path = path
        self.reason = reason


class InvalidFileNameError(CleanlineError, ValueError):
    """A data file name is not a Hudi base or log file name."""


class FileExists(StorageError):
    """A create-if-absent write found the file already there; nothing was written."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "already exists")


__all__ = [
    "CleanlineError", "CorruptInstantError", "FileExists", "FileNotFound", "InvalidFileNameError",
    "InvalidInstantError", "NotAHudiTableError", "StorageError", "TableConfigError"
]
