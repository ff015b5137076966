"""Plan stores: a clean plan's file decisions kept as Parquet in a folder of their own, written
part by part where the planning runs (a Spark executor or this process), never gathered in one
place. The process that made the plan keeps only its header, totals and per-partition sums
(`StoredPlan`, saved beside the parts as `plan.json`); reviewing reads the parts back a page,
a partition or a search at a time.

A store is a local folder or an object-store prefix (`s3://bucket/prefix`); it must be
reachable at the same URI from the driver and every executor. Each part holds the decisions of
a run of consecutive partitions (in partition order), sorted by (partition, file name), so the
parts in name order are the whole plan in that order; a part's name is its index, so a Spark
task that is retried overwrites what its failed attempt wrote. Beside each part, its names file
(`part-N.names.arrow`: partition, file name and decision, uncompressed Arrow IPC) lets a
file-name search scan plain bytes instead of decoding Parquet. After a run, `outcomes.parquet`
holds what happened to each file the plan deletes.

`StoredPlan` is split by concern: its parts and sums (`sums.py`), the run's outcomes
(`outcomes.py`), the file-name search (`search.py`) and the pages (`pages.py`) are its bases;
this module holds its header, saving and opening, and the planning into a store. The files'
schemas and the writing of a part are `files.py`. The console's and the CLI's plumbing
(`timeline.internal`), not the library's public surface."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.planner import CleanPlan, FileDecision, finish_plan, plan_partition, start_plan
from timeline.exceptions import CleanlineError
from timeline.instant import Instant, State
from timeline.internal.plan_store.files import (
    HEADER,
    Part,
    PartitionSums,
    StoredPart,
    clear_folder,
    open_store,
    write_part,
)
from timeline.internal.plan_store.files import FileRow as FileRow  # the console reads rows from here
from timeline.internal.plan_store.files import StoreError as StoreError  # the console catches it from here
from timeline.internal.plan_store.pages import Matches as Matches
from timeline.internal.plan_store.pages import PlanPages
from timeline.mdt.listing import ListingSource, describe, iter_listing, resolve
from timeline.perf import paused_gc
from timeline.storage.base import Storage

if TYPE_CHECKING:
    from datetime import datetime

    import pyarrow.compute as pc  # imported where used: the CLI starts without it

    from timeline.storage.s3 import S3Settings
    from timeline.table import Table


@dataclass(frozen=True)
class StoredPlan(PlanPages):
    """A plan whose file decisions live in a store: the header of `CleanPlan`, its totals and
    per-partition sums, and the parts to read the files from."""

    uri: str
    table: str
    policy: CleanPolicy
    earliest_instant_to_retain: Instant | None
    last_completed_commit: str
    partitions_to_delete: tuple[str, ...]
    incremental: bool
    parts: tuple[Part, ...]
    sums: tuple[PartitionSums, ...]
    savepointed_timestamps: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    timeline_end: str = ""
    s3: S3Settings | None = field(default=None, compare=False, repr=False)
    listing: str = "storage"  # where the files were listed from (`timeline.mdt.listing`)

    # Saving and opening

    def save(self) -> StoredPlan:
        """Write `plan.json` (the header, sums and parts) into the plan's folder."""
        ectr = self.earliest_instant_to_retain
        header = {
            "table": self.table, "policy": self.policy.value, "last_completed_commit": self.last_completed_commit,
            "earliest_instant_to_retain": None if ectr is None else [ectr.requested_time, ectr.action,
                                                                      ectr.state.name, ectr.completion_time],
            "partitions_to_delete": list(self.partitions_to_delete), "incremental": self.incremental,
            "savepointed_timestamps": list(self.savepointed_timestamps), "notes": list(self.notes),
            "timeline_end": self.timeline_end, "listing": self.listing, "parts": [asdict(p) for p in self.parts],
            "sums": [[s.partition, s.files, s.deletes, s.bytes_to_delete, s.dropped] for s in self.sums],
        }
        storage, folder = open_store(self.uri, self.s3)
        storage.write(Storage.join(folder, HEADER), json.dumps(header).encode(), overwrite=True)
        return self

    @classmethod
    def open(cls, uri: str, s3: S3Settings | None = None) -> StoredPlan:
        """The plan saved in folder `uri`."""
        storage, folder = open_store(uri, s3)
        try:
            header = json.loads(storage.read(Storage.join(folder, HEADER)))
            ectr = header["earliest_instant_to_retain"]
            return cls(
                uri=uri, table=header["table"], policy=CleanPolicy(header["policy"]),
                earliest_instant_to_retain=None if ectr is None else Instant(ectr[0], ectr[1], State[ectr[2]], ectr[3]),
                last_completed_commit=header["last_completed_commit"],
                partitions_to_delete=tuple(header["partitions_to_delete"]), incremental=header["incremental"],
                parts=tuple(Part(**p) for p in header["parts"]),
                sums=tuple(PartitionSums(*s) for s in header["sums"]),
                savepointed_timestamps=tuple(header["savepointed_timestamps"]), notes=tuple(header["notes"]),
                timeline_end=header["timeline_end"], s3=s3, listing=header.get("listing", "storage"))
        except CleanlineError as exc:
            raise StoreError(f"{uri}: no stored plan here ({exc})") from exc
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise StoreError(f"{uri}: the stored plan's {HEADER} is damaged ({exc})") from exc

    def delete(self) -> None:
        """Remove the plan's folder (its parts, header and outcomes)."""
        clear_folder(self.uri, self.s3)

    @staticmethod
    def remove(uri: str) -> None:
        """Remove a plan folder whether or not a plan was saved in it (nothing when absent)."""
        clear_folder(uri)

    # For the executor

    def to_clean_plan(self) -> CleanPlan:
        """The plan as the executor's `CleanPlan`, holding only the files it deletes (what
        `<t>.clean.requested` lists: Hudi's driver holds them too), for `schedule_clean`."""
        return CleanPlan(
            table=self.table, policy=self.policy, earliest_instant_to_retain=self.earliest_instant_to_retain,
            last_completed_commit=self.last_completed_commit,
            decisions=tuple(FileDecision(r.partition, r.file_name, r.path, r.size, True, r.reason, r.file_id,
                                         r.base_instant, r.bootstrap) for r in self.deletes()),
            partitions_to_delete=self.partitions_to_delete, partitions_considered=self.partitions_considered,
            incremental=self.incremental, savepointed_timestamps=self.savepointed_timestamps, notes=self.notes,
            timeline_end=self.timeline_end)


