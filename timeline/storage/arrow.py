"""pyarrow.fs backend for every URI scheme, with a fast local subclass."""

from __future__ import annotations

import builtins
import errno
import functools
import mmap
import os
import posixpath
import shutil
import stat
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar
from urllib.parse import urlparse

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.storage.anchor import AnchoredFolder, file_name, unlink_each
from timeline.storage.base import FileStatus, FolderIdentity, Storage

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs


# pyarrow is imported where it is used: the local file system is served by `os`, so a command such
# as `cleanline clean plan` on a local table never loads it (the plan store and object stores do).
def _pa() -> Any:
    import pyarrow

    return pyarrow


def _pafs() -> Any:
    import pyarrow.fs

    return pyarrow.fs


def _arrow_errors() -> tuple[type[BaseException], ...]:
    """pyarrow's own error class once pyarrow is loaded (nothing raises it before)."""
    arrow = sys.modules.get("pyarrow")
    return (arrow.ArrowException,) if arrow is not None else ()

T = TypeVar("T")


def _guard(path: str, call: Callable[[], T]) -> T:
    """Run a backend call, turning its exceptions into the library's, naming `path`."""
    try:
        return call()
    except FileNotFoundError as exc:
        raise FileNotFound(path) from exc
    except FileExistsError as exc:
        raise FileExists(path) from exc
    except PermissionError as exc:
        raise StorageError(path, "permission denied") from exc
    except IsADirectoryError as exc:
        raise StorageError(path, "is a folder, not a file") from exc
    except NotADirectoryError as exc:
        raise StorageError(path, "is a file, not a folder") from exc
    except Exception as exc:
        if not isinstance(exc, (OSError, *_arrow_errors())):
            raise
        raise StorageError(path, str(exc) or type(exc).__name__) from exc


def _status(info: pafs.FileInfo) -> FileStatus:
    mtime = info.mtime_ns // 1_000_000 if info.mtime_ns is not None else 0
    is_dir = info.type == _pafs().FileType.Directory
    return FileStatus(info.path, info.base_name, 0 if is_dir else (info.size or 0), mtime, is_dir)


class ArrowStorage(Storage):
    """Any file system pyarrow.fs knows (S3, GCS, HDFS, local)."""

    # Remote stores answer each folder listing in a round trip: list many at once.
    listing_threads = 16

    def __init__(self, fs: pafs.FileSystem, *, scheme: str = "", netloc: str = "") -> None:
        self.fs = fs
        self.scheme = scheme
        self.netloc = netloc

    @classmethod
    def from_uri(cls, uri: str) -> ArrowStorage:
        parsed = urlparse(uri)
        scheme = {"s3a": "s3", "gcs": "gs"}.get(parsed.scheme, parsed.scheme)
        normalised = uri.replace(f"{parsed.scheme}://", f"{scheme}://", 1)
        fs, _ = _guard(uri, lambda: _pafs().FileSystem.from_uri(normalised))
        return cls(fs, scheme=scheme, netloc=parsed.netloc)

    def uri(self, path: str) -> str:
        if self.scheme in ("hdfs", "viewfs"):
            return f"{self.scheme}://{self.netloc}{path}"
        return f"{self.scheme}://{path}"

    def path_of(self, uri: str) -> str:
        parsed = urlparse(uri)
        if parsed.scheme in ("hdfs", "viewfs"):
            return parsed.path
        return super().path_of(uri)

    def _list(self, path: str) -> list[FileStatus]:
        infos = _guard(path, lambda: self.fs.get_file_info(_pafs().FileSelector(path)))
        return [_status(info) for info in infos]

    def _list_recursive(self, path: str) -> Iterator[FileStatus]:
        selector = _pafs().FileSelector(path, recursive=True)
        for info in _guard(path, lambda: self.fs.get_file_info(selector)):
            if info.type == _pafs().FileType.File:
                yield _status(info)

    def read(self, path: str) -> bytes:
        def call() -> bytes:
            with self.fs.open_input_stream(path) as stream:
                return bytes(stream.read())

        return _guard(path, call)

    def reader(self, path: str) -> BinaryIO:
        return _guard(path, lambda: self.fs.open_input_file(path))  # type: ignore[no-any-return]  # pyarrow has no stubs

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        if not overwrite and self.exists(path):
            raise FileExists(path)
        parent = posixpath.dirname(path)

        def call() -> None:
            if parent:
                self.fs.create_dir(parent, recursive=True)
            with self.fs.open_output_stream(path) as stream:
                stream.write(data)

        _guard(path, call)

    def delete(self, path: str) -> bool:
        try:
            _guard(path, lambda: self.fs.delete_file(path))
        except FileNotFound:
            return False
        return True

    def delete_dir(self, path: str) -> bool:
        try:
            _guard(path, lambda: self.fs.delete_dir(path))
        except FileNotFound:
            return False
        return True

    def status(self, path: str) -> FileStatus:
        info = _guard(path, lambda: self.fs.get_file_info(path))
        if info.type == _pafs().FileType.NotFound:
            raise FileNotFound(path)
        return _status(info)

    def exists(self, path: str) -> bool:
        info = _guard(path, lambda: self.fs.get_file_info(path))
        return bool(info.type != _pafs().FileType.NotFound)

    def makedirs(self, path: str) -> None:
        _guard(path, lambda: self.fs.create_dir(path, recursive=True))

    # Parquet files of Cleanline's own (plan stores: timeline/internal/plan_store/__init__.py)

    def write_parquet(self, path: str, table: pa.Table, **options: Any) -> None:
        """Write a whole Parquet file (`options`: `pyarrow.parquet.write_table`'s), replacing
        any (an object store's upload is all or nothing)."""
        import pyarrow.parquet as pq  # here, not at import: the CLI starts without it

        _guard(path, lambda: pq.write_table(table, path, filesystem=self.fs, **options))

    def read_parquet(self, path: str, *, columns: builtins.list[str] | None = None,
                     where: pc.Expression | None = None) -> pa.Table:
        """A Parquet file's rows (`columns` of them) that satisfy `where`."""
        import pyarrow.parquet as pq

        return _guard(path, lambda: pq.read_table(path, filesystem=self.fs, columns=columns, filters=where))

    def write_arrow(self, path: str, table: pa.Table) -> None:
        """Write a table as an uncompressed Arrow IPC file, replacing any."""
        def call() -> None:
            with self.fs.open_output_stream(path) as out, _pa().ipc.new_file(out, table.schema) as writer:
                writer.write_table(table)

        _guard(path, call)

    def read_arrow(self, path: str) -> pa.Table:
        """An Arrow IPC file's table."""
        def call() -> pa.Table:
            with self.fs.open_input_file(path) as source:
                return _pa().ipc.open_file(source).read_all()

        return _guard(path, call)

    def parquet_dataset(self, paths: builtins.list[str], schema: pa.Schema) -> ds.Dataset:
        """Parquet files read as one dataset (scanned with threads)."""
        import pyarrow.dataset as ds

        where = paths[0] if paths else ""
        return _guard(where, lambda: ds.dataset(paths, filesystem=self.fs, format="parquet", schema=schema))


