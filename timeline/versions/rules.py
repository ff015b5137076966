"""What stops a table version change, each rule as the Hudi handler it follows decides it: one
function per rule, each returning the blockers it finds for one step (`Step`) as typed values
naming the instant or setting, what clears it and the Hudi class and method. Reads only.

The steps are Hudi's: 6 -> 8 runs `SixToSevenUpgradeHandler` then `SevenToEightUpgradeHandler`
(Hudi 1.0.x named the pair `SixToEightUpgradeHandler`), 8 -> 9 `EightToNineUpgradeHandler`,
9 -> 8 `NineToEightDowngradeHandler`, 8 -> 6 `EightToSevenDowngradeHandler` then
`SevenToSixDowngradeHandler` (1.0.x: `EightToSixDowngradeHandler`). Each of the four runs
`UpgradeDowngradeUtils.rollbackFailedWritesAndCompact` first (`UpgradeDowngrade`'s
`UPGRADE_HANDLERS_REQUIRING_ROLLBACK_AND_COMPACT` holds 7 -> 8 and 8 -> 9, its
`DOWNGRADE_HANDLERS_REQUIRING_ROLLBACK_ANDCOMPACT` 9 -> 8 and 8 -> 7): every pending write is
rolled back (the EAGER policy) and a merge-on-read table compacted whole."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from timeline.exceptions import CleanlineError
from timeline.failed_writes import is_clustering
from timeline.instant import (
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    Instant,
)
from timeline.locks.live import live_writers
from timeline.table import Table

RUN = "UpgradeDowngrade.run"
ROLLBACK_AND_COMPACT = "UpgradeDowngradeUtils.rollbackFailedWritesAndCompact"
# EightToSevenDowngradeHandler.getSupportedMetadataPartitionPaths: what a version 6 metadata table holds
V6_INDEX_PARTITIONS = frozenset({"files", "column_stats", "bloom_filters", "record_index"})
# UpgradeDowngradeUtils.PAYLOAD_CLASSES_TO_HANDLE: the payloads version 9 spells as merge modes
_MODEL = "org.apache.hudi.common.model."
PAYLOADS_TO_HANDLE = frozenset(_MODEL + name for name in (
    "AWSDmsAvroPayload", "DefaultHoodieRecordPayload", "EventTimeAvroPayload", "debezium.MySqlDebeziumAvroPayload",
    "OverwriteNonDefaultsWithLatestAvroPayload", "OverwriteWithLatestAvroPayload", "PartialUpdateAvroPayload",
    "debezium.PostgresDebeziumAvroPayload"))
PAYLOAD = "hoodie.compaction.payload.class"
LEGACY_PAYLOAD = "hoodie.table.legacy.payload.class"
MERGE_MODE = "hoodie.record.merge.mode"
KEY_GENERATOR = "hoodie.table.keygenerator.class"
KEY_GENERATOR_TYPE = "hoodie.table.keygenerator.type"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
COMPLEX_KEYGEN_VALIDATION = "hoodie.write.complex.keygen.validation.enable"
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"


DEFAULT_PAYLOAD = _MODEL + "DefaultHoodieRecordPayload"
OVERWRITE_PAYLOAD = _MODEL + "OverwriteWithLatestAvroPayload"
EVENT_TIME_PAYLOAD = _MODEL + "EventTimeAvroPayload"
PRECOMBINE = "hoodie.table.precombine.field"
MERGE_STRATEGY = "hoodie.record.merge.strategy.id"
# HoodieRecordMerger's strategy ids
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
CUSTOM_STRATEGY = "1897ef5f-18bc-4557-939c-9d6a8afd1519"
PAYLOAD_STRATEGY = "00000000-0000-0000-0000-000000000000"


def merge_mode_of_payload(props: Mapping[str, str], is_mor: bool) -> dict[str, str]:
    """`SevenToEightUpgradeHandler.upgradeMergeMode`: the payload class (`getPayloadClass`,
    DefaultHoodieRecordPayload when unset) as payload, merge mode and strategy id."""
    payload = props.get(PAYLOAD) or DEFAULT_PAYLOAD
    if payload not in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD, OVERWRITE_PAYLOAD):
        return {PAYLOAD: payload, MERGE_MODE: "CUSTOM", MERGE_STRATEGY: PAYLOAD_STRATEGY}
    if is_mor and props.get(PRECOMBINE):
        return {PAYLOAD: DEFAULT_PAYLOAD, MERGE_MODE: "EVENT_TIME_ORDERING", MERGE_STRATEGY: EVENT_TIME_STRATEGY}
    if payload == DEFAULT_PAYLOAD:  # setEventTimeOrCommitTimeBasedOnPayload
        return {PAYLOAD: DEFAULT_PAYLOAD, MERGE_MODE: "EVENT_TIME_ORDERING", MERGE_STRATEGY: EVENT_TIME_STRATEGY}
    return {PAYLOAD: OVERWRITE_PAYLOAD, MERGE_MODE: "COMMIT_TIME_ORDERING", MERGE_STRATEGY: COMMIT_TIME_STRATEGY}


class VersionChangeUnsupported(CleanlineError, ValueError):
    """A version change Cleanline does not check (a target or a current version other than 6, 8
    and 9); names the table and the versions."""


class BlockerKind(str, Enum):
    PENDING_WRITE = "pending write"
    PENDING_TABLE_SERVICE = "pending table service"
    PENDING_ROLLBACK = "pending rollback"
    INDEXING_ON_TIMELINE = "indexing action on the timeline"
    NON_BLOCKING_CONCURRENCY = "non-blocking concurrency control"
    LOG_FILES = "log files to compact"
    METADATA_TABLE_VERSION = "metadata table on another version"
    METADATA_TABLE_BEHIND = "metadata table behind the data table"
    RECORD_INDEX_UPGRADE = "record index upgraded from version 6"
    INDEX_PARTITION = "index partition the target cannot hold"
    SETTING = "setting"
    READERS = "readers"


@dataclass(frozen=True, slots=True)
class Step:
    """One of Hudi's steps of a version change (`handler` names its Java class or classes)."""

    from_version: int
    to_version: int
    handler: str

    @property
    def upgrade(self) -> bool:
        return self.to_version > self.from_version


