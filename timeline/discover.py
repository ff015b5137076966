"""A whole lake at once (`cleanline discover ROOT`, the console's "Discover tables" page): every
Hudi table under a root, found by its `.hoodie/hoodie.properties` (or only the backup Hudi
keeps while it rewrites the file), never descending into a table (so never into its metadata
table or its partitions), each with its name, type, version, files and bytes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from timeline.exceptions import CleanlineError
from timeline.storage import FileStatus, Storage, storage_for
from timeline.table import Table

if TYPE_CHECKING:
    from timeline.roots import LakeRoots

PROPERTIES = ("hoodie.properties", "hoodie.properties.backup")


@dataclass(frozen=True, slots=True)
class FoundTable:
    """One table found under a root: where it is and what its `hoodie.properties` says, with the
    data files under it (`.hoodie/` not counted), or the reason it could not be read."""

    uri: str
    name: str = ""
    table_type: str = ""
    version: int | None = None
    files: int = 0
    bytes: int = 0
    error: str = ""


def find_tables(root: str, *, roots: LakeRoots | None = None) -> list[str]:
    """The URIs of every Hudi table under `root` (a path or URI), in name order: folders holding
    `.hoodie/hoodie.properties` or its backup; a table is not descended into, nor a hidden
    folder (`.hoodie`, `.temp`, ...). `roots`: the lake-wide settings (an `s3://` root's)."""
    from timeline.roots import LakeRoots

    storage, base = storage_for(root, s3=(roots if roots is not None else LakeRoots()).storage_options_for(root))
    found: list[str] = []

    def descend(folder: str, entries: list[FileStatus]) -> Iterator[str]:
        if any(e.is_dir and e.name == ".hoodie" for e in entries):
            meta = Storage.join(folder, ".hoodie")
            if any(storage.exists(Storage.join(meta, name)) for name in PROPERTIES):
                found.append(storage.uri(folder))
                return iter(())
        return (e.path for e in entries if e.is_dir and not e.name.startswith("."))

    for _ in storage.walk(base, lambda folder, entries: list(descend(folder, entries)), sizes=False):
        pass
    return sorted(found)


def describe(uri: str, *, sizes: bool = True, roots: LakeRoots | None = None) -> FoundTable:
    """What one found table is: its name, type and version, and (with `sizes`) its data files and
    bytes from one listing; a table whose properties cannot be read says why."""
    try:
        table = Table.open(uri, roots=roots)
        config = table.config
        files = total = 0
        if sizes:
            meta = Storage.join(table.base, ".hoodie") + "/"
            for status in table.storage.list_recursive(table.base):
                if not status.path.startswith(meta):
                    files, total = files + 1, total + max(status.size, 0)
        return FoundTable(uri, config.name, config.table_type.value, config.version, files, total)
    except CleanlineError as exc:
        return FoundTable(uri, error=str(exc))


def discover(root: str, *, sizes: bool = True, roots: LakeRoots | None = None) -> list[FoundTable]:
    """Every Hudi table under `root` (`find_tables`), each described (`describe`), with the
    lake-wide settings `roots`."""
    return [describe(uri, sizes=sizes, roots=roots) for uri in find_tables(root, roots=roots)]


__all__ = ["PROPERTIES", "FoundTable", "describe", "discover", "find_tables"]
