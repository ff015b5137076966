"""`cleanline archive plan|run`: what Hudi's archiver would move off the active timeline now and
what holds the rest back (`timeline.archive.plan`), and archiving it under the table's lock
(`Maintenance.archive`, as Hudi's `archive_commits` procedure)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from timeline.cli_clean import maintenance_of
from timeline.cli_output import confirm, emit, instant_json, open_table, render_table

if TYPE_CHECKING:
    from timeline.archive.plan import ArchivalPlan


def plan_json(plan: ArchivalPlan) -> dict[str, Any]:
    return {"table": plan.table_uri, "tableVersion": plan.table_version, "archiver": plan.archiver,
            "activeBefore": plan.active_before, "activeAfter": plan.active_after, "archivable": plan.archivable,
            "runnable": plan.runnable, "keepMin": plan.keep.min_instants, "keepMax": plan.keep.max_instants,
            "instants": [instant_json(i) for i in plan.instants],
            "blockers": [{"kind": b.kind.value, "instant": instant_json(b.instant) if b.instant else None,
                          "since": b.since, "why": b.why} for b in plan.blockers],
            "warnings": list(plan.warnings),
            "metadataTable": plan_json(plan.metadata_table) if plan.metadata_table is not None else None}


def plan_text(plan: ArchivalPlan) -> str:
    lines = [f"{plan.table_uri}: {plan.archiver}, active timeline {plan.active_before} -> {plan.active_after} "
             f"instants, {plan.archivable} to archive (keep {plan.keep.min_instants}..{plan.keep.max_instants} "
             "commits)"]
    if plan.archivable:
        lines.append(render_table(["instant", "action", "completed"],
                                  [(i.requested_time, i.action, i.completion_time or "") for i in plan.instants]))
    if plan.blockers:
        lines.append("held back by:")
        lines.append(render_table(["blocker", "instant", "since", "why"],
                                  [(b.kind.value, b.instant.requested_time if b.instant else "", b.since or "", b.why)
                                   for b in plan.blockers]))
    lines += [f"warning: {w}" for w in plan.warnings]
    if plan.metadata_table is not None:
        lines += ["then its metadata table, by its own rules:", plan_text(plan.metadata_table)]
    return "\n".join(lines)


def archive_plan(args: argparse.Namespace) -> None:
    plan = maintenance_of(open_table(args), args).plan_archival()
    emit(args, plan_json(plan), lambda: plan_text(plan))


def archive_run(args: argparse.Namespace) -> None:
    table = open_table(args)
    maintenance = maintenance_of(table, args)
    plan = maintenance.plan_archival()
    if not args.json:
        print(plan_text(plan), file=sys.stderr)
    mdt = plan.metadata_table.archivable if plan.metadata_table is not None else 0
    if not plan.archivable and not mdt:
        emit(args, {"archived": [], "metadataTableArchived": [], "plan": plan_json(plan)},
             lambda: "nothing to archive")
        return
    confirm(args, f"Archive {plan.archivable} instants of {table.uri}"
                  f"{f' and {mdt} of its metadata table' if mdt else ''}?")
    outcome = maintenance.archive(expected=[i.requested_time for i in plan.instants], dry_run=False)
    moved = outcome.result.archived if outcome.result else ()
    mdt_moved = outcome.metadata_table.archived if outcome.metadata_table else ()
    emit(args, {"archived": [instant_json(i) for i in moved],
                "metadataTableArchived": [instant_json(i) for i in mdt_moved], "plan": plan_json(outcome.plan)},
         lambda: f"archived {len(moved)} instants (and {len(mdt_moved)} of the metadata table); the active "
                 f"timeline now holds {outcome.plan.active_after}")


def add_archive_commands(commands: Any, command: Any, writers_stopped: Any) -> Any:
    """archive plan, archive run (`command` and `writers_stopped` are cli.py's helpers); returns
    the archive command's subparsers (`archive request` is added by cli_automation.py)."""
    parser = commands.add_parser("archive", help="keep the active timeline short as Hudi's archiver does")
    archive = parser.add_subparsers(dest="sub", required=True)
    plan = command(archive, "plan", archive_plan, "what archival would move now and what holds the rest back; "
                   "writes nothing (settings: hoodie.properties, CLEANLINE_HUDI_OPTIONS, --hoodie-conf)")
    plan.add_argument("--json", action="store_true", help="print JSON")
    run = writers_stopped(command(archive, "run", archive_run, "archive what Hudi's archiver would archive now, under "
                                  "the table's lock (the plan is shown and checked again under the lock first)"))
    run.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    run.add_argument("--json", action="store_true", help="print JSON")
    return archive
