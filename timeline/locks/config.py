"""Hudi's lock settings: the keys, their defaults and which provider a table's config names.

Keys and defaults follow `org.apache.hudi.common.config.LockConfiguration`,
`org.apache.hudi.config.HoodieLockConfig` (1.x defaults), `org.apache.hudi.config.
StorageBasedLockConfig` and `HoodieWriteConfig.WRITE_CONCURRENCY_MODE`. Properties are the
string key/value pairs Hudi reads (a writer's options merged over `hoodie.properties`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from timeline.locks.base import LockConfigError

LOCK_PREFIX = "hoodie.write.lock."

# HoodieLockConfig.LOCK_PROVIDER_CLASS_NAME; its default is ZookeeperBasedLockProvider.
LOCK_PROVIDER = LOCK_PREFIX + "provider"
# HoodieWriteConfig.WRITE_CONCURRENCY_MODE (WriteConcurrencyMode, default SINGLE_WRITER).
WRITE_CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
# HoodieCommonConfig.BASE_PATH and HoodieWriteConfig.TBL_NAME (the ZooKeeper lock key's default).
BASE_PATH = "hoodie.base.path"
TABLE_NAME = "hoodie.table.name"

# LockConfiguration / HoodieLockConfig: acquisition.
LOCK_ACQUIRE_WAIT_TIMEOUT_MS = LOCK_PREFIX + "wait_time_ms"  # one tryLock call
LOCK_ACQUIRE_RETRY_WAIT_TIME_MS = LOCK_PREFIX + "wait_time_ms_between_retry"
LOCK_ACQUIRE_RETRY_MAX_WAIT_TIME_MS = LOCK_PREFIX + "max_wait_time_ms_between_retry"
LOCK_ACQUIRE_NUM_RETRIES = LOCK_PREFIX + "num_retries"
DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS = 60_000
DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_MS = 1_000  # LockConfiguration.DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_IN_MILLIS
DEFAULT_LOCK_ACQUIRE_RETRY_MAX_WAIT_TIME_MS = 16_000
DEFAULT_LOCK_ACQUIRE_NUM_RETRIES = 15

# LockConfiguration: ZooKeeper (ZookeeperBasedLockProvider / BaseZookeeperBasedLockProvider).
ZK_BASE_PATH = LOCK_PREFIX + "zookeeper.base_path"
ZK_CONNECT_URL = LOCK_PREFIX + "zookeeper.url"
ZK_PORT = LOCK_PREFIX + "zookeeper.port"  # documented, but Curator is given the url alone
ZK_LOCK_KEY = LOCK_PREFIX + "zookeeper.lock_key"
ZK_SESSION_TIMEOUT_MS = LOCK_PREFIX + "zookeeper.session_timeout_ms"
ZK_CONNECTION_TIMEOUT_MS = LOCK_PREFIX + "zookeeper.connection_timeout_ms"
DEFAULT_ZK_SESSION_TIMEOUT_MS = 60_000
DEFAULT_ZK_CONNECTION_TIMEOUT_MS = 15_000

# StorageBasedLockConfig (since 1.0.2). Master names the renewal interval
# `renew.interval.secs`; 1.0.2 called it `heartbeat.poll.secs`, read here as the fallback.
STORAGE_VALIDITY_TIMEOUT_SECS = LOCK_PREFIX + "storage.validity.timeout.secs"
STORAGE_RENEW_INTERVAL_SECS = LOCK_PREFIX + "storage.renew.interval.secs"
STORAGE_HEARTBEAT_POLL_SECS = LOCK_PREFIX + "storage.heartbeat.poll.secs"
DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS = 300
DEFAULT_STORAGE_RENEW_INTERVAL_SECS = 30

PACKAGE = "org.apache.hudi.client.transaction.lock."
STORAGE_BASED_LOCK_PROVIDER = PACKAGE + "StorageBasedLockProvider"
ZOOKEEPER_BASED_LOCK_PROVIDER = PACKAGE + "ZookeeperBasedLockProvider"
DEFAULT_LOCK_PROVIDER = ZOOKEEPER_BASED_LOCK_PROVIDER

# Providers Hudi ships that Cleanline does not take, and why (UnsupportedLockProvider).
UNSUPPORTED_PROVIDERS: dict[str, str] = {
    PACKAGE + "InProcessLockProvider":
        "it excludes only threads of one Hudi JVM (a lock per base path in that process); "
        "no other process can take or see it",
    PACKAGE + "LocalProcessLockProvider": "it excludes only threads of one Hudi JVM",
    PACKAGE + "NoopLockProvider": "it takes no lock at all",
    PACKAGE + "ZookeeperBasedImplicitBasePathLockProvider":
        "not implemented: its ZooKeeper path is an xxHash64 of the base path (HashID), which "
        "Cleanline does not compute",
    "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider":
        "it needs Amazon DynamoDB (AWS's DynamoDB lock client), which Cleanline does not speak",
    "org.apache.hudi.aws.transaction.lock.DynamoDBBasedImplicitPartitionKeyLockProvider":
        "it needs Amazon DynamoDB (AWS's DynamoDB lock client), which Cleanline does not speak",
    "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider":
        "it needs a Hive metastore's lock API, which Cleanline does not speak",
}


class WriteConcurrencyMode(str, Enum):
    """`org.apache.hudi.common.model.WriteConcurrencyMode`."""

    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
    NON_BLOCKING_CONCURRENCY_CONTROL = "NON_BLOCKING_CONCURRENCY_CONTROL"

    @property
    def supports_multi_writer(self) -> bool:
        """`WriteConcurrencyMode.supportsMultiWriter`: the modes in which writers take the lock."""
        return self is not WriteConcurrencyMode.SINGLE_WRITER


def concurrency_mode(properties: Mapping[str, str]) -> WriteConcurrencyMode:
    """`hoodie.write.concurrency.mode`, case-insensitive as Hudi parses it; SINGLE_WRITER when unset."""
    raw = (properties.get(WRITE_CONCURRENCY_MODE) or "").strip()
    if not raw:
        return WriteConcurrencyMode.SINGLE_WRITER
    try:
        return WriteConcurrencyMode(raw.upper())
    except ValueError:
        raise LockConfigError(f"{WRITE_CONCURRENCY_MODE}={raw!r} is not one of "
                              f"{', '.join(m.value for m in WriteConcurrencyMode)}") from None


def lock_required(properties: Mapping[str, str]) -> bool:
    """Whether Hudi writers of this configuration take the table lock across processes: the
    concurrency mode supports multiple writers (optimistic or non-blocking concurrency control).
    In single-writer mode Hudi at most takes an in-process lock, which no other process sees."""
    return concurrency_mode(properties).supports_multi_writer


def provider_class(properties: Mapping[str, str]) -> str:
    """`hoodie.write.lock.provider`, defaulting to ZookeeperBasedLockProvider as
    HoodieLockConfig.LOCK_PROVIDER_CLASS_NAME does."""
    return (properties.get(LOCK_PROVIDER) or "").strip() or DEFAULT_LOCK_PROVIDER


def get_int(properties: Mapping[str, str], key: str, default: int | None, *, minimum: int | None = None) -> int:
    """An integer setting (TypedProperties.getInteger/getLong); `LockConfigError` names a bad one."""
    raw = properties.get(key)
    if raw is None or str(raw).strip() == "":
        if default is None:
            raise LockConfigError(f"{key} is required and not set")
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise LockConfigError(f"{key}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise LockConfigError(f"{key}={value} must be at least {minimum}")
    return value


def get_str(properties: Mapping[str, str], key: str) -> str | None:
    raw = properties.get(key)
    return None if raw is None or str(raw).strip() == "" else str(raw).strip()


@dataclass(frozen=True, slots=True)
class StorageLockSettings:
    """StorageBasedLockConfig: lease length and renewal interval, in seconds."""

    validity_seconds: int = DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS
    renew_interval_seconds: int = DEFAULT_STORAGE_RENEW_INTERVAL_SECS

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> StorageLockSettings:
        """Reads and checks the settings as `StorageBasedLockConfig.Builder.checkRequiredProps`
        does: validity >= 10 x renewal interval, validity >= 10 s, renewal interval >= 1 s."""
        validity = get_int(properties, STORAGE_VALIDITY_TIMEOUT_SECS, DEFAULT_STORAGE_VALIDITY_TIMEOUT_SECS)
        renew_key = STORAGE_RENEW_INTERVAL_SECS if get_str(properties, STORAGE_RENEW_INTERVAL_SECS) is not None \
            else STORAGE_HEARTBEAT_POLL_SECS
        renew = get_int(properties, renew_key, DEFAULT_STORAGE_RENEW_INTERVAL_SECS)
        if validity < renew * 10:
            raise LockConfigError(f"{STORAGE_VALIDITY_TIMEOUT_SECS} should be greater than or equal to 10x {renew_key}"
                                  f" (got {validity} and {renew})")
        if validity < 10:
            raise LockConfigError(f"{STORAGE_VALIDITY_TIMEOUT_SECS} should be greater than or equal to 10 seconds")
        if renew < 1:
            raise LockConfigError(f"{renew_key} should be greater than or equal to 1 second")
        return cls(validity, renew)


@dataclass(frozen=True, slots=True)
class ZookeeperLockSettings:
    """What ZookeeperBasedLockProvider reads: the connect string, the lock path
    `<base_path>/<lock_key>` and Curator's timeouts and retry policy
    (`BoundedExponentialBackoffRetry(wait_time_ms_between_retry, max_wait_time_ms_between_retry,
    num_retries)`). `application_id` is what HoodieInterProcessMutex writes into the lock node
    (`application_id=<id>`; LockManager sets it from the writer's application id, "Unknown"
    without one): Cleanline passes its own run's name so a holder can be told apart."""

    connect_string: str
    base_path: str
    lock_key: str
    session_timeout_ms: int = DEFAULT_ZK_SESSION_TIMEOUT_MS
    connection_timeout_ms: int = DEFAULT_ZK_CONNECTION_TIMEOUT_MS
    retry_wait_ms: int = DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_MS
    retry_max_wait_ms: int = DEFAULT_LOCK_ACQUIRE_RETRY_MAX_WAIT_TIME_MS
    num_retries: int = DEFAULT_LOCK_ACQUIRE_NUM_RETRIES
    application_id: str = "Unknown"

    @property
    def lock_path(self) -> str:
        """`BaseZookeeperBasedLockProvider.getLockPath`: `zkBasePath + '/' + lockKey`."""
        return f"{self.base_path}/{self.lock_key}"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], *, application_id: str | None = None
                        ) -> ZookeeperLockSettings:
        """`url`, `base_path` and `lock_key` are required (checkRequiredProps, getZkBasePath,
        getLockKey); the lock key defaults to `hoodie.table.name` as HoodieLockConfig.ZK_LOCK_KEY's
        infer function does. The url is the whole connect string (`host:port,...`): like Hudi,
        `hoodie.write.lock.zookeeper.port` is not appended, so a host without a port means 2181."""
        url = get_str(properties, ZK_CONNECT_URL)
        if url is None:
            raise LockConfigError(f"{ZK_CONNECT_URL} is required by ZookeeperBasedLockProvider and not set")
        base_path = get_str(properties, ZK_BASE_PATH)
        if base_path is None:
            raise LockConfigError(f"{ZK_BASE_PATH} is required by ZookeeperBasedLockProvider and not set")
        if not base_path.startswith("/"):
            raise LockConfigError(f"{ZK_BASE_PATH}={base_path!r}: a ZooKeeper path must start with /")
        lock_key = get_str(properties, ZK_LOCK_KEY) or get_str(properties, TABLE_NAME)
        if lock_key is None:
            raise LockConfigError(f"{ZK_LOCK_KEY} is required by ZookeeperBasedLockProvider (or {TABLE_NAME}, "
                                  "its default) and neither is set")
        if "/" in lock_key.strip("/") or not lock_key.strip("/"):
            raise LockConfigError(f"{ZK_LOCK_KEY}={lock_key!r} must be one ZooKeeper node name")
        return cls(
            connect_string=url,
            base_path=base_path,
            lock_key=lock_key,
            session_timeout_ms=get_int(properties, ZK_SESSION_TIMEOUT_MS, DEFAULT_ZK_SESSION_TIMEOUT_MS, minimum=1),
            connection_timeout_ms=get_int(properties, ZK_CONNECTION_TIMEOUT_MS, DEFAULT_ZK_CONNECTION_TIMEOUT_MS,
                                          minimum=1),
            retry_wait_ms=get_int(properties, LOCK_ACQUIRE_RETRY_WAIT_TIME_MS, DEFAULT_LOCK_ACQUIRE_RETRY_WAIT_TIME_MS,
                                  minimum=0),
            retry_max_wait_ms=get_int(properties, LOCK_ACQUIRE_RETRY_MAX_WAIT_TIME_MS,
                                      DEFAULT_LOCK_ACQUIRE_RETRY_MAX_WAIT_TIME_MS, minimum=0),
            num_retries=get_int(properties, LOCK_ACQUIRE_NUM_RETRIES, DEFAULT_LOCK_ACQUIRE_NUM_RETRIES, minimum=0),
            application_id=application_id or "Unknown",
        )


