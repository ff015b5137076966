"""The storage interface. Paths are posix strings in the backend's own namespace."""

from __future__ import annotations

import builtins
import io
import os
import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from typing import BinaryIO, NamedTuple
from urllib.parse import urlparse

from timeline.exceptions import StorageError


class FileStatus(NamedTuple):
    """One entry of a listing: a file or a folder. A NamedTuple rather than a frozen
    dataclass: a table listing makes one per file, and this is three times cheaper to build."""

    path: str
    name: str
    size: int
    mtime_ms: int
    is_dir: bool = False

    @classmethod
    def at(cls, path: str, size: int, mtime_ms: int, is_dir: bool = False) -> FileStatus:
        return cls(path, posixpath.basename(path), size, mtime_ms, is_dir)


# Side files: files beside a table's files that are none of Hudi's and that Hudi's listings never
# see. Hadoop's local file system, through which Hudi's HoodieHadoopStorage writes, is a
# ChecksumFileSystem: it keeps a checksum `.<name>.crc` beside every file it writes and hides
# them from every listing (`ChecksumFileSystem.isChecksumFile`: a name starting with "." and
# ending in ".crc", its listStatus DEFAULT_FILTER); a `.crc` of a log file would otherwise parse
# as a log file (FSUtils.LOG_FILE_PATTERN is matched with find()). macOS Finder's `.DS_Store` is
# no base or log file (`FSUtils.isDataFile`), which the file-system view
# (`AbstractTableFileSystemView.buildFileGroups`: `convertFileStatusesToBaseFiles` and
# `convertFileStatusesToLogFiles`) and the metadata writer's listing (`DirectoryInfo`) keep to.
SIDE_FILE_ENDINGS = (".crc", ".DS_Store")
_NAME = itemgetter(1)  # FileStatus.name, read in C


def is_side_file(name: str) -> bool:
    """A Hadoop checksum file (`.<name>.crc`) or macOS Finder's `.DS_Store`."""
    return name.startswith(".") and (name.endswith(".crc") or name == ".DS_Store")


def checksum_file_of(name: str) -> str:
    """The name of the Hadoop checksum file beside the file `name` (`ChecksumFileSystem.
    getChecksumFile`: "." + name + ".crc", in the same folder)."""
    return f".{name}.crc"


def without_side_files(entries: list[FileStatus]) -> list[FileStatus]:
    """The entries of a listing that are not side files (`is_side_file`): the list itself when it
    holds none (a scan in C, no Python call per entry: this runs on every listing)."""
    if not any(map(str.endswith, map(_NAME, entries), repeat(SIDE_FILE_ENDINGS))):
        return entries
    return [s for s in entries if not is_side_file(s.name)]


def without_side_names(names: list[str]) -> list[str]:
    """`without_side_files` for a listing of names."""
    if not any(map(str.endswith, names, repeat(SIDE_FILE_ENDINGS))):
        return names
    return [n for n in names if not is_side_file(n)]


@dataclass(frozen=True, slots=True)
class FolderIdentity:
    """A folder's device and inode on a local file system: what a table's folder was
    registered as (`Storage.anchor`)."""

    device: int
    inode: int


