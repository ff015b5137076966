"""The metadata table guard of DESIGN.md §2: Cleanline does not maintain `.hoodie/metadata`,
so a mutation on a table whose metadata table is enabled is refused unless the caller asks to
drop it (as HoodieTableMetadataUtil.deleteMetadataTable does; Hudi writers rebuild it)."""

from __future__ import annotations

from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
from timeline.exceptions import CleanlineError
from timeline.table import HudiTable


class MetadataTableEnabledError(CleanlineError):
    """The table's metadata table is enabled and the caller did not ask to drop it."""


def drop_metadata_table(table: HudiTable) -> None:
    """Remove `.hoodie/metadata` and clear the metadata partitions in `hoodie.properties`
    (checksum kept valid by the backup protocol)."""
    table.storage.delete_dir(table.containment.meta_path("metadata"))
    update_config(table.storage, table.base, {MDT_PARTITIONS: "", MDT_PARTITIONS_INFLIGHT: ""})
    table.reload()


def guard_metadata_table(table: HudiTable, *, drop: bool, action: str) -> bool:
    """Refuse `action` on a table with an enabled metadata table, or drop it when `drop`.
    Returns whether it was dropped."""
    if not table.config.metadata_table_enabled:
        return False
    if not drop:
        raise MetadataTableEnabledError(
            f"{table.uri}: the metadata table is enabled ({', '.join(table.config.metadata_partitions)}); "
            f"{action} here would leave its file listing stale. Re-run with the option to drop the "
            "metadata table (Hudi writers rebuild it), or use a Hudi writer.")
    drop_metadata_table(table)
    return True
