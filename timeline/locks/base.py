"""What every Hudi table lock offers, and the errors they raise.

A lock follows one of Apache Hudi's `org.apache.hudi.common.lock.LockProvider` classes so that
Cleanline and Hudi writers exclude each other. The typed surface is the same for all of them:

- `acquire(timeout)` waits up to `timeout` seconds (`LockProvider.tryLock(long, TimeUnit)`) and
  raises `LockUnavailable` naming the current holder when it cannot have the lock;
- `release()` gives it back (`LockProvider.unlock()`), refusing with `LockNotHeld` when this
  object does not hold it, and raising `LockLost` when it turns out someone else took it over;
- `check_held()` proves the lock is still ours right before a publish (re-reading the lock's
  state from its store), raising `LockLost` otherwise;
- used as a context manager it acquires on entry (with `wait_seconds`) and releases on exit.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType

from timeline.exceptions import CleanlineError

log = logging.getLogger(__name__)


class LockError(CleanlineError):
    """A table lock could not be taken, kept or given back. Names the lock."""


class LockConfigError(LockError):
    """The lock settings (`hoodie.write.lock.*`) are missing or invalid; names the key."""


class UnsupportedLockProvider(LockError):
    """The table is configured with a lock provider Cleanline cannot take (DynamoDB, Hive
    metastore, ...), or one it cannot take on this store. Mutations must be refused: Hudi writers
    would not see a lock of ours."""

    def __init__(self, provider_class: str, reason: str) -> None:
        super().__init__(f"lock provider {provider_class} is not supported by Cleanline: {reason}")
        self.provider_class = provider_class
        self.reason = reason


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds (or last held) a lock, as far as its store says.

    `owner` is the holder's id: the `owner` UUID of a storage-based lock file, or the name and
    data (`application_id=...`) of the lowest ZooKeeper lock node. `valid_until_ms` is the lease
    end (epoch milliseconds) of a storage-based lock; None where the store has no lease."""

    owner: str
    valid_until_ms: int | None = None
    detail: str = ""

    @property
    def valid_until(self) -> datetime | None:
        if self.valid_until_ms is None:
            return None
        return datetime.fromtimestamp(self.valid_until_ms / 1000, tz=UTC)

    def describe(self) -> str:
        text = self.owner
        if self.valid_until is not None:
            text += f" until {self.valid_until.isoformat(timespec='milliseconds')}"
        return f"{text} ({self.detail})" if self.detail else text


class LockUnavailable(LockError):
    """Someone else holds the lock (or its state could not be read) and it did not come free
    within the wait. `holder` names them when the store says who."""

    def __init__(self, lock_path: str, holder: LockHolder | None, reason: str = "") -> None:
        who = f"held by {holder.describe()}" if holder else (reason or "not acquired")
        super().__init__(f"{lock_path}: lock unavailable, {who}")
        self.lock_path = lock_path
        self.holder = holder


class LockLost(LockError):
    """The lock was held by this object but is not any more (the lease expired and another
    owner took it, the ZooKeeper session ended, or its state cannot be confirmed). Nothing may
    be published on the strength of it."""

    def __init__(self, lock_path: str, reason: str) -> None:
        super().__init__(f"{lock_path}: lock lost: {reason}")
        self.lock_path = lock_path
        self.reason = reason


class LockNotHeld(LockError):
    """`release` or `check_held` on an object that does not hold the lock: only the owner
    releases a lock, and nobody else's lock is touched."""

    def __init__(self, lock_path: str) -> None:
        super().__init__(f"{lock_path}: this lock object does not hold the lock; refusing to release it")
        self.lock_path = lock_path


class HudiLock(ABC):
    """One table lock as one Hudi `LockProvider` class takes it. Not re-entrant: acquiring a lock
    this object already holds is a `LockError`. Thread-safe."""

    #: The Java class (`hoodie.write.lock.provider`) whose protocol this lock follows.
    provider_class: str = ""
    #: Seconds `__enter__` waits for the lock (Hudi's `hoodie.write.lock.wait_time_ms`).
    wait_seconds: float = 60.0

    def __init__(self) -> None:
        self._state_lock = threading.RLock()

    @property
    @abstractmethod
    def path(self) -> str:
        """Where the lock lives (a lock file URI, or a ZooKeeper path), for messages."""

    @property
    @abstractmethod
    def owner(self) -> str:
        """This object's owner id as the lock's store records it."""

    @abstractmethod
    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting up to `timeout` seconds (`wait_seconds` when None; at least
        one attempt is made). `LockUnavailable` when it cannot be had."""

    @abstractmethod
    def release(self) -> None:
        """Give the lock back. `LockNotHeld` when this object does not hold it; `LockLost` when
        it had been taken over (nothing of the new owner's is touched)."""

    @abstractmethod
    def is_held(self) -> bool:
        """Whether this object believes it holds the lock (no store round trip)."""

    @abstractmethod
    def check_held(self) -> None:
        """Confirm against the store that the lock is still ours, right before a publish.
        `LockNotHeld` if it was never acquired, `LockLost` if it is no longer ours."""

    @abstractmethod
    def holder(self) -> LockHolder | None:
        """Who holds the lock now according to its store (None: nobody)."""

    @abstractmethod
    def close(self) -> None:
        """Release the lock if held (errors logged) and free connections and threads."""

    def __enter__(self) -> HudiLock:
        self.acquire(self.wait_seconds)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if exc is None:
            self.release()
            return
        try:
            self.release()
        except LockError as release_error:
            # The block's own error goes on; the failed release is only logged with it.
            log.error("%s: releasing after %s failed: %s", self.path, type(exc).__name__, release_error)
