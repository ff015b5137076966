"""What each of Hudi's version-change steps rewrites, as pure plans over what is on storage (the
writing is `timeline.versions.change`). Each rule names the Java class and method it follows
(apache/hudi, `hudi-client-common`, package `org.apache.hudi.table.upgrade`).

`UpgradeDowngrade.run(toVersion)`: `performRollbackAndCompactionIfRequired` (every pending write
rolled back, a merge-on-read table compacted: Cleanline refuses instead, the preflight's blockers
`PENDING_WRITE` and `LOG_FILES`); then the metadata table (`.hoodie/metadata`, when it exists) is
moved first by the same `run` on it; then the data table one handler at a time (6 -> 7 -> 8 -> 9,
9 -> 8 -> 7 -> 6), the handlers' property changes gathered and written once at the end with the
new `hoodie.table.version` (and `hoodie.timeline.layout.version`, `HoodieTableConfig.setTableVersion`)
by `HoodieTableConfig.updateDeleteProps` (the `hoodie.properties.backup` protocol:
`HoodieTableConfig.modify` copies the file to the backup, rewrites it with a fresh
`hoodie.table.checksum`, deletes the backup; a reader finding no good main file reads the backup,
`HoodieTableConfig.fetchConfigs`; Cleanline's `timeline.config.write_config` does the same). A
downgrade to 6 with a metadata table then adds an empty deltacommit to it.

6 -> 8 (`SixToSevenUpgradeHandler`: nothing; `SevenToEightUpgradeHandler.upgrade`):
- `checkAndHandleMetadataTable`: a metadata table behind the data table is deleted.
- `createTableLayoutOnStorage(VERSION_2)`: `.hoodie/timeline` and `.hoodie/timeline/history`.
- properties: `hoodie.timeline.path=timeline`; `upgradeMergeMode` (payload -> merge mode and
  strategy id); `setInitialVersion` (`hoodie.table.initial.version=6`); `upgradeKeyGeneratorType`
  (the class kept, `hoodie.table.keygenerator.type` added); `upgradeBootstrapIndexType`;
  `upgradePartitionFields` (custom key generators only, from the writer's option).
- `upgradeActiveTimelineInstant`: every instant file of `.hoodie` (all states) moves to
  `.hoodie/timeline`: a completed file named `<requested>_<completion>.<action>`, the completion
  time being the file's modification time; a pending `replacecommit` file renamed `clustering`
  (`SIX_TO_EIGHT_TIMELINE_ACTION_MAP`, pending states only). `rewriteTimelineV1InstantFileToV2Format`:
  commit and deltacommit files (every state) and completed replacecommits are read as commit
  metadata (v6 JSON) and written as Avro (`CommitMetadataSerDeV2`); every other file is renamed.
- `upgradeToLSMTimeline`: the v1 archive (`.hoodie/archived/.commits_.archive*`) written again
  as LSM files under `.hoodie/timeline/history`.

8 -> 6 (`EightToSevenDowngradeHandler.downgrade`, then `SevenToSixDowngradeHandler`: nothing):
- `downgradeActiveTimelineInstant`: every file of `.hoodie/timeline` moves to `.hoodie`, the
  completion time dropped from the name; a pending `clustering` file named `replacecommit`
  (`EIGHT_TO_SIX_TIMELINE_ACTION_MAP`). `rewriteTimelineV2InstantFileToV1Format`: commit and
  deltacommit files and completed replacecommit/clustering are written as v6 JSON
  (`CommitMetadataSerDeV1`), each completed one's modification time set to its completion time
  (`convertCompletionTimeToEpoch`: v6 readers take the completion time from it); the rest renamed
  (keeping their modification time: Cleanline, copying, sets a completed one's to its completion time).
- `downgradeFromLSMTimeline`: the LSM history written again as a v1 archive.
- properties: `unsetInitialVersion`; `unsetRecordMergeMode` (without a payload class one is set
  from the merge mode; CUSTOM without one refused); `hoodie.record.merge.mode` and
  `hoodie.record.merge.strategy.id` removed; `downgradeKeyGeneratorType` (the class from the
  type, the type removed); `downgradeBootstrapIndexType`; `downgradeMetadataPartitions` (every
  metadata partition but files, column_stats, bloom_filters and record_index deleted) and the
  metadata table's version set to 7 then 6 (`updateMetadataTableVersion`).

8 -> 9 (`EightToNineUpgradeHandler.upgrade`): index definitions without a version get V1
(`populateIndexVersionIfMissing`); `checkAndHandleMetadataTable`; merge-on-read tables only:
`reconcileMergeModeConfig`, `reconcilePartialUpdateModeConfig` (`hoodie.table.partial.update.mode`,
NONE unless the payload says otherwise), `reconcileMergePropertiesConfig`,
`reconcilePayloadClassConfig` (a payload of `PAYLOAD_CLASSES_TO_HANDLE` moves to
`hoodie.table.legacy.payload.class`). No file of the timeline changes (both are layout 2).

9 -> 8 (`NineToEightDowngradeHandler.downgrade`): refused for a complex key generator with one
record key field; `dropNonV1IndexPartitions` (metadata partitions whose index definition is above
V1, dropped by a write client's `dropIndex`); `reconcileMergeConfigs` (partial update mode removed,
a legacy payload back to `hoodie.compaction.payload.class`, merge properties removed);
`reconcileOrderingFieldsConfig` (`hoodie.table.ordering.fields` -> `hoodie.table.precombine.field`).

Where Cleanline does less than Hudi, it refuses rather than half-does: it neither rolls back nor
compacts (preflight blockers); it does not compact a metadata table, so a 6 <-> 8 step, whose
metadata table Hudi compacts and moves to the other layout, drops it whole when the caller says
`drop_metadata_table` (as Hudi's own error advises: "disable the metadata table so that the
upgrade and downgrade can continue for the data table"; Hudi writers rebuild it) and is refused
otherwise (on 8 <-> 9 Hudi compacts the metadata table too, but both versions read its log files
alike, so Cleanline changes only its properties there). The archived timeline is converted as the
handlers convert it (`timeline.versions.archives`).
It drops 9 -> 8's index partitions as `HoodieTableMetadataUtil.deleteMetadataTablePartition`
does (8 -> 7's way: out of `hoodie.table.metadata.partitions`, then the folder, then the index
definition), without the metadata-table commit `dropIndex` writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from timeline.config import (
    HISTORY_PATH,
    LAYOUT,
    MDT_PARTITIONS,
    MDT_PARTITIONS_INFLIGHT,
    TIMELINE_PATH,
    VERSION,
    TableConfig,
)
from timeline.exceptions import InvalidInstantError
from timeline.instant import (
    CLUSTERING,
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    Instant,
    State,
    format_file_name,
    instant_time_from_epoch_ms,
    moment_of,
    split_file_name,
    zone_of,
)
from timeline.metadata import avro, jsonmeta
from timeline.metadata.archived import commit_metadata_avro
from timeline.metadata.conversion import commit_metadata_json
from timeline.storage import FileStatus, Storage
from timeline.versions.rules import (
    COMMIT_TIME_STRATEGY,
    CUSTOM_STRATEGY,
    DEFAULT_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    EVENT_TIME_STRATEGY,
    KEY_GENERATOR,
    KEY_GENERATOR_TYPE,
    LEGACY_PAYLOAD,
    MERGE_MODE,
    MERGE_STRATEGY,
    OVERWRITE_PAYLOAD,
    PAYLOAD,
    PAYLOAD_STRATEGY,
    PAYLOADS_TO_HANDLE,
    PRECOMBINE,
    merge_mode_of_payload,
)

_MODEL = "org.apache.hudi.common.model."
BUILTIN_STRATEGIES = frozenset({EVENT_TIME_STRATEGY, COMMIT_TIME_STRATEGY, CUSTOM_STRATEGY, PAYLOAD_STRATEGY})
INITIAL_VERSION = "hoodie.table.initial.version"
ORDERING_FIELDS = "hoodie.table.ordering.fields"
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"
MERGE_PROPERTIES_PREFIX = "hoodie.record.merge.property."
BOOTSTRAP_INDEX_CLASS = "hoodie.bootstrap.index.class"
BOOTSTRAP_INDEX_TYPE = "hoodie.bootstrap.index.type"
BOOTSTRAP_INDEX_ENABLE = "hoodie.bootstrap.index.enable"
# EightToSevenDowngradeHandler.getSupportedMetadataPartitionPaths
V6_METADATA_PARTITIONS = ("files", "column_stats", "bloom_filters", "record_index")

# KeyGeneratorType: the type Hudi 1.x records for each key generator class
_KEYGEN = "org.apache.hudi.keygen."
KEY_GENERATOR_TYPES = {
    _KEYGEN + "SimpleKeyGenerator": "SIMPLE", _KEYGEN + "SimpleAvroKeyGenerator": "SIMPLE_AVRO",
    _KEYGEN + "ComplexKeyGenerator": "COMPLEX", _KEYGEN + "ComplexAvroKeyGenerator": "COMPLEX_AVRO",
    _KEYGEN + "TimestampBasedKeyGenerator": "TIMESTAMP", _KEYGEN + "TimestampBasedAvroKeyGenerator": "TIMESTAMP_AVRO",
    _KEYGEN + "CustomKeyGenerator": "CUSTOM", _KEYGEN + "CustomAvroKeyGenerator": "CUSTOM_AVRO",
    _KEYGEN + "NonpartitionedKeyGenerator": "NON_PARTITION",
    _KEYGEN + "NonpartitionedAvroKeyGenerator": "NON_PARTITION_AVRO",
    _KEYGEN + "GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator": "HOODIE_TABLE_METADATA",
    "org.apache.spark.sql.hudi.command.SqlKeyGenerator": "SPARK_SQL",
    "org.apache.spark.sql.hudi.command.UuidKeyGenerator": "SPARK_SQL_UUID",
    "org.apache.spark.sql.hudi.command.MergeIntoKeyGenerator": "SPARK_SQL_MERGE_INTO",
}
KEY_GENERATOR_CLASSES = {v: k for k, v in KEY_GENERATOR_TYPES.items()}
# BootstrapIndexType
BOOTSTRAP_INDEX_TYPES = {"org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex": "HFILE",
                         "org.apache.hudi.common.bootstrap.index.NoOpBootstrapIndex": "NO_OP"}

Updates = dict[str, str | None]


# ------------------------------------------------------------------------------------------
# Instant files


@dataclass(frozen=True, slots=True)
class FileMove:
    """One instant file moved into the target layout: `source` -> `target` (paths), converted
    (`convert`: "rename", "json-to-avro" or "avro-to-json", for `record`, the Avro record of the
    commit metadata), the target's modification time set (`mtime_ms`, 8 -> 6 completed files)."""

    source: str
    target: str
    action: str
    state: State
    convert: str
    record: str = "HoodieCommitMetadata"
    mtime_ms: int | None = None


