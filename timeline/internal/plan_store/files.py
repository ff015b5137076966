"""A plan store's files (`timeline.internal.plan_store` reads them): its folder, a local one or an
object-store prefix (`open_store`, emptied by `clear_folder`); the schemas of its Parquet parts,
of each part's names file and of the run's outcomes; and writing a part with its names file,
where the planning runs (a Spark executor or this process), giving back only its sums."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import pyarrow as pa

from timeline.exceptions import CleanlineError
from timeline.storage import storage_for
from timeline.storage.arrow import ArrowStorage
from timeline.storage.base import Storage

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from timeline.clean.planner import FileDecision
    from timeline.roots import LakeRoots
    from timeline.storage.s3 import S3Settings

DECISIONS = pa.schema([
    ("partition", pa.string()), ("file_name", pa.string()), ("path", pa.string()), ("size", pa.int64()),
    ("delete", pa.bool_()), ("reason", pa.string()), ("file_id", pa.string()), ("base_instant", pa.string()),
    ("bootstrap", pa.bool_()),
])
OUTCOMES = pa.schema([
    ("partition", pa.string()), ("file_name", pa.string()), ("outcome", pa.string()), ("bytes", pa.int64()),
    ("error", pa.string()),
])
HEADER = "plan.json"
OUTCOME_FILE = "outcomes.parquet"
ROW_GROUP = 16_384  # rows per Parquet row group: a partition filter reads a few of them
PLAN_ORDER = [("partition", "ascending"), ("file_name", "ascending")]  # how rows are sorted


class FileRow(NamedTuple):
    """One file of a stored plan, and (after the run) what happened to it: "deleted", "gone"
    (already gone), "failed", or "" (not run, or kept)."""

    partition: str
    file_name: str
    path: str
    size: int
    delete: bool
    reason: str
    file_id: str
    base_instant: str
    bootstrap: bool
    outcome: str = ""


class StoreError(CleanlineError):
    """A plan store that cannot be read or written (missing, damaged, unreachable)."""


@dataclass(frozen=True, slots=True)
class PartitionSums:
    """One considered partition: its files, those to delete and their bytes, and whether the
    partition itself goes."""

    partition: str
    files: int
    deletes: int
    bytes_to_delete: int
    dropped: bool = False


@dataclass(frozen=True, slots=True)
class Part:
    """One Parquet part: its file name, the first and last partition it holds, its rows and
    how many of them are deletes."""

    name: str
    first: str
    last: str
    rows: int
    deletes: int


@dataclass(frozen=True, slots=True)
class StoredPart:
    """What writing a part gives back to the driver: the part (None when its partitions had
    no file) and its partitions' sums."""

    part: Part | None
    sums: tuple[PartitionSums, ...]


def store_settings(uri: str, roots: LakeRoots | None = None) -> S3Settings | None:
    """The S3 settings for a store on S3 (its root's in `roots`, over the environment's); None
    for other stores."""
    from timeline.roots import LakeRoots

    return (roots if roots is not None else LakeRoots()).storage_options_for(uri)


def part_name(index: int) -> str:
    return f"part-{index:06d}.parquet"


def names_of(part: str) -> str:
    """The names file beside a part: its rows' partition, file name and decision, in the same
    order, as an uncompressed Arrow IPC file that a search maps and scans as plain bytes."""
    return part.removesuffix(".parquet") + NAMES_SUFFIX


NAMES_SUFFIX = ".names.arrow"
LISTING_SUFFIX = ".listing.json"


def listing_name(index: int) -> str:
    """A Spark task's slice of the metadata table's listing, kept in the store while the plan
    is made (`timeline.spark.clean.plan_clean_spark_stored`)."""
    return f"part-{index:06d}{LISTING_SUFFIX}"
NAMES = pa.schema([("partition", pa.dictionary(pa.int32(), pa.string())), ("file_name", pa.string()),
                   ("delete", pa.bool_())])


def _write_names(storage: ArrowStorage, path: str, table: pa.Table) -> None:
    import pyarrow.compute as pc

    names = pa.table([pc.dictionary_encode(table.column("partition")), table.column("file_name"),
                      table.column("delete")], schema=NAMES).combine_chunks()
    try:
        storage.write_arrow(path, names)
    except CleanlineError as exc:
        raise StoreError(f"{storage.uri(path)}: cannot write the plan's names: {exc}") from exc


