"""hudi-rs, the independent reader the tests compare with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa

from timeline import HudiTable


def hudi_read(path: Path | str, as_of: str | None = None) -> pa.Table | None:
    """What hudi-rs reads from the table now, or as of an instant; None for no rows."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(str(path)).read(options)
    return pa.Table.from_batches(batches) if batches else None


def rows(path: Path, as_of: str | None = None) -> list[tuple]:
    """Every row hudi-rs reads (all columns but the file name), sorted."""
    table = hudi_read(path, as_of)
    if table is None:
        return []
    columns = [c for c in table.column_names if c != "_hoodie_file_name"]
    return sorted(map(tuple, (list(r.values()) for r in table.select(columns).to_pylist())), key=repr)


def retained_files(table: HudiTable, since: str) -> list[Path]:
    """Every data file written by a completed write at or after `since`."""
    found = []
    for instant in table.timeline.writes().completed():
        if instant.requested_time >= since:
            for stats in ((table.read_instant(instant) or {}).get("partitionToWriteStats") or {}).values():
                found += [Path(table.base) / s["path"] for s in stats or () if s.get("path")]
    return found


Slice = tuple[str, str, str, str | None, tuple[str, ...]]


def ours(table: HudiTable, as_of: str | None = None, *, sizes: bool = True) -> list[Slice]:
    view = table.file_system_view(as_of=as_of, sizes=sizes)
    return sorted(
        (s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
         tuple(log.name for log in s.log_files))
        for s in view.latest_slices()
    )


def theirs(path: Path, as_of: str | None = None) -> list[Slice]:
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    return sorted(
        (s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name or None,
         tuple(s.log_file_names))
        for s in hudi.HudiTable(str(path)).get_file_slices(options)
    )


def hudi_rs_records(mdt: Path, folder: Path, name: str, data: bytes) -> list[dict[str, Any]]:
    """hudi-rs's records of an HFile, read as a base file of the metadata table."""
    scratch = folder / f"{folder.name}-9999-0_0-0-0_99999999999999999.hfile"
    target = folder / name if name.endswith(".hfile") else scratch
    if not target.exists():
        target.write_bytes(data)
    try:
        batch = hudi.HudiFileGroupReader(str(mdt)).read_file_slice_from_paths(str(target.relative_to(mdt)), [])
        return sorted(batch.to_pylist(), key=lambda r: r["key"])
    finally:
        if target.name.endswith("99999999999999999.hfile"):
            target.unlink()
