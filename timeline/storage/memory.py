"""An in-memory store for tests: exact, fast, and able to simulate permission errors."""

from __future__ import annotations

import posixpath
import threading
import time
from collections.abc import Iterator
from typing import ClassVar

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.storage.base import FileStatus, Storage


class MemoryStorage(Storage):
    """Files are kept as bytes keyed by absolute posix path; folders are implied by files and
    by `makedirs`. Paths listed in `denied` raise a permission error, as a real store would."""

    scheme = "memory"
    io_threads = 1
    private_namespace = True
    _named: ClassVar[dict[str, MemoryStorage]] = {}

    def __init__(self) -> None:
        self.files: dict[str, tuple[bytes, int]] = {}
        self.dirs: set[str] = {"/"}
        self.denied: set[str] = set()
        self._lock = threading.Lock()

    @classmethod
    def named(cls, name: str) -> MemoryStorage:
        """The process-wide store behind `memory://name/...` URIs."""
        return cls._named.setdefault(name, cls())

    @staticmethod
    def _norm(path: str) -> str:
        return posixpath.normpath("/" + path.lstrip("/"))

    def _check(self, path: str) -> str:
        norm = self._norm(path)
        if any(norm == d or norm.startswith(d.rstrip("/") + "/") for d in self.denied):
            raise StorageError(path, "permission denied")
        return norm

    def _is_dir(self, norm: str) -> bool:
        if norm in self.dirs:
            return True
        prefix = norm.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.files)

    def resolve(self, path: str) -> str:
        return self._norm(path)

    def _list(self, path: str) -> list[FileStatus]:
        norm = self._check(path)
        if not self._is_dir(norm):
            raise FileNotFound(path)
        prefix = norm.rstrip("/") + "/"
        children: dict[str, FileStatus] = {}
        for file_path, (data, mtime) in self.files.items():
            if file_path.startswith(prefix):
                head, _, rest = file_path[len(prefix):].partition("/")
                child = prefix + head
                children[child] = (
                    FileStatus.at(child, 0, mtime, True) if rest else FileStatus.at(child, len(data), mtime)
                )
        for folder in self.dirs:
            if folder.startswith(prefix) and folder != norm:
                child = prefix + folder[len(prefix):].split("/")[0]
                children.setdefault(child, FileStatus.at(child, 0, 0, True))
        return list(children.values())

    def _list_recursive(self, path: str) -> Iterator[FileStatus]:
        norm = self._check(path)
        if not self._is_dir(norm):
            raise FileNotFound(path)
        prefix = norm.rstrip("/") + "/"
        for file_path, (data, mtime) in list(self.files.items()):
            if file_path.startswith(prefix):
                yield FileStatus.at(file_path, len(data), mtime)

    def read(self, path: str) -> bytes:
        norm = self._check(path)
        if norm not in self.files:
            raise FileNotFound(path)
        return self.files[norm][0]

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        norm = self._check(path)
        with self._lock:
            if norm in self.files and not overwrite:
                raise FileExists(path)
            self.files[norm] = (bytes(data), time.time_ns() // 1_000_000)

    def delete(self, path: str) -> bool:
        norm = self._check(path)
        with self._lock:
            return self.files.pop(norm, None) is not None

    def delete_dir(self, path: str) -> bool:
        norm = self._check(path)
        prefix = norm.rstrip("/") + "/"
        with self._lock:
            found = self._is_dir(norm)
            for file_path in [p for p in self.files if p.startswith(prefix)]:
                del self.files[file_path]
            self.dirs = {d for d in self.dirs if d != norm and not d.startswith(prefix)}
        return found

    def status(self, path: str) -> FileStatus:
        norm = self._check(path)
        if norm in self.files:
            data, mtime = self.files[norm]
            return FileStatus.at(norm, len(data), mtime)
        if self._is_dir(norm):
            return FileStatus.at(norm, 0, 0, True)
        raise FileNotFound(path)

    def exists(self, path: str) -> bool:
        norm = self._check(path)
        return norm in self.files or self._is_dir(norm)

    def makedirs(self, path: str) -> None:
        norm = self._check(path)
        while norm not in ("/", ""):
            self.dirs.add(norm)
            norm = posixpath.dirname(norm)

    def set_mtime(self, path: str, mtime_ms: int) -> None:
        """Test helper: pretend a file was last written at `mtime_ms`."""
        norm = self._norm(path)
        self.files[norm] = (self.files[norm][0], mtime_ms)
