"""S3 and S3-compatible stores (`s3://`, `s3a://`, `s3n://`).

Reads and listings go through pyarrow.fs (C++, the GIL released while it waits); boto3 adds
what pyarrow does not offer: batched deletes (`DeleteObjects`, 1,000 keys a request) and
create-if-absent writes (`If-None-Match: *`, atomic on S3). Both clients are built from the
same `S3Settings`, read from the environment as the AWS SDKs read it:

- `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`: the endpoint (MinIO, Ceph, a local test
  server); `http://` endpoints are spoken to over plain HTTP, path-style.
- `AWS_REGION`, else `AWS_DEFAULT_REGION`: the region; without one (and without an endpoint)
  the bucket's region is looked up, as `pyarrow.fs.FileSystem.from_uri` does.
- credentials: the AWS default chain (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
  `AWS_SESSION_TOKEN`, `AWS_PROFILE`, web identity, instance role).

Deletes: S3 answers "deleted" for a key that was not there, so `delete_many` reports such a
key as "deleted", never "gone". Telling them apart would take a HEAD per key, and the clean
executor counts a file already gone as deleted anyway, as Hudi does (apache/hudi#18035).
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.storage.arrow import ArrowStorage, _guard
from timeline.storage.base import FileStatus

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 120

# boto3 clients by (process, endpoint, region, attempts, credential variables).
_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")

# Error codes S3 (or an S3-compatible store) gives for a key it may delete on a later try.
TRANSIENT_CODES = frozenset({"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded",
                             "TooManyRequests", "RequestTimeout", "InternalError", "ServiceUnavailable",
                             "503", "500"})


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where S3 requests go: endpoint (None for AWS) and region (None: looked up)."""

    endpoint_url: str | None = None
    region: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> S3Settings:
        env = os.environ if environ is None else environ
        endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
        region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip() or None
        return cls(endpoint, region)

    def arrow_options(self, bucket: str) -> dict[str, Any]:
        """Keyword arguments of `pyarrow.fs.S3FileSystem`. The request timeout is raised from
        the SDK's 3 seconds (a request that sends nothing for that long fails): a busy store
        answering many listings at once can be that slow without being down."""
        options: dict[str, Any] = {"request_timeout": REQUEST_TIMEOUT_SECONDS, "connect_timeout": 10}
        if self.endpoint_url:
            parsed = urlparse(self.endpoint_url if "://" in self.endpoint_url else f"https://{self.endpoint_url}")
            options["scheme"] = parsed.scheme or "https"
            options["endpoint_override"] = f"{parsed.netloc}{parsed.path.rstrip('/')}"
        region = self.region
        if region is None and not self.endpoint_url and bucket:
            try:
                region = pafs.resolve_s3_region(bucket)
            except (OSError, ValueError):
                region = None  # the SDK's own default; a wrong region answers with a clear error
        if region:
            options["region"] = region
        return options


