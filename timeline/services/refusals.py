"""The merge-on-read tables whose compaction Cleanline refuses before any plan is written: those
whose merge it cannot reproduce exactly (a custom payload or record merger, partial-update or
positional merges, expression indexes, tables without meta fields) and those whose base files
or metadata-table partitions it cannot write. Each refusal names the setting and the Hudi class
whose behaviour it could not reproduce. Reads only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from timeline.exceptions import CleanlineError
from timeline.locks.discovery import writer_properties
from timeline.table import Table

# HoodieTableConfig / HoodieWriteConfig keys
PAYLOAD_CLASS_KEYS = ("hoodie.compaction.payload.class", "hoodie.datasource.write.payload.class",
                      "hoodie.table.payload.class")
MERGE_MODE = "hoodie.record.merge.mode"
MERGE_STRATEGY_KEYS = ("hoodie.record.merge.strategy.id", "hoodie.compaction.record.merger.strategy")
MERGER_IMPLS = "hoodie.write.record.merge.custom.implementation.classes"
LEGACY_MERGER_IMPLS = "hoodie.datasource.write.record.merger.impls"
PARTIAL_UPDATE_MODE = "hoodie.table.partial.update.mode"
POSITIONAL_MERGE = "hoodie.merge.use.record.positions"
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"

OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOADS = frozenset({DEFAULT_PAYLOAD, "org.apache.hudi.common.model.EventTimeAvroPayload"})
COMMIT_TIME_PAYLOADS = frozenset({OVERWRITE_WITH_LATEST})
# HoodieRecordMerger's built-in strategy ids: the payload-based (default) and the commit-time one
PAYLOAD_BASED_STRATEGY = "00000000-0000-0000-0000-000000000000"
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
BUILT_IN_STRATEGIES = frozenset({PAYLOAD_BASED_STRATEGY, EVENT_TIME_STRATEGY, COMMIT_TIME_STRATEGY})
BUILT_IN_MERGERS = frozenset({"org.apache.hudi.common.model.HoodieAvroRecordMerger",
                              "org.apache.hudi.HoodieSparkRecordMerger",
                              "org.apache.hudi.DefaultSparkRecordMerger",
                              "org.apache.hudi.OverwriteWithLatestSparkRecordMerger",
                              "org.apache.hudi.common.model.OverwriteWithLatestMerger"})
# The metadata-table partitions a compaction keeps as Hudi keeps them (files) or leaves alone as
# Hudi does for a COMPACT commit (record index: `convertMetadataToRecordIndexRecords` returns
# early; secondary indexes: the compacted records keep their keys and values)
KEPT_MDT_PARTITIONS = frozenset({"files", "column_stats", "partition_stats", "record_index"})


class MergeMode(str, Enum):
    """How records of one key merge (`RecordMergeMode`), as Cleanline reproduces them:
    EVENT_TIME_ORDERING (`DefaultHoodieRecordPayload`: the greatest ordering value wins) and
    COMMIT_TIME_ORDERING (`OverwriteWithLatestAvroPayload` on 1.x: the latest write wins). Table
    version 6 with `OverwriteWithLatestAvroPayload` is COMMIT_TIME against the base file, with
    log records pre-combined by ordering value (`OverwriteWithLatestAvroPayload.preCombine`)."""

    EVENT_TIME = "EVENT_TIME_ORDERING"
    COMMIT_TIME = "COMMIT_TIME_ORDERING"


class CompactionRefused(CleanlineError, ValueError):
    """A compaction Cleanline will not schedule or run on this table; `reason` says why, naming
    the setting and what Hudi does that Cleanline does not reproduce. Nothing was written."""

    def __init__(self, uri: str, reason: str) -> None:
        super().__init__(f"{uri}: compaction refused: {reason}")
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MergeRules:
    """What a compaction of this table merges by: the mode, the ordering (precombine) field(s)
    ("" when none), and whether it is Hudi 0.x's payload merge (table version 6)."""

    mode: MergeMode
    ordering_field: str
    legacy_payload: bool


