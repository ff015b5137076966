"""The metadata table (`.hoodie/metadata`): read and validated by `timeline.mdt.reader` and
`timeline.mdt.validate`, kept up to date by `timeline.mdt.writer` for every clean, rollback and
restore on table versions 6, 8 and 9, as the Hudi release that writes each version does.
Dropping it (as HoodieTableMetadataUtil.deleteMetadataTable does; Hudi writers rebuild it) is
the explicit repair action (`cleanline mdt drop`, the console's admin action), Hudi's own
restore rule (`timeline.mdt.writer.restore_deletes_metadata_table`), and the project's Spark
writer's refusal (`guard_metadata_table`), nothing else."""

from __future__ import annotations

from timeline import transition
from timeline.config import MDT_PARTITIONS, MDT_PARTITIONS_INFLIGHT, update_config
from timeline.exceptions import CleanlineError
from timeline.table import Table


class MetadataTableEnabledError(CleanlineError):
    """The table's metadata table is enabled and the caller did not ask to drop it."""


def drop_metadata_table(table: Table) -> None:
    """Remove `.hoodie/metadata` and clear the metadata partitions in `hoodie.properties`
    (checksum kept valid by the backup protocol)."""
    folder = table.containment.meta_path("metadata")  # refused first if it resolves outside the table
    transition.fence(table)  # the table's lock still ours (with a margin), or nothing is changed
    update_config(table.storage, table.base, {MDT_PARTITIONS: "", MDT_PARTITIONS_INFLIGHT: ""})  # readers stop first
    table.storage.delete_dir(folder)
    table.reload()


def guard_metadata_table(table: Table, *, drop: bool, action: str) -> bool:
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


__all__ = ["MetadataTableEnabledError", "drop_metadata_table", "guard_metadata_table"]
