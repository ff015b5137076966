"""The table lock Hudi writers take, so that Cleanline's cleans, savepoints, restores and
rollbacks and Hudi writers exclude each other on a live table.

`lock_for_table(base_uri, properties)` picks the lock from the same configuration Hudi reads
(`hoodie.write.lock.provider` and its settings, from the writer's options merged over
`hoodie.properties`), as `LockManager.getLockProvider` does:

- `org.apache.hudi.client.transaction.lock.StorageBasedLockProvider` -> `StorageBasedLock`
  (`.hoodie/.locks/table_lock.json` with conditional writes; S3 and local tables);
- `org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider` (Hudi's default) ->
  `ZookeeperBasedLock` (Curator's InterProcessMutex at `<base_path>/<lock_key>`);
- `org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider` -> `FileSystemBasedLock`
  (`<hoodie.write.lock.filesystem.path or .hoodie>/lock`, created exclusively);
- anything else (DynamoDB, Hive metastore, InProcessLockProvider, a custom class) ->
  `UnsupportedLockProvider` naming the class: refuse the mutation. (In-process providers never
  get here from a table's changes: `timeline.locks.discovery` counts them as no lock, and the
  live-writer rule decides.)

`lock_required(properties)` says whether Hudi writers of that configuration lock at all
(optimistic or non-blocking concurrency control).

Typical use, around the moment a Hudi table service would hold the lock::

    lock = lock_for_table(table_uri, properties, application_id="cleanline-clean-42")
    with lock:                    # acquire(wait), LockUnavailable names the holder
        ...                       # re-read the timeline, re-validate the plan
        lock.check_held()         # LockLost if the lease or session is gone
        ...                       # publish
"""

from __future__ import annotations

from collections.abc import Mapping

from timeline.locks.base import (
    HudiLock,
    LockConfigError,
    LockError,
    LockHolder,
    LockLost,
    LockNotHeld,
    LockUnavailable,
    UnsupportedLockProvider,
)
from timeline.locks.config import (
    LOCK_PROVIDER,
    STORAGE_BASED_LOCK_PROVIDER,
    UNSUPPORTED_PROVIDERS,
    WRITE_CONCURRENCY_MODE,
    ZOOKEEPER_BASED_LOCK_PROVIDER,
    WriteConcurrencyMode,
    concurrency_mode,
    lock_required,
    provider_class,
)
from timeline.locks.filesystem import FILESYSTEM_BASED_LOCK_PROVIDER, FileSystemBasedLock
from timeline.locks.lock_file import CorruptLockFile, LockFileOutOfRange
from timeline.locks.storage_based import StorageBasedLock
from timeline.locks.zookeeper import ZookeeperBasedLock
from timeline.storage.base import Storage
from timeline.storage.registry import storage_for

__all__ = [
    "FILESYSTEM_BASED_LOCK_PROVIDER",
    "LOCK_PROVIDER",
    "STORAGE_BASED_LOCK_PROVIDER",
    "WRITE_CONCURRENCY_MODE",
    "ZOOKEEPER_BASED_LOCK_PROVIDER",
    "CorruptLockFile",
    "FileSystemBasedLock",
    "HudiLock",
    "LockConfigError",
    "LockError",
    "LockFileOutOfRange",
    "LockHolder",
    "LockLost",
    "LockNotHeld",
    "LockUnavailable",
    "StorageBasedLock",
    "UnsupportedLockProvider",
    "WriteConcurrencyMode",
    "ZookeeperBasedLock",
    "concurrency_mode",
    "lock_for_table",
    "lock_required",
    "provider_class",
]


def lock_for_table(base_uri: str, properties: Mapping[str, str], *, storage: Storage | None = None,
                   application_id: str | None = None, owner: str | None = None) -> HudiLock:
    """The lock a Hudi writer configured with `properties` takes on the table at `base_uri`.

    `properties` are Hudi's string settings (`hoodie.write.lock.*`; `hoodie.table.name` is the
    ZooKeeper lock key's default). `storage` is the table's store when the caller has it open
    (else it is chosen from the URI). `application_id` goes into a ZooKeeper lock node as
    `application_id=<id>` (Hudi writes the Spark application id there); `owner` fixes a
    storage-based lock's owner id (a random UUID by default, as in Hudi). Raises
    `UnsupportedLockProvider` for a provider Cleanline cannot take and `LockConfigError` for
    missing or invalid settings. The lock is not acquired yet."""
    name = provider_class(properties)
    if name == ZOOKEEPER_BASED_LOCK_PROVIDER:
        return ZookeeperBasedLock.from_properties(properties, application_id=application_id)
    if name in (STORAGE_BASED_LOCK_PROVIDER, FILESYSTEM_BASED_LOCK_PROVIDER):  # a lock file on the table's store
        if storage is None:
            storage, base_path = storage_for(base_uri)
        else:
            base_path = storage.path_of(base_uri).rstrip("/") or base_uri
        if name == STORAGE_BASED_LOCK_PROVIDER:
            return StorageBasedLock.from_properties(storage, base_path, properties, owner=owner)
        return FileSystemBasedLock.from_properties(storage, base_path, properties, owner=owner)
    reason = UNSUPPORTED_PROVIDERS.get(name, "a lock provider Cleanline does not know")
    raise UnsupportedLockProvider(name, reason)