@dataclass(frozen=True, slots=True)
class Blocker:
    """One thing a step meets: its kind, the sentence saying why, what clears it, the Hudi rule
    (class.method, or an apache/hudi issue), the instant or setting it names, the file groups it
    holds ((partition, file id)), and whether it stops the change (`blocking`) or only says what
    the change will do (a setting rewritten, an index dropped, readers to know about)."""

    kind: BlockerKind
    why: str
    clears: str
    rule: str
    instant: Instant | None = None
    setting: str | None = None
    file_groups: tuple[tuple[str, str], ...] = ()
    blocking: bool = True


STEPS = {(6, 8): Step(6, 8, "SixToSevenUpgradeHandler + SevenToEightUpgradeHandler (1.0.x: SixToEightUpgradeHandler)"),
         (8, 9): Step(8, 9, "EightToNineUpgradeHandler"),
         (9, 8): Step(9, 8, "NineToEightDowngradeHandler"),
         (8, 6): Step(8, 6, "EightToSevenDowngradeHandler + SevenToSixDowngradeHandler "
                            "(1.0.x: EightToSixDowngradeHandler)")}
VERSIONS = (6, 8, 9)


def steps_between(table: Table, current: int, target: int) -> tuple[Step, ...]:
    """`UpgradeDowngrade.run`'s loop, one handler per version (7 is Hudi's bridge, run with 8):
    6 -> 8 -> 9 up, 9 -> 8 -> 6 down; nothing when the versions are equal. A version other than
    6, 8 and 9 is refused."""
    for version, what in ((current, "its version"), (target, "the target version")):
        if version not in VERSIONS:
            raise VersionChangeUnsupported(f"{table.uri}: {what} {version} is not one Cleanline checks a change "
                                           f"from or to (table versions {', '.join(map(str, VERSIONS))})")
    found = []
    order = list(VERSIONS) if target >= current else list(reversed(VERSIONS))
    path = order[order.index(current):order.index(target) + 1]
    for a, b in zip(path, path[1:], strict=False):
        found.append(STEPS[(a, b)])
    return tuple(found)


