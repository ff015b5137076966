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

This module reads a store; its files' schemas and the writing of a part are
`timeline/clean/store_files.py`, the search over the names files `timeline/clean/store_search.py`."""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

import pyarrow as pa

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.planner import CleanPlan, FileDecision, finish_plan, plan_partition, start_plan
from timeline.clean.store_files import (
    DECISIONS,
    HEADER,
    OUTCOME_FILE,
    OUTCOMES,
    PLAN_ORDER,
    Part,
    PartitionSums,
    StoredPart,
    clear_folder,
    names_of,
    open_store,
    write_parquet,
    write_part,
)
from timeline.clean.store_files import StoreError as StoreError  # the console catches it from here
from timeline.clean.store_search import Hits, find_hits
from timeline.exceptions import CleanlineError, FileNotFound
from timeline.instant import Instant, State
from timeline.mdt.listing import ListingSource, describe, iter_listing, resolve
from timeline.perf import paused_gc
from timeline.storage.base import Storage

if TYPE_CHECKING:
    from datetime import datetime

    import pyarrow.compute as pc  # imported where used: the CLI starts without it
    import pyarrow.dataset as ds

    from timeline.clean.executor import FileOutcome
    from timeline.storage.s3 import S3Settings
    from timeline.table import Table


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


@dataclass(frozen=True)
class StoredPlan:
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

    # Reading

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
            table = self._read(part, where=_where(delete, partition))
            if skip >= table.num_rows:
                skip -= table.num_rows
                continue
            want = None if limit is None else limit - len(found)
            found.extend(_rows_of(table.slice(skip, want)))
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
        return self._with_outcomes([r for r in _rows_of(page) if (r.partition, r.file_name) in exact])

    def iter_rows(self) -> Iterator[FileRow]:
        """Every file in plan order with its outcome, a part at a time (for reports)."""
        outcomes = self._outcome_file()
        for part in self.parts:
            rows = _rows_of(self._read(part))
            yield from self._attach(rows, outcomes) if outcomes is not None else rows

    def deletes(self) -> Iterator[FileRow]:
        """The files the plan deletes, in plan order, a part at a time."""
        import pyarrow.compute as pc

        for part in self.parts:
            if part.deletes:
                yield from _rows_of(self._read(part, where=pc.field("delete")))

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

    def _parts_of(self, partition: str) -> Sequence[Part]:
        found = self._part_range(partition)
        return self.parts[found.start:found.stop]

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
        (`store_search.find_hits`); None when one of them has none."""
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
            found.extend(_rows_of(self._read(self.parts[index]).take(want)))
            if limit is not None and len(found) >= limit:
                break
        return self._with_outcomes(found)

    def _part_range(self, partition: str) -> range:
        if not partition:
            return range(len(self.parts))
        return range(bisect_left([p.last for p in self.parts], partition),
                     bisect_right([p.first for p in self.parts], partition))

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
        extra = _where(delete, partition)
        try:
            return self._dataset(parts).to_table(columns=columns, filter=where if extra is None else where & extra)
        except pa.ArrowException as exc:
            raise StoreError(f"{self.uri}: cannot search the plan's parts: {exc}") from exc

    # Outcomes

    def write_outcomes(self, outcomes: Iterable[FileOutcome]) -> dict[str, tuple[int, int, int]]:
        """Record a run's outcome per file (`outcomes.parquet`, replacing an earlier record);
        per partition the planned bytes of the files this run deleted, of those already gone,
        and the number of files that failed."""
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
        planned = {(r.partition, r.file_name): r.size for r in self.deletes()}
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


class Matches(Sequence[FileRow]):
    """The files of a stored plan matching a filter (`StoredPlan.matches`): its length from the
    plan's sums, or from one scan of the names for a search (kept, so a page and its count
    cost one scan); each slice read from the store."""

    def __init__(self, plan: StoredPlan, delete: bool | None, partition: str, search: str) -> None:
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


def _where(delete: bool | None, partition: str) -> pc.Expression | None:
    import pyarrow.compute as pc

    found = []
    if delete is not None:
        found.append(pc.field("delete") if delete else ~pc.field("delete"))
    if partition:
        found.append(pc.field("partition") == partition)
    if not found:
        return None
    return found[0] if len(found) == 1 else found[0] & found[1]


def _rows_of(table: pa.Table) -> list[FileRow]:
    return list(map(FileRow, *(table.column(n).to_pylist() for n in DECISIONS.names)))


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
