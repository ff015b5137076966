"""The storage registry: which backend opens a URI or local path, by scheme. It stands above
the backends (`arrow`, `memory`, `s3`), which it imports in the function that needs each (an
`s3://` table loads boto3, a local table no pyarrow file system); the interface in `base` knows
none of them."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from timeline.exceptions import StorageError
from timeline.storage.base import FolderIdentity, Storage

if TYPE_CHECKING:
    from timeline.storage.s3 import S3Settings


def storage_for(uri: str, *, s3: S3Settings | None = None, anchored: FolderIdentity | None = None
                ) -> tuple[Storage, str]:
    """The backend for a URI or local path, and the path of the URI inside it.

    Local paths and `file://` use the local file system; `s3://`, `s3a://` and `s3n://` use
    `S3Storage` (pyarrow.fs plus batched deletes, with `s3` as given, else the `AWS_*`
    variables; a table's root settings are chosen by `HudiTable.open`, see
    `timeline/storage/s3.py` and `timeline/roots.py`); `gs://`, `gcs://` and `hdfs://` go through pyarrow.fs;
    `memory://name/...` is a process-wide in-memory store for tests and demos.

    `anchored`: the identity of the table's folder at `uri` (`HudiTable.ensure_located`): a worker
    of a run (a Spark executor) holds the same folder, and every change it makes goes through it
    (`Storage.anchor`).
    """
    storage, path = _storage_for(uri, s3)
    if anchored is not None:
        storage.anchor(path, uri, anchored)
    return storage, path


def _storage_for(uri: str, s3: S3Settings | None) -> tuple[Storage, str]:
    from timeline.storage.arrow import ArrowStorage, LocalStorage
    from timeline.storage.memory import MemoryStorage

    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    if scheme == "" or len(scheme) == 1:
        return LocalStorage(), posixpath.abspath(uri).rstrip("/") or "/"
    if scheme == "file":
        return LocalStorage(), posixpath.normpath(parsed.path or "/")
    if scheme == "memory":
        return MemoryStorage.named(parsed.netloc), parsed.path.rstrip("/") or "/"
    if scheme in ("s3", "s3a", "s3n", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss"):
        if scheme in ("s3", "s3a", "s3n"):
            from timeline.storage.s3 import S3Storage

            storage: Storage = S3Storage.from_uri(uri, settings=s3)
        else:
            storage = ArrowStorage.from_uri(uri)
        return storage, storage.path_of(uri).rstrip("/")
    raise StorageError(uri, f"unsupported URI scheme {parsed.scheme!r}")