def pending_writes(table: Table, step: Step, props: Mapping[str, str]) -> list[Blocker]:
    """`rollbackFailedWritesAndCompact` runs `BaseHoodieWriteClient.rollbackFailedWrites` with
    the EAGER policy: every pending instant of the commits timeline but compactions and
    clusterings (`BaseHoodieTableServiceClient.getInflightTimelineExcludeCompactionAndClustering`:
    `filterPendingExcludingCompaction`, so a pending log compaction is rolled back too; on version
    6 a replacecommit whose plan is a clustering is a clustering) is rolled back, its files
    deleted, whether or not its writer still runs (a live one, `timeline.locks.live`, is named).
    Cleanline's change rolls nothing back: each stops it until it completes or is rolled back."""
    found = []
    live = {w.requested_time: w for w in live_writers(table, props)}
    for instant in table.timeline.with_actions({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, LOG_COMPACTION}).pending():
        if instant.action == REPLACE_COMMIT and is_clustering(table, instant):
            continue
        writer = live.get(instant.requested_time)
        running = f"its writer is live: {writer.describe()}" if writer else "no live writer seen"
        found.append(Blocker(BlockerKind.PENDING_WRITE, f"the {instant.action} {instant.requested_time} is "
                             f"{instant.state.name.lower()} ({running}): Hudi's handler rolls every pending write "
                             "back first (a writer still running it fails)", "the write completed, or rolled back "
                             f"(cleanline rollback --instant {instant.requested_time}, or --failed)",
                             f"{ROLLBACK_AND_COMPACT} (BaseHoodieWriteClient.rollbackFailedWrites, EAGER: "
                             "getInflightTimelineExcludeCompactionAndClustering)", instant))
    return found


def pending_table_services(table: Table, step: Step) -> list[Blocker]:
    """On merge-on-read, `rollbackFailedWritesAndCompact` compacts every file group with log
    files (UnBoundedCompactionStrategy, a trigger of one delta commit), but a new plan leaves out
    the file groups a pending compaction or clustering holds
    (`BaseHoodieCompactionPlanGenerator.generateCompactionPlan`): their log files would cross the
    layout change uncompacted (a pending log compaction is rolled back as a write:
    `pending_writes`). On copy-on-write a pending clustering is carried over (renamed:
    `SIX_TO_EIGHT_TIMELINE_ACTION_MAP`), so nothing is said there."""
    if not table.config.is_mor:
        return []
    found = []
    for instant in table.timeline.pending():
        if instant.action in (COMPACTION, CLUSTERING) or (
                instant.action == REPLACE_COMMIT and is_clustering(table, instant)):
            service = "clustering" if instant.action in (CLUSTERING, REPLACE_COMMIT) else instant.action
            found.append(Blocker(BlockerKind.PENDING_TABLE_SERVICE, f"the {service} {instant.requested_time} is "
                                 f"{instant.state.name.lower()}: the compaction Hudi's handler runs first leaves out "
                                 "the file groups it holds, so their log files would cross the layout change",
                                 f"the {service} at {instant.requested_time} run to completion (Hudi's run_compaction "
                                 "/ run_clustering procedures), or rolled back",
                                 f"{ROLLBACK_AND_COMPACT} (BaseHoodieCompactionPlanGenerator.generateCompactionPlan)",
                                 instant))
    return found


def pending_rollbacks(table: Table, step: Step) -> list[Blocker]:
    """`rollbackFailedWrites` first resumes every pending rollback
    (`BaseHoodieTableServiceClient.getPendingRollbackInfos`) with the handler's write config: on a
    downgrade below 8, a rollback that writers running with non-blocking concurrency control
    left pending fails it ("Non-blocking concurrency control is not supported for table versions
    < 8", apache/hudi #14110, fixed for the metadata table only by PR #14109). Each step is
    stopped by one: finish it first."""
    found = []
    for instant in table.timeline.with_actions({ROLLBACK}).pending():
        issue = " (apache/hudi #14110)" if step.to_version < 8 else ""
        found.append(Blocker(BlockerKind.PENDING_ROLLBACK, f"the rollback {instant.requested_time} is "
                             f"{instant.state.name.lower()}: Hudi's handler resumes it before the change{issue}",
                             "the rollback finished (cleanline doctor --repair stale-pending, or the next Hudi "
                             "write)", f"{ROLLBACK_AND_COMPACT} (BaseHoodieTableServiceClient.rollbackFailedWrites)",
                             instant))
    return found