def _commit_like(action: str, state: State) -> str | None:
    """The commit metadata record of a file the handlers rewrite through the serde, or None
    (`rewriteTimelineV1InstantFileToV2Format` / `rewriteTimelineV2InstantFileToV1Format`)."""
    if action in (COMMIT, DELTA_COMMIT):
        return "HoodieCommitMetadata"
    if action in (REPLACE_COMMIT, CLUSTERING) and state is State.COMPLETED:
        return "HoodieReplaceCommitMetadata"
    return None


def completion_epoch_ms(completion_time: str, timezone: str) -> int:
    """`UpgradeDowngradeUtils.convertCompletionTimeToEpoch`: an instant time (milliseconds) as
    epoch milliseconds, in the timeline's zone (the local zone by default, as Hudi's)."""
    return int(moment_of(completion_time, timezone).timestamp() * 1000)


def timeline_moves(storage: Storage, base: str, config: TableConfig, to_version: int) -> list[FileMove]:
    """Every instant file of the active timeline moved between layouts 1 and 2 for the step from
    the table's version to `to_version` (6 -> 8 or 8 -> 6; nothing for 8 <-> 9)."""
    up = config.version == 6 and to_version == 8
    down = config.version == 8 and to_version == 6
    if not (up or down):
        return []
    meta = Storage.join(base, ".hoodie")
    timeline = Storage.join(meta, config.props.get(TIMELINE_PATH) or "timeline")
    source, target, layout = (meta, timeline, 1) if up else (timeline, meta, 2)
    zone = zone_of(config.timezone)
    if not storage.exists(source):
        return []
    moves = []
    for status in storage.list(source):
        move = _move(status, target, layout, up, zone, config.timezone)
        if move is not None:
            moves.append(move)
    # Each instant's pending files first, its completed file last: until the step is finished, a
    # reader of the source layout sees every instant completed or absent, never a completed write
    # turned pending (which a writer's rollback of failed writes would delete).
    return sorted(moves, key=lambda m: (m.source.rsplit("/", 1)[-1].split(".", 1)[0].split("_", 1)[0], m.state,
                                        m.source))