def store_plan(folder_uri: str, plan: CleanPlan, stored: Sequence[StoredPart], *,
               s3: S3Settings | None = None) -> StoredPlan:
    """The `StoredPlan` for parts written into `folder_uri` (in partition order) under the
    header of `plan` (a `CleanPlan` with no decisions: `finish_plan` over no partitions), saved."""
    parts = tuple(s.part for s in stored if s.part is not None)
    sums = tuple(sorted((x for s in stored for x in s.sums), key=lambda x: x.partition))
    return StoredPlan(
        uri=folder_uri, table=plan.table, policy=plan.policy,
        earliest_instant_to_retain=plan.earliest_instant_to_retain,
        last_completed_commit=plan.last_completed_commit,
        partitions_to_delete=tuple(s.partition for s in sums if s.dropped and s.partition),
        incremental=plan.incremental, parts=tuple(sorted(parts, key=lambda p: p.name)), sums=sums,
        savepointed_timestamps=plan.savepointed_timestamps, notes=plan.notes, timeline_end=plan.timeline_end,
        s3=s3, listing=plan.listing).save()


def compare_stored(stored: StoredPlan, now: StoredPlan) -> list[str]:
    """Why plan `stored` is no longer what the planner gives (`now`), partition by partition:
    both stores are read a part at a time, in plan order, and each partition's files to delete
    are compared with what the new plan decides for them; the differences named file by file."""
    import pyarrow.compute as pc

    reasons: list[str] = []
    old = _by_partition(stored, ["partition", "path"], pc.field("delete"))
    new = _by_partition(now, ["partition", "path", "delete", "reason"], None)
    old_at, new_at = next(old, None), next(new, None)
    while old_at is not None or new_at is not None:
        if new_at is None or (old_at is not None and old_at[0] < new_at[0]):
            assert old_at is not None
            reasons += [f"{path}: no longer in the table's listing" for _, path in old_at[1]]
            old_at = next(old, None)
            continue
        doomed = set() if old_at is None or old_at[0] != new_at[0] else {path for _, path in old_at[1]}
        decided = {path: (delete, reason) for _, path, delete, reason in new_at[1]}
        for path in sorted(doomed):
            found = decided.get(path)
            if found is None:
                reasons.append(f"{path}: no longer in the table's listing")
            elif not found[0]:
                reasons.append(f"{path}: now kept ({found[1]})")
        reasons += [f"{path}: would now also be deleted ({reason})"
                    for path, (delete, reason) in decided.items() if delete and path not in doomed]
        if doomed:
            old_at = next(old, None)
        new_at = next(new, None)
    before, after = set(stored.partitions_to_delete), set(now.partitions_to_delete)
    reasons += [f"partition {p}: no longer deleted" for p in sorted(before - after)]
    reasons += [f"partition {p}: would now also be deleted" for p in sorted(after - before)]
    return reasons