class Storage(ABC):
    """A file store. Every method raises `timeline.exceptions.StorageError` (or its
    `FileNotFound` subclass) with the path named, never a backend's own exception."""

    scheme: str = ""
    # How many concurrent calls pay off for bulk work such as a clean's deletes: object stores
    # answer round trips in parallel; local backends override this.
    io_threads: int = 32
    # True when two objects of the class may hold different files under the same URI (memory)
    private_namespace: bool = False
    # Folders listed at once by `walk`: object stores answer each listing in a round trip and
    # gain from many at a time; local backends list faster than a thread hand-off and use 1.
    listing_threads: int = 1
    # True when a listing costs this process CPU for each file (a local disk: a stat per file), so
    # that several processes list a large table faster (`timeline.internal.forks.fork_map`); an object
    # store waits on round trips instead, and lists with threads.
    cpu_bound_listing: bool = False
    # Files one `delete_many` request removes (S3's DeleteObjects takes 1,000 keys); 0 when
    # the backend has no batch delete and `delete_many` deletes file by file.
    delete_batch_size: int = 0

    # Every listing leaves side files out (`is_side_file`), here and only here: the public
    # listing methods filter what a backend's `_list*` methods return.

    def list(self, path: str) -> builtins.list[FileStatus]:
        """Direct children of a folder, files and folders, unsorted; side files left out."""
        return without_side_files(self._list(path))

    def list_unsized(self, path: str) -> builtins.list[FileStatus]:
        """`list` for a caller that needs no sizes: a backend that must ask for each file's size
        separately (a local disk: one stat per file) leaves `size` and `mtime_ms` at -1 (unknown);
        the others return what `list` does."""
        return without_side_files(self._list_unsized(path))

    def list_only(self, path: str, names: Collection[str]) -> builtins.list[FileStatus]:
        """`list` of the entries whose names are in `names` alone (a re-check of known files: a
        local disk then asks the size and time of those alone); side files left out."""
        return without_side_files(self._list_only(path, names))

    def stat_names(self, folder: str, names: Collection[str]) -> builtins.list[os.stat_result | None] | None:
        """The status of each of `names` (plain file names) in `folder`, in order, not following a
        symbolic link (lstat: a link is reported as one), each relative to the handle of a table
        folder this run holds (`anchor`): the file a later delete in that folder removes, not one a
        swapped path leads to. None for a name not there. None for the whole call when no held
        folder contains `folder` (an object store, a table not held): the caller then takes its
        general path (`list_only`). A re-check of many planned files: a status call each, no
        listing of the folder."""
        return None

    def list_names(self, path: str) -> builtins.list[str]:
        """The names of a folder's direct children, files and folders alike, unsorted: the
        cheapest look at a folder (a local disk reads the folder alone); side files left out."""
        return without_side_names(self._list_names(path))

    def list_recursive(self, path: str) -> Iterator[FileStatus]:
        """Every file (not folder) below a folder, at any depth; side files left out."""
        return (s for s in self._list_recursive(path) if not (s.name.endswith(SIDE_FILE_ENDINGS)
                                                              and is_side_file(s.name)))

    @abstractmethod
    def _list(self, path: str) -> builtins.list[FileStatus]:
        """The backend's listing behind `list`, side files included."""

    def _list_unsized(self, path: str) -> builtins.list[FileStatus]:
        """The backend's listing behind `list_unsized`, side files included."""
        return self._list(path)

    def _list_only(self, path: str, names: Collection[str]) -> builtins.list[FileStatus]:
        """The backend's listing behind `list_only`, side files included."""
        return [s for s in self._list(path) if s.name in names]

    def _list_names(self, path: str) -> builtins.list[str]:
        """The backend's listing behind `list_names`, side files included."""
        return [s.name for s in self._list_unsized(path)]

    @abstractmethod
    def _list_recursive(self, path: str) -> Iterator[FileStatus]:
        """The backend's listing behind `list_recursive`, side files included."""

    @abstractmethod
    def read(self, path: str) -> bytes:
        """The whole content of a file."""

    def reader(self, path: str) -> BinaryIO:
        """The file open for reading in chunks (seekable; close it after). Backends that can
        stream override this; the default holds the whole content."""
        return io.BytesIO(self.read(path))

    @abstractmethod
    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        """Write a file, creating parent folders. Without `overwrite`, an existing file is an
        error (`FileExists`) and is left untouched."""

    @abstractmethod
    def delete(self, path: str) -> bool:
        """Delete a file. True if it was there, False if it was already gone."""

    def delete_many(self, paths: Iterable[str]) -> dict[str, str]:
        """Delete files: path -> "deleted", "gone" (it was already missing) or "failed: <reason>".
        Never raises for a single file's failure. Backends with a batch API (S3's
        DeleteObjects) send `delete_batch_size` paths a request; this default deletes one by one.
        """
        results: dict[str, str] = {}
        for path in paths:
            try:
                results[path] = "deleted" if self.delete(path) else "gone"
            except StorageError as exc:
                results[path] = f"failed: {exc.reason}"
        return results

    def delete_names(self, folder: str, names: Sequence[str]) -> builtins.list[str]:
        """`delete_many` of files of one folder given by their (plain) names: the answers in
        order. A local run deletes through the folder's handle the run holds (what
        `stat_names` looked at); this default joins the paths."""
        paths = [self.join(folder, name) for name in names]
        answers = self.delete_many(paths)
        return [answers.get(path, "failed: no answer from the store") for path in paths]

    def sizes_of(self, paths: Iterable[str]) -> dict[str, int]:
        """Sizes of files about to be deleted, by path; a file not found is left out. This
        default lists each folder once (an object store returns a thousand sizes a request
        where a status call returns one)."""
        by_folder: dict[str, list[str]] = {}
        for path in paths:
            by_folder.setdefault(path.rpartition("/")[0], []).append(path)
        found: dict[str, int] = {}
        for folder, wanted in by_folder.items():
            try:
                listed = {status.path: status.size for status in self.list(folder)}
            except StorageError:
                continue
            found.update((p, listed[p]) for p in wanted if p in listed)
        return found

    def walk(self, path: str, descend: Callable[[str, builtins.list[FileStatus]], Iterable[str]], *,
             sizes: bool = True) -> Iterator[tuple[str, builtins.list[FileStatus]]]:
        """List `path`, then every folder `descend(folder, entries)` names, and so on: yields
        (folder, its direct entries) for each folder listed, in no fixed order. With
        `listing_threads` > 1, up to that many folders are listed at once (a walk over an
        object store is one round trip per folder, so it pays to have many in flight). Without
        `sizes`, folders are listed by `list_unsized`."""
        lister = self.list if sizes else self.list_unsized
        if self.listing_threads <= 1:
            stack = [path]
            while stack:
                folder = stack.pop()
                entries = lister(folder)
                yield folder, entries
                stack.extend(descend(folder, entries))
            return
        with ThreadPoolExecutor(self.listing_threads, thread_name_prefix="cleanline-list") as pool:
            running: dict[Future[list[FileStatus]], str] = {pool.submit(lister, path): path}
            try:
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        folder = running.pop(future)
                        entries = future.result()
                        yield folder, entries
                        for child in descend(folder, entries):
                            running[pool.submit(lister, child)] = child
            finally:
                for future in running:
                    future.cancel()

    @abstractmethod
    def delete_dir(self, path: str) -> bool:
        """Delete a folder and all it holds. True if it was there."""

    @abstractmethod
    def status(self, path: str) -> FileStatus:
        """Size and modification time of one file or folder."""

    @abstractmethod
    def exists(self, path: str) -> bool:
        """Whether a file or folder is there."""

    @abstractmethod
    def makedirs(self, path: str) -> None:
        """Create a folder and its parents; an existing folder is fine."""

    def set_modification_time(self, path: str, mtime_ms: int) -> bool:
        """`HoodieStorage.setModificationTime`: give a file a modification time where the store
        can (a local disk); False where it cannot (an object store keeps the time of the write)."""
        return False

    def linked_copy(self, source: str, target: str, *, copied: str) -> None:
        """A copy of the folder `source` at `target` (a new folder) whose subfolder `copied` is
        copied whole, modification times kept, and whose every other file is a link to the
        source's (a hard link; a symbolic link across file systems): the table copy a version
        change is rehearsed on. Local disks only."""
        raise StorageError(source, "a linked copy is made on a local disk only")

    def uri(self, path: str) -> str:
        """The path as a URI, the form Hudi writes into plans (`file:/...`, `s3://...`)."""
        return f"{self.scheme}://{path.lstrip('/')}" if self.scheme else path

    def path_of(self, uri: str) -> str:
        """Inverse of `uri`: the backend path of a URI or plain path this backend wrote or
        Hudi wrote for it."""
        parsed = urlparse(uri)
        if parsed.scheme in ("", "file") or len(parsed.scheme) == 1:
            return parsed.path if parsed.scheme else uri
        return f"{parsed.netloc}{parsed.path}"

    def resolve(self, path: str) -> str:
        """The path with `.` and `..` segments resolved (and, on local storage, symbolic
        links), for containment checks (`timeline/storage/containment.py`)."""
        return posixpath.normpath(path) if path else path

    def symlinks(self, folder: str) -> frozenset[str]:
        """Names of the symbolic links directly in `folder` (none on object stores)."""
        return frozenset()

    def anchor(self, base: str, table_uri: str, expected: FolderIdentity | None = None, *,
               alias: str | None = None) -> FolderIdentity | None:
        """From now on, every change (delete, write, rename) below the table's folder `base` goes
        through a handle of the folder opened now, never through its path again: a folder swapped
        for a symbolic link later is not followed, and the change stops with TableMovedError
        (`timeline/storage/anchor.py`). `expected` is the folder's registered identity
        (TableMovedError when it is another folder). `alias`: the path the table was opened at, when
        `base` is where it resolves (a symbolic link on the way): changes spelled through it go
        through the handle too. Returns the identity held, or None on a store without folders to
        swap (object stores: the prefix check of `Containment` is theirs)."""
        return None

    def release(self) -> None:
        """Close what `anchor` opened (the end of a run); later changes go by path again."""
        return None

    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*[p for p in parts if p != ""]) if any(parts) else ""
