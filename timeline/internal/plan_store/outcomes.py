"""A stored plan's run outcomes (`outcomes.parquet`): recording what happened to each file the
plan deletes, counting them, and attaching them to rows read for a page or a report."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from timeline.exceptions import CleanlineError, FileNotFound
from timeline.internal.plan_store.files import (
    OUTCOME_FILE,
    OUTCOMES,
    PLAN_ORDER,
    FileRow,
    StoreError,
    open_store,
    write_parquet,
)
from timeline.internal.plan_store.sums import PlanSums
from timeline.storage.base import Storage

if TYPE_CHECKING:
    import pyarrow.compute as pc

    from timeline.clean.executor import FileOutcome

__all__ = ["PlanOutcomes"]


class PlanOutcomes(PlanSums):
    """A stored plan's outcomes."""

    def write_outcomes(self, outcomes: Iterable[FileOutcome]) -> dict[str, tuple[int, int, int]]:
        """Record a run's outcome per file (`outcomes.parquet`, replacing an earlier record);
        per partition the planned bytes of the files this run deleted, of those already gone,
        and the number of files that failed."""
        import pyarrow.compute as pc

        columns: list[list[Any]] = [[], [], [], [], []]
        for o in outcomes:
            if not o.is_bootstrap:
                for column, value in zip(columns, (o.partition, o.file_name, o.status.value, o.bytes, o.error),
                                         strict=True):
                    column.append(value)
        table = pa.Table.from_arrays([pa.array(c, type=t) for c, t in zip(columns, OUTCOMES.types, strict=True)],
                                     schema=OUTCOMES).sort_by(PLAN_ORDER)
        storage, folder = open_store(self.uri, self.s3)
        write_parquet(storage, Storage.join(folder, OUTCOME_FILE), table)
        planned: dict[tuple[str, str], int] = {}
        for part in self.parts:
            if part.deletes:
                sizes = self._read(part, columns=["partition", "file_name", "size"], where=pc.field("delete"))
                planned.update(zip(zip(sizes.column("partition").to_pylist(), sizes.column("file_name").to_pylist(),
                                       strict=True), sizes.column("size").to_pylist(), strict=True))
        totals: dict[str, list[int]] = {}
        slot = {"deleted": 0, "gone": 1, "failed": 2}
        for partition, name, status in zip(columns[0], columns[1], columns[2], strict=True):
            found = totals.setdefault(partition, [0, 0, 0])
            found[slot[status]] += 1 if status == "failed" else planned.get((partition, name), 0)
        return {p: (deleted, gone, failed) for p, (deleted, gone, failed) in totals.items()}

    def outcome_counts(self) -> dict[str, int]:
        """Files per outcome of the recorded run (empty before one)."""
        table = self._outcome_file()
        if table is None:
            return {}
        counts = table.group_by("outcome").aggregate([("outcome", "count")])
        return dict(zip(counts.column("outcome").to_pylist(), counts.column("outcome_count").to_pylist(), strict=True))

    def _outcome_file(self, where: pc.Expression | None = None) -> pa.Table | None:
        storage, folder = open_store(self.uri, self.s3)
        path = Storage.join(folder, OUTCOME_FILE)
        try:
            return storage.read_parquet(path, columns=["partition", "file_name", "outcome"], where=where)
        except FileNotFound:
            return None
        except CleanlineError as exc:
            raise StoreError(f"{self.uri}: cannot read the run's outcomes: {exc}") from exc

    def _with_outcomes(self, rows: list[FileRow]) -> list[FileRow]:
        import pyarrow.compute as pc

        if not rows or not self.files_to_delete:
            return rows
        partitions = sorted({r.partition for r in rows if r.delete})
        if not partitions:
            return rows
        outcomes = self._outcome_file(pc.field("partition").isin(partitions)
                                      & pc.field("file_name").isin([r.file_name for r in rows if r.delete]))
        return rows if outcomes is None else self._attach(rows, outcomes)

    @staticmethod
    def _attach(rows: list[FileRow], outcomes: pa.Table) -> list[FileRow]:
        found = dict(zip(zip(outcomes.column("partition").to_pylist(), outcomes.column("file_name").to_pylist(),
                             strict=True), outcomes.column("outcome").to_pylist(), strict=True))
        return [r._replace(outcome=found.get((r.partition, r.file_name), "")) if r.delete else r for r in rows]
