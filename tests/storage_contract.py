"""The contract every Storage backend keeps (tests/storage/test_storage.py runs it on memory, local disk
and pyarrow.fs; tests/storage/test_s3.py on the S3 server): each check takes the storage and a root."""

from __future__ import annotations

import pytest

from timeline.exceptions import FileExists, FileNotFound
from timeline.storage import Storage


def write_read_list_and_status(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/a/one.parquet", b"12345")
    storage.write(f"{root}/a/b/two.log", b"xy")
    storage.makedirs(f"{root}/a/empty")
    assert storage.read(f"{root}/a/one.parquet") == b"12345"
    listing = {s.name: (s.size, s.is_dir) for s in storage.list(f"{root}/a")}
    assert listing == {"one.parquet": (5, False), "b": (0, True), "empty": (0, True)}
    assert sorted((s.name, s.size) for s in storage.list_recursive(root)) == [("one.parquet", 5), ("two.log", 2)]
    status = storage.status(f"{root}/a/one.parquet")
    assert status.size == 5 and not status.is_dir and status.mtime_ms > 0
    assert storage.exists(f"{root}/a/b") and not storage.exists(f"{root}/nope")


def write_is_create_if_absent(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/x", b"first")
    with pytest.raises(FileExists) as raised:
        storage.write(f"{root}/x", b"second")
    assert f"{root}/x" in str(raised.value)
    assert storage.read(f"{root}/x") == b"first"
    storage.write(f"{root}/x", b"third", overwrite=True)
    assert storage.read(f"{root}/x") == b"third"


def delete_says_whether_the_file_was_there(store: tuple[Storage, str]) -> None:
    storage, root = store
    storage.write(f"{root}/d/f", b"1")
    assert storage.delete(f"{root}/d/f") is True
    assert storage.delete(f"{root}/d/f") is False
    storage.write(f"{root}/p/q/r", b"1")
    assert storage.delete_dir(f"{root}/p") is True
    assert not storage.exists(f"{root}/p/q/r")
    assert storage.delete_dir(f"{root}/p") is False


def missing_paths_raise_file_not_found_naming_the_path(store: tuple[Storage, str]) -> None:
    storage, root = store
    for call in (lambda: storage.read(f"{root}/missing"), lambda: storage.list(f"{root}/missing"),
                 lambda: list(storage.list_recursive(f"{root}/missing")), lambda: storage.status(f"{root}/missing")):
        with pytest.raises(FileNotFound) as raised:
            call()
        assert f"{root}/missing" in str(raised.value)
