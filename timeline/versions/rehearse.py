"""The rehearsal of a table version change: the same change (`change_version`) run on a copy of
the table whose `.hoodie` folder is copied (modification times kept: a version 6 timeline's
completion times) and whose data files are referenced, not copied (hard links, or symbolic links
where the scratch folder is on another file system), then the copy verified against the original:

- Cleanline reads the same timeline, active and archived (each instant's time, action as Hudi
  compares them, state and completion time) and the same file-system view (every latest file
  slice: its base instant, base file and log files);
- the metadata table, where the copy keeps one, validates (`timeline.mdt.validate.validate_files`);
- hudi-rs (`import hudi`, where it is installed) reads the same rows through the copy.

Nothing of the original is written. Local tables only (a copy of an object store's table would
need its data under the same scheme). The scratch folder is Cleanline's own, made for this call
under `work_dir` (the system's temporary folder by default), and removed afterwards unless
`keep=True`; removing it unlinks links, never a data file of the table."""

from __future__ import annotations

import importlib
import posixpath
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from timeline.exceptions import CleanlineError, StorageError
from timeline.instant import comparable_action
from timeline.table import Table
from timeline.versions.change import VersionChangePlan, VersionChangeRefused, change_version


class RehearsalUnsupported(CleanlineError):
    """A table the rehearsal cannot copy (not on a local disk)."""


TimelineRow = tuple[str, str, str, str | None]
SliceRow = tuple[str, str, str, str | None, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Rehearsal:
    """What the rehearsal of moving `table_uri` to `target` found. `passed`: the change ran on the
    copy and every check agreed. `refused`: why the change did not run (then nothing was checked).
    `rows_equal` is None where hudi-rs is not installed."""

    table_uri: str
    target: int
    folder: str
    plan: VersionChangePlan | None
    refused: tuple[str, ...] = ()
    timeline_differences: tuple[str, ...] = ()
    fsview_differences: tuple[str, ...] = ()
    metadata_table: str = "none"
    metadata_table_ok: bool = True
    rows: int | None = None
    rows_equal: bool | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return (self.plan is not None and not self.refused and not self.timeline_differences
                and not self.fsview_differences and self.metadata_table_ok and self.rows_equal is not False)


def timeline_rows(table: Table) -> list[TimelineRow]:
    """The active timeline as Hudi compares instants across layouts."""
    return sorted((i.requested_time, comparable_action(i.action), i.state.name, i.completion_time)
                  for i in table.reload().timeline)


def archived_rows(table: Table) -> list[TimelineRow]:
    """The archived timeline (v1 archive or LSM history) as `timeline_rows` gives the active one."""
    from timeline.archived_timeline import load_archived_timeline

    return sorted((i.requested_time, comparable_action(i.action), i.state.name, i.completion_time)
                  for i in load_archived_timeline(table.reload()))


def fsview_rows(table: Table) -> list[SliceRow]:
    """Every latest file slice: partition, file id, base instant, base file and log files."""
    return sorted((s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
                   tuple(log.name for log in s.log_files)) for s in table.file_system_view().latest_slices())


def hudi_rs_rows(path: str) -> list[str] | None:
    """Every row hudi-rs reads from the table's latest snapshot (each as text, sorted), or None
    where hudi-rs is not installed."""
    try:
        hudi: Any = importlib.import_module("hudi")
        pyarrow: Any = importlib.import_module("pyarrow")
    except ImportError:
        return None
    batches = hudi.HudiTable(path).read(hudi.HudiReadOptions())
    if not batches:
        return []
    rows = pyarrow.Table.from_batches(batches).to_pylist()
    return sorted(repr(sorted(row.items())) for row in rows)


def _differences(before: list[Any], after: list[Any], what: str) -> tuple[str, ...]:
    gone = [r for r in before if r not in after]
    new = [r for r in after if r not in before]
    return tuple([f"{what} only in the original: {r}" for r in gone] + [f"{what} only in the copy: {r}" for r in new])


def copy_table(table: Table, folder: str) -> str:
    """The copy the rehearsal changes, in `folder`: `.hoodie` copied whole (times kept), every
    other file linked (`Storage.linked_copy`). Returns the copy's base path."""
    target = posixpath.join(folder, posixpath.basename(table.base.rstrip("/")) or "table")
    try:
        table.storage.linked_copy(table.base, target, copied=".hoodie")
    except StorageError as exc:
        raise RehearsalUnsupported(f"{table.uri}: a rehearsal copies a table on a local disk only ({exc})") from exc
    return target


def rehearse(table: Table, to: int, *, options: Mapping[str, str] | None = None, drop_metadata_table: bool = False,
             work_dir: str | None = None, keep: bool = False) -> Rehearsal:
    """Rehearse moving `table` to table version `to` (see the module): returns the report."""
    from timeline.mdt.reader import metadata_table
    from timeline.mdt.validate import validate_files

    folder = tempfile.mkdtemp(prefix="cleanline-rehearsal-", dir=work_dir)
    try:
        before_timeline, before_view = timeline_rows(table), fsview_rows(table)
        before_archived = archived_rows(table)
        before_rows = hudi_rs_rows(table.base)
        path = copy_table(table, folder)
        copy = Table.load(table.storage, path)
        try:
            plan = change_version(copy, to, dry_run=False, options=options, drop_metadata_table=drop_metadata_table,
                                  writers_stopped=True)
        except VersionChangeRefused as exc:
            return Rehearsal(table.uri, to, folder, None, exc.reasons)
        copy.reload()
        mdt = metadata_table(copy)
        mdt_state, mdt_ok = "none", True
        if mdt is not None:
            validation = validate_files(mdt)
            mdt_ok = validation.ok
            mdt_state = (f"valid ({validation.partitions} partitions, {validation.files} files)" if mdt_ok
                         else f"{len(validation.differences)} partition(s) differ from storage")
        after_rows = hudi_rs_rows(path)
        rows_equal = None if before_rows is None or after_rows is None else before_rows == after_rows
        notes = () if before_rows is not None else ("hudi-rs is not installed: rows not compared",)
        return Rehearsal(table.uri, to, folder, plan, (),
                         _differences(before_timeline, timeline_rows(copy), "instant")
                         + _differences(before_archived, archived_rows(copy), "archived instant"),
                         _differences(before_view, fsview_rows(copy), "file slice"), mdt_state, mdt_ok,
                         None if before_rows is None else len(before_rows), rows_equal, notes)
    finally:
        if not keep:  # the scratch folder this call made: links and copies, never a table's file
            table.storage.delete_dir(folder)


__all__ = ["Rehearsal", "RehearsalUnsupported", "archived_rows", "copy_table", "fsview_rows", "hudi_rs_rows",
           "rehearse", "timeline_rows"]