def _first(props: Mapping[str, str], keys: tuple[str, ...]) -> str:
    for key in keys:
        value = (props.get(key) or "").strip()
        if value:
            return value
    return ""


def ordering_field(props: Mapping[str, str]) -> str:
    """`HoodieTableConfig.getOrderingFieldsStr`: `hoodie.table.ordering.fields` (table version 9),
    else `hoodie.table.precombine.field`."""
    return _first(props, ("hoodie.table.ordering.fields", "hoodie.table.precombine.field",
                          "hoodie.datasource.write.precombine.field"))


def merge_rules(table: Table, options: Mapping[str, str] | None = None) -> MergeRules:
    """The table's merge, or CompactionRefused when Cleanline cannot reproduce it:

    - a payload class other than `OverwriteWithLatestAvroPayload`, `DefaultHoodieRecordPayload`
      or `EventTimeAvroPayload` (`HoodieRecordPayload.combineAndGetUpdateValue` runs user code);
    - `hoodie.record.merge.mode=CUSTOM` or a merge strategy id other than Hudi's built-in ones
      (`HoodieRecordMerger.merge` runs user code: `HoodieRecordUtils.createRecordMerger`);
    - custom record merger implementations (`hoodie.write.record.merge.custom.implementation.classes`);
    - partial updates (`hoodie.table.partial.update.mode`, `PartialUpdateHandler`) and
      positional merges (`hoodie.merge.use.record.positions`, `PositionBasedFileGroupRecordBuffer`);
    - several ordering fields (`HoodieTableConfig.getOrderingFields` compares them as a tuple of
      Java Comparables; refused rather than guessed)."""
    props = writer_properties(table, options)
    payload = _first(props, PAYLOAD_CLASS_KEYS)
    mode = (props.get(MERGE_MODE) or "").strip().upper()
    strategy = _first(props, MERGE_STRATEGY_KEYS)
    field = ordering_field(props)
    uri = table.uri
    if mode == "CUSTOM":
        raise CompactionRefused(uri, f"{MERGE_MODE}=CUSTOM: records merge by a user's HoodieRecordMerger "
                                "(HoodieRecordUtils.createRecordMerger), whose result Cleanline cannot reproduce; "
                                "compact with a Hudi writer")
    if strategy and strategy not in BUILT_IN_STRATEGIES:
        raise CompactionRefused(uri, f"the merge strategy id {strategy} is not one of Hudi's built-in ones: a custom "
                                "HoodieRecordMerger decides the records; compact with a Hudi writer")
    for key in (MERGER_IMPLS, LEGACY_MERGER_IMPLS):
        named = (c.strip() for c in (props.get(key) or "").split(","))
        custom = [c for c in named if c and c not in BUILT_IN_MERGERS]
        if custom:
            raise CompactionRefused(uri, f"{key}={','.join(custom)}: a custom record merger "
                                    "(HoodieRecordMerger.merge) decides the records; compact with a Hudi writer")
    if payload and payload not in EVENT_TIME_PAYLOADS | COMMIT_TIME_PAYLOADS:
        raise CompactionRefused(uri, f"the payload class {payload} is not one of Hudi's default payloads: its "
                                "combineAndGetUpdateValue (HoodieRecordPayload) decides the records; compact with a "
                                "Hudi writer")
    partial = (props.get(PARTIAL_UPDATE_MODE) or "").strip().upper()
    if partial and partial != "NONE":
        raise CompactionRefused(uri, f"{PARTIAL_UPDATE_MODE}={partial}: log records hold only some columns and merge "
                                "column by column (PartialUpdateHandler), which Cleanline does not reproduce")
    if (props.get(POSITIONAL_MERGE) or "").strip().lower() == "true":
        raise CompactionRefused(uri, f"{POSITIONAL_MERGE}=true: log records merge by row position in the base file "
                                "(PositionBasedFileGroupRecordBuffer), which Cleanline does not reproduce")
    if "," in field:
        raise CompactionRefused(uri, f"several ordering fields ({field}): Hudi compares them together "
                                "(HoodieTableConfig.getOrderingFields), which Cleanline does not reproduce")
    legacy = table.version < 8
    if mode == "COMMIT_TIME_ORDERING" or strategy == COMMIT_TIME_STRATEGY:
        return MergeRules(MergeMode.COMMIT_TIME, field, legacy)
    if mode == "EVENT_TIME_ORDERING":
        return MergeRules(MergeMode.EVENT_TIME, field, legacy)
    # Before `hoodie.record.merge.mode` (table version 6, or a v8 table written without it): the payload
    # decides (HoodieTableConfig.inferMergingConfigsForV8TableCreation)
    if payload in EVENT_TIME_PAYLOADS and field:
        return MergeRules(MergeMode.EVENT_TIME, field, legacy)
    return MergeRules(MergeMode.COMMIT_TIME, field, legacy)


