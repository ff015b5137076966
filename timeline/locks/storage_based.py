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
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping

from timeline.locks.base import (
    HudiLock,
    LockError,
    LockHolder,
    LockLost,
    LockNotHeld,
    LockUnavailable,
)
from timeline.locks.config import (
    DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS,
    DEFAULT_STORAGE_RENEW_INTERVAL_SECS,
    DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS,
    STORAGE_BASED_LOCK_PROVIDER,
    StorageLockSettings,
    wait_seconds,
)
from timeline.locks.lock_file import (
    LockGetResult,
    LockUpsertResult,
    StorageLockData,
    StorageLockFile,
    lock_client_for,
    now_ms,
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
