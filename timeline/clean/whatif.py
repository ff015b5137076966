"""What-if retention (issue 15): the files and bytes a clean would free under each of several
retention settings, computed from one listing of the table, so that an admin can pick a
retention by its cost.

This module owns no Hudi rule. For every setting it runs the planner the way `plan_clean`
does (`start_plan`, then `plan_partition` for each partition, then `finish_plan`), over the one
listing, and keeps only the totals. Every figure is therefore what `plan_clean` plans for that
setting. Nothing is written to the table."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.clean.planner import CleanPlan, PlanStart, finish_plan, list_some, plan_partition, start_plan
from timeline.clean.retention import retention_shortfall
from timeline.fsview import TableListing
from timeline.mdt.listing import ListingSource, resolve, table_listing
from timeline.perf import paused_gc
from timeline.storage import FileStatus
from timeline.table import Table

# The commits-retained settings tried when none are given: 1 to 10 (Hudi's default is 10).
DEFAULT_COMMITS: Sequence[int] = range(1, 11)

UNITS: Mapping[CleanPolicy, str] = {CleanPolicy.KEEP_LATEST_COMMITS: "commits",
                                    CleanPolicy.KEEP_LATEST_BY_HOURS: "hours",
                                    CleanPolicy.KEEP_LATEST_FILE_VERSIONS: "file versions"}


@dataclass(frozen=True, slots=True)
class RetentionCost:
    """What a clean with one retention setting would do to the table now: totals only.

    `retained` counts commits, hours or file versions, by `policy` (`unit` names it).
    `files_kept` and `bytes_kept` count the files of the slices the planner considered and
    keeps (with incremental planning, only those of the partitions it considers).
    `below_table_setting` says why the setting keeps less than the table's own clean settings
    (`retention_shortfall`); a plain clean with it would be refused (a what-if deletes
    nothing). `why_nothing` says why the setting frees nothing (None when it frees something);
    `notes` are the planner's notes for the plan (incremental or full listing, pending cleans,
    the hours cutoff's time zone)."""

    policy: CleanPolicy
    retained: int
    earliest_commit_to_retain: str | None
    files_to_delete: int
    bytes_to_delete: int
    files_kept: int
    bytes_kept: int
    partitions_to_delete: int
    partitions_considered: int
    incremental: bool
    below_table_setting: str | None
    why_nothing: str | None
    notes: tuple[str, ...]

    @property
    def unit(self) -> str:
        return UNITS[self.policy]

    @property
    def frees_nothing(self) -> bool:
        return self.files_to_delete == 0 and self.partitions_to_delete == 0


@dataclass(frozen=True, slots=True)
class WhatIf:
    """The cost of each retention setting, in the order commits, hours, file versions, each
    ascending. `base` is the configuration every setting was varied from (the table's clean
    settings unless given); `now` the moment the hours settings were planned as of (None
    without hours settings); `partitions`, `files` and `bytes` describe the one listing (every
    file in a partition folder, the partition metadata files included)."""

    table: str
    base: CleanConfig
    now: datetime | None
    partitions: int
    files: int
    bytes: int
    costs: tuple[RetentionCost, ...]

    def of(self, policy: CleanPolicy) -> tuple[RetentionCost, ...]:
        """The settings of one policy, ascending."""
        return tuple(c for c in self.costs if c.policy is policy)


def what_if(table: Table, *, commits: Sequence[int] = DEFAULT_COMMITS, hours: Sequence[int] = (),
            file_versions: Sequence[int] = (), base: CleanConfig | None = None,
            now: datetime | None = None, listing: TableListing | None = None,
            source: ListingSource | str = ListingSource.AUTO) -> WhatIf:
    """What a clean of `table` would free under each setting: `commits` retained
    (KEEP_LATEST_COMMITS), `hours` retained (KEEP_LATEST_BY_HOURS, as of `now`, default the
    wall clock, one moment for all) and `file_versions` retained (KEEP_LATEST_FILE_VERSIONS).
    Each setting is `base` (default: the table's clean settings from `hoodie.properties`) with
    the policy and that one value changed. Settings below the table's own settings are planned
    too, and flagged (`RetentionCost.below_table_setting`). A value Hudi would refuse (a
    negative count) raises CleanConfigError before anything is read.

    The table's partitions are listed once (`HudiTable.list_partitions`), and each setting is
    planned over that listing and reduced to totals partition by partition, so that memory
    holds one listing and one partition's decisions, never a plan per setting.

    Incremental planning. Each setting is planned exactly as `plan_clean` plans it, with
    `base.incremental` (`hoodie.clean.incremental.enabled`, on by default), because the figure
    asked for is what a clean with that setting would delete now, and that clean plans
    incrementally whenever Hudi would. Whether a plan is incremental does not depend on the
    retention setting (`_incremental_start` looks only at the last completed clean and the
    savepoints), so all settings of one what-if agree on it; what the setting changes is the
    new earliest commit to retain, and with it the commits whose partitions are considered.
    Planning every setting in full instead would count files in partitions that the incremental
    clean never considers (say, old versions a past clean left behind in a partition nobody
    has written since), and so promise bytes that a clean with that setting would not free:
    it would overstate what a setting buys. An incremental plan considers some of a full plan's
    partitions and decides each the same way, so it frees no file a full plan would not. For
    the full-listing figures (what `cleanline clean plan --no-incremental` plans), pass a
    `base` with `incremental=False`.
    `listing` is a listing of the table the caller already made (a sync's), used instead of a
    new one; otherwise the table is listed from `source` (`timeline.mdt.listing`).
    The incremental partitions are taken from the one listing; a partition an incremental plan
    names that the listing lacks (deleted since, or a folder without partition metadata) is
    looked up once, as `plan_clean` would look it up."""
    base = base or CleanConfig.from_properties(table.config.props)
    configs = list(_settings(base, commits, hours, file_versions))
    if now is None and hours:
        now = datetime.now(UTC)
    used = resolve(table, source)
    listing = listing if listing is not None else table_listing(table, used)[0]
    # a partition the listing lacks is looked up on storage; one the metadata table lacks is empty to Hudi
    looked_up: dict[str, tuple[FileStatus, ...]] = defaultdict(tuple) if used is ListingSource.METADATA else {}
    costs = tuple(_cost(table, config, value, listing, looked_up, now) for value, config in configs)
    return WhatIf(table=table.uri, base=base, now=now if hours else None, partitions=len(listing.partitions),
                  files=sum(len(files) for files in listing.partitions.values()),
                  bytes=sum(f.size for files in listing.partitions.values() for f in files), costs=costs)


