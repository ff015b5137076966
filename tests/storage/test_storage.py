"""One contract for every Storage backend: memory, local (os) and generic pyarrow.fs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from tests.storage.helpers import (
    delete_says_whether_the_file_was_there,
    missing_paths_raise_file_not_found_naming_the_path,
    side_files_are_never_listed,
    write_is_create_if_absent,
    write_read_list_and_status,
)
from timeline.exceptions import StorageError
from timeline.storage import MemoryStorage, Storage, storage_for
from timeline.storage.arrow import ArrowStorage, LocalStorage


@pytest.fixture(params=["memory", "local", "arrow"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Storage, str]:
    backends: dict[str, Callable[[], Storage]] = {
        "memory": MemoryStorage, "local": LocalStorage, "arrow": lambda: ArrowStorage(pafs.LocalFileSystem()),
    }
    root = "/root-of-test" if request.param == "memory" else str(tmp_path)
    return backends[request.param](), root


def test_storage_write_read_list_and_status(store: tuple[Storage, str]) -> None:
    write_read_list_and_status(store)


def test_storage_list_unsized_leaves_sizes_unknown_only_where_each_costs_a_call(store: tuple[Storage, str]) -> None:
    """A local disk answers a listing without sizes (one stat per file saved): size and time are
    -1; the other backends have them anyway and return what `list` does. Names and file types
    are the same either way."""
    storage, root = store
    storage.write(f"{root}/a/one.parquet", b"12345")
    storage.makedirs(f"{root}/a/sub")
    unsized = {s.name: (s.size, s.mtime_ms, s.is_dir) for s in storage.list_unsized(f"{root}/a")}
    if isinstance(storage, LocalStorage):
        assert unsized == {"one.parquet": (-1, -1, False), "sub": (-1, -1, True)}
    else:
        assert unsized == {s.name: (s.size, s.mtime_ms, s.is_dir) for s in storage.list(f"{root}/a")}
    walked = dict(storage.walk(f"{root}/a", lambda folder, entries: (), sizes=False))
    assert {s.name for s in walked[f"{root}/a"]} == {"one.parquet", "sub"}


def test_storage_side_files_are_never_listed(store: tuple[Storage, str]) -> None:
    side_files_are_never_listed(store)


def test_storage_write_is_create_if_absent(store: tuple[Storage, str]) -> None:
    write_is_create_if_absent(store)


def test_storage_delete_says_whether_the_file_was_there(store: tuple[Storage, str]) -> None:
    delete_says_whether_the_file_was_there(store)


def test_storage_missing_paths_raise_file_not_found_naming_the_path(store: tuple[Storage, str]) -> None:
    missing_paths_raise_file_not_found_naming_the_path(store)


def test_storage_local_errors_are_library_errors(tmp_path: Path) -> None:
    storage = LocalStorage()
    (tmp_path / "file").write_bytes(b"1")
    with pytest.raises(StorageError, match="file"):
        storage.list(str(tmp_path / "file"))
    with pytest.raises(StorageError, match="folder"):
        storage.read(str(tmp_path))


def test_storage_arrow_errors_are_library_errors_and_others_pass_through() -> None:
    """pyarrow is imported only where it is used; its errors still become StorageError naming
    the path, and an error that is not the store's (a bug) is not disguised as one."""
    import pyarrow as pa

    from timeline.storage.arrow import _guard

    def invalid() -> None:
        raise pa.ArrowInvalid("unreadable footer")

    with pytest.raises(StorageError, match="/t/x.parquet: unreadable footer"):
        _guard("/t/x.parquet", invalid)

    def bug() -> None:
        raise ValueError("not the store's")

    with pytest.raises(ValueError, match="not the store's"):
        _guard("/t/x.parquet", bug)


def test_storage_memory_permission_denied() -> None:
    storage = MemoryStorage()
    storage.write("/t/secret/a", b"1")
    storage.denied.add("/t/secret")
    with pytest.raises(StorageError, match="permission denied"):
        storage.read("/t/secret/a")
    with pytest.raises(StorageError, match="permission denied"):
        storage.list("/t/secret")


def test_storage_for_chooses_backend_by_scheme(tmp_path: Path) -> None:
    local, path = storage_for(str(tmp_path / "t"))
    assert isinstance(local, LocalStorage) and path == str(tmp_path / "t")
    assert local.uri(path) == f"file:{tmp_path}/t" and local.path_of(local.uri(path)) == path
    same, path2 = storage_for(f"file://{tmp_path}/t/")
    assert isinstance(same, LocalStorage) and path2 == path
    memory, mpath = storage_for("memory://lake/tables/t")
    assert memory is MemoryStorage.named("lake") and mpath == "/tables/t"
    with pytest.raises(StorageError, match="unsupported URI scheme"):
        storage_for("ftp://host/t")


def test_storage_object_store_uris_map_to_pyarrow_paths() -> None:
    # A cloud store cannot be reached here; the path mapping is what differs by scheme.
    s3 = ArrowStorage(pafs.LocalFileSystem(), scheme="s3")
    assert s3.uri("bucket/lake/t/f.parquet") == "s3://bucket/lake/t/f.parquet"
    assert s3.path_of("s3a://bucket/lake/t/f.parquet") == "bucket/lake/t/f.parquet"
    hdfs = ArrowStorage(pafs.LocalFileSystem(), scheme="hdfs", netloc="nn:8020")
    assert hdfs.uri("/lake/t") == "hdfs://nn:8020/lake/t"
    assert hdfs.path_of("hdfs://nn:8020/lake/t") == "/lake/t"


@pytest.mark.parametrize("backend", [LocalStorage, lambda: ArrowStorage(pafs.LocalFileSystem())],
                         ids=["local", "arrow"])
def test_storage_arrow_ipc_files_are_read_mapped_and_a_damaged_one_is_a_library_error(
        tmp_path: Path, backend: Callable[[], ArrowStorage]) -> None:
    """An Arrow IPC file (a plan store's names file) reads back whole; an empty or truncated one
    is a StorageError naming it (the local backend maps files: an empty one cannot be mapped)."""
    import pyarrow as pa

    store, table = backend(), pa.table({"file_name": ["a.parquet", "b.parquet"]})
    store.write_arrow(str(tmp_path / "names.arrow"), table)
    assert store.read_arrow(str(tmp_path / "names.arrow")).equals(table)
    (tmp_path / "empty.arrow").write_bytes(b"")
    (tmp_path / "cut.arrow").write_bytes((tmp_path / "names.arrow").read_bytes()[:40])
    for damaged in ("empty.arrow", "cut.arrow"):
        with pytest.raises(StorageError, match=damaged):
            store.read_arrow(str(tmp_path / damaged))
