"""The `cleanline clean` commands (plan, schedule, what-if, run, show) and what every changing
command shares: the table's services on the chosen engine with the writer options given."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

import timeline  # each name loads its module on first use (timeline/__init__.pyi): a command imports only what it runs
from timeline.cli_output import (
    emit,
    instant_json,
    open_table,
    render_table,
    size_header,
    size_text,
    sized_text,
)
from timeline.exceptions import InvalidInstantError

if TYPE_CHECKING:
    from timeline.clean.whatif import RetentionCost


def clean_config(table: timeline.HudiTable, args: argparse.Namespace) -> timeline.CleanConfig:
    return timeline.CleanConfig.from_properties(
        table.config.props, policy=args.policy, commits_retained=args.retain_commits,
        file_versions_retained=args.retain_versions, hours_retained=args.retain_hours,
        incremental=False if args.no_incremental else None)


def now_of(table: timeline.HudiTable, value: str | None) -> datetime | None:
    from timeline.instant import moment_of

    return None if value is None else moment_of(value, table.config.timezone)


def maintenance_of(table: timeline.HudiTable, args: argparse.Namespace, *, planning: bool = False
                 ) -> timeline.Maintenance:
    """The table's services on the chosen engine, with the writer options given by --hoodie-conf
    (over CLEANLINE_HUDI_OPTIONS and hoodie.properties: the lock Hudi writers of the table
    share) and --writers-stopped (go on beside what looks like a live writer when no lock is
    known: the operator says the writers are stopped)."""
    from timeline.internal.engine import engine_for, spark_session
    from timeline.internal.forks import local_processes

    engine = getattr(args, "engine", "local")
    if engine == "auto":  # by the table's data files (timeline.internal.engine.engine_for)
        engine = engine_for(sum(len(files) for files in table.list_partitions().partitions.values()))
    spark = spark_session() if engine == "spark" else None
    # planning on the local engine lists and plans in CLEANLINE_LOCAL_PROCESSES processes
    processes = local_processes() if planning and spark is None else 1
    return table.maintenance(spark=spark, options=dict(args.hoodie_conf or ()), processes=processes,
                             writers_stopped=getattr(args, "writers_stopped", False))


def writer_option(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, not {text!r}")
    return key.strip(), value.strip()


def listing_option(cmd: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """--listing: where the table's files are listed from (timeline/mdt/listing.py)."""
    cmd.add_argument("--listing", choices=["auto", "metadata", "storage"], default="auto",
                     help="list the table's files through its metadata table (as Hudi does when its `files` "
                          "partition is available), from storage, or auto: the metadata table when available "
                          "(default)")
    return cmd


def planned(args: argparse.Namespace) -> tuple[timeline.HudiTable, timeline.CleanConfig, timeline.CleanPlan]:
    table = open_table(args)
    config = clean_config(table, args)
    maintenance = maintenance_of(table, args, planning=True)
    return table, config, maintenance.plan_clean(config, now=now_of(table, args.now),
                                                 enforce_retention=not args.allow_short_retention,
                                                 listing=getattr(args, "listing", "auto"))


def plan_json(plan: timeline.CleanPlan) -> dict[str, Any]:
    record = plan.to_record().to_json()
    record["files"] = [
        {"partition": d.partition, "fileName": d.file_name, "filePath": d.path, "sizeBytes": d.size,
         "fileId": d.file_id, "baseInstantTime": d.base_instant_time, "delete": d.delete, "reason": d.reason}
        for d in plan.decisions]
    deleted = [d for d in plan.decisions if d.delete]
    record["totals"] = {"filesToDelete": len(deleted), "bytesToDelete": sum(d.size for d in deleted),
                        "filesKept": len(plan.decisions) - len(deleted),
                        "partitionsConsidered": len(plan.partitions_considered),
                        "partitionsWithDeletes": len({d.partition for d in deleted}),
                        "partitionsToDelete": len(plan.partitions_to_delete)}
    record["incremental"] = plan.incremental
    record["listing"] = plan.listing
    record["notes"] = list(plan.notes)
    return record


def plan_text(args: argparse.Namespace, plan: timeline.CleanPlan) -> str:
    ectr = plan.earliest_instant_to_retain
    head = [f"policy {plan.policy.value}; earliest commit to retain "
            f"{ectr.requested_time if ectr else '(none)'}; "
            f"last completed commit {plan.last_completed_commit or '(none)'}",
            *plan.notes,
            f"{len(plan.files_to_delete)} files to delete ({sized_text(args, plan.bytes_to_delete)}), "
            f"{len(plan.files_kept)} kept, {len(plan.partitions_to_delete)} partitions to delete"]
    rows = [(d.partition or "(none)", d.file_name, size_text(args, d.size), "DELETE" if d.delete else "keep", d.reason)
            for d in plan.decisions]
    return "\n".join(head) + "\n\n" + render_table(["partition", "file", size_header(args), "decision", "reason"],
                                                     rows)


def clean_plan(args: argparse.Namespace) -> None:
    _, _, plan = planned(args)
    emit(args, plan_json(plan), lambda: plan_text(args, plan))


