"""`HudiTable`, the table a library user holds: the rule modules' `Table` (timeline/table.py)
with its two namespaces, in the manner of PyIceberg's `table.inspect` and delta-rs's
`DeltaTable.vacuum`. This module stands above both namespaces, so the rule modules, which take a
`Table`, never reach up to them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from timeline.inspect import Inspect
from timeline.maintenance import Maintenance
from timeline.table import Table


class HudiTable(Table):
    """A Hudi table at a base path (`HudiTable.open(uri, *, storage_options=None,
    hudi_options=None, roots=None)`: its configuration passed, see `Table.open`), with
    `inspect` for reading and `maintenance()` for acting."""

    @property
    def inspect(self) -> Inspect:
        """Read-only questions about the table (`timeline/inspect.py`)."""
        return Inspect(self)

    def maintenance(self, *, spark: Any = None, options: Mapping[str, str] | None = None,
                    processes: int = 1, writers_stopped: bool = False) -> Maintenance:
        """The table services (`timeline/maintenance.py`); with a SparkSession they run as
        PySpark jobs, otherwise here (a full clean plan in `processes` processes on a local
        disk). `options` are Hudi writer options (`hoodie.write.concurrency.mode`,
        `hoodie.write.lock.*`, ...) over `hoodie.properties`, as a Hudi writer of the table is
        given them: they choose the lock Cleanline shares with the table's writers (over those
        the table was opened with, its root's and a lock file found on storage). With no
        lock known and a writer live every change is refused, unless `writers_stopped` (the
        caller's explicit, audited word that the writers are stopped)."""
        return Maintenance(self, spark=spark, options=options, processes=processes, writers_stopped=writers_stopped)
