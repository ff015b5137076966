"""The storage interface. Paths are posix strings in the backend's own namespace."""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import NamedTuple
from urllib.parse import urlparse


class FileStatus(NamedTuple):
    """One entry of a listing: a file or a folder. A NamedTuple rather than a frozen
    dataclass: a table listing makes one per file, and this is three times cheaper to build."""

    path: str
    name: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @classmethod
    def at(cls, path: str, size: int, mtime_ms: int, is_dir: bool = False) -> FileStatus:
        return cls(path, posixpath.basename(path), size, mtime_ms, is_dir)


class Storage(ABC):
    """A file store. Every method raises `timeline.exceptions.StorageError` (or its
    `FileNotFound` subclass) with the path named, never a backend's own exception."""

    scheme: str = ""
    # How many concurrent calls pay off for bulk work such as a clean's deletes: object stores
    # answer round trips in parallel; local backends override this.
    io_threads: int = 32

    @abstractmethod
    def list(self, path: str) -> list[FileStatus]:
        """Direct children of a folder, files and folders, unsorted."""

    @abstractmethod
    def list_recursive(self, path: str) -> Iterator[FileStatus]:
        """Every file (not folder) below a folder, at any depth."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole content of a file."""

    @abstractmethod
    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write a file, creating parent folders. Without `overwrite`, an existing file is an
        error (`FileExists`) and is left untouched."""

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Delete a file. True if it was there, False if it was already gone."""

    @abstractmethod
    def delete_dir(self, path: str) -> bool:
        """Delete a folder and all it holds. True if it was there."""

    @abstractmethod
    def status(self, path: str) -> FileStatus:
        """Size and modification time of one file or folder."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or folder is there."""

    @abstractmethod
    def makedirs(self, path: str) -> None:
        """Create a folder and its parents; an existing folder is fine."""

    def uri(self, path: str) -> str:
        """The path as a URI, the form Hudi writes into plans (`file:/...`, `s3://...`)."""
        return f"{self.scheme}://{path.lstrip('/')}" if self.scheme else path

    def path_of(self, uri: str) -> str:
        """Inverse of `uri`: the backend path of a URI or plain path this backend wrote or
        Hudi wrote for it."""
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:
            return parsed.path if parsed.scheme else uri
        return f"{parsed.netloc}{parsed.path}"

    def resolve(self, path: str) -> str:
        """The path with `.` and `..` segments resolved (and, on local storage, symbolic
        links), for containment checks (`timeline/storage/containment.py`)."""
        return posixpath.normpath(path) if path else path

    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*[p for p in parts if p != ""]) if any(parts) else ""


def storage_for(uri: str) -> tuple[Storage, str]:
    """The backend for a URI or local path, and the path of the URI inside it.

    Local paths and `file://` use the local file system; `s3://`, `s3a://`, `gs://`, `gcs://`
    and `hdfs://` go through pyarrow.fs; `memory://name/...` is a process-wide in-memory store
    for tests and demos.
    """
    from timeline.storage.arrow import ArrowStorage, LocalStorage
    from timeline.storage.memory import MemoryStorage

    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme == "" or len(scheme) == 1:
        return LocalStorage(), posixpath.abspath(uri).rstrip("/") or "/"
    if scheme == "file":
        return LocalStorage(), posixpath.normpath(parsed.path or "/")
    if scheme == "memory":
        return MemoryStorage.named(parsed.netloc), parsed.path.rstrip("/") or "/"
    if scheme in ("s3", "s3a", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"):
        storage = ArrowStorage.from_uri(uri)
        return storage, storage.path_of(uri).rstrip("/")
    from timeline.exceptions import StorageError

    raise StorageError(uri, f"unsupported URI scheme {parsed.scheme!r}")
