"""Nothing outside the table: the one containment rule every destructive path applies.

A plan on the timeline (a clean's `filePath`s and `partitionsToBeDeleted`, a rollback's
`filesToBeDeleted` and `logBlocksToBeDeleted`) is data from the lake, written by whoever could
write there. Before anything is deleted, every path it names is resolved (URI scheme and
bucket, `..`, percent-encoded forms, and, on local storage, symbolic links) and must lie inside
the table's base path and outside `.hoodie/`; otherwise the whole action is refused with the
offending entry named (`OutsideTableError`). Registration uses `within_roots`, which parses a
path or URI and matches it on whole resolved segments against the allowed roots without
creating a storage object or sending a request.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from itertools import groupby, repeat
from urllib.parse import unquote, urlparse

from timeline.exceptions import CleanlineError
from timeline.storage.base import Storage

META_FOLDER = ".hoodie"
# Schemes the library can open; a path with any other scheme is refused before it is opened.
LOCAL_SCHEMES = frozenset({"", "file"})
OBJECT_SCHEMES = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs", "hdfs": "hdfs",
                  "viewfs": "viewfs", "abfs": "abfs", "abfss": "abfss", "memory": "memory"}


class OutsideTableError(CleanlineError):
    """A plan or instant names a path outside the table (or inside `.hoodie/` where data files
    belong); the whole action is refused and nothing was deleted."""

    def __init__(self, table: str, entry: str, reason: str) -> None:
        super().__init__(f"{table}: refused, nothing was deleted: {entry!r} {reason}")
        self.table = table
        self.entry = entry
        self.reason = reason


class TableMovedError(OutsideTableError):
    """A table's folder no longer resolves to the location it was opened at (its folder or a
    parent was swapped for a symbolic link after registration), or it now lies outside the
    allowed roots: every change is refused before it starts (`Containment.ensure_located`). Or it
    was swapped during a run: the run stops at its next change (`timeline/storage/anchor.py`)."""

    def __init__(self, table: str, entry: str, reason: str) -> None:
        CleanlineError.__init__(self, f"{table}: the table's folder moved, nothing outside it was changed: "
                                      f"{entry!r} {reason}")
        self.table = table
        self.entry = entry
        self.reason = reason


class UnsupportedLocationError(CleanlineError, ValueError):
    """A path or URI whose scheme the library does not open."""


# Segments and characters that send a path to the full check (`Containment._resolve`).
_SPECIAL_NAMES = frozenset({"", ".", ".."})
_SPECIAL_CHARS = ("%", "\\", "\x00", ":", "?", "#")  # "?" and "#" end a URI's path for urlparse


def _is_inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it, on whole segments."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder if folder == "/" else folder + "/")


class Containment:
    """Resolves the paths a plan names for one table and refuses any outside it."""

    def __init__(self, storage: Storage, base: str, table_uri: str, *, resolved_base: str | None = None) -> None:
        self.storage = storage
        self.table_uri = table_uri
        # pinned by `ensure_located` before a change: a folder swapped later resolves outside it
        self.base = resolved_base or storage.resolve(base)
        self.meta = posixpath.join(self.base, META_FOLDER)
        self._raw_base = base.rstrip("/")
        self._prefix = storage.uri(self._raw_base) + "/"
        # partition as written -> its resolved folder and the symbolic links in it, or ()
        self._folders: dict[str, tuple[str, frozenset[str]] | tuple[()]] = {}

    def _plain(self, entry: str) -> bool:
        """Whether an entry of the form the table writes itself (its own URI, a partition of
        plain segments, a plain file name that is no symbolic link) lies inside the table,
        decided once per partition folder: a plan names hundreds of thousands of files in a
        few folders. False means "check in full" (`_resolve`), not "outside"."""
        if not entry.startswith(self._prefix):
            return False
        folder, _, name = entry[len(self._prefix):].rpartition("/")
        known = self._folders.get(folder)
        if known is None:
            known = self._folders[folder] = self._folder(folder)
        if (not known or name in _SPECIAL_NAMES or name in known[1]
                or "%" in name or "\\" in name or "\x00" in name or ":" in name  # _SPECIAL_CHARS, inlined
                or "?" in name or "#" in name):
            return False
        return not (name == META_FOLDER and known[0] == self.base)

    def _folder(self, folder: str) -> tuple[str, frozenset[str]] | tuple[()]:
        """A partition folder as written: resolved, with its symbolic links, when it lies inside
        the table and outside `.hoodie/`; () for anything the full check must look at."""
        if any(c in folder for c in _SPECIAL_CHARS) or (folder and any(
                p in _SPECIAL_NAMES for p in folder.split("/"))):
            return ()
        resolved = self.storage.resolve(Storage.join(self._raw_base, folder))
        if not _is_inside(resolved, self.base) or _is_inside(resolved, self.meta):
            return ()
        return resolved, self.storage.symlinks(resolved)

    def _resolve(self, entry: str) -> list[str]:
        """The backend path(s) an entry may mean: as written, and percent-decoded when that
        differs (Hadoop's Path decodes URIs; a raw `%2e%2e` must not slip past)."""
        if "\x00" in entry or "\\" in entry:
            raise OutsideTableError(self.table_uri, entry, "holds a NUL or backslash")
        if "?" in entry or "#" in entry:  # the protection check would name another file than the store deletes
            raise OutsideTableError(self.table_uri, entry, "holds '?' or '#', where a URI parser ends the path "
                                                           "(no Hudi file name holds one)")
        forms = [entry] if unquote(entry) == entry else [entry, unquote(entry)]
        resolved = []
        for form in forms:
            parsed = urlparse(form)
            scheme = parsed.scheme.lower()
            if len(scheme) == 1:  # a Windows drive letter is no scheme here
                scheme = ""
            ours = self.storage.scheme
            if scheme == "":
                pass  # a plain path is in the backend's own namespace (checked below)
            elif scheme == "file":
                if ours not in ("file", ""):
                    raise OutsideTableError(self.table_uri, entry, f"is a local path; the table is on {ours}://")
                if parsed.netloc not in ("", "localhost"):
                    raise OutsideTableError(self.table_uri, entry, f"names another host ({parsed.netloc})")
            elif OBJECT_SCHEMES.get(scheme) != OBJECT_SCHEMES.get(ours, ours):
                raise OutsideTableError(self.table_uri, entry, f"uses the {scheme}:// scheme; the table is on "
                                                               f"{ours or 'file'}://")
            path = self.storage.path_of(form)
            if not path.startswith("/") and (ours in ("file", "") or scheme == ""):
                raise OutsideTableError(self.table_uri, entry, "is not an absolute path")
            resolved.append(self.storage.resolve(path))
        return resolved

    def ensure_located(self, roots: Iterable[str]) -> str:
        """Before a change: the table's base as opened (the location resolved when it was
        registered, with no symbolic link in it) must resolve to itself now, and lie under one
        of `roots`; else TableMovedError, nothing changed. Returns the resolved base, for the
        table to pin (`HudiTable.ensure_located`)."""
        expected = self.storage.resolve(self._raw_base) if self.storage.scheme not in ("file", "") \
            else posixpath.normpath(self._raw_base)
        if self.base != expected:
            raise TableMovedError(self.table_uri, self._raw_base,
                                  f"now resolves to {self.base} (a folder on its path was replaced by a symbolic "
                                  "link since it was registered); register the table again where it really is")
        if not within_roots(self.table_uri, roots):
            raise TableMovedError(self.table_uri, self._raw_base,
                                  f"resolves to {self.base}, outside the allowed roots ({', '.join(roots)})")
        return self.base

    def data_path(self, entry: str) -> str:
        """The backend path of a data file a plan deletes: inside the table, not `.hoodie/`."""
        if self._plain(entry):
            return self.storage.path_of(entry)
        for path in self._resolve(entry):
            if not _is_inside(path, self.base) or path == self.base:
                raise OutsideTableError(self.table_uri, entry, f"lies outside the table {self.base}")
            if _is_inside(path, self.meta):
                raise OutsideTableError(self.table_uri, entry, "lies inside .hoodie/, where no data file is")
        path = self.storage.path_of(entry)
        if self.storage.scheme in LOCAL_SCHEMES:
            # its folder as resolved (the name as written: a symbolic link is deleted, not its target), so that
            # an entry spelled through another path to the table is changed through the table's handles too
            folder, _, name = path.rpartition("/")
            return posixpath.join(self.storage.resolve(folder or "/"), name)
        return path

    def partition_path(self, partition: str) -> str:
        """The backend path of a partition folder a plan deletes whole (relative to the base)."""
        if partition.startswith("/") or urlparse(partition).scheme:
            raise OutsideTableError(self.table_uri, partition, "is not a partition path relative to the table")
        for form in {partition, unquote(partition)}:
            path = self.storage.resolve(posixpath.join(self.base, form))
            if not _is_inside(path, self.base) or path == self.base:
                raise OutsideTableError(self.table_uri, partition, f"lies outside the table {self.base}")
            if _is_inside(path, self.meta):
                raise OutsideTableError(self.table_uri, partition, "lies inside .hoodie/")
        return Storage.join(self.storage.resolve(self.base), partition)

    def meta_path(self, *parts: str) -> str:
        """The backend path of a folder inside `.hoodie/` that an action removes whole (the
        metadata table), refused if it resolves anywhere else (a symbolic link out)."""
        path = Storage.join(self.meta, *parts)
        resolved = self.storage.resolve(path)
        if not _is_inside(resolved, self.meta) or resolved == self.meta:
            raise OutsideTableError(self.table_uri, "/".join(parts), f"resolves to {resolved}, outside {self.meta}")
        return path

    def data_paths(self, entries: Iterable[str]) -> list[str]:
        """`data_path` of every entry, in order (a repair's tens of thousands): each run of
        entries in one plain folder is decided at once (`_plain_run`), anything else entry by
        entry. The first entry outside the table refuses them all (OutsideTableError)."""
        entries = list(entries)
        path_of = self.storage.path_of
        if self._plain_run(entries):  # one folder (a repair's, mostly)
            return list(map(path_of, entries))
        paths: list[str] = []
        for _, run in groupby(entries, _folder_of):
            found = list(run)
            paths += map(path_of, found) if self._plain_run(found) else map(self.data_path, found)
        return paths

    def check_data_paths(self, entries: Iterable[str]) -> None:
        """`data_path` of every entry, for its refusal only (a clean's hundreds of thousands).
        Give the entries of one partition together: a run of entries in one plain folder is
        decided with a few whole-list operations (`_plain_run`), anything else entry by entry."""
        entries = list(entries)
        if self._plain_run(entries):
            return
        plain = self._plain
        for entry in entries:
            if not plain(entry):
                self.data_path(entry)

    def plain_folders(self, entries: list[str]) -> list[tuple[str, str, list[str]]] | None:
        """The entries as (folder relative to the base, its backend path, file names) runs, in
        order, when every entry is spelled as the table writes its own files (its URI, then plain
        segments and a plain name: no `..`, no percent, backslash, NUL, `:`, `?`, `#`) and each
        folder resolves to itself below the table's resolved base (no symbolic link on its way),
        outside `.hoodie/`. Each entry's backend path is then its folder's and its name
        (`storage.path_of(entry)`) and lies in the table, unless the name is itself a symbolic
        link, which this does not read: the caller must refuse a name whose status
        (`Storage.stat_names`, an lstat) is one. None when any entry needs the full check
        (`data_path`)."""
        prefix = self._prefix
        if not entries or not entries[0].startswith(prefix):
            return None
        first = entries[0].rpartition("/")[0]  # the prefix, or longer
        cut = len(first) + 1
        together = all(map(str.startswith, entries, repeat(first + "/")))
        if not together and not all(map(str.startswith, entries, repeat(prefix))):
            return None
        names = [entry[cut:] for entry in entries] if together else []
        if together and "/" not in "".join(names):  # one folder (a repair's, mostly)
            groups: list[tuple[str, list[str]]] = [(first, names)]
        else:
            groups = [(folder, [entry[len(folder) + 1:] for entry in run])
                      for folder, run in groupby(entries, _folder_of)]
        runs: list[tuple[str, str, list[str]]] = []
        resolves: dict[str, bool] = {}
        for folder, names in groups:
            relative = folder[len(prefix):] if len(folder) >= len(prefix) else ""  # "": the base itself
            joined = "\n".join(names)
            forbidden = _SPECIAL_NAMES if relative else _SPECIAL_NAMES | {META_FOLDER}
            if any(c in joined for c in _SPECIAL_CHARS) or not forbidden.isdisjoint(names):
                return None
            if relative not in resolves:
                resolves[relative] = self._resolves_to_itself(relative)
            if not resolves[relative]:
                return None
            runs.append((relative, self.storage.path_of(folder), names))
        return runs

    def _resolves_to_itself(self, relative: str) -> bool:
        """Whether a partition folder as written (relative to the base; "" for the base) is plain,
        lies outside `.hoodie/`, and resolves to the same folder below the resolved base."""
        if relative and (any(c in relative for c in _SPECIAL_CHARS)
                         or any(p in _SPECIAL_NAMES for p in relative.split("/"))
                         or relative.split("/")[0] == META_FOLDER):
            return False
        return self.storage.resolve(Storage.join(self._raw_base, relative)) == Storage.join(self.base, relative)

    def _plain_run(self, entries: list[str]) -> bool:
        """Whether every entry is `_plain` and all lie in the same folder, decided for the list
        at once: one folder lookup, then prefix, separator, character and name-set checks over
        the whole list. False means "check entry by entry", not "outside"."""
        if not entries or not self._plain(entries[0]):
            return False
        folder = entries[0].rpartition("/")[0] + "/"
        if not all(map(str.startswith, entries, repeat(folder))):
            return False
        cut = len(folder)
        names = [entry[cut:] for entry in entries]
        joined = "\n".join(names)
        if any(c in joined for c in ("/", *_SPECIAL_CHARS)):
            return False
        known = self._folders[folder[len(self._prefix):-1]]  # known: the first entry is plain
        if not known:
            return False
        resolved, links = known
        forbidden = _SPECIAL_NAMES | links | ({META_FOLDER} if resolved == self.base else set())
        return forbidden.isdisjoint(names)


def _folder_of(entry: str) -> str:
    return entry.rpartition("/")[0]


def parse_location(location: str) -> tuple[str, str]:
    """(scheme, resolved path) of a path or URI, without opening it: local paths and `file:`
    URIs are made absolute and resolved through symbolic links; object-store URIs keep their
    bucket as the first segment (`s3a://b/k` -> ("s3", "b/k")). Unknown schemes raise
    UnsupportedLocationError."""
    location = location.strip()
    if not location or "\x00" in location:
        raise UnsupportedLocationError("give a path or URI")
    parsed = urlparse(location)
    scheme = parsed.scheme.lower()
    if scheme in LOCAL_SCHEMES or len(scheme) == 1:
        if scheme == "file" and parsed.netloc not in ("", "localhost"):
            raise UnsupportedLocationError(f"{location}: a file URI must name this machine")
        raw = unquote(parsed.path) if scheme == "file" else location
        return "file", os.path.realpath(os.path.abspath(raw))
    if scheme not in OBJECT_SCHEMES:
        raise UnsupportedLocationError(f"{location}: unsupported scheme {parsed.scheme!r} (use a local path, "
                                       f"file:, {', '.join(sorted(s + ':' for s in OBJECT_SCHEMES))})")
    if not parsed.netloc:
        raise UnsupportedLocationError(f"{location}: the URI names no bucket or host")
    path = posixpath.normpath("/" + unquote(parsed.path).lstrip("/"))
    return OBJECT_SCHEMES[scheme], f"{parsed.netloc}{'' if path == '/' else path}"


def within_roots(location: str, roots: Iterable[str]) -> bool:
    """Whether a path or URI lies under one of `roots` (compared on whole resolved segments,
    scheme and bucket included). Sends no request; raises UnsupportedLocationError for an
    unknown scheme in `location`. A root with an unknown scheme matches nothing."""
    scheme, path = parse_location(location)
    for root in roots:
        try:
            root_scheme, root_path = parse_location(root)
        except UnsupportedLocationError:
            continue
        if root_scheme == scheme and _is_inside(path, root_path):
            return True
    return False
