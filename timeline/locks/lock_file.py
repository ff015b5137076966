"""The lock file of Hudi's storage-based lock and the clients that change it only by
conditional writes: `models.StorageLockData` / `StorageLockFile` (Jackson's JSON of
`{"expired", "validUntil", "owner"}`), the `StorageLockClient` contract, the S3 client
(`org.apache.hudi.aws.transaction.lock.S3StorageLockClient`: `If-None-Match: *` to create,
`If-Match: <ETag>` to replace) and, for local and in-memory tables where Hudi has no client,
`ExclusiveCreateLockClient` (the conditional replace emulated with exclusive-create claim files).
The lock itself, its lease and heartbeat, is `timeline/locks/storage_based.py`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import Any

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.locks.base import (
    LockError,
    UnsupportedLockProvider,
)
from timeline.locks.config import (
    STORAGE_BASED_LOCK_PROVIDER,
)
from timeline.storage.base import Storage

log = logging.getLogger(__name__)

# The three JSON properties of StorageLockData, in Jackson's output order.
_EXPIRED, _VALID_UNTIL, _OWNER = "expired", "validUntil", "owner"

# The lease ends a lock file may name: from the epoch to the last millisecond of 9999-12-31 UTC
# (the last one a datetime holds). Hudi writes `System.currentTimeMillis() + validity`, so
# anything outside is a file written by hand or broken.
VALID_UNTIL_MAX_MS = 253_402_300_799_999


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


class LockFileOutOfRange(LockError):
    """The lock file's `validUntil` is not a lease end (before the epoch, after 9999-12-31, or
    beyond a Java long). Hudi's reader takes any long, so a far-future value holds the lock for
    ever; Cleanline refuses it naming the file, to be fixed or removed by a person. Not a
    CorruptLockFile: a write caught half done never reads as a whole JSON object, so this is no
    state to retry."""

    def __init__(self, path: str, value: object) -> None:
        super().__init__(f"{path}: lock file's {_VALID_UNTIL}={value!r} is out of range (epoch milliseconds from "
                         f"0 to {VALID_UNTIL_MAX_MS}, 9999-12-31): fix or remove the lock file once no writer "
                         "holds the lock")
        self.path = path
        self.value = value


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
    """`validUntil` as Jackson reads a `long` (numbers, floats truncated, numeric strings;
    NaN and Infinity are not JSON to it), then refused outside the lease ends a lock file
    may name (LockFileOutOfRange)."""
    number: int | None = None
    if isinstance(value, bool) or value is None:
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float):
        number = int(value) if math.isfinite(value) else None
    elif isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            number = None
    if number is None:
        raise CorruptLockFile(path, f"{_VALID_UNTIL}={value!r} is not a number")
    if not 0 <= number <= VALID_UNTIL_MAX_MS:
        raise LockFileOutOfRange(path, value)
    return number


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
        return self.storage.client  # type: ignore[attr-defined]  # only an S3Storage (checked by the caller)

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


