"""An archival plan: what Hudi's archiver would move off a table's active timeline now (every
state file of each instant), the active timeline's length before and after, and what blocks the
rest: the archiver's rules (`timeline.archive.rules`) and a broken LSM history, read as Hudi's
`LSMTimeline` reads it. Read-only: it reads the table and writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from timeline.archive.rules import (
    ArchivalInputs,
    Blocker,
    BlockerKind,
    KeepCounts,
    is_v2,
    select,
)
from timeline.archive.settings import KEYS as SETTING_KEYS
from timeline.archive.settings import (
    METADATA_COMPACT_MAX_DELTA_COMMITS,
    ArchivalConfigError,
    ArchivalSettings,
    check_settings,
    metadata_table_clean,
    metadata_table_settings,
)
from timeline.archived_timeline import VERSION_FILE, lsm_state, snapshot_files
from timeline.clean.config import CleanConfig
from timeline.exceptions import CleanlineError, CorruptInstantError, FileNotFound, NotAHudiTableError, TableConfigError
from timeline.instant import CLUSTERING, COMMIT, REPLACE_COMMIT, Instant, State, instant_time_from_epoch_ms, zone_of
from timeline.locks.discovery import writer_properties
from timeline.metadata.records import CleanerPlan, RequestedReplace

if TYPE_CHECKING:
    from timeline.table import Table
    from timeline.timeline import ActiveTimeline, Timeline

V1_ARCHIVER = "TimelineArchiverV1"  # Hudi 0.15's HoodieTimelineArchiver: table version 6, .hoodie/archived
V2_ARCHIVER = "TimelineArchiverV2"  # Hudi 1.x: table versions 8 and 9, the LSM timeline

# Blockers that stop any archival run, an explicit one too (the others say why Hudi holds
# instants back; the instants chosen are what an archival would move).
STOPPING = frozenset({BlockerKind.LSM_MANIFEST})


class ArchivalUnsupported(CleanlineError):
    """An archival Cleanline does not run: a metadata table's own, asked for on its own (its
    data table's archival runs it, under the data table's lock, as Hudi's data-table writer
    runs it)."""


METADATA_SUFFIX = "/.hoodie/metadata"


def is_metadata_table(table: Table) -> bool:
    """`HoodieTableMetadata.isMetadataTable`: the table lies at `<data table>/.hoodie/metadata`."""
    return table.base.rstrip("/").endswith(METADATA_SUFFIX)


@dataclass(frozen=True, slots=True)
class ActionToArchive:
    """One action archival moves (Hudi's `ActiveAction`): the instant at its highest state and
    every state file of it on the active timeline, requested first; all of them leave together."""

    instant: Instant
    state_files: tuple[tuple[State, str], ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(path for _, path in self.state_files)


@dataclass(frozen=True, slots=True)
class ArchivalPlan:
    """What archival would do to one table now, and what holds it back.

    `actions` are the instants Hudi's archiver of the table's version (`archiver`) chooses,
    oldest first, each with all its state files; `active_before`/`active_after` count the
    instants of the active timeline before and after. `blockers` say what keeps the others
    (each with its kind, instant, since when and why); `warnings` what Hudi only warns about.
    `keep` holds the counts archival kept by (raised from the cleaner's settings where Hudi
    raises them); `settings` and `clean` the settings read (`hoodie.properties`, then the
    root's `CLEANLINE_HUDI_OPTIONS`, then the call's options). `metadata_table`: the plan of
    the data table's metadata table, archived right after it by its own rules
    (`plan_metadata_archival`, over the data table's timeline as this plan leaves it); None
    without a metadata table, and on a metadata table's own plan."""

    table_uri: str
    table_version: int
    archiver: str
    settings: ArchivalSettings
    clean: CleanConfig
    keep: KeepCounts
    actions: tuple[ActionToArchive, ...]
    active_before: int
    active_after: int
    blockers: tuple[Blocker, ...] = ()
    warnings: tuple[str, ...] = ()
    metadata_table: ArchivalPlan | None = None

    @property
    def archivable(self) -> int:
        """How many instants archival would move now."""
        return len(self.actions) if self.runnable else 0

    @property
    def runnable(self) -> bool:
        """False when a blocker stops every archival run (a broken LSM history)."""
        return not any(b.kind in STOPPING for b in self.blockers)

    @property
    def instants(self) -> tuple[Instant, ...]:
        return tuple(a.instant for a in self.actions)


def archival_properties(table: Table, options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Hudi settings archival is planned with, layered as a Hudi writer of the table gets
    them (`timeline.locks.discovery`): `hoodie.properties`, then the lake-wide options of the
    root the table lies under (given to `HudiTable.open(uri, roots=...)`), then the call's options."""
    return writer_properties(table, options)


def plan_archival(table: Table, *, options: Mapping[str, str] | None = None) -> ArchivalPlan:
    """The archival plan of `table` (see `ArchivalPlan`), with the plan of its metadata table
    when it has one. Raises ArchivalConfigError for settings Hudi refuses
    (`hoodie.keep.max.commits` not above `hoodie.keep.min.commits` with the KEEP_LATEST_COMMITS
    cleaner), naming the table. Asked of a metadata table itself, its own plan
    (`plan_metadata_archival`) over its data table's timeline as it is now."""
    if is_metadata_table(table):
        data = type(table).load(table.storage, table.base.rstrip("/")[:-len(METADATA_SUFFIX)])
        data.with_settings_of(table)
        return plan_metadata_archival(data, table, options=options)
    props = archival_properties(table, options)
    settings = _settings(table, props)
    clean = CleanConfig.from_properties(props)
    plan = _plan(table, settings, clean, check_settings(settings, clean, where=table.uri))
    mdt = metadata_table_of(table)
    if mdt is None:
        return plan
    moved = {(i.requested_time, i.action) for i in plan.instants} if plan.runnable else set()
    after = table.timeline.filter(lambda i: (i.requested_time, i.action) not in moved)
    return replace(plan, metadata_table=plan_metadata_archival(table, mdt, options=options, data_timeline=after))


def plan_metadata_archival(data: Table, mdt: Table, *, options: Mapping[str, str] | None = None,
                           data_timeline: Timeline | None = None) -> ArchivalPlan:
    """The archival of a metadata table as its data table's writer runs it after each
    metadata-table write (`HoodieBackedTableMetadataWriter.performTableServices`:
    `writeClient.archive()` on the metadata table's own client): the archiver of its table
    version over its own timeline, with the settings `createMetadataWriteConfig` derives from
    the data table's (`metadata_table_settings`, `metadata_table_clean`), no metadata table of
    its own, and the data table's active timeline (`data_timeline`, else the data table's now)
    as a bound (`TimelineUtils.getEarliestInstantForMetadataArchival`)."""
    props = archival_properties(data, options)
    settings = metadata_table_settings(_settings(data, props), props)
    clean = metadata_table_clean(CleanConfig.from_properties(props), table_version=mdt.version)
    warnings = check_settings(settings, clean, where=mdt.uri)
    plan = _plan(mdt, settings, clean, warnings, data.timeline if data_timeline is None else data_timeline)
    return replace(plan, blockers=tuple(replace(b, why=_metadata_wording(b.why)) for b in plan.blockers),
                   warnings=tuple(_metadata_wording(w) for w in plan.warnings))


# The settings a metadata table's archival reads, named as the data table's settings they come from.
_METADATA_WORDING = (
    (SETTING_KEYS["compaction_max_delta_commits"][0], METADATA_COMPACT_MAX_DELTA_COMMITS[0]),
    (SETTING_KEYS["min_commits"][0], f"{SETTING_KEYS['min_commits'][0]}+1"),
    (SETTING_KEYS["max_commits"][0], f"{SETTING_KEYS['max_commits'][0]}+1"),
    ("hoodie.clean.commits.retained", "the metadata table's hoodie.clean.commits.retained"),
)


def _metadata_wording(text: str) -> str:
    for key, said in _METADATA_WORDING:
        text = text.replace(key, said)
    return text


def metadata_table_of(table: Table) -> Table | None:
    """The data table's metadata table, opened as a table whose every write is fenced by the
    data table's lock (`timeline.mdt.reader.MetadataTable`); None when it has none, or when its
    folder holds no readable Hudi table (there is no timeline of it to archive)."""
    if not table.config.metadata_table_enabled:
        return None
    from timeline.mdt.reader import MetadataTable  # the metadata table reader, only for tables that have one

    try:
        return MetadataTable(table).mdt
    except (NotAHudiTableError, TableConfigError):
        return None


def _settings(table: Table, props: Mapping[str, str]) -> ArchivalSettings:
    try:
        return ArchivalSettings.from_properties(props)
    except ArchivalConfigError as exc:
        raise ArchivalConfigError(f"{table.uri}: {exc}") from None


def _plan(table: Table, settings: ArchivalSettings, clean: CleanConfig, warnings: list[str],
          data_timeline: Timeline | None = None) -> ArchivalPlan:
    """One table's plan: Hudi's archiver's choice (`select`) and a broken LSM history's blockers."""
    timeline = table.timeline
    chosen = select(replace(read_inputs(table), data_table_timeline=data_timeline), settings, clean)
    blockers = list(chosen.blockers)
    if table.config.layout_version >= 2:
        broken, notes = lsm_history_problems(table)
        blockers[:0] = broken
        warnings = warnings + notes
    actions = tuple(_action(timeline, i) for i in chosen.instants)
    return ArchivalPlan(table.uri, table.version, V2_ARCHIVER if is_v2(table.version) else V1_ARCHIVER, settings,
                        clean, chosen.keep, actions, len(timeline), len(timeline) - len(actions), tuple(blockers),
                        tuple(warnings))


def _action(timeline: ActiveTimeline, instant: Instant) -> ActionToArchive:
    files = timeline.files_of(instant)
    return ActionToArchive(instant, tuple((state, files[state].path) for state in sorted(files)))


def read_inputs(table: Table) -> ArchivalInputs:
    """What the archiver reads besides the active timeline (`ArchivalInputs`): the last
    completed clean's plan when a replace instant needs it (`CleanerUtils.getCleanerPlan`, its
    requested file), which pending replacecommits are clusterings (`ClusteringUtils.isClusteringInstant`:
    one whose requested plan is a clustering plan; on table versions 8 and 9 a clustering has
    its own action, and Hudi 1.x still counts such a replacecommit as one), and the metadata
    table's latest compaction (`HoodieBackedTableMetadata.getLatestCompactionTime`)."""
    timeline = table.timeline
    version = table.version
    v2 = is_v2(version)
    replaces = timeline.with_actions({REPLACE_COMMIT, CLUSTERING} if v2 else {REPLACE_COMMIT})
    last_clean = timeline.cleans().completed().last()
    plan = None
    if replaces and last_clean is not None:
        plan = table.read(last_clean, CleanerPlan, State.REQUESTED,
                          fields=("earliest_instant_to_retain", "extra_metadata"))
    clustering = frozenset(i.requested_time for i in replaces.pending()
                           if i.action == REPLACE_COMMIT and _is_clustering(table, i))
    available = table.config.metadata_table_enabled
    return ArchivalInputs(timeline, version, table.config.is_mor, plan, clustering, available,
                          latest_metadata_compaction(table) if available else None)


def _is_clustering(table: Table, instant: Instant) -> bool:
    """`ClusteringUtils.isClusteringInstant` for a pending replacecommit: its requested plan is
    a clustering plan (an insert_overwrite's is empty; without a requested file, none)."""
    try:
        return table.read(instant, RequestedReplace, State.REQUESTED).is_clustering
    except FileNotFound:
        return False


def latest_metadata_compaction(table: Table) -> str | None:
    """`HoodieBackedTableMetadata.getLatestCompactionTime`: the requested time of the metadata
    table's latest completed commit or replacecommit (a completed compaction is a commit there);
    None before its first compaction, or when it cannot be opened (Hudi finds no table then)."""
    from timeline.mdt.reader import MetadataTable  # the metadata table reader, only for tables that have one

    try:
        mdt = MetadataTable(table).mdt
        compactions = mdt.timeline.with_actions({COMMIT, REPLACE_COMMIT}).completed()
    except (NotAHudiTableError, TableConfigError):
        return None
    last = compactions.last()
    return None if last is None else last.requested_time


def lsm_history_problems(table: Table) -> tuple[list[Blocker], list[str]]:
    """The LSM history (`.hoodie/timeline/history`) read as Hudi reads it (`lsm_state`), and
    what breaks it.

    `LSMTimeline.latestSnapshotVersion` takes the number in `_version_`, or, when that file is
    missing or not a number, the highest `manifest_N` (a warning here: Hudi goes on);
    `latestSnapshotManifest` reads that manifest (missing or not a manifest: blocker) and the
    archived timeline reads every file it lists (one missing: blocker). `LSMTimelineWriter`
    creates the next `manifest_N+1` without overwriting, so a manifest beyond `_version_`, left
    by an archival that died between the two files, makes every later archival fail (blocker).
    Returns (blockers, warnings)."""
    storage = table.storage
    state = lsm_state(storage, table.path(table.config.archive_folder))
    folder, files = state.folder, state.files
    zone = zone_of(table.config.timezone)

    def blocker(why: str, name: str) -> Blocker:
        since = instant_time_from_epoch_ms(files[name].mtime_ms, zone) if name in files else None
        return Blocker(BlockerKind.LSM_MANIFEST, f"{folder}: {why}", None, since)

    warnings, blockers = [], []
    version = state.version
    if version is None:
        if not state.manifests:
            return [], []
        version = max(state.manifests)
        what = "is missing" if state.version_status is None else "holds no number"
        warnings.append(f"{folder}: {VERSION_FILE} {what}; Hudi reads the highest manifest, manifest_{version}, "
                        "and writes the file again at its next archival")
    leftover = sorted(n for n in state.manifests if n > version)
    if leftover:
        name = state.manifests[leftover[0]].name
        blockers.append(blocker(f"{name} lies beyond {VERSION_FILE} ({version}), left by an archival that did not "
                                f"finish: Hudi's archiver creates manifest_{version + 1} and each one after without "
                                "overwriting, and fails on it", name))
    name = f"manifest_{version}"
    if name not in files:
        blockers.append(blocker(f"{VERSION_FILE} names {name}, which is missing: Hudi cannot read the archived "
                                "timeline nor archive more", VERSION_FILE))
        return blockers, warnings
    try:
        listed = [entry.name for entry in snapshot_files(storage, folder, version)]
    except CorruptInstantError:
        blockers.append(blocker(f"{name} is not an LSM timeline manifest: Hudi cannot read the archived timeline "
                                "nor archive more", name))
        return blockers, warnings
    for missing in [f for f in listed if f not in files]:
        blockers.append(blocker(f"{name} lists {missing}, which is missing: reading the archived timeline fails",
                                name))
    return blockers, warnings


__all__ = ["V1_ARCHIVER", "V2_ARCHIVER", "ActionToArchive", "ArchivalPlan", "ArchivalUnsupported",
           "archival_properties", "is_metadata_table", "latest_metadata_compaction", "lsm_history_problems",
           "metadata_table_of", "plan_archival", "plan_metadata_archival", "read_inputs"]
