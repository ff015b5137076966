"""Write Spark DataFrames into Hudi tables as Apache Hudi's Spark writer does, and compact
merge-on-read tables (hudi-format.md §1-§6): table versions 6 and 8, copy-on-write and
merge-on-read.

`write` creates the table on its first call (`hoodie.properties` with checksum, the `.hoodie`
folders) and publishes one instant per call: requested, inflight holding the workload profile,
completed holding every file's write stat, in the metadata format of the table version (v6
JSON, v8 Avro). The driver only plans: it reads the file-system view, looks up which file group
holds each incoming key (a Spark job over the latest file slices of the partitions written to:
Hudi's SIMPLE index), counts the records per file group and routes every record to one. One task
per file group then writes its Parquet base file or log file through `Storage`, with a marker
first, and returns its write stat. `compact` schedules and runs compactions the same way.

Record semantics are Hudi's EVENT_TIME_ORDERING (`DefaultHoodieRecordPayload`): an upsert
keeps, per key, the incoming record with the greatest ordering (precombine) value, and replaces
a stored record unless the stored one orders higher; a delete removes the key. `insert` and the
overwrites neither look keys up nor de-duplicate them, as in Hudi. The index is per partition
(Hudi's non-global index). Inserts always open new file groups: routing them into small existing
file groups is not done.

One concern per module:
  model        the error, operations, IO types and meta fields every module shares
  create       `create_table` (folders and hoodie.properties, no Spark) and the table a write asks for
  schema       the records' Arrow and Avro schemas, and their key columns
  merge        record semantics: de-duplication, upserts and deletes, a file slice as readers see it
  files        data files: partition metadata, markers, Parquet base files, log blocks, write stats
  tasks        what the executors run: one task per file group, and the index lookup of one slice
  plan         the driver's plan: index, workload profile, file group jobs, routing
  publish      commit metadata and instant files, markers reconciled before completing
  job          `write`
  compaction   `compact`

`write` and `compact` load PySpark when first asked for, so that `create_table` serves tests and
benchmarks without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from timeline.spark.writer.create import TableSpec, create_table
from timeline.spark.writer.model import Operation, WriteError

__all__ = ["Operation", "TableSpec", "WriteError", "compact", "create_table", "write"]

if TYPE_CHECKING:
    from timeline.spark.writer.compaction import compact
    from timeline.spark.writer.job import write
else:
    _SPARK_JOBS = {"write": "timeline.spark.writer.job", "compact": "timeline.spark.writer.compaction"}

    def __getattr__(name: str) -> Any:
        """The Spark jobs, imported on first use (PEP 562); type checkers see the imports above."""
        if name in _SPARK_JOBS:
            return getattr(importlib.import_module(_SPARK_JOBS[name]), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