class S3Storage(ArrowStorage):
    """One S3 (or S3-compatible) endpoint; paths are `bucket/key`."""

    io_threads = 32
    listing_threads = 32
    delete_batch_size = 1000
    # Rounds of a DeleteObjects request for keys S3 answered with a transient per-key error
    # (SlowDown, InternalError); errors of the whole request are retried by botocore itself
    # (standard mode: throttling, 5xx and connection errors, with exponential back-off).
    key_retry_attempts = 4
    retry_base_seconds = 0.2
    request_attempts = 5

    def __init__(self, *, bucket: str = "", scheme: str = "s3", settings: S3Settings | None = None) -> None:
        self.settings = settings or S3Settings.from_environ()
        fs = _guard(f"{scheme}://{bucket}", lambda: pafs.S3FileSystem(**self.settings.arrow_options(bucket)))
        super().__init__(fs, scheme=scheme, netloc=bucket)
        self._client: Any = None

    @classmethod
    def from_uri(cls, uri: str) -> S3Storage:
        """The store of an `s3://`, `s3a://` or `s3n://` URI; `uri()` keeps that scheme, so
        paths Cleanline writes into plans name the table as its writers do."""
        parsed = urlparse(uri)
        return cls(bucket=parsed.netloc, scheme=parsed.scheme.lower() or "s3")

    @property
    def client(self) -> Any:
        """The boto3 S3 client for these settings (boto3 clients are thread-safe; building
        one takes a tenth of a second, so one per process and configuration is kept)."""
        if self._client is None:
            endpoint = self.settings.endpoint_url
            if endpoint and "://" not in endpoint:
                endpoint = f"https://{endpoint}"
            region = self.settings.region or self.fs.region or None
            key = (os.getpid(), endpoint, region, self.request_attempts,
                   *(os.environ.get(name) for name in _CREDENTIAL_VARIABLES))
            with _CLIENTS_LOCK:
                if key not in _CLIENTS:
                    import boto3
                    from botocore.config import Config

                    config = Config(retries={"mode": "standard", "total_max_attempts": self.request_attempts},
                                    max_pool_connections=max(self.io_threads, self.listing_threads) + 4,
                                    connect_timeout=10, read_timeout=REQUEST_TIMEOUT_SECONDS)
                    _CLIENTS[key] = boto3.session.Session().client("s3", endpoint_url=endpoint, region_name=region,
                                                                   config=config)
                self._client = _CLIENTS[key]
        return self._client

    def path_of(self, uri: str) -> str:
        """`bucket/key` of an `s3://`, `s3a://` or `s3n://` URI (a clean plan names every file
        this way: no URL parser for the common case), or of a plain path."""
        head, sep, rest = uri.partition("://")
        if sep and head in ("s3", "s3a", "s3n") and "?" not in rest and "#" not in rest and "%" not in rest:
            return rest
        return super().path_of(uri)

    def read(self, path: str) -> bytes:
        """One GET (pyarrow's input stream sends a HEAD first)."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = self._split(path)
        if not key:
            raise StorageError(path, "not an object key (bucket/key)")
        try:
            return bytes(self.client.get_object(Bucket=bucket, Key=key)["Body"].read())
        except ClientError as exc:
            if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                raise FileNotFound(path) from exc
            raise StorageError(path, _reason(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, _reason(exc)) from exc

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, key

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """One PUT; without `overwrite` a conditional one (`If-None-Match: *`), so of two
        writers creating the same file exactly one wins. Object stores have no folders to
        create first. A store that does not implement conditional writes gets a HEAD first."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = self._split(path)
        if not key:
            raise StorageError(path, "not an object key (bucket/key)")
        condition = {} if overwrite else {"IfNoneMatch": "*"}
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, **condition)
        except ClientError as exc:
            code, status = _code(exc), _status(exc)
            if not overwrite and (status in (412, 409) or code in ("PreconditionFailed",
                                                                    "ConditionalRequestConflict")):
                raise FileExists(path) from exc
            if not overwrite and (status == 501 or code == "NotImplemented"):
                if self.exists(path):
                    raise FileExists(path) from exc
                self.write(path, data, overwrite=True)
                return
            raise StorageError(path, _reason(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, _reason(exc)) from exc

    def delete(self, path: str) -> bool:
        """A HEAD (S3 answers a DELETE of a missing key with success), then a DELETE. Unlike
        pyarrow's delete_file, no empty "folder/" marker object is left behind for the parent."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, key = self._split(path)
        if not key:
            raise StorageError(path, "not an object key (bucket/key)")
        try:
            self.client.head_object(Bucket=bucket, Key=key)
        except ClientError as exc:
            if _status(exc) == 404 and _code(exc) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise StorageError(path, _reason(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, _reason(exc)) from exc
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise StorageError(path, _reason(exc)) from exc
        return True

    def delete_dir(self, path: str) -> bool:
        """Every object below the prefix (and the folder's own marker), listed and deleted in
        DeleteObjects batches; no marker is left behind for the parent. True if anything was
        there; StorageError naming the first object that could not be deleted."""
        bucket, prefix = self._split(path.rstrip("/"))
        if not prefix:
            raise StorageError(path, "refusing to delete a whole bucket")
        keys = {status.path.split("/", 1)[1]: status.path for status in self._objects_below(path)}
        if not keys and self.exists(path):
            keys[f"{prefix}/"] = f"{bucket}/{prefix}/"  # an empty folder: its marker only
        failed = {p: r for p, r in self._delete_keys(bucket, keys).items() if r.startswith("failed")}
        if failed:
            first, reason = next(iter(failed.items()))
            raise StorageError(first, f"{reason.removeprefix('failed: ')} ({len(failed)} objects below {path} "
                                      "were not deleted)")
        return bool(keys)

    def _objects_below(self, path: str) -> list[FileStatus]:
        """Every object below a folder, the "folder/" markers included."""
        from botocore.exceptions import BotoCoreError, ClientError

        bucket, prefix = self._split(path.rstrip("/"))
        found: list[FileStatus] = []
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{prefix}/"):
                found += [FileStatus.at(f"{bucket}/{o['Key']}", o["Size"], 0) for o in page.get("Contents") or ()]
        except (ClientError, BotoCoreError) as exc:
            raise StorageError(path, _reason(exc)) from exc
        return found

    def delete_many(self, paths: Iterable[str]) -> dict[str, str]:
        """`DeleteObjects`, `delete_batch_size` keys a request, one request after another
        (callers run several calls at once for parallelism). Keys S3 refuses (AccessDenied,
        ...) are "failed: <code>: <message>"; a request that fails whole (no such bucket, no
        connection after botocore's retries) fails each of its keys. Never raises."""
        results: dict[str, str] = {}
        by_bucket: dict[str, dict[str, str]] = {}
        for path in paths:
            bucket, key = self._split(path)
            if not bucket or not key or key.endswith("/"):
                results[path] = "failed: not an object key (bucket/key)"
            else:
                by_bucket.setdefault(bucket, {})[key] = path
        for bucket, keyed in by_bucket.items():
            results.update(self._delete_keys(bucket, keyed))
        return results

    def _delete_keys(self, bucket: str, keyed: dict[str, str]) -> dict[str, str]:
        """key -> path of one bucket, `delete_batch_size` keys a request."""
        results: dict[str, str] = {}
        items = list(keyed.items())
        for start in range(0, len(items), self.delete_batch_size):
            results.update(self._delete_batch(bucket, dict(items[start:start + self.delete_batch_size])))
        return results

    def _delete_batch(self, bucket: str, pending: dict[str, str]) -> dict[str, str]:
        """One DeleteObjects request (key -> path), repeated with back-off for the keys that
        got a transient per-key error."""
        from botocore.exceptions import BotoCoreError, ClientError

        results: dict[str, str] = {}
        last_reason = ""
        for attempt in range(self.key_retry_attempts):
            if attempt:
                time.sleep(random.uniform(0, self.retry_base_seconds * 2 ** attempt))  # full jitter
            try:
                response = self.client.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": key} for key in pending], "Quiet": True})
            except (ClientError, BotoCoreError) as exc:
                reason = f"failed: {_reason(exc)}"
                log.warning("s3://%s: DeleteObjects of %d keys failed: %s", bucket, len(pending), _reason(exc))
                results.update((path, reason) for path in pending.values())
                return results
            retry: dict[str, str] = {}
            for error in response.get("Errors") or ():
                key = error.get("Key", "")
                if key not in pending:
                    continue
                code, message = error.get("Code", ""), error.get("Message", "")
                last_reason = f"{code}: {message}" if message else code
                if code in TRANSIENT_CODES:
                    retry[key] = pending[key]
                else:
                    results[pending[key]] = f"failed: {last_reason}"
            for key, path in pending.items():
                if key not in retry and path not in results:
                    results[path] = "deleted"
            pending = retry
            if not pending:
                return results
        results.update((path, f"failed: {last_reason} (after {self.key_retry_attempts} attempts)")
                       for path in pending.values())
        return results


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None) or {}
    return str((response.get("Error") or {}).get("Code") or "")


def _status(exc: Exception) -> int:
    response = getattr(exc, "response", None) or {}
    return int((response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)


def _reason(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if response:
        error = response.get("Error") or {}
        code, message = error.get("Code") or "", error.get("Message") or ""
        return f"{code}: {message}" if code and message else (code or message or str(exc))
    return str(exc) or type(exc).__name__