_NOT_PLAIN = ("", ".", "..")  # a path's last component that names no file in its folder


class LocalStorage(ArrowStorage):
    """The local file system. Listing uses `os.scandir` (the hot path of every file-system
    view) and writes are exclusive creates, so create-if-absent holds between processes."""

    # Deletes wait on system calls but the work around them holds the GIL: a few threads.
    io_threads = 2 * (os.cpu_count() or 1)
    listing_threads = 1  # os.scandir is faster than a hand-off between threads
    cpu_bound_listing = True  # a stat per file: processes list a large table faster (the GIL)
    delete_batch_size = 1000  # delete_many is a tight unlink loop: a clean task takes this many

    def delete_many(self, paths: Iterable[str]) -> dict[str, str]:
        results: dict[str, str] = {}
        if self._anchors:
            anchored: dict[AnchoredFolder, dict[tuple[str, ...], list[tuple[str, str]]]] = {}
            # A folder's place is found once (a batch is mostly one folder): a path that ends in a
            # plain name lies in the folder where its folder's first such path does.
            places: dict[str, list[tuple[str, str]]] = {}
            loose = []
            for path in paths:
                head, _, name = path.rpartition("/")
                files = places.get(head)
                if files is not None and name not in _NOT_PLAIN:
                    files.append((path, name))
                    continue
                found = self._anchored(path)
                if found is None:
                    loose.append(path)
                    continue
                folder, parts = found
                files = anchored.setdefault(folder, {}).setdefault(parts[:-1], [])
                files.append((path, file_name(parts, path)))
                if name not in _NOT_PLAIN:
                    places[head] = files
            for folder, by_folder in anchored.items():
                results.update(folder.unlink_in(by_folder))
            paths = loose
        unlink_each(((path, path) for path in paths), results)
        return results

    def __init__(self) -> None:  # no pyarrow file system until one is asked for (`fs`)
        self.scheme = "file"
        self.netloc = ""
        self._anchors: list[AnchoredFolder] = []  # the tables whose changes go through handles (`anchor`)

    def anchor(self, base: str, table_uri: str, expected: FolderIdentity | None = None, *,
               alias: str | None = None) -> FolderIdentity | None:
        folder = AnchoredFolder(base, table_uri, expected, alias=alias)
        for old in [a for a in self._anchors if a.path == folder.path]:
            self._anchors.remove(old)
            old.close()
        self._anchors.append(folder)
        return folder.identity

    def release(self) -> None:
        anchors, self._anchors = self._anchors, []
        for folder in anchors:
            folder.close()

    def stat_names(self, folder: str, names: Collection[str]) -> builtins.list[os.stat_result | None] | None:
        found = self._anchored(folder.rstrip("/") + "/-") if self._anchors else None  # a name in it: its parts
        return None if found is None else found[0].stat_names(found[1][:-1], names)

    def delete_names(self, folder: str, names: Sequence[str]) -> builtins.list[str]:
        found = self._anchored(folder.rstrip("/") + "/-") if self._anchors else None  # a name in it: its parts
        return super().delete_names(folder, names) if found is None else found[0].unlink_names(found[1][:-1], names)

    def _anchored(self, path: str) -> tuple[AnchoredFolder, tuple[str, ...]] | None:
        """The anchored table folder `path` lies in and its components below it, or None."""
        for folder in self._anchors:
            parts = folder.relative(path)
            if parts is not None:
                return folder, parts
        return None

    @functools.cached_property
    def fs(self) -> pafs.FileSystem:
        """pyarrow's local file system, for the Parquet readers (read_parquet, parquet_dataset)."""
        return _pafs().LocalFileSystem()

    def uri(self, path: str) -> str:
        return f"file:{path}"

    def resolve(self, path: str) -> str:
        return os.path.realpath(path)

    def symlinks(self, folder: str) -> frozenset[str]:
        try:
            with os.scandir(folder) as entries:  # file types from the directory itself, no stat each
                return frozenset(e.name for e in entries if e.is_symlink())
        except FileNotFoundError:
            return frozenset()

    def path_of(self, uri: str) -> str:
        if uri.startswith("file:/") and not uri.startswith("file://"):
            return uri[5:]  # the form `uri` writes and Hudi uses for local tables
        return super().path_of(uri)

    def _list(self, path: str) -> list[FileStatus]:
        return _guard(path, lambda: _scan(path))

    def _list_unsized(self, path: str) -> builtins.list[FileStatus]:
        return _guard(path, lambda: _scan_names(path))

    def _list_only(self, path: str, names: Collection[str]) -> builtins.list[FileStatus]:
        return _guard(path, lambda: _scan_only(path, names))

    def _list_names(self, path: str) -> builtins.list[str]:
        return _guard(path, lambda: os.listdir(path))

    def sizes_of(self, paths: Iterable[str]) -> dict[str, int]:
        """A stat per file: cheaper on a local disk than listing folders that hold files kept."""
        found: dict[str, int] = {}
        lstat = os.lstat
        for path in paths:
            try:
                found[path] = lstat(path).st_size
            except OSError:
                continue
        return found

    def _list_recursive(self, path: str) -> Iterator[FileStatus]:
        stack = [path]
        while stack:
            folder = stack.pop()
            for status in _guard(folder, partial(_scan, folder)):
                if status.is_dir:
                    stack.append(status.path)
                else:
                    yield status

    def read(self, path: str) -> bytes:
        def call() -> bytes:
            with open(path, "rb") as handle:
                return handle.read()

        return _guard(path, call)

    def reader(self, path: str) -> BinaryIO:
        return _guard(path, lambda: open(path, "rb"))  # noqa: SIM115 (the caller closes it)

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        found = self._anchored(path) if self._anchors else None
        if found is not None:
            found[0].write(found[1], data, overwrite=overwrite)
            return

        def call() -> None:
            os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
            with open(path, "wb" if overwrite else "xb") as handle:
                handle.write(data)

        _guard(path, call)

    def write_parquet(self, path: str, table: pa.Table, **options: Any) -> None:
        """Locally through a temporary file renamed into place: a reader never sees half a file."""
        import pyarrow.parquet as pq

        self._write_replacing(path, lambda temporary: pq.write_table(table, temporary, **options))

    def write_arrow(self, path: str, table: pa.Table) -> None:
        """Through a temporary file renamed into place, as `write_parquet`."""
        def write(temporary: str | BinaryIO) -> None:
            with _pa().ipc.new_file(temporary, table.schema) as writer:
                writer.write_table(table)

        self._write_replacing(path, write)

    def _write_replacing(self, path: str, write: Callable[[str | BinaryIO], None]) -> None:
        found = self._anchored(path) if self._anchors else None
        if found is None:
            _write_replacing(path, write)
        else:
            found[0].write_replacing(found[1], write, f"{found[1][-1]}.{os.getpid()}.{id(write):x}.tmp")

    def read_arrow(self, path: str) -> pa.Table:
        """Memory-mapped: the table's buffers are the file's pages, nothing is copied (Python's
        mmap, which maps a file about three times faster than pyarrow's `memory_map`: a plan's
        search opens one names file per part)."""
        def call() -> pa.Table:
            with open(path, "rb") as source:
                if not os.fstat(source.fileno()).st_size:
                    raise StorageError(path, "an empty file is no Arrow IPC file")
                mapped = mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
            return _pa().ipc.open_file(_pa().py_buffer(mapped)).read_all()

        return _guard(path, call)

    def delete(self, path: str) -> bool:
        found = self._anchored(path) if self._anchors else None
        if found is not None:
            return found[0].unlink(found[1])
        try:
            _guard(path, lambda: os.unlink(path))
        except FileNotFound:
            return False
        return True

    def delete_dir(self, path: str) -> bool:
        found = self._anchored(path) if self._anchors else None
        if found is not None:
            return found[0].rmtree(found[1])
        if not os.path.isdir(path):
            return False
        _guard(path, lambda: shutil.rmtree(path))
        return True

    def status(self, path: str) -> FileStatus:
        st = _guard(path, lambda: os.stat(path))
        is_dir = stat.S_ISDIR(st.st_mode)
        return FileStatus.at(path, 0 if is_dir else st.st_size, st.st_mtime_ns // 1_000_000, is_dir)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def makedirs(self, path: str) -> None:
        found = self._anchored(path) if self._anchors else None
        if found is not None:
            found[0].makedirs(found[1])
            return

        def call() -> None:
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as exc:
                if exc.errno != errno.EEXIST:
                    raise

        _guard(path, call)


    def set_modification_time(self, path: str, mtime_ms: int) -> bool:
        _guard(path, lambda: os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000)))
        return True

    def linked_copy(self, source: str, target: str, *, copied: str) -> None:
        def link(from_path: str, to_path: str) -> None:
            try:
                os.link(from_path, to_path)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK):
                    raise
                os.symlink(from_path, to_path)

        def call() -> None:
            os.makedirs(target)
            shutil.copytree(os.path.join(source, copied), os.path.join(target, copied), symlinks=True,
                            copy_function=shutil.copy2)
            for root, dirs, files in os.walk(source):
                relative = os.path.relpath(root, source)
                if relative == ".":
                    dirs[:] = [d for d in dirs if d != copied]
                into = os.path.normpath(os.path.join(target, relative))
                os.makedirs(into, exist_ok=True)
                for name in files:
                    link(os.path.join(root, name), os.path.join(into, name))

        _guard(source, call)