def retention_settings(text: str) -> list[int]:
    """`1..10`, `1,2,3,5,10`, `1..5,10` or `none`: the retention values a what-if tries."""
    if text.strip().lower() == "none":
        return []
    values: list[int] = []
    try:
        for piece in filter(None, (p.strip() for p in text.split(","))):
            low, dots, high = piece.partition("..")
            values += range(int(low), int(high) + 1) if dots else [int(piece)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers like 1..10 or 1,2,3,5,10, not {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected numbers like 1..10 or 1,2,3,5,10, not {text!r}")
    return values


def cost_json(cost: RetentionCost) -> dict[str, Any]:
    return {"policy": cost.policy.value, "retained": cost.retained, "unit": cost.unit,
            "earliestCommitToRetain": cost.earliest_commit_to_retain, "filesToDelete": cost.files_to_delete,
            "bytesToDelete": cost.bytes_to_delete, "filesKept": cost.files_kept, "bytesKept": cost.bytes_kept,
            "partitionsToDelete": cost.partitions_to_delete, "partitionsConsidered": cost.partitions_considered,
            "incremental": cost.incremental, "belowTableSetting": cost.below_table_setting,
            "whyNothing": cost.why_nothing, "notes": list(cost.notes)}


def clean_what_if(args: argparse.Namespace) -> None:
    table = open_table(args)
    base = timeline.CleanConfig.from_properties(table.config.props, incremental=False if args.no_incremental else None)
    from timeline.clean.whatif import what_if

    result = what_if(table, commits=args.commits, hours=args.hours or (), file_versions=args.file_versions or (),
                     base=base, now=now_of(table, args.now), source=args.listing)
    data = {"table": result.table, "now": result.now.isoformat() if result.now else None,
            "listing": {"partitions": result.partitions, "files": result.files, "bytes": result.bytes},
            "tableSettings": base.as_properties(), "settings": [cost_json(c) for c in result.costs]}

    def text() -> str:
        whys = {c.why_nothing for c in result.costs}
        notes = dict.fromkeys(n for c in result.costs for n in c.notes if n not in whys)
        head = [f"what a clean would free now, per retention setting (nothing is deleted): one listing of "
                f"{result.partitions} partitions, {result.files} files ({sized_text(args, result.bytes)}); the table "
                f"retains {base.commits_retained} commits, {base.hours_retained} hours, "
                f"{base.file_versions_retained} file versions (policy {base.policy.value})",
                *(f"note: {n}" for n in notes)]
        if any(c.below_table_setting for c in result.costs):
            head.append("*: retains less than the table's own setting (clean plan refuses it without "
                        "--allow-short-retention)")
        rows = [(c.policy.value, f"{c.retained} {c.unit}{' *' if c.below_table_setting else ''}",
                 c.earliest_commit_to_retain or "(none)", c.files_to_delete, size_text(args, c.bytes_to_delete),
                 c.files_kept, c.partitions_to_delete, c.why_nothing or "") for c in result.costs]
        return "\n".join(head) + "\n\n" + render_table(
            ["policy", "retained", "earliest commit to retain", "files to delete", size_header(args),
             "files kept", "partitions to delete", "why nothing"], rows)

    emit(args, data, text)


def clean_schedule(args: argparse.Namespace) -> None:
    table, config, plan = planned(args)
    instant = maintenance_of(table, args).schedule_clean(plan, config, force=args.force)
    print("nothing to clean: the plan deletes no file, so no clean was scheduled" if instant is None
          else instant.requested_time)


def clean_run(args: argparse.Namespace) -> None:
    table = open_table(args)

    def bar(p: timeline.Progress) -> None:
        if sys.stderr.isatty() or p.files_done == p.files_total:
            filled = int(30 * p.files_done / max(p.files_total, 1))
            done = p.files_done == p.files_total
            size = sized_text(args, p.bytes_deleted)  # padded while running: a shorter size overwrites a longer one
            print(f"\rclean {p.instant} [{'#' * filled}{'.' * (30 - filled)}] {p.files_done}/{p.files_total} files, "
                  f"{size if done else size.ljust(12)}", end="\n" if done else "", file=sys.stderr)

    maintenance = maintenance_of(table, args)
    results = maintenance.run_cleans(progress=bar, instant=args.instant)
    if not results:
        print("no pending clean")
    for result in results:
        print(f"{result.instant.requested_time}: {result.deleted} deleted, {result.already_gone} already gone, "
              f"{result.failed} failed, {sized_text(args, result.bytes_deleted)} reclaimed")


def clean_show(args: argparse.Namespace) -> None:
    table = open_table(args)
    cleans = table.timeline.cleans().completed()
    clean = cleans.find(args.instant, "clean") if args.instant else cleans.last()
    if clean is None:
        raise InvalidInstantError(f"{table.uri}: no completed clean {args.instant or ''}".rstrip())
    report = table.inspect.clean_report(clean)
    rows = [(p or "(none)", name, "deleted") for p, name in sorted(report.deleted_files())]
    rows += [(p or "(none)", name, "FAILED") for p, name in sorted(report.failed_files())]
    emit(args, {"instant": instant_json(clean), "metadata": dict(report.raw)}, lambda: (
        f"clean {clean.requested_time}: {report.total_files_deleted} files deleted, earliest commit "
        f"retained {report.earliest_commit_to_retain or '(none)'}, {report.time_taken_ms} ms\n\n"
        + render_table(["partition", "file", "outcome"], rows)))