def non_blocking_concurrency(table: Table, step: Step, props: Mapping[str, str]) -> list[Blocker]:
    """`HoodieWriteConfig`'s validation: non-blocking concurrency control needs table version 8
    or later ("Non-blocking concurrency control is not supported for table versions < 8"); a
    downgrade to 6 with writers on it leaves them refused (apache/hudi #14110)."""
    mode = (props.get(CONCURRENCY_MODE) or "").strip().upper()
    if step.to_version >= 8 or mode != "NON_BLOCKING_CONCURRENCY_CONTROL":
        return []
    return [Blocker(BlockerKind.NON_BLOCKING_CONCURRENCY, f"the writers run with {CONCURRENCY_MODE}={mode}, which "
                    "table version 6 does not have: Hudi refuses the writers (and the handler's own rollback, "
                    "apache/hudi #14110) on version 6", f"the writers moved to {CONCURRENCY_MODE}="
                    "OPTIMISTIC_CONCURRENCY_CONTROL (or SINGLE_WRITER) and their pending instants finished",
                    "HoodieWriteConfig.validate (apache/hudi #14110)", setting=CONCURRENCY_MODE)]


def indexing_on_timeline(table: Table, step: Step) -> list[Blocker]:
    """The downgrade 8 -> 6 rewrites every active instant into version 6's layout
    (`EightToSevenDowngradeHandler.downgradeActiveTimelineInstant`) and fails with an indexing
    instant among them (apache/hudi #13908: a v9 table downgraded to 6 with async indexing on
    its timeline)."""
    if step.from_version != 8 or step.to_version != 6:
        return []
    return [Blocker(BlockerKind.INDEXING_ON_TIMELINE, f"the indexing {i.requested_time} ({i.state.name.lower()}) "
                    "is on the active timeline: the downgrade to 6 fails on indexing instants (apache/hudi #13908)",
                    "the indexing instants archived off the active timeline (cleanline archive run, once archival "
                    "reaches them), or the indexes they built dropped by a Hudi writer and the instants archived",
                    "EightToSevenDowngradeHandler.downgradeActiveTimelineInstant (apache/hudi #13908)", i)
            for i in table.timeline.with_actions({INDEXING})]


def log_files(table: Table, step: Step) -> list[Blocker]:
    """`rollbackFailedWritesAndCompact` compacts a merge-on-read table before each step: no
    latest slice keeps log files across the layout change (version 6 names a log file after its
    slice's base instant, versions 8 and 9 after the delta commit that wrote it). Cleanline's
    change does not merge records: every file group whose latest slice has log files must be
    compacted first (one blocker naming them all)."""
    if not table.config.is_mor:
        return []
    slices = [s for s in table.file_system_view().latest_slices() if s.log_files]
    if not slices:
        return []
    count = sum(len(s.log_files) for s in slices)
    return [Blocker(BlockerKind.LOG_FILES, f"{len(slices)} file group(s) have {count} log file(s) in their latest "
                    "slice: Hudi's handler compacts them before changing the layout",
                    "a full compaction first (Hudi's run_compaction procedure or HoodieCompactor with "
                    "UnBoundedCompactionStrategy), then no latest slice has log files",
                    f"{ROLLBACK_AND_COMPACT} (UnBoundedCompactionStrategy)",
                    file_groups=tuple((s.partition, s.file_id) for s in slices))]


def _metadata_table(table: Table) -> Table | None | CleanlineError:
    """The table's metadata table opened as a table (None: there is none; the error: it cannot
    be read)."""
    base = table.path(".hoodie", "metadata")
    if not table.storage.exists(table.path(".hoodie", "metadata", ".hoodie")):
        return None
    try:
        return Table.load(table.storage, base)
    except CleanlineError as exc:
        return exc


def metadata_table_version(table: Table, step: Step) -> list[Blocker]:
    """`UpgradeDowngrade.run` changes the metadata table first, then the data table; a crash
    between the two (or a failure Hudi once ignored: PR #13642) leaves them on different versions,
    and no reader reads such a table as one. Said once, on the first step; a metadata table whose
    `hoodie.properties` cannot be read is said too (Hudi's run of its change fails on it)."""
    mdt = _metadata_table(table)
    if step.from_version != table.version or mdt is None:
        return []
    clears = ("the metadata table dropped (cleanline mdt drop; Hudi writers rebuild it), or the earlier change "
              "finished with the Hudi release that started it")
    if isinstance(mdt, CleanlineError):
        return [Blocker(BlockerKind.METADATA_TABLE_VERSION, f"the metadata table cannot be read: {mdt}", clears,
                        f"{RUN} (PR #13642)", setting="hoodie.table.version")]
    if mdt.version == table.version:
        return []
    return [Blocker(BlockerKind.METADATA_TABLE_VERSION, f"the metadata table is on table version {mdt.version}, the "
                    f"data table on {table.version}: an earlier change stopped half-way", clears,
                    f"{RUN} (PR #13642)", setting="hoodie.table.version")]


