"""Reading a stored plan a page at a time: the files matching a filter (to delete, kept or all,
in one partition, whose names contain a search) in plan order, as a sequence whose slices are
read from the store (`Matches`), and every file or every delete a part at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, overload

import pyarrow as pa

from timeline.internal.plan_store.files import PLAN_ORDER, FileRow, decision_filter, rows_of
from timeline.internal.plan_store.search import Hits, PlanSearch

__all__ = ["Matches", "PlanPages"]


class PlanPages(PlanSearch):
    """A stored plan's pages."""

    def matches(self, *, delete: bool | None = None, partition: str = "", search: str = "") -> Matches:
        """Files in plan order (partition, file name): to delete, kept or all; in one partition;
        whose names contain `search` (case-insensitive when it has capitals). A sequence whose
        length and slices are read from the store (a search scans the names once)."""
        return Matches(self, delete, partition, search)

    def count(self, *, delete: bool | None = None, partition: str = "", search: str = "") -> int:
        """How many files match (see `matches`)."""
        return len(self.matches(delete=delete, partition=partition, search=search))

    def rows(self, *, delete: bool | None = None, partition: str = "", search: str = "", offset: int = 0,
             limit: int | None = None) -> list[FileRow]:
        """The matching files (see `matches`) from `offset`, at most `limit`."""
        return self.matches(delete=delete, partition=partition, search=search).page(offset, limit)

    def _page(self, delete: bool | None, partition: str, offset: int, limit: int | None) -> list[FileRow]:
        found: list[FileRow] = []
        skip = offset
        for part in self._parts_of(partition):
            in_part = part.rows if delete is None else part.deletes if delete else part.rows - part.deletes
            if not partition and skip >= in_part:
                skip -= in_part
                continue
            table = self._read(part, where=decision_filter(delete, partition))
            if skip >= table.num_rows:
                skip -= table.num_rows
                continue
            want = None if limit is None else limit - len(found)
            found.extend(rows_of(table.slice(skip, want)))
            skip = 0
            if limit is not None and len(found) >= limit:
                break
        return self._with_outcomes(found)

    def _rows_named(self, keys: pa.Table) -> list[FileRow]:
        """Whole rows for (partition, file name) keys, in plan order, reading only the parts
        their partitions lie in."""
        import pyarrow.compute as pc

        if not keys.num_rows:
            return []
        partitions = sorted(set(keys.column("partition").to_pylist()))
        wanted = pc.field("partition").isin(partitions) & pc.field("file_name").isin(keys.column("file_name"))
        parts = [p for p in self.parts if p.rows and p.first <= partitions[-1] and p.last >= partitions[0]]
        page = self._dataset(parts).to_table(filter=wanted).sort_by(PLAN_ORDER)
        exact = set(zip(keys.column("partition").to_pylist(), keys.column("file_name").to_pylist(), strict=True))
        return self._with_outcomes([r for r in rows_of(page) if (r.partition, r.file_name) in exact])

    def iter_rows(self) -> Iterator[FileRow]:
        """Every file in plan order with its outcome, a part at a time (for reports)."""
        outcomes = self._outcome_file()
        for part in self.parts:
            rows = rows_of(self._read(part))
            yield from self._attach(rows, outcomes) if outcomes is not None else rows

    def deletes(self) -> Iterator[FileRow]:
        """The files the plan deletes, in plan order, a part at a time."""
        import pyarrow.compute as pc

        for part in self.parts:
            if part.deletes:
                yield from rows_of(self._read(part, where=pc.field("delete")))

    def sizes(self) -> dict[str, int]:
        """Path -> planned size of every file the plan deletes (what the executor counts bytes
        from), read as two columns a part at a time: no row object per file."""
        import pyarrow.compute as pc

        found: dict[str, int] = {}
        for part in self.parts:
            if part.deletes:
                table = self._read(part, columns=["path", "size"], where=pc.field("delete"))
                found.update(zip(table.column("path").to_pylist(), table.column("size").to_pylist(), strict=True))
        return found


class Matches(Sequence[FileRow]):
    """The files of a stored plan matching a filter (`StoredPlan.matches`): its length from the
    plan's sums, or from one scan of the names for a search (kept, so a page and its count
    cost one scan); each slice read from the store."""

    def __init__(self, plan: PlanPages, delete: bool | None, partition: str, search: str) -> None:
        self.plan, self.delete, self.partition, self.search = plan, delete, partition, search
        self._keys: pa.Table | None = None
        self._hits: Hits | Literal[False] | None = None

    def _found(self) -> pa.Table:
        if self._keys is None:
            self._keys = self.plan._searched(self.delete, self.partition, self.search, ["partition", "file_name"])
        return self._keys

    def _hit_list(self) -> Hits | None:
        """The search's hits from the names files (None for a store written without them)."""
        if self._hits is None:
            self._hits = self.plan._hits(self.delete, self.partition, self.search) or False
        return self._hits or None

    def __len__(self) -> int:
        if self.search:
            hits = self._hit_list()
            return hits.count if hits is not None else int(self._found().num_rows)
        plan, delete = self.plan, self.delete
        if self.partition:
            sums = next((s for s in plan.sums if s.partition == self.partition), None)
            if sums is None:
                return 0
            return sums.files if delete is None else sums.deletes if delete else sums.files - sums.deletes
        return plan.files if delete is None else plan.files_to_delete if delete else plan.files_kept

    def page(self, offset: int = 0, limit: int | None = None) -> list[FileRow]:
        """The matches from `offset`, at most `limit`."""
        if self.search:
            hits = self._hit_list()
            if hits is not None:
                return self.plan._rows_at(hits, offset, limit)
            return self.plan._rows_named(self._found().slice(offset, limit))
        return self.plan._page(self.delete, self.partition, offset, limit)

    @overload
    def __getitem__(self, index: int) -> FileRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[FileRow]: ...

    def __getitem__(self, index: int | slice) -> FileRow | list[FileRow]:
        if isinstance(index, int):
            found = self.page(index if index >= 0 else len(self) + index, 1)
            if not found:
                raise IndexError(index)
            return found[0]
        start, stop, step = index.indices(len(self))
        rows = self.page(start, stop - start) if stop > start else []
        return rows[::step] if step != 1 else rows