def reclaimable(table: Table, *, listing: TableListing | None = None,
                source: ListingSource | str = ListingSource.AUTO) -> RetentionCost:
    """What a clean with the table's own clean settings (`hoodie.properties`, Hudi's defaults
    where unset) would free now: its one setting's cost, from `listing` when given (listed from
    `source`, as `what_if` takes it)."""
    base = CleanConfig.from_properties(table.config.props)
    policy = base.policy
    (cost,) = what_if(
        table, base=base, listing=listing, source=source,
        commits=(base.commits_retained,) if policy is CleanPolicy.KEEP_LATEST_COMMITS else (),
        hours=(base.hours_retained,) if policy is CleanPolicy.KEEP_LATEST_BY_HOURS else (),
        file_versions=(base.file_versions_retained,) if policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS else ()).costs
    return cost


def _settings(base: CleanConfig, commits: Sequence[int], hours: Sequence[int],
              file_versions: Sequence[int]) -> Iterator[tuple[int, CleanConfig]]:
    """(value, configuration) of every setting, checked by CleanConfig before any planning."""
    for policy, field, values in ((CleanPolicy.KEEP_LATEST_COMMITS, "commits_retained", commits),
                                  (CleanPolicy.KEEP_LATEST_BY_HOURS, "hours_retained", hours),
                                  (CleanPolicy.KEEP_LATEST_FILE_VERSIONS, "file_versions_retained", file_versions)):
        for value in sorted(set(values)):
            yield value, base.with_overrides(policy=policy, **{field: value})


def _cost(table: Table, config: CleanConfig, value: int, listing: TableListing,
          looked_up: dict[str, tuple[FileStatus, ...]], now: datetime | None) -> RetentionCost:
    """The totals of `plan_clean(table, config, now=now)`, planned over `listing`."""
    start = start_plan(table, config, now=now)
    head = finish_plan(start, ())  # the plan's header: earliest commit to retain, notes
    deleted = deleted_bytes = kept = kept_bytes = dropped = considered = 0
    if start.context is not None:
        with paused_gc():
            for partition, files in _partitions(table, start, listing, looked_up):
                decisions, drop = plan_partition(start.context, table.storage, partition, files)
                # finish_plan per partition: its rules (which partitions go) apply unchanged,
                # and only one partition's decisions are held at a time.
                part = finish_plan(start, [(partition, decisions, drop)])
                gone, stays = part.files_to_delete, part.files_kept
                deleted, deleted_bytes = deleted + len(gone), deleted_bytes + part.bytes_to_delete
                kept, kept_bytes = kept + len(stays), kept_bytes + sum(d.size for d in stays)
                dropped += len(part.partitions_to_delete)
                considered += 1
    ectr = head.earliest_instant_to_retain
    cost = RetentionCost(
        policy=config.policy, retained=value, earliest_commit_to_retain=ectr.requested_time if ectr else None,
        files_to_delete=deleted, bytes_to_delete=deleted_bytes, files_kept=kept, bytes_kept=kept_bytes,
        partitions_to_delete=dropped, partitions_considered=considered, incremental=head.incremental,
        below_table_setting=retention_shortfall(table.config.props, config), why_nothing=None, notes=head.notes)
    if not cost.frees_nothing:
        return cost
    return _with_why_nothing(cost, start, head)


def _partitions(table: Table, start: PlanStart, listing: TableListing,
                looked_up: dict[str, tuple[FileStatus, ...]]) -> Iterable[tuple[str, tuple[FileStatus, ...]]]:
    """The partitions `plan_clean` would plan for `start`, with their files, from `listing`."""
    if start.partitions is None:
        return listing.partitions.items()
    missing = [p for p in start.partitions if p not in listing.partitions and p not in looked_up]
    if missing and not isinstance(looked_up, defaultdict):
        looked_up.update(list_some(table, missing).partitions)
    return [(p, listing.partitions[p] if p in listing.partitions else looked_up[p]) for p in start.partitions]


def _with_why_nothing(cost: RetentionCost, start: PlanStart, head: CleanPlan) -> RetentionCost:
    if start.context is None:
        # start_plan's first note says why there is no earliest commit to retain.
        why = head.notes[0] if head.notes else "no earliest commit to retain"
    elif cost.partitions_considered == 0 and cost.incremental:
        why = ("incremental planning considers no partition: no commit from the last clean's earliest commit to "
               f"retain up to {cost.earliest_commit_to_retain} updated or replaced a file group (a window that "
               "starts at or before the last clean's frees nothing new)")
    elif cost.partitions_considered == 0:
        why = "the table has no partition to clean"
    else:
        why = f"every one of the {cost.files_kept} files considered in {cost.partitions_considered} partitions is kept"
    return replace(cost, why_nothing=why)


__all__ = ["DEFAULT_COMMITS", "UNITS", "RetentionCost", "WhatIf", "reclaimable", "what_if"]
