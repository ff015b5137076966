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

Per-root settings: `{"s3://bucket/lake": S3Settings(...)}`, passed to the table
(`HudiTable.open(uri, roots=LakeRoots(s3=...))`, `timeline/roots.py`), gives the tables below a
root their own endpoint, region and credentials (an access key pair, or a profile of the AWS
config files); `s3_settings_for(uri, roots=...)` takes the longest root a URI lies in (whole
segments; `s3a://` and `s3n://` URIs match `s3://` roots), and what a root leaves unset comes
from the environment as above. `parse_s3_roots` reads them from JSON whose credentials name
environment variables or a profile, never hold secrets inline. Nothing is kept in this module:
a store is opened with the settings its caller gives (`storage_for(uri, s3=...)`), else the
environment's.

Deletes: S3 answers "deleted" for a key that was not there, so `delete_many` reports such a
key as "deleted", never "gone". Telling them apart would take a HEAD per key, and the clean
executor counts a file already gone as deleted anyway, as Hudi does (apache/hudi#18035).

Retries (S3 at its request limits): every request of either client is retried with exponential
back-off on throttling (503 SlowDown, 429), 5xx answers and dropped or reset connections,
`CLEANLINE_S3_MAX_ATTEMPTS` attempts in all (botocore's standard mode, with jitter; pyarrow's
`AwsDefaultS3RetryStrategy`, not the AWS SDK's standard strategy, which spends a retry quota on
5xx answers and then stops retrying: some hundreds of requests into a run of InternalErrors, a
clean's listings failed). A DeleteObjects request has Cleanline's own rounds on top, for
what botocore does not retry: the keys of its answer's Errors list with a transient code (per key)
and a request that still failed transiently after botocore's attempts (its retry quota spent under
a burst of faults). A key that fails after every round is looked up (HEAD): gone means deleted
(an answer was lost after S3 had deleted it), there means "failed: <reason>". A conditional create
whose first attempt was written but whose answer was lost is recognised on the retry's 412 by
reading the object back: the same bytes are this write's own.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from timeline.exceptions import CleanlineError, FileExists, FileNotFound, StorageError
from timeline.storage.arrow import ArrowStorage, _guard
from timeline.storage.base import FileStatus
from timeline.storage.containment import UnsupportedLocationError, _is_inside, parse_location
from timeline.storage.s3_errors import TRANSIENT_CODES, code_of, reason_of, retried, status_of, transient

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_SECONDS = 120
# Attempts per S3 request (the first included) of botocore, pyarrow and Cleanline's own rounds of
# a DeleteObjects request; requests (DeleteObjects batches, listings) in flight at once per store.
MAX_ATTEMPTS_VARIABLE, CONCURRENCY_VARIABLE = "CLEANLINE_S3_MAX_ATTEMPTS", "CLEANLINE_S3_CONCURRENCY"
DEFAULT_MAX_ATTEMPTS, DEFAULT_CONCURRENCY = 5, 32

# boto3 clients by (process, endpoint, region, attempts, settings' credentials, credential variables).
_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()
_CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")



def _setting(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """A positive whole number from the environment, the default when unset."""
    text = ((os.environ if environ is None else environ).get(name) or "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise S3ConfigError(f"{name}={text!r}: give a whole number of at least 1")
    return value


class S3ConfigError(CleanlineError, ValueError):
    """Per-root S3 settings that cannot be used (bad JSON, an unknown key, a secret inline, an
    environment variable named but unset); the message names the root and the key."""


@dataclass(frozen=True, slots=True)
class S3Settings:
    """Where S3 requests go and who signs them: endpoint (None: AWS's own), region (None:
    looked up); credentials an access key pair (with a session token for temporary ones), or a
    profile of the AWS config files, or neither (the AWS default chain). Secrets stay out of
    `repr`."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    profile: str | None = None

    def __post_init__(self) -> None:
        if bool(self.access_key_id) != bool(self.secret_access_key):
            raise S3ConfigError("an access key id and a secret access key go together: give both or neither")
        if self.session_token and not self.access_key_id:
            raise S3ConfigError("a session token needs an access key id and a secret access key")
        if self.profile and self.access_key_id:
            raise S3ConfigError("give an access key pair or a profile, not both")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> S3Settings:
        env = os.environ if environ is None else environ
        endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip() or None
        region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip() or None
        return cls(endpoint, region)

    def over(self, base: S3Settings) -> S3Settings:
        """These settings, with the endpoint and region they leave unset taken from `base`
        (the environment's); credentials are these if any are set, else `base`'s."""
        signer = self if self.access_key_id or self.profile else base
        return S3Settings(self.endpoint_url or base.endpoint_url, self.region or base.region, signer.access_key_id,
                          signer.secret_access_key, signer.session_token, signer.profile)

    def credentials(self) -> tuple[str, str, str | None] | None:
        """(access key id, secret, session token) to sign with, None for the default chain. A
        profile is read from the AWS config files now (temporary credentials it yields are
        good for the life of the storage object that asked)."""
        if self.access_key_id and self.secret_access_key:
            return self.access_key_id, self.secret_access_key, self.session_token
        if not self.profile:
            return None
        import boto3
        from botocore.exceptions import BotoCoreError

        try:
            found = boto3.session.Session(profile_name=self.profile).get_credentials()
        except BotoCoreError as exc:
            raise StorageError(f"AWS profile {self.profile!r}", reason_of(exc)) from exc
        if found is None:
            raise StorageError(f"AWS profile {self.profile!r}", "holds no credentials")
        frozen = found.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token

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
        credentials = self.credentials()
        if credentials is not None:
            options["access_key"], options["secret_key"] = credentials[:2]
            if credentials[2]:
                options["session_token"] = credentials[2]
        return options


# Keys of one root in `parse_s3_roots`'s JSON. Credentials are named, never given inline.
ROOT_KEYS = ("endpoint_url", "region", "profile", "access_key_id_env", "secret_access_key_env", "session_token_env")
_INLINE_SECRETS = ("access_key_id", "secret_access_key", "session_token", "aws_access_key_id",
                   "aws_secret_access_key", "aws_session_token")


def _root_key(root: str) -> tuple[str, str]:
    """(scheme, bucket/path) of an `s3://`, `s3a://` or `s3n://` root, as `parse_location` gives it."""
    try:
        scheme, path = parse_location(root)
    except UnsupportedLocationError as exc:
        raise S3ConfigError(f"S3 root {root!r}: {exc}") from exc
    if scheme != "s3":
        raise S3ConfigError(f"S3 root {root!r}: not an s3:// URI (s3://bucket or s3://bucket/prefix)")
    return scheme, path


def keyed_s3_roots(roots: Mapping[str, S3Settings]) -> dict[tuple[str, str], S3Settings]:
    """Per-root settings keyed by (scheme, bucket/path), each root checked (S3ConfigError)."""
    keyed: dict[tuple[str, str], S3Settings] = {}
    for root, settings in roots.items():
        key = _root_key(root)
        if key in keyed:
            raise S3ConfigError(f"S3 root {root!r} is given twice")
        keyed[key] = settings
    return keyed


def s3_settings_for(uri: str, environ: Mapping[str, str] | None = None, *,
                    roots: Mapping[str, S3Settings] | None = None) -> S3Settings:
    """The settings an `s3://` (`s3a://`, `s3n://`) URI is opened with: those of the longest
    of `roots` it lies in, over the environment's (`S3Settings.from_environ`); the
    environment's alone when no root holds it."""
    base = S3Settings.from_environ(environ)
    if not roots:
        return base
    try:
        scheme, path = parse_location(uri)
    except UnsupportedLocationError:
        return base
    inside = [(len(root), settings) for (root_scheme, root), settings in keyed_s3_roots(roots).items()
              if root_scheme == scheme and _is_inside(path, root)]
    return max(inside, key=lambda found: found[0])[1].over(base) if inside else base


def parse_s3_roots(text: str, environ: Mapping[str, str] | None = None) -> dict[str, S3Settings]:
    """Per-root settings from JSON: `{"s3://bucket/lake": {"endpoint_url": ..., "region": ...,
    "access_key_id_env": "VAR", "secret_access_key_env": "VAR", "session_token_env": "VAR"}}`
    or `{"profile": "name"}` for credentials; every key optional. Credentials are read from
    the environment variables named (they must be set), so the JSON holds no secret. Empty
    text: no roots. Raises S3ConfigError naming the root and key."""
    if not text.strip():
        return {}
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise S3ConfigError(f"not valid JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise S3ConfigError('give a JSON object: {"s3://bucket/prefix": {"endpoint_url": ..., ...}}')
    env = os.environ if environ is None else environ
    roots: dict[str, S3Settings] = {}
    for root, values in spec.items():
        _root_key(root)
        if not isinstance(values, dict):
            raise S3ConfigError(f"S3 root {root!r}: give an object of settings")
        inline = sorted(set(values) & set(_INLINE_SECRETS))
        if inline:
            raise S3ConfigError(f"S3 root {root!r}: {inline[0]!r} would hold a secret inline; name the "
                                f"environment variable that holds it ({inline[0].removeprefix('aws_')}_env) "
                                "or use a profile")
        unknown = sorted(set(values) - set(ROOT_KEYS))
        if unknown:
            raise S3ConfigError(f"S3 root {root!r}: unknown key {unknown[0]!r} (known: {', '.join(ROOT_KEYS)})")
        if any(not isinstance(v, str) or not v.strip() for v in values.values()):
            raise S3ConfigError(f"S3 root {root!r}: every value must be a non-empty string")
        found = {key: value.strip() for key, value in values.items()}
        endpoint = found.get("endpoint_url")
        parsed = urlparse(endpoint or "")
        if endpoint is not None and (parsed.scheme not in ("http", "https") or not parsed.netloc):
            raise S3ConfigError(f"S3 root {root!r}: endpoint_url {endpoint!r} is not an http:// or https:// URL")
        secrets: dict[str, str | None] = {}
        for name in ("access_key_id", "secret_access_key", "session_token"):
            variable = found.get(f"{name}_env")
            if variable is not None:
                secrets[name] = env.get(variable) or None
                if secrets[name] is None:
                    raise S3ConfigError(f"S3 root {root!r}: {name}_env names {variable}, which is not set")
        try:
            roots[root] = S3Settings(endpoint_url=endpoint, region=found.get("region"), profile=found.get("profile"),
                                     **secrets)
        except S3ConfigError as exc:
            raise S3ConfigError(f"S3 root {root!r}: {exc}") from exc
    keyed_s3_roots(roots)
    return roots


class S3Storage(ArrowStorage):
    """One S3 (or S3-compatible) endpoint; paths are `bucket/key`."""

    io_threads = DEFAULT_CONCURRENCY
    listing_threads = DEFAULT_CONCURRENCY
    delete_batch_size = 1000
    # Rounds of a DeleteObjects request (each of up to `request_attempts` botocore attempts) for
    # the keys S3 answered with a transient per-key error (SlowDown, InternalError) and for a
    # request that failed transiently whole; full jitter over `retry_base_seconds * 2**round`.
    key_retry_attempts = DEFAULT_MAX_ATTEMPTS
    retry_base_seconds = 0.2
    # Attempts per request of botocore (standard mode: throttling, 5xx and connection errors,
    # exponential back-off with jitter) and of pyarrow (the AWS SDK's standard strategy).
    request_attempts = DEFAULT_MAX_ATTEMPTS

    def __init__(self, *, bucket: str = "", scheme: str = "s3", settings: S3Settings | None = None) -> None:
        self.settings = settings or S3Settings.from_environ()
        attempts = _setting(MAX_ATTEMPTS_VARIABLE, DEFAULT_MAX_ATTEMPTS)
        concurrency = _setting(CONCURRENCY_VARIABLE, DEFAULT_CONCURRENCY)
        self.request_attempts = self.key_retry_attempts = attempts
        self.io_threads = self.listing_threads = concurrency
        options = {**self.settings.arrow_options(bucket),
                   "retry_strategy": pafs.AwsDefaultS3RetryStrategy(max_attempts=attempts)}
        fs = _guard(f"{scheme}://{bucket}", lambda: pafs.S3FileSystem(**options))
        super().__init__(fs, scheme=scheme, netloc=bucket)
        self._client: Any = None

    @classmethod
    def from_uri(cls, uri: str, *, settings: S3Settings | None = None) -> S3Storage:
        """The store of an `s3://`, `s3a://` or `s3n://` URI, with `settings` as given or else
        the environment's (`S3Settings.from_environ`); `uri()` keeps that scheme, so paths
        Cleanline writes into plans name the table as its writers do."""
        parsed = urlparse(uri)
        return cls(bucket=parsed.netloc, scheme=parsed.scheme.lower() or "s3", settings=settings)

    @property
    def client(self) -> Any:
        """The boto3 S3 client for these settings (boto3 clients are thread-safe; building
        one takes a tenth of a second, so one per process and configuration is kept)."""
        if self._client is None:
            settings = self.settings
            endpoint = settings.endpoint_url
            if endpoint and "://" not in endpoint:
                endpoint = f"https://{endpoint}"
            region = settings.region or self.fs.region or None
            key = (os.getpid(), endpoint, region, self.request_attempts, settings.access_key_id,
                   settings.secret_access_key, settings.session_token, settings.profile,
                   *(os.environ.get(name) for name in _CREDENTIAL_VARIABLES))
            with _CLIENTS_LOCK:
                if key not in _CLIENTS:
                    import boto3
                    from botocore.config import Config

                    config = Config(retries={"mode": "standard", "total_max_attempts": self.request_attempts},
                                    max_pool_connections=max(self.io_threads, self.listing_threads) + 4,
                                    connect_timeout=10, read_timeout=REQUEST_TIMEOUT_SECONDS)
                    # a profile (found when the store was made) outranks AWS_* credential variables
                    session = boto3.session.Session(profile_name=settings.profile)
                    _CLIENTS[key] = session.client("s3", endpoint_url=endpoint, region_name=region, config=config,
                                                   aws_access_key_id=settings.access_key_id,
                                                   aws_secret_access_key=settings.secret_access_key,
                                                   aws_session_token=settings.session_token)
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
            if code_of(exc) in ("NoSuchKey", "404", "NotFound"):
                raise FileNotFound(path) from exc
            raise StorageError(path, reason_of(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, reason_of(exc)) from exc

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
            code, status = code_of(exc), status_of(exc)
            if not overwrite and (status in (412, 409) or code in ("PreconditionFailed",
                                                                    "ConditionalRequestConflict")):
                if retried(exc) and self._holds(bucket, key, data):
                    return  # an earlier attempt of this write created it; its answer was lost
                raise FileExists(path) from exc
            if not overwrite and (status == 501 or code == "NotImplemented"):
                if self.exists(path):
                    raise FileExists(path) from exc
                self.write(path, data, overwrite=True)
                return
            raise StorageError(path, reason_of(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, reason_of(exc)) from exc

    def _holds(self, bucket: str, key: str, data: bytes) -> bool:
        """Whether the object holds exactly `data` (False when it cannot be read)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return bytes(self.client.get_object(Bucket=bucket, Key=key)["Body"].read()) == data
        except (ClientError, BotoCoreError):
            return False

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
            if status_of(exc) == 404 and code_of(exc) in ("404", "NoSuchKey", "NotFound"):
                return False
            raise StorageError(path, reason_of(exc)) from exc
        except BotoCoreError as exc:
            raise StorageError(path, reason_of(exc)) from exc
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except (ClientError, BotoCoreError) as exc:
            raise StorageError(path, reason_of(exc)) from exc
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
            raise StorageError(path, reason_of(exc)) from exc
        return found

    def delete_many(self, paths: Iterable[str]) -> dict[str, str]:
        """`DeleteObjects`, `delete_batch_size` keys a request, one request after another
        (callers run several calls at once for parallelism). Keys S3 refuses (AccessDenied,
        ...) are "failed: <code>: <message>"; a request that fails whole for good (no such
        bucket) fails each of its keys; transient failures are retried (`_delete_batch`) and a
        key "failed" after them is still on S3 or could not be looked up. Never raises."""
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
        """One DeleteObjects request (key -> path), repeated in rounds with back-off and full
        jitter for the keys that got a transient per-key error and for a request that failed
        transiently whole (botocore retried it `request_attempts` times already). Keys still
        failing after `key_retry_attempts` rounds are looked up (`_settle`): never "deleted"
        unless S3 no longer holds them."""
        from botocore.exceptions import BotoCoreError, ClientError

        results: dict[str, str] = {}
        reasons: dict[str, str] = {}
        for attempt in range(self.key_retry_attempts):
            if attempt:
                time.sleep(random.uniform(0, self.retry_base_seconds * 2 ** attempt))  # full jitter
            try:
                response = self.client.delete_objects(
                    Bucket=bucket, Delete={"Objects": [{"Key": key} for key in pending], "Quiet": True})
            except (ClientError, BotoCoreError) as exc:
                reason = reason_of(exc)
                log.warning("s3://%s: DeleteObjects of %d keys failed (round %d of %d): %s", bucket, len(pending),
                            attempt + 1, self.key_retry_attempts, reason)
                if not transient(exc):
                    results.update((path, f"failed: {reason}") for path in pending.values())
                    return results
                reasons = dict.fromkeys(pending, reason)
                continue
            retry: dict[str, str] = {}
            reasons = {}
            for error in response.get("Errors") or ():
                key = error.get("Key", "")
                if key not in pending:
                    continue
                code, message = error.get("Code", ""), error.get("Message", "")
                reason = f"{code}: {message}" if message else code
                if code in TRANSIENT_CODES:
                    retry[key], reasons[key] = pending[key], reason
                else:
                    results[pending[key]] = f"failed: {reason}"
            for key, path in pending.items():
                if key not in retry and path not in results:
                    results[path] = "deleted"
            pending = retry
            if not pending:
                return results
        results.update(self._settle(bucket, pending, reasons))
        return results

    def _settle(self, bucket: str, pending: dict[str, str], reasons: dict[str, str]) -> dict[str, str]:
        """Keys (key -> path) that still failed after every round: a HEAD each (itself retried).
        A key S3 no longer holds was deleted (a round's answer was lost after S3 acted on it);
        one it holds, or that cannot be looked up, failed with the last reason."""
        from botocore.exceptions import BotoCoreError, ClientError

        results: dict[str, str] = {}
        for key, path in pending.items():
            reason = f"{reasons.get(key) or 'no answer'} (after {self.key_retry_attempts} rounds)"
            try:
                self.client.head_object(Bucket=bucket, Key=key)
            except ClientError as exc:
                if status_of(exc) == 404:
                    results[path] = "deleted"
                    continue
                reason += f"; and it could not be looked up: {reason_of(exc)}"
            except BotoCoreError as exc:
                reason += f"; and it could not be looked up: {reason_of(exc)}"
            results[path] = f"failed: {reason}"
        log.warning("s3://%s: %d of %d keys still there after %d DeleteObjects rounds", bucket,
                    sum(r.startswith("failed") for r in results.values()), len(pending), self.key_retry_attempts)
        return results
