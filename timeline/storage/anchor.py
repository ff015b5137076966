"""A run's changes to a local table go through directory handles opened once, never through a
path string resolved again mid-run.

`Containment` (timeline/storage/containment.py) proves a path lies inside the table, but a path
is resolved again by every system call that takes it: a folder renamed and replaced by a
symbolic link after the check sends the change elsewhere. So, once the table's location is
checked (`Table.ensure_located`), its folder is opened here with `O_DIRECTORY | O_NOFOLLOW`
and held against the device and inode it was registered with; every folder below it is opened
relative to its parent with `O_NOFOLLOW`, and every delete, write and rename of the run is a
call relative to those handles (`unlink(name, dir_fd=...)`). A component swapped during the
run is then not followed: the change lands in the table or not at all. Each change also looks
at the path again (`check`): when the folder (or a parent, or a subfolder the run holds) no
longer is what the handles hold, the run stops with `TableMovedError` naming it.

Hadoop's checksum files go with the files they check, here, the one place every change of a
run passes (Hadoop's local file system, through which Hudi writes local tables, is a
`ChecksumFileSystem`: a `.<name>.crc` beside each file it writes). A file deleted takes its
checksum file with it, removed first (`ChecksumFileSystem.delete`). A file Cleanline writes,
overwrites or renames into place carries no checksum, so a checksum file left beside it would
be stale, and Hadoop's reader fails on a stale checksum (`ChecksumFSInputChecker.readChunk`:
ChecksumException) while it reads a file without one unverified (its constructor ignores the
missing file): it is removed before the new content is in place (`ChecksumFileSystem.create`
with `writeChecksum` off removes it; `rename` removes the target's when the source has none).

Object stores have no symbolic links and keep the prefix check alone.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import threading
import weakref
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from typing import BinaryIO

from timeline.exceptions import FileExists, FileNotFound, StorageError
from timeline.storage.base import FolderIdentity, checksum_file_of, is_side_file
from timeline.storage.containment import TableMovedError

_NOT_NAMES = frozenset({"", ".", ".."})  # components that name no file in a folder
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Subfolder handles a run keeps open (a partition each); past this, a folder is opened for one
# change and closed after it, so a table of many partitions cannot exhaust the process's files.
MAX_HELD_FOLDERS = 256


@dataclass(frozen=True, slots=True)
class _Held:
    """An open subfolder: its handle, its parent's handle and its name there, its identity."""

    fd: int
    parent: int
    name: str
    identity: FolderIdentity