def wait_seconds(properties: Mapping[str, str]) -> float:
    """`hoodie.write.lock.wait_time_ms` (60 s): how long one acquisition waits."""
    return get_int(properties, LOCK_ACQUIRE_WAIT_TIMEOUT_MS, DEFAULT_LOCK_ACQUIRE_WAIT_TIMEOUT_MS, minimum=0) / 1000


# HoodieTimeGeneratorConfig.MAX_EXPECTED_CLOCK_SKEW_MS: how long SkewAdjustingTimeGenerator waits
# after reading the clock under the lock (200 ms; inferred 1 ms for InProcessLockProvider).
MAX_EXPECTED_CLOCK_SKEW_MS = "hoodie.time.generator.max_expected_clock_skew_ms"
DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS = 200


def max_expected_clock_skew_ms(properties: Mapping[str, str]) -> int:
    """`hoodie.time.generator.max_expected_clock_skew_ms`: 200 ms, or 1 ms when the lock provider
    is InProcessLockProvider (the config's infer function)."""
    if get_str(properties, MAX_EXPECTED_CLOCK_SKEW_MS) is None and \
            provider_class(properties) == PACKAGE + "InProcessLockProvider":
        return 1
    return get_int(properties, MAX_EXPECTED_CLOCK_SKEW_MS, DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS, minimum=0)