def _move(status: FileStatus, target_folder: str, layout: int, up: bool, zone: Any, timezone: str) -> FileMove | None:
    if status.is_dir or status.name.startswith("."):
        return None
    try:
        requested, action, state, completion = split_file_name(status.name, layout)
    except InvalidInstantError:
        return None
    if up:
        done = instant_time_from_epoch_ms(status.mtime_ms, zone) if state is State.COMPLETED else None
        new_action = CLUSTERING if action == REPLACE_COMMIT and state is not State.COMPLETED else action
        name = format_file_name(Instant(requested, new_action, state, done), 2)
        record = _commit_like(action, state)
        return FileMove(status.path, Storage.join(target_folder, name), action, state,
                        "json-to-avro" if record else "rename", record or "")
    new_action = REPLACE_COMMIT if action == CLUSTERING and state is not State.COMPLETED else action
    name = format_file_name(Instant(requested, new_action, state, None), 1)
    record = _commit_like(action, state)
    # Hudi sets the time of the files it rewrites and renames the rest (a rename keeps the time
    # the file was written at, its completion); Cleanline copies, so it sets every completed
    # file's time to the completion time its name carried.
    mtime = completion_epoch_ms(completion, timezone) if state is State.COMPLETED and completion else None
    return FileMove(status.path, Storage.join(target_folder, name), action, state,
                    "avro-to-json" if record else "rename", record or "", mtime)