def _by_partition(plan: StoredPlan, columns: list[str], where: pc.Expression | None
                  ) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
    """A plan's rows (`columns`, the first being the partition) grouped by partition, in plan
    order, reading one part at a time (a partition lies wholly in one part)."""
    for part in plan.parts:
        table = plan._read(part, columns=columns, where=where)
        if table.num_rows:
            rows = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
            for partition, group in groupby(rows, key=itemgetter(0)):
                yield partition, list(group)


PART_ROWS = 65_536  # the local planner writes a part once it holds this many files


def plan_clean_stored(table: Table, config: CleanConfig, folder_uri: str, *, now: datetime | None = None,
                      s3: S3Settings | None = None, part_rows: int = PART_ROWS,
                      source: ListingSource | str = ListingSource.STORAGE) -> StoredPlan:
    """`plan_clean` into a plan store, partition by partition: what needs the whole table (the
    earliest commit to retain, savepoints, pending compactions and clusterings, replaced file
    groups: `start_plan`) is read from the timeline first, as Hudi's CleanPlanner does before
    `getDeletePaths` per partition; then each partition is listed (`source`: storage or the
    metadata table, `timeline.mdt.listing.iter_listing`, in partition order), planned, and
    its decisions written a part at a time (whole partitions, about `part_rows` files each) and
    dropped. Only the sums and one part's decisions stay in memory, never the table's listing."""
    start = start_plan(table, config, now=now)
    clear_folder(folder_uri, s3)
    header = finish_plan(start, ())
    context = start.context
    if context is None:
        return store_plan(folder_uri, header, (), s3=s3)
    used = resolve(table, source)
    if used is ListingSource.METADATA:
        header = replace(header, notes=(*header.notes, describe(used)), listing=used.value)
    stored: list[StoredPart] = []
    batch: list[tuple[str, list[FileDecision], bool]] = []
    rows = 0
    with paused_gc():
        for partition, files in iter_listing(table, used, partitions=start.partitions):
            decisions, dropped = plan_partition(context, table.storage, partition, files)
            batch.append((partition, decisions, dropped))
            rows += len(decisions)
            if rows >= part_rows:
                stored.append(write_part(folder_uri, len(stored), batch, s3))
                batch, rows = [], 0
        if batch:
            stored.append(write_part(folder_uri, len(stored), batch, s3))
    return store_plan(folder_uri, header, stored, s3=s3)


__all__ = ["PART_ROWS", "FileRow", "Matches", "StoreError", "StoredPlan", "compare_stored", "plan_clean_stored",
           "store_plan"]
