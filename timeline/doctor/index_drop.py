"""Index partitions (issue 45): which the table has and what each serves (`index_states`), and
the drop of one (`plan_drop`, run by `index_repair.run`) as `HoodieTableMetadataUtil.
deleteMetadataTablePartition` / `HoodieBackedTableMetadataWriter.dropIndex` do: out of
`hoodie.table.metadata.partitions` (and its inflight list) first, so that readers stop trusting
it (`HoodieTableConfig.setMetadataPartitionState(..., false)`), then its folder under
`.hoodie/metadata`, then its definition in `.index_defs` (`HoodieTableMetaClient.
deleteIndexDefinition`). Hudi writers configured to keep the index rebuild it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from timeline import transition
from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
from timeline.doctor.findings import Change, Finding, RepairPlan, RepairUnavailable
from timeline.doctor.index_keys import RecordIndexEvidence, SecondaryIndexEvidence, diagnose
from timeline.doctor.indexes import (
    COLUMN_STATS,
    INDEX_DEFS,
    INDEX_DEFS_DEFAULT,
    KIND,
    PARTITION_STATS,
    RECORD_INDEX,
    SECONDARY_PREFIX,
    DefinitionEvidence,
    StatsEvidence,
)
from timeline.doctor.survey import Survey
from timeline.mdt.reader import FILES, METADATA_FOLDER, MetadataTable
from timeline.table import Table

DROP = "index drop"

# What each index serves (the queries that lose it when it is dropped).
SERVES = {
    COLUMN_STATS: "data skipping on filters over the indexed columns (hoodie.enable.data.skipping): queries read "
                  "every file of the partitions they touch",
    PARTITION_STATS: "partition pruning on filters over non-partition columns: queries list every partition",
    RECORD_INDEX: "record-key lookups (`WHERE <record key> = ...` / IN) and the writers' RECORD_INDEX tagging: "
                  "writers fall back to their configured index, point lookups scan",
    "files": "file listing through the metadata table: readers list storage",
}


def table_indexes(table: Table) -> list[str]:
    """The index partitions the table lists (complete or inflight), `files` left out."""
    config = table.config
    return [p for p in dict.fromkeys((*config.metadata_partitions, *config.metadata_partitions_inflight)) if p != FILES]


def serves(index: str) -> str:
    if index.startswith(SECONDARY_PREFIX):
        return "filters on the indexed column (secondary-index lookups): queries scan the files instead"
    if index.startswith("expression_index_"):
        return "filters on the indexed expression: queries read every file they would have skipped"
    if index.startswith("bloom_filters"):
        return "the writers' BLOOM index lookups through the metadata table: writers read the files' footers"
    return SERVES.get(index, "queries using this index")


def _findings_of(survey: Survey, index: str) -> tuple[Finding, ...]:
    def about(finding: Finding) -> bool:
        evidence = finding.evidence
        return isinstance(evidence, StatsEvidence | RecordIndexEvidence | SecondaryIndexEvidence
                          | DefinitionEvidence) and evidence.index == index
    return tuple(f for f in diagnose(survey) if about(f))


def plan_drop(table: Table, index: str) -> RepairPlan:
    """Drop `index`: out of `hoodie.table.metadata.partitions`, its folder, its definition. The
    notes name the queries that lose it."""
    if index == FILES:
        raise RepairUnavailable(f"{table.uri}: the files partition is the metadata table itself: `cleanline mdt drop` "
                                "drops the whole metadata table")
    if index not in table_indexes(table):
        raise RepairUnavailable(f"{table.uri}: no index partition {index} (it lists: "
                                f"{', '.join(table_indexes(table)) or 'none'})")
    folder = table.containment.meta_path(METADATA_FOLDER, index)
    size = sum(s.size for s in table.storage.list_recursive(folder)) if table.storage.exists(folder) else 0
    changes = [Change("properties update", MDT_PARTITIONS, 0, f"{index} removed from the complete and inflight lists"),
               Change(DROP, index, size, f".hoodie/metadata/{index} deleted")]
    if index in _defined(table):
        changes.append(Change("index definition delete", index, 0, "removed from .index_defs"))
    survey = Survey(table)
    return RepairPlan(table.uri, KIND, _findings_of(survey, index), tuple(changes),
                      (f"queries lose: {serves(index)}",
                       "Hudi writers configured to keep this index rebuild it on their next write"))


def _defs_path(table: Table) -> str:
    return table.path(table.config.get(INDEX_DEFS) or INDEX_DEFS_DEFAULT)


def _defined(table: Table) -> dict[str, Any]:
    path = _defs_path(table)
    if not table.storage.exists(path):
        return {}
    try:
        defs = json.loads(table.storage.read(path))["indexDefinitions"]
    except (ValueError, KeyError, TypeError):
        return {}
    return dict(defs) if isinstance(defs, Mapping) else {}


def run_drop(table: Table, approved: RepairPlan, head: Change, done: list[Change],
              skipped: list[tuple[Change, str]]) -> None:
    index = head.target
    planned = [c for c in approved.changes if c.target in (index, MDT_PARTITIONS)]
    if index not in table_indexes(table) and not table.storage.exists(
            table.containment.meta_path(METADATA_FOLDER, index)):
        skipped += [(c, "already dropped") for c in planned]
        return
    folder = table.containment.meta_path(METADATA_FOLDER, index)  # refused first if it resolves outside
    config = table.config
    transition.fence(table)
    update_config(table.storage, table.base, {   # readers stop trusting it first
        MDT_PARTITIONS: ",".join(p for p in config.metadata_partitions if p != index),
        MDT_PARTITIONS_INFLIGHT: ",".join(p for p in config.metadata_partitions_inflight if p != index)})
    transition.fence(table)
    table.storage.delete_dir(folder)
    defs = _defined(table)
    if index in defs:
        transition.fence(table)
        path = _defs_path(table)
        remaining = {k: v for k, v in defs.items() if k != index}
        table.storage.write(path, json.dumps({"indexDefinitions": remaining}, indent=2).encode(), overwrite=True)
    table.reload()
    done += planned


@dataclass(frozen=True, slots=True)
class IndexState:
    """One index partition of the metadata table: `state` "complete" (listed in
    `hoodie.table.metadata.partitions`, what readers trust) or "inflight" (being built,
    `hoodie.table.metadata.partitions.inflight`), its file groups, live records and bytes on
    storage, whether `.index_defs` defines it, and what it serves."""

    name: str
    state: str
    file_groups: int
    records: int
    bytes: int
    defined: bool
    serves: str


def index_states(table: Table) -> list[IndexState]:
    """The table's index partitions (`files` left out) with their state and size; reads the
    metadata table's records to count them. None on a table without a metadata table."""
    if not table.config.metadata_table_enabled:
        return []
    mdt = MetadataTable(table)
    defined = _defined(table)
    out = []
    for index in table_indexes(table):
        folder = table.containment.meta_path(METADATA_FOLDER, index)
        size = sum(s.size for s in table.storage.list_recursive(folder)) if table.storage.exists(folder) else 0
        groups = len(mdt.latest_slices(index))
        records = len(mdt.records(index)) if groups else 0
        state = "complete" if index in table.config.metadata_partitions else "inflight"
        out.append(IndexState(index, state, groups, records, size, index in defined, serves(index)))
    return out