def convert_content(data: bytes, move: FileMove, *, path: str) -> bytes:
    """The target file's bytes: an empty file stays empty (Hudi's own writers of both versions
    leave requested commits empty, and both read one as an empty commit); commit metadata
    changes encoding as `move.convert` says; anything else is kept as it is."""
    if move.convert == "rename" or not data.strip():
        return data
    if move.convert == "json-to-avro":
        if data.startswith(b"Obj\x01"):
            return data  # already Avro (a file carried over and rewritten before)
        raw = jsonmeta.decode(data, path=path)
        replace = move.record == "HoodieReplaceCommitMetadata"
        return avro.encode(move.record, commit_metadata_avro(raw, replace=replace))
    if not data.startswith(b"Obj\x01"):
        return data  # already JSON (a legacy v6 file in a v8 timeline)
    return jsonmeta.encode(commit_metadata_json(avro.decode(data, path=path),
                                                replace=move.record == "HoodieReplaceCommitMetadata"))


# ------------------------------------------------------------------------------------------
# hoodie.properties


def property_updates(config: TableConfig, to_version: int, *, options: Mapping[str, str] | None = None,
                     metadata_partitions: tuple[str, ...] | None = None) -> Updates:
    """The keys one step sets (a value) and removes (None) in `hoodie.properties`, the version
    and timeline layout included (`HoodieTableConfig.setTableVersion`). `metadata_partitions`:
    the metadata partitions kept (8 -> 6, `downgradeMetadataPartitions`)."""
    props, frm = config.props, config.version
    opts = dict(options or {})
    updates: Updates = {VERSION: str(to_version), LAYOUT: "2" if to_version >= 8 else "1"}
    if (frm, to_version) == (6, 8):
        updates[TIMELINE_PATH] = "timeline"
        keygen = props.get(KEY_GENERATOR)
        partition_field = opts.get("hoodie.datasource.write.partitionpath.field")
        if keygen in (_KEYGEN + "CustomKeyGenerator", _KEYGEN + "CustomAvroKeyGenerator") and partition_field:
            updates["hoodie.table.partition.fields"] = partition_field
        updates.update(merge_mode_of_payload(props, config.is_mor))
        updates[INITIAL_VERSION] = str(frm) if VERSION in props else "6"
        if keygen:
            updates[KEY_GENERATOR] = keygen
            updates[KEY_GENERATOR_TYPE] = KEY_GENERATOR_TYPES.get(keygen, "USER_PROVIDED")
        bootstrap = props.get(BOOTSTRAP_INDEX_CLASS) or _bootstrap_class(props)
        if bootstrap and (BOOTSTRAP_INDEX_CLASS in props or BOOTSTRAP_INDEX_TYPE in props):
            updates[BOOTSTRAP_INDEX_CLASS] = bootstrap
            updates[BOOTSTRAP_INDEX_TYPE] = BOOTSTRAP_INDEX_TYPES.get(bootstrap, "HFILE")
    elif (frm, to_version) == (8, 6):
        updates[INITIAL_VERSION] = None
        if not props.get(PAYLOAD):
            mode = (props.get(MERGE_MODE) or "EVENT_TIME_ORDERING").upper()
            if mode == "EVENT_TIME_ORDERING":
                updates[PAYLOAD] = DEFAULT_PAYLOAD
            elif mode == "COMMIT_TIME_ORDERING":
                updates[PAYLOAD] = OVERWRITE_PAYLOAD
            else:
                raise ValueError("Custom payload class must be available for downgrading custom merge mode")
        updates[MERGE_MODE] = None
        updates[MERGE_STRATEGY] = None
        keygen = props.get(KEY_GENERATOR) or KEY_GENERATOR_CLASSES.get(props.get(KEY_GENERATOR_TYPE) or "")
        if keygen and (KEY_GENERATOR in props or KEY_GENERATOR_TYPE in props):
            updates[KEY_GENERATOR] = keygen
        updates[KEY_GENERATOR_TYPE] = None
        bootstrap = props.get(BOOTSTRAP_INDEX_CLASS) or _bootstrap_class(props)
        if bootstrap and (BOOTSTRAP_INDEX_CLASS in props or BOOTSTRAP_INDEX_TYPE in props):
            updates[BOOTSTRAP_INDEX_CLASS] = bootstrap
        updates[BOOTSTRAP_INDEX_TYPE] = None
        if metadata_partitions is not None and config.metadata_partitions:
            updates[MDT_PARTITIONS] = ",".join(p for p in metadata_partitions if p in V6_METADATA_PARTITIONS)
    elif (frm, to_version) == (8, 9):
        if config.is_mor:
            updates.update(_eight_to_nine_merge(props))
    elif (frm, to_version) == (9, 8):
        updates.update(_nine_to_eight_merge(props))
    else:
        raise ValueError(f"no Hudi step from table version {frm} to {to_version}")
    return {k: v for k, v in updates.items() if not (v is None and k not in props)}


