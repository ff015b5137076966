"""A file-name search over a plan store's names files (`part-N.names.arrow`: partition, file
name and decision per row, uncompressed): each part's names scanned as plain bytes, giving the
positions of the matching rows per part (`Hits`); `PlanSearch` reads only those rows, or
(for a store written without names files) filters the parts' file names."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import stringzilla

from timeline.exceptions import CleanlineError, FileNotFound
from timeline.internal.plan_store.files import (
    DECISIONS,
    FileRow,
    Part,
    StoreError,
    decision_filter,
    names_of,
    open_store,
    rows_of,
)
from timeline.internal.plan_store.outcomes import PlanOutcomes
from timeline.storage.base import Storage

__all__ = ["Hits", "PlanSearch", "find_hits", "rows_containing"]


@dataclass(frozen=True, slots=True)
class Hits:
    """A search's hits: per part (its index), the positions of the matching rows, ascending."""

    parts: tuple[tuple[int, pa.Array], ...]

    @property
    def count(self) -> int:
        return sum(len(rows) for _, rows in self.parts)


def rows_containing(names: pa.Array, needle: bytes, fold: bool) -> pa.Array:
    """Positions (int64, ascending) of the strings of `names` that contain `needle` (`fold`:
    compared lower-cased, the needle already is). The strings' bytes are searched as one
    buffer, in place (StringZilla's SIMD search over the Arrow buffer; a lower-cased copy when
    folding), from one match to the next row, so that a rare needle costs about one pass over
    the data; a needle found in many rows is matched row by row in C instead."""
    import pyarrow.compute as pc

    count = len(names)
    if not needle or not count:
        return pa.array(range(count) if not needle else [], type=pa.int64())
    offsets = memoryview(names.buffers()[1]).cast("i")[names.offset:names.offset + count + 1]
    first, last = offsets[0], offsets[count]
    data = names.buffers()[2]
    view = memoryview(data if data is not None else b"")
    hay: bytes | stringzilla.Str = view.tobytes().lower() if fold else stringzilla.Str(view)
    rows: list[int] = []
    dense = count // 8
    width = len(needle)
    at = hay.find(needle, first, last)
    while at >= 0:
        row = bisect_right(offsets, at) - 1
        end = offsets[row + 1]
        if at + width <= end:  # wholly inside one name, not across two
            rows.append(row)
            if len(rows) > dense:  # in many names: the vectorised kernel beats a step per hit
                mask = pc.match_substring(names, needle.decode(), ignore_case=fold)
                return pc.indices_nonzero(mask).cast(pa.int64())
            at = hay.find(needle, end, last)
        else:
            at = hay.find(needle, at + 1, last)
    return pa.array(rows, type=pa.int64())


def find_hits(names: Iterable[tuple[int, pa.Table | None]], *, delete: bool | None, partition: str,
              search: str) -> Hits | None:
    """The rows whose file names contain `search` (ignoring case when it has capitals: Hudi's
    names are lower case), to delete, kept or all, in one partition or all: per part (its
    index and names file, in plan order), the row positions. None when a part has no names
    file (a store written before they existed)."""
    import pyarrow.compute as pc

    fold = search != search.lower()
    needle = (search.lower() if fold else search).encode()
    found: list[tuple[int, pa.Array]] = []
    for index, table in names:
        if table is None:
            return None
        column = table.column("file_name")
        # one chunk (as the names files are written) is searched in place: combining copies it
        rows = rows_containing(column.chunk(0) if column.num_chunks == 1 else column.combine_chunks(), needle, fold)
        if len(rows) and (delete is not None or partition):
            chosen = table.take(rows)
            keep = None
            if delete is not None:
                keep = chosen.column("delete") if delete else pc.invert(chosen.column("delete"))
            if partition:
                same = pc.equal(chosen.column("partition").cast(pa.string()), partition)
                keep = same if keep is None else pc.and_(keep, same)
            rows = rows.filter(keep)
        if len(rows):
            found.append((index, rows))
    return Hits(tuple(found))


class PlanSearch(PlanOutcomes):
    """A stored plan's file-name search."""

    def _names(self, part: Part) -> pa.Table | None:
        """A part's names file (None when the store has none: written before they existed)."""
        storage, folder = open_store(self.uri, self.s3)
        try:
            return storage.read_arrow(Storage.join(folder, names_of(part.name)))
        except FileNotFound:
            return None
        except CleanlineError as exc:
            raise StoreError(f"{self.uri}: cannot read {names_of(part.name)}: {exc}") from exc

    def _hits(self, delete: bool | None, partition: str, search: str) -> Hits | None:
        """The search's hits, from the names files of the parts `partition` lies in
        (`find_hits`); None when one of them has none."""
        names = ((index, self._names(self.parts[index])) for index in self._part_range(partition)
                 if self.parts[index].rows)
        return find_hits(names, delete=delete, partition=partition, search=search)

    def _rows_at(self, hits: Hits, offset: int, limit: int | None) -> list[FileRow]:
        """Whole rows of the hits from `offset`, at most `limit`, reading only their parts."""
        found: list[FileRow] = []
        skip = offset
        for index, rows in hits.parts:
            if skip >= len(rows):
                skip -= len(rows)
                continue
            want = rows.slice(skip, None if limit is None else limit - len(found))
            skip = 0
            found.extend(rows_of(self._read(self.parts[index]).take(want)))
            if limit is not None and len(found) >= limit:
                break
        return self._with_outcomes(found)

    def _searched(self, delete: bool | None, partition: str, search: str,
                  columns: list[str] | None = None) -> pa.Table:
        """The rows (`columns` of them) whose file names contain `search`, in plan order."""
        import pyarrow.compute as pc

        parts = [p for p in self._parts_of(partition) if p.rows]
        if not parts:
            return DECISIONS.empty_table() if columns is None else DECISIONS.empty_table().select(columns)
        # Hudi's file names are lower case: a search without capitals is matched as it is
        # (the fast path), one with capitals ignoring case
        where = pc.match_substring(pc.field("file_name"), search, ignore_case=search != search.lower())
        extra = decision_filter(delete, partition)
        try:
            return self._dataset(parts).to_table(columns=columns, filter=where if extra is None else where & extra)
        except pa.ArrowException as exc:
            raise StoreError(f"{self.uri}: cannot search the plan's parts: {exc}") from exc
