"""Hudi's file-system lock: one lock file, created exclusively, deleted to release.

Follows `org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider`:

- the lock file is `<hoodie.write.lock.filesystem.path>/lock`, the folder defaulting to the
  table's `.hoodie` (`hoodie.base.path` + `/.hoodie`; LOCK_FILE_NAME = "lock");
- `tryLock`: when the file exists and has expired (`hoodie.write.lock.filesystem.expire`
  minutes, 0 = never, counted from the file's modification time: `checkIfExpired`) it is
  deleted; otherwise the lock is someone else's. Then the file is created without overwrite
  (`fs.create(lockFile, false)`), holding the holder's `LockInfo`;
- Hudi's `unlock` deletes the file whoever wrote it, and the lock is never renewed.

Cleanline differs where Hudi's would be unsafe beside other holders: its content names
Cleanline's owner id, `release` deletes the file only while that content is still Cleanline's
own (`LockLost` otherwise, the file left alone), and `check_held` requires the file to be
Cleanline's and a margin of its expiry left. Hudi requires a store with atomic creation
(`StorageSchemes.isAtomicCreationSupported`: HDFS, local files, ...); Cleanline takes it where
its storage creates exclusively (local files and its in-memory store), and refuses it on
object stores and on HDFS (pyarrow's HDFS client has no create that fails when the file exists,
so two contenders could both believe they created the lock file)."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import datetime

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.locks.base import (
    HudiLock,
    LockError,
    LockHolder,
    LockLost,
    LockNotHeld,
    LockUnavailable,
    UnsupportedLockProvider,
)
from timeline.locks.config import (
    DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS,
    LOCK_PREFIX,
    PACKAGE,
    get_int,
    get_str,
    wait_seconds,
)
from timeline.storage.base import Storage
from timeline.storage.registry import storage_for

log = logging.getLogger(__name__)

FILESYSTEM_BASED_LOCK_PROVIDER = PACKAGE + "FileSystemBasedLockProvider"
FILESYSTEM_LOCK_PATH = LOCK_PREFIX + "filesystem.path"      # LockConfiguration.FILESYSTEM_LOCK_PATH_PROP_KEY
FILESYSTEM_LOCK_EXPIRE = LOCK_PREFIX + "filesystem.expire"  # minutes; HoodieLockConfig.FILESYSTEM_LOCK_EXPIRE
DEFAULT_FILESYSTEM_LOCK_EXPIRE_MINUTES = 0  # HoodieLockConfig.FILESYSTEM_LOCK_EXPIRE's default: never
LOCK_FILE_NAME = "lock"  # FileSystemBasedLockProvider.LOCK_FILE_NAME
RETRY_WAIT_SECONDS = 1.0  # LockConfiguration.DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_IN_MILLIS
# Before a publish the lock file must have this long left before it expires (it is never renewed).
EXPIRY_MARGIN_SECONDS = 30.0


def _exclusive_create(storage: Storage) -> bool:
    from timeline.storage.arrow import LocalStorage
    from timeline.storage.memory import MemoryStorage

    return isinstance(storage, LocalStorage | MemoryStorage)


class FileSystemBasedLock(HudiLock):
    """`FileSystemBasedLockProvider`: the table lock as a lock file created exclusively."""

    provider_class = FILESYSTEM_BASED_LOCK_PROVIDER

    def __init__(self, storage: Storage, lock_folder: str, *,
                 expire_minutes: int = DEFAULT_FILESYSTEM_LOCK_EXPIRE_MINUTES,
                 wait_seconds: float = DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS / 1000,
                 retry_wait_seconds: float = RETRY_WAIT_SECONDS, owner: str | None = None) -> None:
        super().__init__()
        if not _exclusive_create(storage):
            raise UnsupportedLockProvider(FILESYSTEM_BASED_LOCK_PROVIDER,
                                          f"no atomic exclusive create on {storage.scheme or type(storage).__name__} "
                                          "storage (Hudi requires it too: StorageSchemes.isAtomicCreationSupported)")
        if expire_minutes < 0:
            raise LockError(f"{FILESYSTEM_LOCK_EXPIRE} must be at least 0")
        self.storage = storage
        self.lock_file_path = Storage.join(lock_folder.rstrip("/"), LOCK_FILE_NAME)
        self.expire_ms = expire_minutes * 60_000
        self.wait_seconds = wait_seconds
        self.retry_wait_seconds = retry_wait_seconds
        self._owner = owner or str(uuid.uuid4())
        self._content: bytes | None = None
        self._lost: str | None = None
        self._closed = False

    @classmethod
    def from_properties(cls, storage: Storage, base_path: str, properties: Mapping[str, str], *,
                        owner: str | None = None) -> FileSystemBasedLock:
        """The lock a Hudi writer with these properties takes: the folder from
        `hoodie.write.lock.filesystem.path` (a path or URI on the table's store), else
        `<base path>/.hoodie`."""
        folder = get_str(properties, FILESYSTEM_LOCK_PATH)
        if folder is None:
            folder = Storage.join(base_path.rstrip("/"), ".hoodie")
        elif "://" in folder or folder.startswith("file:"):
            other, path = storage_for(folder)
            if other.scheme != storage.scheme:
                raise UnsupportedLockProvider(FILESYSTEM_BASED_LOCK_PROVIDER,
                                              f"{FILESYSTEM_LOCK_PATH}={folder} is not on the table's store")
            folder = path
        expire = get_int(properties, FILESYSTEM_LOCK_EXPIRE, DEFAULT_FILESYSTEM_LOCK_EXPIRE_MINUTES, minimum=0)
        return cls(storage, folder, expire_minutes=expire, wait_seconds=wait_seconds(properties), owner=owner)

    @property
    def path(self) -> str:
        return self.storage.uri(self.lock_file_path)

    @property
    def owner(self) -> str:
        return self._owner

    def _lock_info(self) -> bytes:
        """Hudi's LockInfo fields (`lockCreateTime`, `lockThreadName`, `lockStacksInfo`), the
        thread name carrying Cleanline's owner id so that its own file can be told apart."""
        created = datetime.now().strftime("%Y-%m-%d %H:%M:%S.") + f"{datetime.now().microsecond // 1000:03d}"
        info = {"lockCreateTime": created,
                "lockThreadName": f"cleanline-{self._owner}-{threading.current_thread().name}",
                "lockStacksInfo": []}
        return json.dumps(info, separators=(",", ":")).encode()

    def _expired(self, mtime_ms: int) -> bool:
        """`checkIfExpired`: never with expire 0, else older than expire minutes."""
        return self.expire_ms > 0 and time.time() * 1000 - mtime_ms > self.expire_ms

    def _read(self) -> tuple[bytes, int] | None:
        try:
            status = self.storage.status(self.lock_file_path)
            return self.storage.read(self.lock_file_path), status.mtime_ms
        except FileNotFound:
            return None

    def acquire(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (self.wait_seconds if timeout is None else max(0.0, timeout))
        while True:
            holder = self._try_lock()
            if holder is None:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockUnavailable(self.path, holder)
            time.sleep(min(self.retry_wait_seconds, remaining))

    def _try_lock(self) -> LockHolder | None:
        """`tryLock()`: None when acquired, else who holds it."""
        with self._state_lock:
            if self._closed:
                raise LockError(f"{self.path}: this lock object is closed")
            if self._content is not None:
                raise LockError(f"{self.path}: owner {self._owner} already holds this lock")
            found = self._read()
            if found is not None:
                content, mtime_ms = found
                if not self._expired(mtime_ms):
                    return LockHolder(content.decode("utf-8", "replace")[:200] or "(empty lock file)",
                                      None if self.expire_ms == 0 else mtime_ms + self.expire_ms)
                self.storage.delete(self.lock_file_path)  # Hudi: "Delete expired lock file"
            content = self._lock_info()
            try:
                self.storage.write(self.lock_file_path, content, overwrite=False)
            except FileExists:
                again = self._read()
                return LockHolder(again[0].decode("utf-8", "replace")[:200] if again else "(another contender)")
            except StorageError as exc:
                raise LockError(f"{self.path}: creating the lock file failed: {exc}") from exc
            self._content = content
            self._lost = None
            return None

    def release(self) -> None:
        """Delete the lock file, only while it still holds this owner's content (Hudi deletes
        it whoever wrote it)."""
        with self._state_lock:
            if self._content is None:
                raise LockNotHeld(self.path)
            mine, self._content = self._content, None
            found = self._read()
            if found is None:
                raise LockLost(self.path, "the lock file is gone (it expired and was taken, or was deleted)")
            if found[0] != mine:
                raise LockLost(self.path, "the lock file now holds another owner's lock; it is left alone")
            self.storage.delete(self.lock_file_path)

    def is_held(self) -> bool:
        with self._state_lock:
            return self._content is not None and self._lost is None

    def check_held(self, *, min_remaining_seconds: float = EXPIRY_MARGIN_SECONDS) -> None:
        """The lock file is still this owner's, and (when it expires) more than
        `min_remaining_seconds` before its expiry are left: it is never renewed."""
        with self._state_lock:
            if self._content is None:
                raise LockNotHeld(self.path)
            if self._lost:
                raise LockLost(self.path, self._lost)
            found = self._read()
            if found is None or found[0] != self._content:
                self._lost = "the lock file no longer holds this owner's lock"
                raise LockLost(self.path, self._lost)
            if self.expire_ms > 0 and found[1] + self.expire_ms - time.time() * 1000 < min_remaining_seconds * 1000:
                raise LockLost(self.path, f"the lock file expires within {min_remaining_seconds:.0f} s "
                                          f"({FILESYSTEM_LOCK_EXPIRE} minutes from its creation; it is never renewed)")

    def holder(self) -> LockHolder | None:
        found = self._read()
        if found is None or self._expired(found[1]):
            return None
        return LockHolder(found[0].decode("utf-8", "replace")[:200])

    def close(self) -> None:
        try:
            if self._content is not None:
                self.release()
        except LockError as exc:
            self._content = None
            log.error("%s: releasing on close failed: %s", self.path, exc)
        finally:
            with self._state_lock:
                self._closed = True