def open_store(uri: str, s3: S3Settings | None = None) -> tuple[ArrowStorage, str]:
    """The storage and path of a plan folder (a local path or `s3://...`)."""
    storage, path = storage_for(uri, s3=s3 if s3 is not None else store_settings(uri))
    if not isinstance(storage, ArrowStorage):
        raise StoreError(f"{uri}: a plan store must be a local folder or an object-store prefix")
    return storage, path.rstrip("/")


def write_part(folder_uri: str, index: int, results: Iterable[tuple[str, Sequence[FileDecision], bool]],
               s3: S3Settings | None = None) -> StoredPart:
    """Write one part: the decisions of consecutive partitions (`plan_partition`'s results).
    Runs where the partitions were planned; returns only sums."""
    columns: list[list[Any]] = [[] for _ in DECISIONS.names]
    sums = []
    for partition, decisions, dropped in results:
        deletes = doomed_bytes = 0
        for d in decisions:
            if d.delete:
                deletes += 1
                doomed_bytes += d.size
        sums.append(PartitionSums(partition, len(decisions), deletes, doomed_bytes, dropped))
        if decisions:
            for column, values in zip(columns, zip(*decisions, strict=True), strict=True):
                column.extend(values)
    if not columns[0]:
        return StoredPart(None, tuple(sums))
    table = pa.Table.from_arrays([pa.array(c, type=t) for c, t in zip(columns, DECISIONS.types, strict=True)],
                                 schema=DECISIONS).sort_by(PLAN_ORDER)
    storage, folder = open_store(folder_uri, s3)
    name = part_name(index)
    write_parquet(storage, Storage.join(folder, name), table)
    _write_names(storage, Storage.join(folder, names_of(name)), table)
    partitions = table.column("partition")
    return StoredPart(Part(name, partitions[0].as_py(), partitions[-1].as_py(), table.num_rows,
                           sum(s.deletes for s in sums)), tuple(sums))


# Dictionary-encode only the columns that repeat (file names and paths are unique); LZ4: a search
# scans every name, and decompression is the larger part of its cost after decoding.
_DICTIONARY = ["partition", "reason", "file_id", "base_instant", "outcome", "error"]


def write_parquet(storage: ArrowStorage, path: str, table: pa.Table) -> None:
    """Write one of the store's Parquet files (a part, the outcomes) as the store reads them."""
    try:
        storage.write_parquet(path, table, row_group_size=ROW_GROUP, compression="lz4",
                              use_dictionary=[c for c in _DICTIONARY if c in table.column_names])
    except CleanlineError as exc:
        raise StoreError(f"{storage.uri(path)}: cannot write the plan's file: {exc}") from exc


def _is_store_file(name: str) -> bool:
    """A file a plan store writes: its parts and their names files (and their temporary files),
    header and outcomes."""
    return (name in (HEADER, OUTCOME_FILE)
            or (name.startswith("part-") and (".parquet" in name or NAMES_SUFFIX in name or LISTING_SUFFIX in name))
            or (name.startswith(OUTCOME_FILE) and name.endswith(".tmp")))


def clear_folder(folder_uri: str, s3: S3Settings | None = None) -> None:
    """Empty a plan folder (an earlier, failed run's parts; a plan no longer wanted). Only a
    plan store's own files go: a folder holding anything else (a sub-folder, another file) is
    refused whole and nothing in it is deleted, so a mistyped store never removes a table."""
    storage, folder = open_store(folder_uri, s3)
    if not storage.exists(folder):
        return
    entries = storage.list(folder)
    strangers = [e.name for e in entries if e.is_dir or not _is_store_file(e.name)]
    if strangers:
        raise StoreError(f"{folder_uri}: not a plan store's folder (it holds {', '.join(sorted(strangers)[:5])}); "
                         "nothing was deleted")
    for entry in entries:
        storage.delete(entry.path)
    storage.delete_dir(folder)


def decision_filter(delete: bool | None, partition: str) -> pc.Expression | None:
    """Rows to delete, kept or all (`delete`), in one partition or all."""
    import pyarrow.compute as pc

    found = []
    if delete is not None:
        found.append(pc.field("delete") if delete else ~pc.field("delete"))
    if partition:
        found.append(pc.field("partition") == partition)
    if not found:
        return None
    return found[0] if len(found) == 1 else found[0] & found[1]


def rows_of(table: pa.Table) -> list[FileRow]:
    """A table of decisions (`DECISIONS`) as rows."""
    return list(map(FileRow, *(table.column(n).to_pylist() for n in DECISIONS.names)))
