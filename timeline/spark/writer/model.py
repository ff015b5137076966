"""The writer's vocabulary, shared by its modules: its error, the write operations, how a task
writes a file, and Hudi's meta fields. No PySpark here: `create` builds on it without Spark."""

from __future__ import annotations

from enum import Enum

from timeline.exceptions import CleanlineError

COMMIT_TIME = "_hoodie_commit_time"
COMMIT_SEQNO = "_hoodie_commit_seqno"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
META_FIELDS = (COMMIT_TIME, COMMIT_SEQNO, RECORD_KEY, PARTITION_PATH, FILE_NAME)


class WriteError(CleanlineError, ValueError):
    """A write or compaction refused before anything was written: bad input, or a table whose
    settings differ from the write's. The message names the table or the column."""


class Operation(str, Enum):
    """The supported write operations, by Hudi's `WriteOperationType` names."""

    INSERT = "INSERT"
    UPSERT = "UPSERT"
    DELETE = "DELETE"
    INSERT_OVERWRITE = "INSERT_OVERWRITE"
    INSERT_OVERWRITE_TABLE = "INSERT_OVERWRITE_TABLE"

    @property
    def looks_up_keys(self) -> bool:
        return self in (Operation.UPSERT, Operation.DELETE)

    @property
    def replaces(self) -> bool:
        return self in (Operation.INSERT_OVERWRITE, Operation.INSERT_OVERWRITE_TABLE)


class IOType(str, Enum):
    """How a task writes a file (Hudi's marker `IOType`)."""

    CREATE = "CREATE"
    MERGE = "MERGE"
    APPEND = "APPEND"