class AnchoredFolder:
    """The table's folder, opened once for a run, and the subfolders the run changes."""

    def __init__(self, path: str, table_uri: str, expected: FolderIdentity | None = None, *,
                 alias: str | None = None) -> None:
        self.path = posixpath.normpath(path)
        self.table_uri = table_uri
        self._prefix = self.path.rstrip("/") + "/"
        # The path the table was opened at when it reaches this folder through a symbolic link
        # (`Table.hold_folder`): a change spelled through it goes through the handles too.
        self._alias = None if alias is None or posixpath.normpath(alias) == self.path \
            else posixpath.normpath(alias).rstrip("/") + "/"
        fd = self._open(self.path, None)
        identity = _identity(os.fstat(fd))
        if expected is not None and identity != expected:
            os.close(fd)
            raise TableMovedError(table_uri, self.path,
                                  f"is not the folder registered (device {expected.device}, inode {expected.inode}; "
                                  f"found device {identity.device}, inode {identity.inode}): it was replaced since "
                                  "it was registered; register the table again where it really is")
        self.fd = fd
        self.identity = identity
        self._held: dict[tuple[str, ...], _Held] = {}
        self._checksums: dict[tuple[str, ...], set[str]] = {}  # the checksum files of a folder (`_checksums_in`)
        self._lock = threading.Lock()
        self._closer = weakref.finalize(self, _close_all, [fd], self._held)

    def close(self) -> None:
        """Close every handle (the end of the run)."""
        self._closer()

    # Which paths are anchored

    def relative(self, path: str) -> tuple[str, ...] | None:
        """The components of `path` below the table's folder, or None when it lies elsewhere."""
        found = _below(path, self._prefix)
        if found is None and self._alias is not None:
            found = _below(path, self._alias)
        return found

    # The check every change makes

    def check(self, folders: Iterable[tuple[str, ...]] = ()) -> None:
        """Raise TableMovedError unless the table's path still leads to the folder this run holds
        (no component of it, nor of a subfolder in `folders` the run holds, swapped)."""
        try:
            st = os.lstat(self.path)
        except OSError as exc:
            raise self._moved(self.path, exc.strerror or "it is gone") from exc
        if not stat.S_ISDIR(st.st_mode) or _identity(st) != self.identity:
            raise TableMovedError(self.table_uri, self.path,
                                  "was moved during the run (it, or a folder above it, no longer is the folder the "
                                  "run opened; a symbolic link is not followed): the run stopped, nothing outside "
                                  "the table changed")
        for parts in folders:
            for depth in range(1, len(parts) + 1):
                held = self._held.get(parts[:depth])
                if held is None:
                    break
                try:
                    now = os.stat(held.name, dir_fd=held.parent, follow_symlinks=False)
                except FileNotFoundError:  # removed (nothing in its place): what was in it is gone
                    self._forget(parts[:depth])
                    break
                except OSError as exc:
                    raise self._moved(self._join(parts[:depth]), exc.strerror or "it is gone") from exc
                if not stat.S_ISDIR(now.st_mode) or _identity(now) != held.identity:
                    raise TableMovedError(self.table_uri, self._join(parts[:depth]),
                                          "was replaced during the run (a symbolic link is not followed): the run "
                                          "stopped, nothing outside the table changed")

    # Changes

    def unlink(self, parts: tuple[str, ...]) -> bool:
        """Delete one file; False if it was already gone."""
        path = self._join(parts)
        self.check([parts[:-1]])
        fd, close = self._folder(parts[:-1], create=False)
        if fd is None:
            return False
        try:
            name = file_name(parts, path)
            self._drop_checksum(parts[:-1], fd, name)
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise _storage_error(path, exc) from exc
        finally:
            close()
        return True

    def unlink_many(self, paths: Iterable[tuple[str, tuple[str, ...]]]) -> dict[str, str]:
        """`Storage.delete_many` for (path, components) pairs: the check once per folder a call
        touches, then an unlink relative to the folder's handle per file (the checksum files of
        those that have one first: the folder's are known from one listing per run)."""
        by_folder: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        for path, parts in paths:
            by_folder.setdefault(parts[:-1], []).append((path, file_name(parts, path)))
        return self.unlink_in(by_folder)

    def unlink_in(self, by_folder: dict[tuple[str, ...], list[tuple[str, str]]]) -> dict[str, str]:
        """`unlink_many` of files grouped by folder: its components -> (path, name) pairs (each
        name a file's: not empty, "." or "..", `file_name`)."""
        self.check(by_folder)
        results: dict[str, str] = {}
        for folder, files in by_folder.items():
            names = [name for _, name in files]
            results.update(zip([path for path, _ in files], self._unlink_in(folder, names)))
        return results

    def unlink_names(self, folder: tuple[str, ...], names: Collection[str]) -> list[str]:
        """`Storage.delete_names` in the subfolder `folder` (its components; () for the table's
        own), after the check: the answers in order. A name that is no plain file name is
        StorageError (`stat_names`)."""
        _plain_names(names, self._join(folder))
        self.check([folder])
        return self._unlink_in(folder, names)

    def _unlink_in(self, folder: tuple[str, ...], names: Collection[str]) -> list[str]:
        """Unlink plain names in a folder of the run, checked already: each name's checksum file
        first (the folder's known from one listing of its names per run), then the name."""
        fd, close = self._folder(folder, create=False)
        if fd is None:
            return ["gone"] * len(names)
        try:
            sums = self._checksums_in(folder, fd)
            if sums:
                for name in names:
                    if checksum_file_of(name) in sums:
                        self._drop_checksum(folder, fd, name)
            return unlink_names(names, dir_fd=fd)
        finally:
            close()

    def stat_names(self, folder: tuple[str, ...], names: Collection[str]) -> list[os.stat_result | None]:
        """`Storage.stat_names` in the subfolder `folder` (its components; () for the table's own),
        after the check: an lstat of each name relative to its handle, None for a name not there
        (all None when the folder is not there). A name that is no plain file name (holding a
        "/" or a NUL, empty, "." or "..") is StorageError: it could lead out of the folder."""
        _plain_names(names, self._join(folder))
        self.check([folder])
        fd, close = self._folder(folder, create=False)
        if fd is None:
            return [None] * len(names)
        found: list[os.stat_result | None] = []
        add, stat_of = found.append, os.stat
        try:
            for name in names:
                try:
                    add(stat_of(name, dir_fd=fd, follow_symlinks=False))
                except FileNotFoundError:
                    add(None)
        except OSError as exc:
            raise _storage_error(self._join(folder), exc) from exc
        finally:
            close()
        return found

    def write(self, parts: tuple[str, ...], data: bytes, *, overwrite: bool) -> None:
        """Write a file, creating its folders; without `overwrite` an existing one is FileExists."""
        path = self._join(parts)
        self.check([parts[:-1]])
        fd, close = self._folder(parts[:-1], create=True)
        assert fd is not None  # created
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_TRUNC if overwrite else os.O_EXCL)
        name = file_name(parts, path)
        try:
            if overwrite:
                self._drop_checksum(parts[:-1], fd, name)
            with os.fdopen(os.open(name, flags, 0o666, dir_fd=fd), "wb") as out:
                if not overwrite:  # created: a checksum file left from an earlier file of the name is stale
                    self._drop_checksum(parts[:-1], fd, name)
                out.write(data)
        except OSError as exc:
            raise _storage_error(path, exc) from exc
        finally:
            close()

    def write_replacing(self, parts: tuple[str, ...], write: Callable[[BinaryIO], None], temporary: str) -> None:
        """`write` the file at a temporary name in its folder, then rename it into place (a reader
        never sees half a file); the temporary file is removed if anything fails."""
        path = self._join(parts)
        self.check([parts[:-1]])
        fd, close = self._folder(parts[:-1], create=True)
        assert fd is not None  # created
        name = file_name(parts, path)
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666,
                             dir_fd=fd)
            try:
                with os.fdopen(handle, "wb") as out:
                    write(out)
                self.check([parts[:-1]])
                self._drop_checksum(parts[:-1], fd, name)
                os.replace(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                try:
                    os.unlink(temporary, dir_fd=fd)
                except FileNotFoundError:
                    pass
                raise
        except OSError as exc:
            raise _storage_error(path, exc) from exc
        finally:
            close()

    def rmtree(self, parts: tuple[str, ...]) -> bool:
        """Delete a folder and all it holds (no symbolic link in it followed); False if absent."""
        path = self._join(parts)
        self.check([parts[:-1]])
        fd, close = self._folder(parts[:-1], create=False)
        if fd is None:
            return False
        name = file_name(parts, path)
        try:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if stat.S_ISLNK(st.st_mode):
                raise TableMovedError(self.table_uri, path, "is a symbolic link, not a folder of the table: "
                                                            "not followed, nothing deleted")
            if not stat.S_ISDIR(st.st_mode):
                return False
            self._forget(parts)  # a handle held below the folder would name a removed folder
            shutil.rmtree(name, dir_fd=fd)
        except OSError as exc:
            raise _storage_error(path, exc) from exc
        finally:
            close()
        return True

    def makedirs(self, parts: tuple[str, ...]) -> None:
        self.check([parts])
        _, close = self._folder(parts, create=True)
        close()

    # Hadoop's checksum files

    def _checksums_in(self, folder: tuple[str, ...], fd: int) -> set[str]:
        """The checksum files (`.<name>.crc`) in a folder of the run, from one listing of its
        names the first time the run deletes in it (a bulk delete asks per batch)."""
        found = self._checksums.get(folder)
        if found is not None:
            return found
        with self._lock:  # listed once, by a handle of its own (threads share `fd` and its offset)
            found = self._checksums.get(folder)
            if found is None:
                own = os.open(".", _DIRECTORY, dir_fd=fd)
                try:
                    names = os.listdir(own)
                    found = {n for n in compress(names, map(str.endswith, names, repeat(".crc"))) if is_side_file(n)}
                finally:
                    os.close(own)
                self._checksums[folder] = found
        return found

    def _drop_checksum(self, folder: tuple[str, ...], fd: int, name: str) -> None:
        """Remove the checksum file of `name` in the folder `fd` if there is one."""
        checksum = checksum_file_of(name)
        try:
            os.unlink(checksum, dir_fd=fd)
        except FileNotFoundError:
            pass
        known = self._checksums.get(folder)
        if known is not None:
            known.discard(checksum)

    # Handles

    def _forget(self, parts: tuple[str, ...]) -> None:
        """Close the handles held of a folder and of the folders below it."""
        with self._lock:
            for key in [k for k in self._held if k[:len(parts)] == parts]:
                os.close(self._held.pop(key).fd)
            for key in [k for k in self._checksums if k[:len(parts)] == parts]:
                del self._checksums[key]

    def _folder(self, parts: tuple[str, ...], *, create: bool) -> tuple[int | None, Callable[[], None]]:
        """The handle of a subfolder (the table's own for ()), opened component by component
        relative to its parent with O_NOFOLLOW (created first when `create`), and what to call
        when done with it (nothing for a held handle). (None, ...) when it does not exist."""
        if not parts or parts == ("",):
            return self.fd, _nothing
        held = self._held.get(parts)
        if held is not None:
            return held.fd, _nothing
        parent = self.fd
        opened: list[int] = []  # handles this call opened and does not hold
        try:
            for depth in range(1, len(parts) + 1):
                key = parts[:depth]
                known = self._held.get(key)
                if known is not None:
                    parent = known.fd
                    continue
                name = parts[depth - 1]
                if name in ("", ".", ".."):
                    raise TableMovedError(self.table_uri, self._join(parts), "is not a plain folder of the table")
                try:
                    fd = self._open(name, parent, key)
                except FileNotFound:
                    if not create:
                        return None, _closer(opened)
                    try:
                        os.mkdir(name, dir_fd=parent)
                    except FileExistsError:
                        pass
                    fd = self._open(name, parent, key)
                held = _Held(fd, parent, name, _identity(os.fstat(fd)))
                with self._lock:
                    if len(self._held) < MAX_HELD_FOLDERS and key not in self._held and self._closer.alive:
                        self._held[key] = held
                    else:
                        opened.append(fd)
                parent = fd
        except OSError as exc:
            _closer(opened)()
            raise _storage_error(self._join(parts), exc) from exc
        except BaseException:
            _closer(opened)()
            raise
        return parent, _closer(opened)

    def _join(self, parts: tuple[str, ...]) -> str:
        return posixpath.join(self.path, *parts)

    def _open(self, name: str, parent: int | None, parts: tuple[str, ...] = ()) -> int:
        """Open a folder (`name` in the folder `parent`, or the table's own path) not following a
        symbolic link: one found there is TableMovedError, a missing folder FileNotFound."""
        path = self._join(parts)
        try:
            return os.open(name, _DIRECTORY, dir_fd=parent)
        except FileNotFoundError as exc:
            if parent is None:
                raise self._moved(path, "it is gone") from exc
            raise FileNotFound(path) from exc
        except OSError as exc:  # O_NOFOLLOW on a symbolic link: ELOOP, or ENOTDIR with O_DIRECTORY
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise _storage_error(path, exc) from exc
            try:
                link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
            except OSError:
                link = True  # swapped again meanwhile
            if link:
                raise self._moved(path, "it is a symbolic link now") from exc
            raise StorageError(path, "is a file, not a folder") from exc

    def _moved(self, path: str, what: str) -> TableMovedError:
        return TableMovedError(self.table_uri, path,
                               f"is no longer the folder the run opened ({what}; a symbolic link is not followed): "
                               "the run stopped, nothing outside the table changed")


def _below(path: str, prefix: str) -> tuple[str, ...] | None:
    """The components of `path` below the folder `prefix` (ending in "/"), or None."""
    if not path.startswith(prefix):
        path = posixpath.normpath(path)
        if not path.startswith(prefix):
            return None
    rest = path[len(prefix):]
    if "//" in rest or "/." in rest or rest.startswith(".") or rest.endswith("/"):  # the few that need it
        rest = posixpath.normpath(rest)
        if rest == ".." or rest.startswith("../"):
            return None
    return tuple(rest.split("/"))


def unlink_each(files: Iterable[tuple[str, str]], results: dict[str, str], *, dir_fd: int | None = None) -> None:
    """`Storage.delete_many`'s loop: unlink each (path, name) by its name (relative to the
    folder handle `dir_fd` when given), and answer for its path in `results` (`unlink_names`)."""
    files = list(files)
    results.update(zip([path for path, _ in files], unlink_names([name for _, name in files], dir_fd=dir_fd)))


def unlink_names(names: Iterable[str], *, dir_fd: int | None = None) -> list[str]:
    """Unlink each name (relative to the folder handle `dir_fd` when given): "deleted", "gone"
    or "failed: <reason>" for each, in order."""
    answers: list[str] = []
    add, unlink = answers.append, os.unlink
    for name in names:
        try:
            unlink(name, dir_fd=dir_fd)
            add("deleted")
        except FileNotFoundError:
            add("gone")
        except IsADirectoryError:
            add("failed: is a directory")
        except OSError as exc:
            add(f"failed: {exc.strerror or exc}")
    return answers


def _plain_names(names: Collection[str], folder: str) -> None:
    """StorageError unless every name is a plain file name (no "/" or NUL, not empty, "." or
    ".."): a call relative to a folder's handle then stays in the folder."""
    joined = "\n".join(names)
    if "/" in joined or "\x00" in joined or not _NOT_NAMES.isdisjoint(names):
        raise StorageError(folder, "a name asked for is no plain file name")


def _identity(st: os.stat_result) -> FolderIdentity:
    return FolderIdentity(st.st_dev, st.st_ino)


def file_name(parts: tuple[str, ...], path: str) -> str:
    """The last component of a file's path (StorageError if it names no file)."""
    name = parts[-1]
    if name in ("", ".", ".."):
        raise StorageError(path, "names no file")
    return name


def _nothing() -> None:
    return None


def _closer(fds: list[int]) -> Callable[[], None]:
    if not fds:
        return _nothing

    def close() -> None:
        while fds:
            os.close(fds.pop())

    return close


def _close_all(fds: list[int], held: dict[tuple[str, ...], _Held]) -> None:
    for item in list(held.values()):
        os.close(item.fd)
    held.clear()
    for fd in fds:
        os.close(fd)


def _storage_error(path: str, exc: OSError) -> StorageError:
    if isinstance(exc, FileNotFoundError):
        return FileNotFound(path)
    if isinstance(exc, FileExistsError):
        return FileExists(path)
    return StorageError(path, exc.strerror or str(exc))