def check_reproducible(table: Table, options: Mapping[str, str] | None = None) -> MergeRules:
    """Every refusal, before any plan is written (`merge_rules` and the checks below); returns
    the merge rules otherwise.

    - not a merge-on-read table (`ScheduleCompactionActionExecutor.execute`: "Can only compact
      table of type MERGE_ON_READ");
    - `hoodie.populate.meta.fields=false`: the record keys would come from the key generator
      (`HoodieMergedLogRecordReader` with a virtual key), which Cleanline does not run;
    - a base file format other than Parquet (`HoodieFileWriterFactory.getFileWriter`: Cleanline
      writes Parquet only);
    - expression indexes (`HoodieIndexDefinition` of type `expression_index`: the metadata table
      would need the expression evaluated over the new files) and metadata-table partitions a
      compaction updates that Cleanline does not write (`bloom_filters`, expression indexes:
      `HoodieBackedTableMetadataWriter.update` for a COMPACT commit)."""
    uri = table.uri
    if not table.config.is_mor:
        raise CompactionRefused(uri, f"{table.config.table_type.value} table: only merge-on-read tables are compacted "
                                "(ScheduleCompactionActionExecutor.execute)")
    if table.version not in (6, 8, 9):
        raise CompactionRefused(uri, f"table version {table.version}: Cleanline compacts table versions 6, 8 and 9")
    props = writer_properties(table, None)
    if (props.get(POPULATE_META_FIELDS) or "true").strip().lower() == "false":
        raise CompactionRefused(uri, f"{POPULATE_META_FIELDS}=false: record keys are not stored with the records and "
                                "would come from the table's key generator, which Cleanline does not run")
    fmt = table.config.base_file_format.upper()
    if fmt != "PARQUET":
        raise CompactionRefused(uri, f"hoodie.table.base.file.format={fmt}: Cleanline writes Parquet base files only")
    rules = merge_rules(table, options)
    partitions = {*table.config.metadata_partitions, *table.config.metadata_partitions_inflight}
    expression = sorted(p for p in partitions if p.startswith("expr_index_"))
    if expression:
        raise CompactionRefused(uri, f"expression indexes ({', '.join(expression)}): their metadata-table records "
                                "come from an expression evaluated over the new base files (HoodieExpressionIndex), "
                                "which Cleanline does not evaluate")
    if table.config.metadata_table_enabled:
        unkept = sorted(p for p in partitions if p not in KEPT_MDT_PARTITIONS and not p.startswith("secondary_index_"))
        if unkept:
            raise CompactionRefused(uri, f"the metadata table's {', '.join(unkept)} partition(s) would need the new "
                                    "base files' records (HoodieBackedTableMetadataWriter.update for a COMPACT "
                                    "commit), which Cleanline does not write yet; compact with a Hudi writer, or drop "
                                    "those indexes")
    return rules


__all__ = ["CompactionRefused", "MergeMode", "MergeRules", "check_reproducible", "merge_rules", "ordering_field"]