def metadata_table_behind(table: Table, step: Step, props: Mapping[str, str]) -> list[Blocker]:
    """`UpgradeDowngradeUtils.checkAndHandleMetadataTable` (7 -> 8 and 8 -> 9, with
    `hoodie.metadata.enable` on, its default): a metadata table whose last completed commit is
    older than the data table's (`isMetadataTableBehindDataTable`, requested times compared) is
    deleted by the upgrade, and rebuilt by the writers' next write. A note."""
    mdt = _metadata_table(table)
    enabled = (props.get("hoodie.metadata.enable") or "true").strip().lower() != "false"
    if not step.upgrade or not enabled or not isinstance(mdt, Table) or not table.config.metadata_partitions:
        return []
    commits = {COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION, LOG_COMPACTION}
    data_last = table.timeline.with_actions(commits).completed().last()
    mdt_last = mdt.timeline.with_actions(commits).completed().last()
    if data_last is None or mdt_last is None or mdt_last.requested_time >= data_last.requested_time:
        return []
    return [Blocker(BlockerKind.METADATA_TABLE_BEHIND, f"the metadata table's last commit {mdt_last.requested_time} "
                    f"is older than the data table's {data_last.requested_time}: the upgrade deletes it (a Hudi "
                    "writer rebuilds it)", "nothing to clear; to keep it, bring it up to date first (a Hudi write, "
                    "or cleanline doctor --repair metadata-table-drift)",
                    "UpgradeDowngradeUtils.checkAndHandleMetadataTable (isMetadataTableBehindDataTable)",
                    mdt_last, blocking=False)]


def record_index_upgrade(table: Table, step: Step, origin: int) -> list[Blocker]:
    """apache/hudi #13893 (open): a table version 6 with a record index upgraded to 9 fails in
    the upgrade's writes of the metadata table. Said on the 8 -> 9 step of a change from 6."""
    if origin != 6 or step.to_version != 9 or "record_index" not in table.config.metadata_partitions:
        return []
    return [Blocker(BlockerKind.RECORD_INDEX_UPGRADE, "the metadata table has a record index and the table moves "
                    "from version 6 to 9: that upgrade fails (apache/hudi #13893)",
                    "the record index dropped first (writers with hoodie.metadata.record.index.enable=false, or "
                    "cleanline mdt drop) and rebuilt after the upgrade, or the upgrade stopped at 8",
                    "EightToNineUpgradeHandler.upgrade (apache/hudi #13893)",
                    setting="hoodie.table.metadata.partitions")]


def index_partitions(table: Table, step: Step) -> list[Blocker]:
    """The metadata-table partitions the target cannot hold, dropped by the handler (not
    blocking: the index is lost and rebuilt only by a Hudi writer at the newer version):
    8 -> 6, every partition but files, column_stats, bloom_filters and record_index
    (`EightToSevenDowngradeHandler.downgradeMetadataPartitions`); 9 -> 8, every index whose
    definition (`.hoodie/.index_defs/index.json`) has a version above V1
    (`UpgradeDowngradeUtils.dropNonV1IndexPartitions`)."""
    partitions = table.config.metadata_partitions
    if step.from_version == 8 and step.to_version == 6:
        dropped = [p for p in partitions if p not in V6_INDEX_PARTITIONS]
        rule = "EightToSevenDowngradeHandler.downgradeMetadataPartitions"
    elif step.from_version == 9 and step.to_version == 8:
        versions = _index_versions(table)
        dropped = [p for p in partitions if versions.get(p, "V1").upper() not in ("V1", "")]
        rule = "UpgradeDowngradeUtils.dropNonV1IndexPartitions"
    else:
        return []
    return [Blocker(BlockerKind.INDEX_PARTITION, f"the metadata table's {p} partition cannot be held at version "
                    f"{step.to_version}: the handler drops it", "nothing to clear: the index is rebuilt by a Hudi "
                    "writer after a later upgrade; readers that use it read without it", rule,
                    setting="hoodie.table.metadata.partitions", blocking=False) for p in dropped]


