"""A stored plan's parts and sums (`StoredPlan`'s base, `timeline.internal.plan_store`): the totals
from the per-partition sums, which parts hold a partition, and reading a part of the store."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from timeline.exceptions import CleanlineError
from timeline.internal.plan_store.files import DECISIONS, Part, PartitionSums, StoreError, open_store
from timeline.storage.base import Storage

if TYPE_CHECKING:
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from timeline.storage.s3 import S3Settings

__all__ = ["PlanSums"]


class PlanSums:
    """The header fields every concern of a stored plan reads (`StoredPlan` declares them), the
    totals, and the parts."""

    uri: str
    s3: S3Settings | None
    parts: tuple[Part, ...]
    sums: tuple[PartitionSums, ...]
    partitions_to_delete: tuple[str, ...]

    # Totals

    @property
    def files(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def files_to_delete(self) -> int:
        return sum(p.deletes for p in self.parts)

    @property
    def files_kept(self) -> int:
        return self.files - self.files_to_delete

    @property
    def bytes_to_delete(self) -> int:
        return sum(s.bytes_to_delete for s in self.sums)

    @property
    def is_empty(self) -> bool:
        return not self.partitions_to_delete and not self.files_to_delete

    @property
    def partitions_considered(self) -> tuple[str, ...]:
        return tuple(s.partition for s in self.sums)

    # The parts

    def _read(self, part: Part, columns: list[str] | None = None,
              where: pc.Expression | None = None) -> pa.Table:
        storage, folder = open_store(self.uri, self.s3)
        try:
            return storage.read_parquet(Storage.join(folder, part.name), columns=columns, where=where)
        except CleanlineError as exc:
            raise StoreError(f"{self.uri}: cannot read {part.name}: {exc}") from exc

    def _dataset(self, parts: Sequence[Part]) -> ds.Dataset:
        storage, folder = open_store(self.uri, self.s3)
        try:
            return storage.parquet_dataset([Storage.join(folder, p.name) for p in parts], DECISIONS)
        except CleanlineError as exc:
            raise StoreError(f"{self.uri}: cannot read the plan's parts: {exc}") from exc

    def _parts_of(self, partition: str) -> Sequence[Part]:
        found = self._part_range(partition)
        return self.parts[found.start:found.stop]

    def _part_range(self, partition: str) -> range:
        if not partition:
            return range(len(self.parts))
        return range(bisect_left([p.last for p in self.parts], partition),
                     bisect_right([p.first for p in self.parts], partition))
