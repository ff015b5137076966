"""Hudi's storage-based lock: a JSON lock file on the table's own store, changed only by
conditional writes, with a lease the holder renews from a background thread.

Follows `org.apache.hudi.client.transaction.lock.StorageBasedLockProvider` (Hudi 1.0.2+, master),
its `StorageLockClient` contract, `models.StorageLockData` / `StorageLockFile`, the S3 client
`org.apache.hudi.aws.transaction.lock.S3StorageLockClient` and `LockProviderHeartbeatManager`:

- the lock file is `<base path>/.hoodie/.locks/table_lock.json`
  (`HoodieTableMetaClient.LOCKS_FOLDER_NAME` + `DEFAULT_TABLE_LOCK_FILE_NAME`);
- its content is Jackson's serialisation of StorageLockData, `{"expired":false,
  "validUntil":<epoch ms>,"owner":"<uuid>"}` (compact, in that order; unknown fields ignored on
  read, all three required);
- a lock is held while `expired` is false and now <= validUntil + 500 ms (`isLockStillValid`,
  `CLOCK_DRIFT_BUFFER_MS`); anything else may be taken over;
- every write is conditional on the version read before it (S3: `If-None-Match: *` to create,
  `If-Match: <ETag>` to replace); losing the condition means someone else got there first;
- acquiring writes validUntil = now + `validity.timeout.secs`; a heartbeat renews it every
  `renew.interval.secs`; releasing writes `expired: true` (keeping validUntil and owner),
  conditional on the holder's own version, so a holder whose lease was taken over cannot
  disturb the new owner.

Hudi itself implements the store side for S3 and GCS only (`StorageSchemes`); on a local table
its StorageBasedLockProvider refuses to start. Cleanline also takes the lock on local (and
in-memory) tables, with the same file and content, emulating the conditional replace with
exclusive-create "claim" files (see `ExclusiveCreateLockClient`), so that Cleanline runs exclude
each other there too.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import threading
import time
import uuid
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

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
    DEFAULT_STORAGE_RENEW_INTERVAL_SECS,
    DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS,
    STORAGE_BASED_LOCK_PROVIDER,
    StorageLockSettings,
    wait_seconds,
)
from timeline.storage.base import Storage

log = logging.getLogger(__name__)

LOCKS_FOLDER_NAME = ".hoodie/.locks"  # HoodieTableMetaClient.LOCKS_FOLDER_NAME
DEFAULT_TABLE_LOCK_FILE_NAME = "table_lock.json"  # StorageBasedLockProvider.DEFAULT_TABLE_LOCK_FILE_NAME
CLOCK_DRIFT_BUFFER_MS = 500  # StorageBasedLockProvider.CLOCK_DRIFT_BUFFER_MS
# StorageBasedLockProvider.tryLock(long, TimeUnit) sleeps DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_IN_MILLIS
# (a constant 1 s, whatever hoodie.write.lock.wait_time_ms_between_retry says) between attempts.
ACQUIRE_RETRY_WAIT_SECONDS = 1.0
STOP_HEARTBEAT_TIMEOUT_SECONDS = 15.0  # LockProviderHeartbeatManager.DEFAULT_STOP_HEARTBEAT_TIMEOUT_MS

# The three JSON properties of StorageLockData, in Jackson's output order.
_EXPIRED, _VALID_UNTIL, _OWNER = "expired", "validUntil", "owner"


def now_ms() -> int:
    """`System.currentTimeMillis()`: wall-clock epoch milliseconds (leases are compared across hosts)."""
    return time.time_ns() // 1_000_000


class LockGetResult(Enum):
    """`models.LockGetResult`."""

    SUCCESS = "SUCCESS"
    NOT_EXISTS = "NOT_EXISTS"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class LockUpsertResult(Enum):
    """`models.LockUpsertResult` (Cleanline's clients never report THROTTLED: like
    S3StorageLockClient, a 429 is an UNKNOWN_ERROR)."""

    SUCCESS = "SUCCESS"
    ACQUIRED_BY_OTHERS = "ACQUIRED_BY_OTHERS"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class CorruptLockFile(LockError):
    """The lock file is there but is not StorageLockData JSON (`StorageLockFile.createFromStream`
    throws HoodieIOException). Names the file; nobody can take the lock until it is fixed."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: not a Hudi lock file: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class StorageLockData:
    """`models.StorageLockData`: whether the lock was released, its lease end, its owner."""

    expired: bool
    valid_until: int
    owner: str | None

    def to_json(self) -> bytes:
        """Jackson's `ObjectMapper.writeValueAsBytes` of StorageLockData: compact, properties in
        creator order (`expired`, `validUntil`, `owner`), UTF-8."""
        payload = {_EXPIRED: self.expired, _VALID_UNTIL: self.valid_until, _OWNER: self.owner}
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, content: bytes, path: str) -> StorageLockData:
        """`StorageLockFile.createFromStream`: the three properties are required
        (`@JsonProperty(required = true)`), unknown ones ignored (FAIL_ON_UNKNOWN_PROPERTIES off),
        null refused for the two primitives (FAIL_ON_NULL_FOR_PRIMITIVES); Jackson's default
        scalar coercions ("true", "123") are accepted."""
        try:
            document = json.loads(content.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise CorruptLockFile(path, f"invalid JSON ({exc})") from None
        if not isinstance(document, dict):
            raise CorruptLockFile(path, "not a JSON object")
        missing = [name for name in (_EXPIRED, _VALID_UNTIL, _OWNER) if name not in document]
        if missing:
            raise CorruptLockFile(path, f"missing required properties {missing}")
        return cls(_as_bool(document[_EXPIRED], path), _as_long(document[_VALID_UNTIL], path),
                   _as_owner(document[_OWNER], path))


def _as_bool(value: object, path: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise CorruptLockFile(path, f"{_EXPIRED}={value!r} is not a boolean")


def _as_long(value: object, path: str) -> int:
    if isinstance(value, bool) or value is None:
        raise CorruptLockFile(path, f"{_VALID_UNTIL}={value!r} is not a number")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise CorruptLockFile(path, f"{_VALID_UNTIL}={value!r} is not a number")


def _as_owner(value: object, path: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    raise CorruptLockFile(path, f"{_OWNER}={value!r} is not a string")


@dataclass(frozen=True, slots=True)
class StorageLockFile:
    """`models.StorageLockFile`: the lock data and the version it was read or written at (an
    S3 ETag), which the next conditional write must match."""

    data: StorageLockData
    version_id: str

    @property
    def owner(self) -> str | None:
        return self.data.owner

    @property
    def valid_until_ms(self) -> int:
        return self.data.valid_until

    @property
    def expired(self) -> bool:
        return self.data.expired


class StorageLockClient(ABC):
    """`StorageLockClient`: reads the one lock file of a table and changes it only by
    conditional writes. Non-precondition failures are UNKNOWN_ERROR, never an exception, except
    where the Java client throws (noted per method)."""

    def __init__(self, storage: Storage, path: str) -> None:
        self.storage = storage
        self.path = path

    @property
    def uri(self) -> str:
        return self.storage.uri(self.path)

    @abstractmethod
    def read_current_lock_file(self) -> tuple[LockGetResult, StorageLockFile | None]:
        """`readCurrentLockFile`."""

    @abstractmethod
    def try_upsert_lock_file(self, new_lock_data: StorageLockData, previous: StorageLockFile | None
                             ) -> tuple[LockUpsertResult, StorageLockFile | None]:
        """`tryUpsertLockFile`: create the file if `previous` is None, else replace it only if
        it is still at `previous.version_id`."""


class S3StorageLockClient(StorageLockClient):
    """`org.apache.hudi.aws.transaction.lock.S3StorageLockClient`, through the S3Storage's boto3
    client: a GET that returns the ETag; a PUT with `If-None-Match: *` (create) or
    `If-Match: <ETag>` (replace). 412 is ACQUIRED_BY_OTHERS; 404 on read is NOT_EXISTS; 409,
    429 and 5xx are UNKNOWN_ERROR; other error statuses on read raise (the Java client rethrows);
    a transport error raises when creating and is UNKNOWN_ERROR when replacing."""

    def __init__(self, storage: Storage, path: str) -> None:
        super().__init__(storage, path)
        bucket, _, key = path.lstrip("/").partition("/")
        if not bucket or not key:
            raise LockError(f"{path}: not an S3 object path (bucket/key)")
        self.bucket, self.key = bucket, key

    @property
    def _client(self) -> Any:
        return self.storage.client  # type: ignore[attr-defined]

    def read_current_lock_file(self) -> tuple[LockGetResult, StorageLockFile | None]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self.key)
            content = bytes(response["Body"].read())
            etag = str(response["ETag"])
        except ClientError as exc:
            status = _status(exc)
            if status == 404:
                return LockGetResult.NOT_EXISTS, None
            if status in (409, 429) or status >= 500:
                log.warning("%s: reading the lock file failed (%s), state unknown", self.uri, _reason(exc))
                return LockGetResult.UNKNOWN_ERROR, None
            raise LockError(f"{self.uri}: reading the lock file failed: {_reason(exc)}") from exc
        except BotoCoreError as exc:
            raise LockError(f"{self.uri}: reading the lock file failed: {exc}") from exc
        return LockGetResult.SUCCESS, StorageLockFile(StorageLockData.from_json(content, self.uri), etag)

    def try_upsert_lock_file(self, new_lock_data: StorageLockData, previous: StorageLockFile | None
                             ) -> tuple[LockUpsertResult, StorageLockFile | None]:
        from botocore.exceptions import BotoCoreError, ClientError

        condition = {"IfNoneMatch": "*"} if previous is None else {"IfMatch": previous.version_id}
        try:
            response = self._client.put_object(Bucket=self.bucket, Key=self.key, Body=new_lock_data.to_json(),
                                               **condition)
        except ClientError as exc:
            if _status(exc) == 412:
                log.info("%s: lock file modified by another process", self.uri)
                return LockUpsertResult.ACQUIRED_BY_OTHERS, None
            log.warning("%s: writing the lock file failed: %s", self.uri, _reason(exc))
            return LockUpsertResult.UNKNOWN_ERROR, None
        except BotoCoreError as exc:
            if previous is None:
                raise LockError(f"{self.uri}: creating the lock file failed: {exc}") from exc
            log.warning("%s: writing the lock file failed: %s", self.uri, exc)
            return LockUpsertResult.UNKNOWN_ERROR, None
        return LockUpsertResult.SUCCESS, StorageLockFile(new_lock_data, str(response["ETag"]))


def _status(exc: Exception) -> int:
    response = getattr(exc, "response", None) or {}
    return int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)


def _reason(exc: Exception) -> str:
    error = (getattr(exc, "response", None) or {}).get("Error") or {}
    code, message = error.get("Code") or "", error.get("Message") or ""
    return f"{code}: {message}" if code and message else (code or message or str(exc))


def content_version(content: bytes) -> str:
    """The version of a lock file on stores without ETags: what S3 would give the same bytes
    (the quoted MD5 of a single-part PUT)."""
    return f'"{hashlib.md5(content, usedforsecurity=False).hexdigest()}"'


class ExclusiveCreateLockClient(StorageLockClient):
    """Conditional writes of the lock file on a store whose only atomic operation is an
    exclusive create (local files: O_EXCL; Cleanline's in-memory store). Not a Hudi class:
    Hudi has no storage lock client for `file://`.

    - create (If-None-Match): an exclusive create of the lock file itself;
    - replace version V (If-Match): first an exclusive create of the claim file
      `table_lock.json.claim-<md5 of V>-<n>`; only its creator may replace V. It re-reads the
      file, and if it is still at V writes the new content, then deletes V's claims; if not,
      it lost (ACQUIRED_BY_OTHERS). A claim older than `claim_stale_seconds` (its creator died
      between claim and write) is passed over by claiming level n+1.

    The version of the file is `content_version` (an S3-style ETag); versions do not repeat
    because every write of a holder carries a later `validUntil` or the expired flag. Readers may
    catch a file half-written (the write truncates, then writes): that reads as UNKNOWN_ERROR,
    a transient state the caller retries."""

    def __init__(self, storage: Storage, path: str, *, claim_stale_seconds: float) -> None:
        super().__init__(storage, path)
        self.claim_stale_seconds = claim_stale_seconds
        self.folder, _, self.name = path.rpartition("/")

    def _read(self) -> tuple[LockGetResult, StorageLockFile | None, bytes]:
        try:
            content = self.storage.read(self.path)
        except FileNotFound:
            return LockGetResult.NOT_EXISTS, None, b""
        except StorageError as exc:
            log.warning("%s: reading the lock file failed: %s", self.uri, exc.reason)
            return LockGetResult.UNKNOWN_ERROR, None, b""
        try:
            data = StorageLockData.from_json(content, self.uri)
        except CorruptLockFile as exc:
            # Most likely a write caught between truncate and write; the caller retries.
            log.info("%s: lock file unreadable for now: %s", self.uri, exc.reason)
            return LockGetResult.UNKNOWN_ERROR, None, content
        return LockGetResult.SUCCESS, StorageLockFile(data, content_version(content)), content

    def read_current_lock_file(self) -> tuple[LockGetResult, StorageLockFile | None]:
        result, lock_file, _ = self._read()
        return result, lock_file

    def try_upsert_lock_file(self, new_lock_data: StorageLockData, previous: StorageLockFile | None
                             ) -> tuple[LockUpsertResult, StorageLockFile | None]:
        content = new_lock_data.to_json()
        if previous is None:
            try:
                self.storage.write(self.path, content, overwrite=False)
            except FileExists:
                return LockUpsertResult.ACQUIRED_BY_OTHERS, None
            except StorageError as exc:
                raise LockError(f"{self.uri}: creating the lock file failed: {exc.reason}") from exc
            return LockUpsertResult.SUCCESS, StorageLockFile(new_lock_data, content_version(content))
        claim = self._claim(previous.version_id)
        if claim is None:
            return LockUpsertResult.ACQUIRED_BY_OTHERS, None
        try:
            result, current, _ = self._read()
            if result is not LockGetResult.SUCCESS or current is None:
                return LockUpsertResult.UNKNOWN_ERROR, None
            if current.version_id != previous.version_id:
                return LockUpsertResult.ACQUIRED_BY_OTHERS, None
            self.storage.write(self.path, content, overwrite=True)
        except StorageError as exc:
            log.warning("%s: replacing the lock file failed: %s", self.uri, exc.reason)
            return LockUpsertResult.UNKNOWN_ERROR, None
        finally:
            self._drop_claims(previous.version_id)
        return LockUpsertResult.SUCCESS, StorageLockFile(new_lock_data, content_version(content))

    def _claim_prefix(self, version_id: str) -> str:
        return f"{self.name}.claim-{version_id.strip(chr(34))}-"

    def _claim(self, version_id: str) -> str | None:
        """Exclusively create the lowest claim level on `version_id` that no live contender
        holds; None when a live claim exists (someone else is replacing this version)."""
        prefix = f"{self.folder}/{self._claim_prefix(version_id)}"
        level = 0
        while True:
            path = f"{prefix}{level}"
            try:
                self.storage.write(path, str(now_ms()).encode(), overwrite=False)
                return path
            except FileExists:
                try:
                    age = now_ms() - self.storage.status(path).mtime_ms
                except FileNotFound:
                    continue  # its owner finished and removed it: try the same level again
                except StorageError:
                    return None
                if age <= self.claim_stale_seconds * 1000:
                    return None
                log.warning("%s: passing over a claim left for %.0f s by a contender that died", path, age / 1000)
                level += 1
            except StorageError as exc:
                log.warning("%s: claiming the lock file failed: %s", path, exc.reason)
                return None

    def _drop_claims(self, version_id: str) -> None:
        """Delete the claims on `version_id` (superseded or abandoned: a late contender that
        claims it again finds the file changed) and stale claims on other versions."""
        prefix = self._claim_prefix(version_id)
        try:
            entries = self.storage.list(self.folder)
        except StorageError:
            return
        stale_before = now_ms() - self.claim_stale_seconds * 1000
        for entry in entries:
            if not entry.name.startswith(f"{self.name}.claim-"):
                continue
            if entry.name.startswith(prefix) or entry.mtime_ms < stale_before:
                try:
                    self.storage.delete(entry.path)
                except StorageError:
                    pass


def lock_client_for(storage: Storage, path: str, *, claim_stale_seconds: float) -> StorageLockClient:
    """The lock client for a store, as `StorageSchemes.getStorageLockImplementationIfExists`
    picks one by scheme: S3 (s3, s3a, s3n) through its conditional PUTs; local and in-memory
    tables through exclusive creates. Other stores: UnsupportedLockProvider."""
    from timeline.storage.arrow import LocalStorage
    from timeline.storage.memory import MemoryStorage
    from timeline.storage.s3 import S3Storage

    if isinstance(storage, S3Storage):
        return S3StorageLockClient(storage, path)
    if isinstance(storage, LocalStorage | MemoryStorage):
        return ExclusiveCreateLockClient(storage, path, claim_stale_seconds=claim_stale_seconds)
    raise UnsupportedLockProvider(STORAGE_BASED_LOCK_PROVIDER,
                                  f"no conditional writes on {storage.scheme or type(storage).__name__} storage "
                                  "(Cleanline takes this lock on s3://, s3a:// and local tables; Hudi's GCS client "
                                  "is not implemented)")


class _Heartbeat:
    """`LockProviderHeartbeatManager`: runs `task` every `interval` seconds on a daemon thread,
    the first run one interval after the start; stops itself when the task returns False or
    raises, or when the thread that took the lock has ended."""

    def __init__(self, name: str, interval: float, task: Callable[[], bool]) -> None:
        self.name = name
        self.interval = interval
        self.task = task
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        """`hasActiveHeartbeat`."""
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def start(self, monitored: threading.Thread) -> bool:
        """`startHeartbeatForThread`."""
        if self.active:
            return False
        self._stop = threading.Event()
        stop = self._stop
        self._thread = threading.Thread(target=self._run, args=(monitored, stop), name=self.name, daemon=True)
        self._thread.start()
        return True

    def _run(self, monitored: threading.Thread, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            if not monitored.is_alive():
                log.warning("%s: the thread that took the lock has ended; renewal stops", self.name)
                return
            try:
                if self.task():
                    continue
                log.warning("%s: lock renewal did not succeed; renewal stops", self.name)
            except Exception:  # noqa: BLE001 - LockProviderHeartbeatManager.heartbeatTask logs and stops
                log.exception("%s: lock renewal failed; renewal stops", self.name)
            return

    def stop(self, timeout: float = STOP_HEARTBEAT_TIMEOUT_SECONDS) -> bool:
        """`stopHeartbeat`: cancel, and wait for a running renewal to finish. False on timeout."""
        self._stop.set()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        if thread.is_alive():
            return False
        self._thread = None
        return True


# StorageBasedLockProvider registers a JVM shutdown hook that expires a held lock; these are the
# locks an interpreter exit still holds.
_LIVE: weakref.WeakSet[StorageBasedLock] = weakref.WeakSet()


@atexit.register
def _expire_at_exit() -> None:
    for lock in list(_LIVE):
        lock._expire_at_exit()


class StorageBasedLock(HudiLock):
    """`StorageBasedLockProvider`: the table lock as a lock file on the table's store.

    One object is one owner (a random UUID, as each Java provider instance is). `acquire` and
    `release` follow `tryLock(long, TimeUnit)` / `tryLock()` and `unlock()`; the lease is renewed
    every `renew_interval_seconds` by a daemon thread (`renewLock`); `check_held` re-reads the
    file before a publish. Differences from the Java class: acquiring a lock this object already
    holds is an error (Java returns true), and releasing without holding it raises `LockNotHeld`
    (Java returns silently)."""

    provider_class = STORAGE_BASED_LOCK_PROVIDER

    def __init__(self, storage: Storage, base_path: str, *,
                 validity_seconds: float = DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS,
                 renew_interval_seconds: float = DEFAULT_STORAGE_RENEW_INTERVAL_SECS,
                 wait_seconds: float = DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS / 1000,
                 retry_wait_seconds: float = ACQUIRE_RETRY_WAIT_SECONDS,
                 owner: str | None = None) -> None:
        """`validity_seconds` / `renew_interval_seconds` are StorageBasedLockConfig's lease and
        renewal interval (Hudi's bounds are checked by `from_properties`, not here, so that tests
        can use short leases); `retry_wait_seconds` is the pause between attempts of `acquire`."""
        super().__init__()
        if validity_seconds <= 0 or renew_interval_seconds <= 0:
            raise LockError("lock validity and renewal interval must be positive")
        self.storage = storage
        self.base_path = base_path.rstrip("/")
        self.validity_ms = int(validity_seconds * 1000)
        self.renew_interval_seconds = renew_interval_seconds
        self.wait_seconds = wait_seconds
        self.retry_wait_seconds = retry_wait_seconds
        self._owner = owner or str(uuid.uuid4())
        self.lock_file_path = storage.join(self.base_path, LOCKS_FOLDER_NAME, DEFAULT_TABLE_LOCK_FILE_NAME)
        self.client = lock_client_for(storage, self.lock_file_path, claim_stale_seconds=validity_seconds)
        self._current: StorageLockFile | None = None
        self._lost: str | None = None
        self._closed = False
        self._heartbeat = _Heartbeat(f"cleanline-lock-heartbeat-{self._owner[:6]}", renew_interval_seconds,
                                     self._renew_lock)

    @classmethod
    def from_properties(cls, storage: Storage, base_path: str, properties: Mapping[str, str], *,
                        owner: str | None = None) -> StorageBasedLock:
        """The lock a Hudi writer with these properties takes (StorageBasedLockConfig's checks)."""
        settings = StorageLockSettings.from_properties(properties)
        return cls(storage, base_path, validity_seconds=settings.validity_seconds,
                   renew_interval_seconds=settings.renew_interval_seconds, wait_seconds=wait_seconds(properties),
                   owner=owner)

    @property
    def path(self) -> str:
        return self.client.uri

    @property
    def owner(self) -> str:
        return self._owner

    @property
    def current(self) -> StorageLockFile | None:
        """The lock file as this owner last wrote it (None when not held)."""
        with self._state_lock:
            return self._current

    def _still_valid(self, lock_file: StorageLockFile) -> bool:
        """`isLockStillValid`: not released, and now is not past validUntil + the drift buffer."""
        return not lock_file.expired and not now_ms() > lock_file.valid_until_ms + CLOCK_DRIFT_BUFFER_MS

    @staticmethod
    def _holder(lock_file: StorageLockFile) -> LockHolder:
        return LockHolder(lock_file.owner or "(no owner)", lock_file.valid_until_ms)

    def acquire(self, timeout: float | None = None) -> None:
        """`tryLock(long, TimeUnit)`: `_try_lock` every `retry_wait_seconds` until one succeeds or
        `timeout` passes (a last attempt is made at the deadline)."""
        deadline = time.monotonic() + (self.wait_seconds if timeout is None else max(0.0, timeout))
        while True:
            holder, reason = self._try_lock()
            if holder is None and not reason:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LockUnavailable(self.path, holder, reason)
            time.sleep(min(self.retry_wait_seconds, remaining))

    def _try_lock(self) -> tuple[LockHolder | None, str]:
        """`tryLock()`: one attempt. Returns (None, "") when acquired, else the holder found or
        the reason it was not acquired."""
        with self._state_lock:
            if self._closed:
                raise LockError(f"{self.path}: this lock object is closed")
            if self._current is not None:
                raise LockError(f"{self.path}: owner {self._owner} already holds this lock")
            if self._heartbeat.active:
                raise LockError(f"{self.path}: broken invariant, a lock renewal runs without a lock held")
            result, latest = self.client.read_current_lock_file()
            if result is LockGetResult.UNKNOWN_ERROR:
                return None, "the lock file's state could not be read"
            if result is LockGetResult.SUCCESS and latest is not None:
                if self._still_valid(latest):
                    return self._holder(latest), ""
                if latest.valid_until_ms + CLOCK_DRIFT_BUFFER_MS < now_ms() and not latest.expired:
                    log.warning("%s: found a dangling expired lock of owner %s", self.path, latest.owner)
            new_lock = StorageLockData(False, now_ms() + self.validity_ms, self._owner)
            status, written = self.client.try_upsert_lock_file(
                new_lock, latest if result is LockGetResult.SUCCESS else None)
            if status is not LockUpsertResult.SUCCESS or written is None:
                reason = ("another contender took the lock first" if status is LockUpsertResult.ACQUIRED_BY_OTHERS
                          else "the lock file could not be written")
                return None, reason
            self._set_lock(written)
            self._lost = None
            if not self._heartbeat.start(threading.current_thread()):
                log.error("%s: the lock renewal could not start; giving the lock back", self.path)
                self._try_expire_current_lock()
                return None, "the lock renewal could not start"
            _LIVE.add(self)
            log.info("%s: lock acquired by owner %s until %d", self.path, self._owner, written.valid_until_ms)
            return None, ""

    def _set_lock(self, lock_file: StorageLockFile | None) -> None:
        """`setLock`: only a file of this owner is ever kept as held."""
        if lock_file is not None and lock_file.owner != self._owner:
            raise LockError(f"{self.path}: owners do not match: {self._owner} and {lock_file.owner}")
        self._current = lock_file

    def _renew_lock(self) -> bool:
        """`renewLock`: extend the lease to now + validity, conditional on our last version.
        True lets the heartbeat go on (renewed, or an unknown error worth retrying); False stops
        it (not held, or the file was changed by someone else: the lock is lost)."""
        with self._state_lock:
            current = self._current
            if current is None:
                return False
            try:
                renewed = StorageLockData(False, now_ms() + self.validity_ms, self._owner)
                status, written = self.client.try_upsert_lock_file(renewed, current)
            except Exception as exc:  # noqa: BLE001 - renewLock catches everything and stops renewing
                log.error("%s: renewing the lock failed: %s", self.path, exc)
                return False
            if status is LockUpsertResult.ACQUIRED_BY_OTHERS:
                self._lost = "the lock file was changed by another owner (the lease had run out)"
                log.error("%s: unable to renew the lock of owner %s: acquired by others", self.path, self._owner)
                return False
            if status is LockUpsertResult.UNKNOWN_ERROR or written is None:
                log.warning("%s: lock renewal failed for now; retrying at the next beat", self.path)
                return True
            self._set_lock(written)
            return True

    def release(self) -> None:
        """`unlock()`: stop the renewal, then write `expired: true` conditional on our version.
        `LockNotHeld` when this object does not hold the lock; `LockLost` when the file had been
        taken over (it is left alone); `LockError` when the write failed (the lease then ends by
        itself at validUntil)."""
        with self._state_lock:
            if self._current is None:
                raise LockNotHeld(self.path)
        if not self._heartbeat.stop():
            raise LockError(f"{self.path}: the lock renewal did not stop within {STOP_HEARTBEAT_TIMEOUT_SECONDS:.0f} s")
        with self._state_lock:
            if self._current is None:
                raise LockNotHeld(self.path)
            self._try_expire_current_lock()

    def _try_expire_current_lock(self) -> None:
        """`tryExpireCurrentLock`."""
        current = self._current
        assert current is not None
        expired = StorageLockData(True, current.valid_until_ms, self._owner)
        status, _ = self.client.try_upsert_lock_file(expired, current)
        if status is LockUpsertResult.SUCCESS:
            self._current = None
            _LIVE.discard(self)
            log.info("%s: lock released by owner %s", self.path, self._owner)
            return
        if status is LockUpsertResult.ACQUIRED_BY_OTHERS:
            self._current = None
            _LIVE.discard(self)
            holder = self.holder()
            raise LockLost(self.path, "another owner took the lock over before it was released"
                           + (f" ({holder.describe()})" if holder else ""))
        raise LockError(f"{self.path}: releasing the lock failed (state unknown); its lease ends at "
                        f"{LockHolder(self._owner, current.valid_until_ms).describe()}")

    def is_held(self) -> bool:
        """`actuallyHoldsLock`: believed held, not lost, and the lease not yet past (with the
        drift buffer)."""
        with self._state_lock:
            return self._current is not None and self._lost is None and self._still_valid(self._current)

    def check_held(self, *, min_remaining_seconds: float | None = None) -> None:
        """Right before a publish: the lease must have more than the clock-drift buffer plus a
        margin left on this host's clock, and the lock file, read again, must be the very
        version this owner last wrote. The margin (`min_remaining_seconds`) is one renewal
        interval by default: a publish that stalls after the check for less than that still
        lands inside the lease, and a lease that missed a renewal is not trusted. Stricter than
        Java's actuallyHoldsLock (which trusts the cached copy and gives the drift buffer to the
        holder)."""
        if min_remaining_seconds is None:
            min_remaining_seconds = self.renew_interval_seconds
        with self._state_lock:
            current = self._current
            if current is None:
                if self._lost:
                    raise LockLost(self.path, self._lost)
                raise LockNotHeld(self.path)
            if self._lost:
                raise LockLost(self.path, self._lost)
            remaining = current.valid_until_ms - now_ms() - CLOCK_DRIFT_BUFFER_MS - min_remaining_seconds * 1000
            if remaining <= 0:
                lease = LockHolder(self._owner, current.valid_until_ms).describe()
                raise LockLost(self.path, f"the lease of {lease} is (nearly) over and was not renewed in time")
            result, latest = self.client.read_current_lock_file()
            if result is LockGetResult.UNKNOWN_ERROR:
                raise LockLost(self.path, "the lock file could not be read to confirm it")
            if latest is None or latest.version_id != current.version_id or latest.owner != self._owner \
                    or latest.expired:
                self._lost = "the lock file no longer holds this owner's lease" + (
                    f" (now {self._holder(latest).describe()})" if latest is not None else " (it is gone)")
                raise LockLost(self.path, self._lost)

    def holder(self) -> LockHolder | None:
        result, latest = self.client.read_current_lock_file()
        if result is LockGetResult.SUCCESS and latest is not None and self._still_valid(latest):
            return self._holder(latest)
        return None

    def close(self) -> None:
        """`close()`: release if held (errors logged), stop the renewal thread."""
        try:
            if self.current is not None:
                self.release()
        except LockError as exc:
            log.error("%s: releasing on close failed: %s", self.path, exc)
        finally:
            self._heartbeat.stop()
            with self._state_lock:
                self._closed = True
            _LIVE.discard(self)

    def _expire_at_exit(self) -> None:
        """The shutdown hook's `tryExpireCurrentLock(true)`: best effort, never raises."""
        try:
            self._heartbeat.stop(timeout=1.0)
            with self._state_lock:
                if self._current is not None and self._still_valid(self._current):
                    self._try_expire_current_lock()
        except Exception as exc:  # noqa: BLE001 - at interpreter exit nothing may escape
            log.warning("%s: expiring the lock at exit failed: %s", self.path, exc)