def _index_versions(table: Table) -> dict[str, str]:
    """Each index's metadata-table partition and the version its definition records."""
    relative = table.config.get("hoodie.table.index.defs.path") or ".hoodie/.index_defs/index.json"
    path = table.path(*relative.split("/"))
    if not table.storage.exists(path):
        return {}
    try:
        defs = json.loads(table.storage.read(path)).get("indexDefinitions") or {}
    except (ValueError, AttributeError):
        return {}
    return {str(d.get("indexName", name)): str(d.get("version") or "V1") for name, d in defs.items()
            if isinstance(d, dict)}


def settings(table: Table, step: Step, props: Mapping[str, str]) -> list[Blocker]:
    """The table settings the target spells differently: "will be rewritten" (not blocking)
    where the handler rewrites them, blocking where it refuses. One function per step's handler."""
    rule = {(6, 8): _settings_six_to_eight, (8, 9): _settings_eight_to_nine, (9, 8): _settings_nine_to_eight,
            (8, 6): _settings_eight_to_six}[(step.from_version, step.to_version)]
    return rule(table, props)


def _rewritten(why: str, rule: str, setting: str) -> Blocker:
    return Blocker(BlockerKind.SETTING, why, "nothing: the change rewrites it", rule, setting=setting, blocking=False)


def _settings_six_to_eight(table: Table, props: Mapping[str, str]) -> list[Blocker]:
    """`SevenToEightUpgradeHandler.upgradeMergeMode` (the payload class becomes a merge mode:
    a custom payload CUSTOM with the payload-based strategy, merge-on-read with a precombine
    field EVENT_TIME_ORDERING, DefaultHoodieRecordPayload (also the payload of a table that
    names none: `RecordPayloadType.getPayloadClassName`'s default) EVENT_TIME_ORDERING, others
    COMMIT_TIME_ORDERING; `timeline.versions.layout.merge_mode_of_payload`) and
    `upgradeKeyGeneratorType` (the class gains its type)."""
    rule = "SevenToEightUpgradeHandler.upgrade"
    payload = props.get(PAYLOAD) or ""
    mode = merge_mode_of_payload(props, table.config.is_mor)[MERGE_MODE]
    found = [_rewritten(f"{PAYLOAD}={payload or '(unset)'} is spelled {MERGE_MODE}={mode} at version 8 "
                        "(with hoodie.record.merge.strategy.id)", f"{rule} (upgradeMergeMode)", MERGE_MODE)]
    if props.get(KEY_GENERATOR):
        found.append(_rewritten(f"{KEY_GENERATOR}={props[KEY_GENERATOR]} gains {KEY_GENERATOR_TYPE} at version 8",
                                f"{rule} (upgradeKeyGeneratorType)", KEY_GENERATOR_TYPE))
    return found


def _settings_eight_to_nine(table: Table, props: Mapping[str, str]) -> list[Blocker]:
    """`EightToNineUpgradeHandler.upgrade` (merge-on-read only): a payload of
    `PAYLOAD_CLASSES_TO_HANDLE` moves to `hoodie.table.legacy.payload.class` and is spelled as a
    merge mode and partial-update mode (`reconcilePayloadClassConfig`, `reconcileMergeModeConfig`)."""
    payload = props.get(PAYLOAD) or ""
    if not table.config.is_mor or payload not in PAYLOADS_TO_HANDLE:
        return []
    return [_rewritten(f"{PAYLOAD}={payload} is removed at version 9: kept as {LEGACY_PAYLOAD}, the merge spelled by "
                       f"{MERGE_MODE} and hoodie.table.partial.update.mode",
                       "EightToNineUpgradeHandler.reconcilePayloadClassConfig", PAYLOAD)]