def _write_replacing(path: str, write: Callable[[str | BinaryIO], None]) -> None:
    """`write` a local file at a temporary name beside `path`, then rename it into place (a
    reader never sees half a file); the temporary file is removed if anything fails."""
    temporary = f"{path}.{os.getpid()}.{id(write):x}.tmp"

    def call() -> None:
        os.makedirs(os.path.dirname(path) or "/", exist_ok=True)
        write(temporary)
        os.replace(temporary, path)

    try:
        _guard(path, call)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _scan(path: str) -> list[FileStatus]:
    """One folder's entries; the loop is inlined because it runs once per file of a table."""
    result: list[FileStatus] = []
    add, new = result.append, tuple.__new__  # FileStatus without its Python-level __new__
    with os.scandir(path) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            is_dir = entry.is_dir(follow_symlinks=False)
            size = 0 if is_dir else st.st_size
            add(new(FileStatus, (entry.path, entry.name, size, st.st_mtime_ns // 1_000_000, is_dir)))
    return result


def _scan_only(path: str, names: Collection[str]) -> list[FileStatus]:
    """`_scan` of the entries named in `names`: a stat for those alone, relative to the folder's
    handle (no path resolved again per file)."""
    result: list[FileStatus] = []
    add, new, stat_of = result.append, tuple.__new__, os.stat
    prefix = path if path.endswith("/") else path + "/"
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                name = entry.name
                if name in names:
                    st = stat_of(name, dir_fd=fd, follow_symlinks=False)
                    is_dir = stat.S_ISDIR(st.st_mode)
                    add(new(FileStatus, (prefix + name, name, 0 if is_dir else st.st_size,
                                         st.st_mtime_ns // 1_000_000, is_dir)))
    finally:
        os.close(fd)
    return result


def _scan_names(path: str) -> list[FileStatus]:
    """`_scan` without a stat per entry: the file type comes from the folder itself (d_type);
    size and modification time are -1 (unknown)."""
    new = tuple.__new__
    with os.scandir(path) as entries:
        return [new(FileStatus, (e.path, e.name, -1, -1, e.is_dir(follow_symlinks=False))) for e in entries]
