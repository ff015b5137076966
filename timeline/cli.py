"""The `cleanline` command: readable tables by default, `--json` for machines.

Errors the library raises on purpose (not a table, bad config, corrupt instant, storage)
print one line on stderr and exit 2; nothing is ever written by these commands."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import timeline  # each name loads its module on first use (timeline/__init__.pyi): a command imports only what it runs
from timeline import CleanlineError
from timeline.cli_archive import add_archive_commands
from timeline.cli_automation import add_automation_commands, doctor_argv, run_remote_write
from timeline.cli_clean import (
    clean_plan,
    clean_run,
    clean_schedule,
    clean_show,
    clean_what_if,
    listing_option,
    maintenance_of,
    retention_settings,
    writer_option,
)
from timeline.cli_compaction import add_compaction_command
from timeline.cli_doctor import add_doctor_command
from timeline.cli_index import add_index_command
from timeline.cli_output import (
    age_text,
    bytes_hex,
    confirm,
    emit,
    instant_json,
    lake_roots,
    open_table,
    print_json,
    render_table,
    size_header,
    size_text,
    sized_text,
)
from timeline.cli_version import add_version_command
from timeline.exceptions import InvalidInstantError

Handler = Callable[[argparse.Namespace], Any]


def _table_info(args: argparse.Namespace) -> None:
    table = open_table(args)
    config, active = table.config, table.timeline
    info = {
        "path": table.uri,
        "name": config.name,
        "database": config.database,
        "tableType": config.table_type.value,
        "tableVersion": config.version,
        "timelineLayoutVersion": config.layout_version,
        "timelinePath": config.timeline_folder,
        "archivePath": config.archive_folder,
        "partitionFields": list(config.partition_fields),
        "hiveStylePartitioning": config.hive_style,
        "urlEncodedPartitioning": config.url_encoded,
        "baseFileFormat": config.base_file_format,
        "timelineTimezone": config.timezone,
        "metadataTablePartitions": list(config.metadata_partitions),
        "metadataTableEnabled": config.metadata_table_enabled,
        "instants": len(active),
        "completedInstants": len(active.completed()),
        "pendingInstants": len(active.pending()),
        "savepoints": len(active.savepoints().completed()),
        "lastCompletedCommit": (last.requested_time if (last := active.commits().completed().last()) else None),
    }
    options = dict(args.hoodie_conf or ())
    lock = table.inspect.lock(options)  # which lock the writers use, and where that came from
    info |= {"lockProvider": lock.provider, "lockSource": lock.source.value, "lockDetail": lock.detail,
             "liveWriters": [writer.describe() for writer in table.inspect.live_writers(options)]}
    emit(args, info, lambda: render_table(["property", "value"], [
        (key, ", ".join(map(str, value)) if isinstance(value, list) else value) for key, value in info.items()
    ]))


def _timeline(args: argparse.Namespace) -> None:
    table = open_table(args)
    rows: list[tuple[str, timeline.Instant]] = []
    if args.archived:
        rows += [("archived", i) for i in table.inspect.archived_instants()]
    rows += [("active", i) for i in table.timeline]
    if not args.reverse:  # newest first, as the console lists them
        rows.reverse()
    emit(args, [instant_json(i) for _, i in rows], lambda: render_table(
        ["requested", "completed", "action", "state", "timeline"],
        [(i.requested_time, i.completion_time, i.action, i.state.name, where) for where, i in rows],
    ))


def _slice_json(piece: timeline.FileSlice) -> dict[str, Any]:
    return {
        "partition": piece.partition,
        "fileId": piece.file_id,
        "baseInstantTime": piece.base_instant_time,
        "baseFile": piece.base_file.name if piece.base_file else None,
        "logFiles": [log.name for log in piece.log_files],
    }


def _fsview(args: argparse.Namespace) -> None:
    if args.as_of is not None:
        from timeline.instant import parse_instant_time

        parse_instant_time(args.as_of)
    table = open_table(args)
    from timeline.mdt.listing import ListingSource, resolve, table_listing

    # storage: listed by the view itself, without sizes for the JSON (it names files, no sizes)
    listing = table_listing(table, ListingSource.METADATA)[0] if resolve(table, args.listing) is \
        ListingSource.METADATA else None
    view = table.file_system_view(as_of=args.as_of, listing=listing, sizes=not args.json)
    if args.all_slices:
        slices = [s for g in view.file_groups() for s in g.slices]
    else:
        slices = view.latest_slices()
    slices.sort(key=lambda s: (s.partition, s.file_id))  # stable: newest slice first within a group
    emit(args, [_slice_json(s) for s in slices], lambda: render_table(
        ["partition", "file id", "base instant", "base file", "log files", size_header(args)],
        [(s.partition or "(none)", s.file_id, s.base_instant_time, s.base_file.name if s.base_file else "-",
          len(s.log_files), size_text(args, s.size)) for s in slices],
    ))


def _instant_show(args: argparse.Namespace) -> None:
    table = open_table(args)
    matches = [i for i in table.timeline if i.requested_time == args.instant
               and (args.action is None or i.action == args.action)]
    if not matches:
        raise InvalidInstantError(f"{table.uri}: no instant {args.instant} on the active timeline")
    instant = matches[0]
    state = timeline.State[args.state.upper()] if args.state else None
    content = table.read_instant(instant, state)
    print_json({"instant": instant_json(instant), "content": content}, default=bytes_hex)


def _savepoint_create(args: argparse.Namespace) -> None:
    done = maintenance_of(open_table(args), args).create_savepoint(args.instant, user=args.user,
                                                                          comment=args.comment)
    print(f"savepoint {done.requested_time} created")


def _savepoint_delete(args: argparse.Namespace) -> None:
    table = open_table(args)
    confirm(args, f"Delete savepoint {args.instant} of {table.uri}? Its files may then be cleaned.")
    maintenance_of(table, args).delete_savepoint(args.instant)
    print(f"savepoint {args.instant} deleted")


def _savepoint_list(args: argparse.Namespace) -> None:
    infos = open_table(args).inspect.savepoints()
    now_ms = int(datetime.now().timestamp() * 1000)
    data: list[dict[str, Any]] = [{"instant": instant_json(i.instant), "savepointedBy": i.savepointed_by,
             "savepointedAt": i.savepointed_at_ms, "ageSeconds": max(0, (now_ms - i.savepointed_at_ms) // 1000),
             "comments": i.comments, "files": i.files, "bytes": i.bytes, "missingFiles": i.missing_files,
             "holdsBackArchival": i.holds_back_archival} for i in infos]
    emit(args, data, lambda: render_table(
        ["savepoint", "by", "age", "files", size_header(args), "missing", "holds back archival", "comment"],
        [(i.instant.requested_time, i.savepointed_by, age_text(max(0, (now_ms - i.savepointed_at_ms) // 1000)),
          i.files, size_text(args, i.bytes), i.missing_files, "yes" if i.holds_back_archival else "no", i.comments)
         for i in infos]))


def _preview_json(preview: timeline.RollbackPreview) -> dict[str, Any]:
    return {"instant": instant_json(preview.instant),
            "filesToDelete": [{"partition": p, "path": path, "bytes": size}
                              for p, path, size in preview.files_to_delete],
            "logFilesGettingRollbackBlocks": [{"partition": p, "path": path, "bytes": size}
                                              for p, path, size in preview.logs_to_mark],
            "bytesToDelete": preview.bytes_to_delete}


def _restore(args: argparse.Namespace) -> None:
    table = open_table(args)
    preview = table.inspect.restore_preview(args.savepoint)
    data = {"savepoint": args.savepoint, "instantsToRollback": [_preview_json(p) for p in preview.rollbacks],
            "perPartition": {p: {"files": f, "bytes": b} for p, (f, b) in sorted(preview.per_partition().items())},
            "bytesToDelete": preview.bytes_to_delete}
    emit(args, data, lambda: (
        f"restore to savepoint {args.savepoint} rolls back {len(preview.instants)} instants and deletes "
        f"{sum(f for f, _ in preview.per_partition().values())} files ({sized_text(args, preview.bytes_to_delete)})\n\n"
        + render_table(["instant", "action", "state", "files", size_header(args)],
                        [(p.instant.requested_time, p.instant.action, p.instant.state.name, len(p.files_to_delete),
                          size_text(args, p.bytes_to_delete)) for p in preview.rollbacks])))
    if args.preview:
        return
    confirm(args, f"Restore {table.uri} to savepoint {args.savepoint}? The writes above are rolled back.")
    done = maintenance_of(table, args).restore(args.savepoint)
    print(f"restored to {args.savepoint} (restore {done.requested_time})", file=sys.stderr)


def _rollback(args: argparse.Namespace) -> None:
    table = open_table(args)
    maintenance = maintenance_of(table, args)
    if args.failed:
        previews = maintenance.preview_rollback_failed_writes()
    else:
        previews = [maintenance.plan_rollback(args.instant)]
    emit(args, [_preview_json(p) for p in previews], lambda: render_table(
        ["instant", "action", "state", "files to delete", size_header(args), "logs to mark"],
        [(p.instant.requested_time, p.instant.action, p.instant.state.name, len(p.files_to_delete),
          size_text(args, p.bytes_to_delete), len(p.logs_to_mark)) for p in previews])
        if previews else "no failed writes")
    if args.preview or not previews:
        return
    confirm(args, f"Roll back {len(previews)} write(s) of {table.uri}?")
    if args.failed:  # newest first, each checked again as the one before it goes
        for done in maintenance.rollback_failed_writes():
            print(f"rolled back a failed write (rollback {done.requested_time})", file=sys.stderr)
        return
    for preview in previews:
        done = maintenance.rollback(preview.instant.requested_time)
        print(f"rolled back {preview.instant.requested_time} (rollback {done.requested_time})", file=sys.stderr)


def _mdt_show(args: argparse.Namespace) -> None:
    state = open_table(args).inspect.metadata_table()
    data = {"enabled": state.enabled, "partitions": list(state.partitions), "inflight": list(state.inflight),
            "lastInstant": state.last_instant, "fileGroups": dict(state.file_groups)}
    emit(args, data, lambda: render_table(["partition", "state", "file groups"], [
        (p, "inflight" if p in state.inflight else "available", state.file_groups.get(p, ""))
        for p in (*state.partitions, *state.inflight)]) + f"\nlast instant: {state.last_instant or '-'}"
        if state.enabled else "no metadata table (hoodie.table.metadata.partitions holds no files partition)")


def _mdt_validate(args: argparse.Namespace) -> int:
    result = open_table(args).inspect.validate_metadata_table()
    data = {"ok": result.ok, "partitions": result.partitions, "files": result.files,
            "differences": [{"partition": d.partition, "onlyOnStorage": list(d.only_on_storage),
                             "onlyInMetadataTable": list(d.only_in_metadata),
                             "sizes": [{"file": f, "storage": a, "metadataTable": b} for f, a, b in d.sizes]}
                            for d in result.differences],
            "uncommitted": {d.partition: list(d.uncommitted) for d in result.uncommitted},
            "notCommitted": {d.partition: list(d.not_committed) for d in result.not_committed}}

    def text() -> str:
        lines = [f"{result.partitions} partitions, {result.files} files on storage: "
                 + ("the metadata table lists the same files" if result.ok else
                    f"{len(result.differences)} partition(s) differ")]
        for d in result.differences:
            lines += [f"  {d.partition or '(root)'}: only on storage: {name}" for name in d.only_on_storage]
            lines += [f"  {d.partition or '(root)'}: only in the metadata table: {name}" for name in d.only_in_metadata]
            lines += [f"  {d.partition or '(root)'}: {f} is {_differing(args, a, b)}" for f, a, b in d.sizes]
        for d in result.uncommitted:
            lines += [f"  {d.partition or '(root)'}: not committed yet (ignored): {name}" for name in d.uncommitted]
        for d in result.not_committed:
            lines += [f"  {d.partition or '(root)'}: no completed write names it (ignored; see the doctor's "
                      f"orphan-files): {name}" for name in d.not_committed]
        return "\n".join(lines)

    emit(args, data, text)
    return 0 if result.ok else 1


def _differing(args: argparse.Namespace, storage: int, metadata: int) -> str:
    """Two sizes that differ, readable unless they read the same (then the byte counts)."""
    a, b = sized_text(args, storage), sized_text(args, metadata)
    if a == b:
        a, b = f"{storage} bytes", f"{metadata} bytes"
    return f"{a} on storage, {b} in the metadata table"


def _mdt_drop(args: argparse.Namespace) -> None:
    table = open_table(args)
    if not table.config.metadata_table_enabled and not table.config.metadata_partitions:
        print(f"{table.uri}: no metadata table to drop", file=sys.stderr)
        return
    if args.confirm != table.config.name:
        confirm(args, f"Drop the metadata table of {table.uri} ({', '.join(table.config.metadata_partitions)})? "
                       "Hudi writers rebuild it, reading every file")
    maintenance_of(table, args).drop_metadata_table(dry_run=False)
    print(f"dropped the metadata table of {table.uri}", file=sys.stderr)


def _demo(args: argparse.Namespace) -> None:
    from timeline.internal.engine import build_demo_lake

    for path in build_demo_lake(args.path, progress=lambda m: print(m, file=sys.stderr)):
        print(path)


def _discover(args: argparse.Namespace) -> None:
    from timeline.discover import discover

    found = discover(args.path, sizes=not args.no_sizes, roots=args.roots)
    emit(args, [{"path": t.uri, "name": t.name, "type": t.table_type, "version": t.version, "files": t.files,
                 "bytes": t.bytes, "error": t.error} for t in found], lambda: render_table(
        ["path", "name", "type", "version", "files", size_header(args)],
        [(t.uri, t.name or f"unreadable: {t.error}", t.table_type, t.version, "" if args.no_sizes else t.files,
          "" if args.no_sizes or t.error else size_text(args, t.bytes)) for t in found])
        if found else f"no Hudi table under {args.path}")


def _command(sub: Any, name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
    cmd: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
    cmd.add_argument("path", help="table base path or URI (file://, s3://, gs://, hdfs://)")
    cmd.set_defaults(handler=handler)
    return cmd


def _sizes(cmd: argparse.ArgumentParser) -> argparse.ArgumentParser:
    cmd.add_argument("--bytes", action="store_true",
                     help="print sizes as byte counts, not KiB/MiB/GiB (--json always has byte counts)")
    return cmd


def _writers_stopped(cmd: argparse.ArgumentParser) -> argparse.ArgumentParser:
    cmd.add_argument("--writers-stopped", action="store_true",
                     help="the table's writers are stopped: go on even though a writer looks live (a fresh "
                          "heartbeat or pending write) and no lock they share is known (refused otherwise; "
                          "logged)")
    return cmd


def _read_commands(commands: Any) -> None:
    """table info, tables, timeline, fsview."""
    table = commands.add_parser("table", help="table-level commands").add_subparsers(dest="sub", required=True)
    info = _sizes(_command(table, "info", _table_info, "show a table's configuration and timeline summary"))
    info.add_argument("--json", action="store_true", help="print JSON")

    listed = commands.add_parser("tables", help="list a remote console's registered tables (with --api)",
                                 description="list a remote console's registered tables (with --api)")
    listed.add_argument("--json", action="store_true", help="print JSON")
    _sizes(listed).set_defaults(handler=_tables)

    tl = _command(commands, "timeline", _timeline, "list the instants of the active timeline, newest first")
    tl.add_argument("--archived", action="store_true", help="include the archived timeline (after the active one)")
    tl.add_argument("--reverse", action="store_true", help="oldest first (the archived timeline, then the active one)")
    tl.add_argument("--json", action="store_true", help="print JSON")

    fs = _sizes(_command(commands, "fsview", _fsview, "list the latest file slices (or all) per file group"))
    fs.add_argument("--as-of", metavar="T", help="the view as of completed instant time T")
    fs.add_argument("--all-slices", action="store_true", help="every committed slice, not only the latest")
    fs.add_argument("--json", action="store_true", help="print JSON")
    listing_option(fs)


def _clean_commands(commands: Any) -> None:
    """clean plan, schedule, what-if, run, show."""
    clean = commands.add_parser("clean", help="plan, schedule, run and report cleans").add_subparsers(
        dest="sub", required=True)
    for name, handler, text in (
        ("plan", clean_plan, "plan a clean and explain every file; writes nothing"),
        ("schedule", clean_schedule, "plan a clean and write its <t>.clean.requested; prints t"),
    ):
        cmd = _command(clean, name, handler, text)
        cmd.add_argument("--policy", choices=[p.value for p in timeline.CleanPolicy], help="default: the table's")
        cmd.add_argument("--retain-commits", type=int, metavar="N", help="KEEP_LATEST_COMMITS: commits retained")
        cmd.add_argument("--retain-versions", type=int, metavar="N", help="KEEP_LATEST_FILE_VERSIONS: versions kept")
        cmd.add_argument("--retain-hours", type=int, metavar="H", help="KEEP_LATEST_BY_HOURS: hours retained")
        cmd.add_argument("--now", metavar="yyyyMMddHHmmss", help="plan as of this time (table timezone)")
        cmd.add_argument("--no-incremental", action="store_true", help="list every partition")
        cmd.add_argument("--allow-short-retention", action="store_true",
                         help="allow retaining less than the table's own clean settings (refused otherwise)")
        if name == "plan":
            listing_option(_sizes(cmd))
            cmd.add_argument("--json", action="store_true", help="print JSON (HoodieCleanerPlan names + reasons)")
            cmd.add_argument("--engine", choices=["local", "spark", "auto"], default="local",
                             help="plan in this process, or fan out over partitions on Spark (SPARK_MASTER); "
                                  "auto: Spark from CLEANLINE_SPARK_MIN_FILES data files on")
        else:
            cmd.add_argument("--force", action="store_true", help="ignore hoodie.clean.trigger.max.commits")
            _writers_stopped(cmd)
    whatif = _sizes(_command(clean, "what-if", clean_what_if, "what a clean would free (files, bytes) for each "
                           "retention setting, from one listing of the table; writes nothing"))
    whatif.add_argument("--commits", type=retention_settings, default=list(range(1, 11)), metavar="N..M|N,N,...",
                        help="KEEP_LATEST_COMMITS: commits retained to try (default 1..10; none: skip)")
    whatif.add_argument("--hours", type=retention_settings, metavar="H,H,...",
                        help="KEEP_LATEST_BY_HOURS: hours retained to try")
    whatif.add_argument("--file-versions", type=retention_settings, metavar="N..M|N,N,...",
                        help="KEEP_LATEST_FILE_VERSIONS: file versions retained to try")
    whatif.add_argument("--now", metavar="yyyyMMddHHmmss", help="plan the hours settings as of this time "
                        "(table timezone)")
    whatif.add_argument("--no-incremental", action="store_true",
                        help="plan every setting over every partition, not incrementally as a clean would")
    whatif.add_argument("--json", action="store_true", help="print JSON (sizes in bytes)")
    listing_option(whatif)
    run = _writers_stopped(_sizes(_command(clean, "run", clean_run,
                                        "run pending cleans (requested or inflight) with progress")))
    run.add_argument("--instant", metavar="T", help="only the pending clean at T")
    run.add_argument("--engine", choices=["local", "spark", "auto"], default="local",
                     help="delete with local threads, or fan out over files on Spark (SPARK_MASTER); auto: Spark "
                          "from CLEANLINE_SPARK_MIN_FILES data files on")
    show = _command(clean, "show", clean_show, "report a completed clean (the latest by default)")
    show.add_argument("instant", nargs="?", metavar="T", help="the clean's instant time")
    show.add_argument("--json", action="store_true", help="print JSON")


def _change_commands(commands: Any) -> None:
    """savepoint create/delete/list, restore, rollback, mdt show/validate/drop."""
    savepoint = commands.add_parser("savepoint", help="create, delete and list savepoints").add_subparsers(
        dest="sub", required=True)
    create = _writers_stopped(_command(savepoint, "create", _savepoint_create, "savepoint a completed commit"))
    create.add_argument("--instant", required=True, metavar="T", help="the completed commit to savepoint")
    create.add_argument("--comment", default="", help="why (kept in the savepoint)")
    create.add_argument("--user", help="who (default: the OS user)")
    delete = _writers_stopped(_command(savepoint, "delete", _savepoint_delete,
                                     "delete a savepoint (its files become cleanable)"))
    delete.add_argument("--instant", required=True, metavar="T", help="the savepoint to delete")
    delete.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    listing = _sizes(_command(savepoint, "list", _savepoint_list, "list savepoints with what they protect"))
    listing.add_argument("--json", action="store_true", help="print JSON")

    rs = _command(commands, "restore", _restore, "restore a table to a savepoint (previewed first)")
    rs.add_argument("--savepoint", required=True, metavar="T", help="the savepoint to restore to")
    rb = _command(commands, "rollback", _rollback, "roll back a write, or every failed write")
    which = rb.add_mutually_exclusive_group(required=True)
    which.add_argument("--instant", metavar="T", help="the write to roll back")
    which.add_argument("--failed", action="store_true", help="every failed write (EAGER or LAZY policy)")
    for cmd in (rs, rb):
        _sizes(_writers_stopped(cmd))
        cmd.add_argument("--preview", action="store_true", help="show what would happen; write nothing")
        cmd.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        cmd.add_argument("--json", action="store_true", help="print the preview as JSON")

    mdt = commands.add_parser("mdt", help="the metadata table (.hoodie/metadata)").add_subparsers(
        dest="sub", required=True)
    shown = _command(mdt, "show", _mdt_show, "the metadata table's partitions, last instant and file groups")
    shown.add_argument("--json", action="store_true", help="print JSON")
    valid = _sizes(_command(mdt, "validate", _mdt_validate, "compare the metadata table's file listing with storage, "
                                                           "per partition; exit 1 on a difference"))
    valid.add_argument("--json", action="store_true", help="print JSON")
    drop = _writers_stopped(_command(mdt, "drop", _mdt_drop,
                                   "delete the metadata table (a repair action: Hudi writers rebuild it)"))
    drop.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    drop.add_argument("--confirm", metavar="TABLE_NAME", help="the table's name, instead of answering the question")


def _other_commands(commands: Any) -> None:
    """discover, demo, instant show."""
    found = _sizes(commands.add_parser("discover", help="list every Hudi table under a root (name, type, version, "
                                       "files, size), not descending into tables"))
    found.add_argument("path", help="the root: a folder or URI (file://, s3://, gs://, hdfs://)")
    found.add_argument("--json", action="store_true", help="print JSON")
    found.add_argument("--no-sizes", action="store_true", help="do not list each table's files (faster on large "
                                                                 "tables)")
    found.set_defaults(handler=_discover)

    demo = commands.add_parser("demo", help="build a demo lake with the Spark writer (SPARK_MASTER)")
    demo.add_argument("path", help="folder for the demo tables (existing tables are kept)")
    demo.set_defaults(handler=_demo)

    instant = commands.add_parser("instant", help="instant-level commands").add_subparsers(dest="sub", required=True)
    show = _command(instant, "show", _instant_show, "print the decoded content of one instant as JSON")
    show.add_argument("instant", metavar="T", help="requested instant time")
    show.add_argument("--action", help="the action, when several share the time")
    show.add_argument("--state", choices=["requested", "inflight", "completed"], help="which state file")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cleanline", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log warnings and details to stderr")
    parser.add_argument("--hoodie-conf", action="append", type=writer_option, metavar="KEY=VALUE",
                        help="a Hudi writer option over CLEANLINE_HUDI_OPTIONS (per-root writer options, JSON "
                             "keyed by root like CLEANLINE_S3_ROOTS) and hoodie.properties, repeatable: the table's "
                             "concurrency mode and lock (hoodie.write.concurrency.mode, hoodie.write.lock.*), taken "
                             "by every change; a .hoodie/.locks/table_lock.json on storage means "
                             "StorageBasedLockProvider when nothing says otherwise")
    parser.add_argument("--api", metavar="URL", help="work through a remote Cleanline console's REST API instead of "
                        "storage: the read commands tables, table info, timeline, savepoint list, instant show, and "
                        "the write commands clean plan, plan wait/approve/run, archive request, doctor repair "
                        "request; PATH is then a registered table's id, name or path")
    parser.add_argument("--token", metavar="T", default=os.environ.get("CLEANLINE_API_TOKEN", ""),
                        help="the personal API token for --api (default: $CLEANLINE_API_TOKEN)")
    commands = parser.add_subparsers(dest="command", required=True)

    for add in (_read_commands, _clean_commands, _change_commands, _other_commands):
        add(commands)
    add_automation_commands(commands, add_archive_commands(commands, _command, _writers_stopped))
    add_doctor_command(commands, _writers_stopped, _sizes)
    add_compaction_command(commands, _command, _sizes, _writers_stopped)
    add_index_command(commands, _command, _writers_stopped, _sizes)
    add_version_command(commands, _command, _writers_stopped)
    return parser


def _tables(args: argparse.Namespace) -> None:
    raise CleanlineError("`cleanline tables` lists a remote console's tables: give --api URL --token T")


def _remote_instant(row: dict[str, Any]) -> dict[str, Any]:
    return {"requestedTime": row["requested_time"], "completionTime": row["completion_time"] or None,
            "action": row["action"], "state": row["state"]}


def _remote(args: argparse.Namespace) -> int:
    """A read command against the console at --api (`timeline.internal.remote`), printed as the local
    command prints it."""
    from timeline.internal import remote

    client = remote.ConsoleClient(args.api, args.token)
    code = run_remote_write(args, client, clean_plan)
    if code is not None:
        return code
    handler = args.handler
    if handler is _tables:
        rows = [{"id": t["id"], "name": t["name"], "path": t["path"], "tableType": t["table_type"],
                 "tableVersion": t["table_version"], "syncStatus": t["sync_status"], "files": t["total_files"],
                 "bytes": t["total_bytes"], "failedWrites": t["failed_writes"]} for t in remote.tables(client)]
        emit(args, rows, lambda: render_table(
            ["id", "name", "type", "version", "sync", "files", size_header(args), "path"],
            [(t["id"], t["name"], t["tableType"], t["tableVersion"], t["syncStatus"], t["files"],
              size_text(args, t["bytes"]), t["path"]) for t in rows]))
        return 0
    table = client.table(args.path)
    if handler is _table_info:
        info = {"id": table["id"], "path": table["path"], "name": table["name"], "tableType": table["table_type"],
                "tableVersion": table["table_version"], "metadataTableEnabled": table["metadata_table_enabled"],
                "syncStatus": table["sync_status"], "syncedAt": table["synced_at"], "files": table["total_files"],
                "bytes": table["total_bytes"], "failedWrites": table["failed_writes"]}
        emit(args, info, lambda: render_table(["property", "value"], [
            (k, size_text(args, v) if k == "bytes" else v) for k, v in info.items()]))
    elif handler is _timeline:
        rows = [r for r in remote.instants(client, table) if args.archived or not r["archived"]]
        if not args.reverse:  # newest first, as the console lists them
            rows.reverse()
        emit(args, [_remote_instant(r) | {"archived": r["archived"]} for r in rows], lambda: render_table(
            ["requested", "completed", "action", "state", "timeline"],
            [(r["requested_time"], r["completion_time"], r["action"], r["state"],
              "archived" if r["archived"] else "active") for r in rows]))
    elif handler is _savepoint_list:
        points = remote.savepoints(client, table)
        saved = [{"instant": {"requestedTime": s["instant"], "action": "savepoint", "state": "COMPLETED"},
                  "savepointedBy": s["savepointed_by"], "savepointedAt": s["savepointed_at_ms"],
                  "comments": s["comments"], "files": s["files"], "bytes": s["bytes"],
                  "missingFiles": s["missing_files"], "holdsBackArchival": s["holds_back_archival"]} for s in points]
        emit(args, saved, lambda: render_table(
            ["savepoint", "by", "files", size_header(args), "missing", "holds back archival", "comment"],
            [(s["instant"], s["savepointed_by"], s["files"], size_text(args, s["bytes"]), s["missing_files"],
              "yes" if s["holds_back_archival"] else "no", s["comments"]) for s in points]))
    elif handler is _instant_show:
        detail = remote.instant_detail(client, table, args.instant, args.action)
        contents = [c for c in detail["contents"] if args.state is None or c["state"] == args.state.upper()]
        if not contents:
            raise CleanlineError(f"{table['path']}: instant {args.instant} has no {args.state} state file")
        print_json({"instant": _remote_instant(detail), "content": contents[0]["content"]})
    else:
        raise CleanlineError(f"`{args.command}{' ' + args.sub if getattr(args, 'sub', None) else ''}` does not run "
                             "through --api (read commands: tables, table info, timeline, savepoint list, "
                             "instant show; write commands: clean plan, plan wait/approve/run, archive request, "
                             "doctor repair request)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # One short process over acyclic data: the cyclic collector's passes over a large listing
    # (several objects per file) cost more than the few cycles it could free (bench/cli.py).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if collecting:  # as it was (tests call main in their own process)
            gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(doctor_argv(list(sys.argv[1:] if argv is None else argv)))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="cleanline: %(message)s")
    try:
        if args.api:
            return _remote(args)
        # the lake-wide settings per root (S3 settings; Hudi writer options, where the writers' lock
        # settings live), passed to every table the command opens (`open_table`)
        args.roots = lake_roots()
        code = args.handler(args)
    except CleanlineError as exc:
        print(f"cleanline: error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))  # timeline.internal.remote.RemoteError: 1 refused, 3 timed out
    except BrokenPipeError:
        return 0
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