def _settings_nine_to_eight(table: Table, props: Mapping[str, str]) -> list[Blocker]:
    """`NineToEightDowngradeHandler.downgrade`: refused for a complex key generator with a
    single record key field while `hoodie.write.complex.keygen.validation.enable` (default true)
    holds (`KeyGenUtils.isComplexKeyGeneratorWithSingleRecordKeyField`); the legacy payload class
    goes back to `hoodie.compaction.payload.class`, ordering fields to the precombine field."""
    found = []
    keygen = (props.get(KEY_GENERATOR) or "") + " " + (props.get(KEY_GENERATOR_TYPE) or "")
    complex_keys = "ComplexKeyGenerator" in keygen or "ComplexAvroKeyGenerator" in keygen or keygen.endswith(" COMPLEX")
    single = len([f for f in (props.get(RECORD_KEY_FIELDS) or "").split(",") if f.strip()]) == 1
    validate = (props.get(COMPLEX_KEYGEN_VALIDATION) or "true").strip().lower() != "false"
    if complex_keys and single and validate:
        found.append(Blocker(BlockerKind.SETTING, "a complex key generator with a single record key field: the "
                             "downgrade refuses it (its keys are encoded differently before version 9)",
                             f"{COMPLEX_KEYGEN_VALIDATION}=false in the writers' options, once the keys are known "
                             "to be written as version 8 expects", "NineToEightDowngradeHandler.downgrade "
                             "(KeyGenUtils.isComplexKeyGeneratorWithSingleRecordKeyField)", setting=KEY_GENERATOR))
    legacy = props.get(LEGACY_PAYLOAD) or ""
    if legacy in PAYLOADS_TO_HANDLE:
        found.append(_rewritten(f"{LEGACY_PAYLOAD}={legacy} goes back to {PAYLOAD} at version 8",
                                "NineToEightDowngradeHandler.reconcileMergeConfigs", PAYLOAD))
    if props.get("hoodie.table.ordering.fields"):
        found.append(_rewritten("hoodie.table.ordering.fields is spelled hoodie.table.precombine.field at version 8",
                                "NineToEightDowngradeHandler.reconcileOrderingFieldsConfig",
                                "hoodie.table.ordering.fields"))
    return found


def _settings_eight_to_six(table: Table, props: Mapping[str, str]) -> list[Blocker]:
    """`EightToSevenDowngradeHandler.unsetRecordMergeMode`: without a payload class, merge mode
    EVENT_TIME_ORDERING becomes DefaultHoodieRecordPayload, COMMIT_TIME_ORDERING
    OverwriteWithLatestAvroPayload, and CUSTOM is refused ("Custom payload class must be
    available for downgrading custom merge mode"); `downgradeKeyGeneratorType` keeps only the
    class."""
    payload = props.get(PAYLOAD) or ""
    mode = (props.get(MERGE_MODE) or "").strip().upper()
    rule = "EightToSevenDowngradeHandler.unsetRecordMergeMode"
    found = []
    if not payload and mode == "CUSTOM":
        found.append(Blocker(BlockerKind.SETTING, f"{MERGE_MODE}=CUSTOM with no {PAYLOAD}: version 6 spells a merge "
                             "only as a payload class, and the downgrade refuses a custom merge without one",
                             f"{PAYLOAD} set to the custom payload the writers use", rule, setting=MERGE_MODE))
    elif mode:
        found.append(_rewritten(f"{MERGE_MODE}={mode} is removed at version 6 (the payload class spells the merge)",
                                rule, MERGE_MODE))
    if props.get(KEY_GENERATOR_TYPE):
        found.append(_rewritten(f"{KEY_GENERATOR_TYPE} is removed at version 6 ({KEY_GENERATOR} kept)",
                                "EightToSevenDowngradeHandler.downgradeKeyGeneratorType", KEY_GENERATOR_TYPE))
    return found


# The engines known to read each table version (README, "Table versions and their readers").
READERS = {6: "Apache Hudi 0.14.x, 0.15.x, 0.16.x and 1.x; hudi-rs",
           8: "Apache Hudi 1.0.x and later, and 0.16.x (the bridge release reads 1.x tables); hudi-rs",
           9: "Apache Hudi 1.1 and later; hudi-rs"}
NOT_READING = {8: "Apache Hudi 0.14.x and 0.15.x (and engines bundling them)",
               9: "Apache Hudi 0.x and 1.0.x (and engines bundling them)"}


def readers(table: Table, step: Step) -> list[Blocker]:
    """Readers that break: on an upgrade, the engines that read the source version but not the
    target (a note: the change is safe only once every reader of the table is one of `READERS`)."""
    if not step.upgrade:
        return []
    return [Blocker(BlockerKind.READERS, f"{NOT_READING[step.to_version]} cannot read table version "
                    f"{step.to_version}; it is read by {READERS[step.to_version]}",
                    "every reader and writer of the table moved to a release that reads the target version",
                    "HoodieTableVersion (the releases of each table version)", setting="hoodie.table.version",
                    blocking=False)]