def _bootstrap_class(props: Mapping[str, str]) -> str | None:
    kind = props.get(BOOTSTRAP_INDEX_TYPE)
    return next((c for c, t in BOOTSTRAP_INDEX_TYPES.items() if t == kind), None) if kind else None


_EVENT_TIME_UPGRADES = frozenset(_MODEL + n for n in (
    "EventTimeAvroPayload", "debezium.MySqlDebeziumAvroPayload", "PartialUpdateAvroPayload",
    "debezium.PostgresDebeziumAvroPayload"))
_COMMIT_TIME_UPGRADES = frozenset(_MODEL + n for n in (
    "AWSDmsAvroPayload", "OverwriteNonDefaultsWithLatestAvroPayload"))


def _eight_to_nine_merge(props: Mapping[str, str]) -> Updates:
    """`EightToNineUpgradeHandler`: `reconcileMergeModeConfig`, `reconcilePartialUpdateModeConfig`,
    `reconcileMergePropertiesConfig`, `reconcilePayloadClassConfig` (merge-on-read tables)."""
    updates: Updates = {PARTIAL_UPDATE_MODE: "NONE"}
    payload = props.get(PAYLOAD) or ""
    strategy = props.get(MERGE_STRATEGY) or EVENT_TIME_STRATEGY  # getRecordMergeStrategyId's default
    if strategy not in BUILTIN_STRATEGIES or not payload:
        return updates
    if payload in _COMMIT_TIME_UPGRADES:
        updates.update({MERGE_MODE: "COMMIT_TIME_ORDERING", MERGE_STRATEGY: COMMIT_TIME_STRATEGY})
    elif payload in _EVENT_TIME_UPGRADES:
        updates.update({MERGE_MODE: "EVENT_TIME_ORDERING", MERGE_STRATEGY: EVENT_TIME_STRATEGY})
    if payload in (_MODEL + "OverwriteNonDefaultsWithLatestAvroPayload", _MODEL + "PartialUpdateAvroPayload"):
        updates[PARTIAL_UPDATE_MODE] = "IGNORE_DEFAULTS"
    elif payload == _MODEL + "debezium.PostgresDebeziumAvroPayload":
        updates[PARTIAL_UPDATE_MODE] = "IGNORE_MARKERS"
    if payload == _MODEL + "AWSDmsAvroPayload":
        updates[MERGE_PROPERTIES_PREFIX + "hoodie.payload.delete.field"] = "Op"
        updates[MERGE_PROPERTIES_PREFIX + "hoodie.payload.delete.marker"] = "D"
    elif payload == _MODEL + "debezium.PostgresDebeziumAvroPayload":
        updates[MERGE_PROPERTIES_PREFIX + "hoodie.payload.partial.update.custom.marker"] = (
            "__debezium_unavailable_value")
    if payload in PAYLOADS_TO_HANDLE:
        updates[LEGACY_PAYLOAD] = payload
        updates[PAYLOAD] = None
    return updates


def _nine_to_eight_merge(props: Mapping[str, str]) -> Updates:
    """`NineToEightDowngradeHandler.reconcileMergeConfigs` and `reconcileOrderingFieldsConfig`."""
    updates: Updates = {PARTIAL_UPDATE_MODE: None}
    legacy = props.get(LEGACY_PAYLOAD) or ""
    if legacy in PAYLOADS_TO_HANDLE:
        updates[LEGACY_PAYLOAD] = None
        updates[PAYLOAD] = legacy
        if legacy not in (OVERWRITE_PAYLOAD, DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD):
            updates[MERGE_STRATEGY] = PAYLOAD_STRATEGY
            updates[MERGE_MODE] = "CUSTOM"
        for key in props:
            if key.startswith(MERGE_PROPERTIES_PREFIX):
                updates[key] = None
    ordering = ("_event_seq" if legacy == _MODEL + "debezium.MySqlDebeziumAvroPayload"
                else props.get(ORDERING_FIELDS))
    if ordering:
        updates[PRECOMBINE] = ordering
        updates[ORDERING_FIELDS] = None
    return updates


def metadata_table_updates(config: TableConfig, to_version: int) -> Updates:
    """The metadata table's own step (`UpgradeDowngrade.run` on it, for 8 <-> 9: the handlers on a
    merge-on-read table whose payload is HoodieMetadataPayload, its strategy payload-based:
    only the partial update mode changes, with the version)."""
    updates: Updates = {VERSION: str(to_version), LAYOUT: "2"}
    if (config.version, to_version) == (8, 9):
        updates.update(_eight_to_nine_merge(config.props))
    elif (config.version, to_version) == (9, 8):
        updates.update(_nine_to_eight_merge(config.props))
    return {k: v for k, v in updates.items() if not (v is None and k not in config.props)}


def index_definitions_with_versions(data: bytes) -> bytes | None:
    """`EightToNineUpgradeHandler.populateIndexVersionIfMissing`: the index definitions file with
    V1 given to every definition without a version, or None when none lacks one."""
    defs = json.loads(data)
    changed = False
    for definition in (defs.get("indexDefinitions") or {}).values():
        if isinstance(definition, dict) and not definition.get("version"):
            definition["version"] = "V1"
            changed = True
    return json.dumps(defs, indent=2).encode() if changed else None


HISTORY_KEYS = (HISTORY_PATH, MDT_PARTITIONS_INFLIGHT)
