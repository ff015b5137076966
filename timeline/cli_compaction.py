"""`cleanline compaction show|why|schedule|run`: a table's pending compactions, log compactions and
clusterings with their plans, its compaction backlog and its metadata table's compaction
(`HudiTable.inspect.table_services`), and why no compaction is scheduled, each reason naming its
setting or instant and what would change it (`HudiTable.inspect.why_not_compacting`); `show` and
`why` only read. `schedule` plans a compaction as Hudi's scheduler does with its default strategy
(a dry run unless --yes: `Maintenance.compact`), `run` runs a requested one with the local engine
(`Maintenance.run_compaction`). The writers' options come from --hoodie-conf over
CLEANLINE_HUDI_OPTIONS and hoodie.properties."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from timeline.cli_output import age_text, emit, instant_json, open_table, render_table, size_header, size_text

if TYPE_CHECKING:
    from timeline.services import (
        CompactionResult,
        CompactionSchedule,
        CompactionWhy,
        MetadataTableCompaction,
        PendingService,
        TableServices,
    )


def _pending_json(service: PendingService) -> dict[str, Any]:
    return {"instant": instant_json(service.instant), "kind": service.kind.value, "strategy": service.strategy or None,
            "ageSeconds": service.age_seconds, "heartbeatAgeSeconds": service.heartbeat_age_seconds,
            "fileGroups": len(service.file_groups), "bytes": service.bytes,
            "slices": [{"partition": s.partition, "fileId": s.file_id, "baseInstantTime": s.base_instant_time,
                        "baseFile": s.base_file, "logFiles": list(s.log_files), "bytes": s.bytes,
                        "missingFiles": list(s.missing), "plannedLogBytes": s.planned_log_bytes}
                       for s in service.slices]}


def _mdt_json(state: MetadataTableCompaction | None) -> dict[str, Any] | None:
    if state is None:
        return None
    return {"lastCompaction": state.last_compaction, "deltaCommitsSinceCompaction": state.delta_commits,
            "maxDeltaCommits": state.max_delta_commits, "latestDeltaCommit": state.latest_delta_commit,
            "due": state.due, "pending": [_pending_json(p) for p in state.pending],
            "blockingInstants": [instant_json(i) for i in state.blocking_instants]}


def show_json(services: TableServices) -> dict[str, Any]:
    since = services.since_compaction
    backlog = services.backlog
    return {"table": services.table_uri, "tableType": services.table_type, "tableVersion": services.table_version,
            "pending": [_pending_json(p) for p in services.pending],
            "deltaCommitsSinceCompaction": None if since is None else since.count,
            "countedFrom": None if since is None else instant_json(since.since),
            "backlog": {"logFiles": backlog.log_files, "logBytes": backlog.log_bytes,
                        "maxDeltaCommits": backlog.max_delta_commits,
                        "partitions": [{"partition": p.partition, "fileGroups": p.file_groups, "logFiles": p.log_files,
                                        "logBytes": p.log_bytes, "maxDeltaCommits": p.max_delta_commits}
                                       for p in backlog.partitions],
                        "fileGroups": [{"partition": g.partition, "fileId": g.file_id,
                                        "baseInstantTime": g.base_instant_time, "baseFile": g.base_file,
                                        "logFiles": g.log_files, "logBytes": g.log_bytes,
                                        "deltaCommits": g.delta_commits} for g in backlog.groups]},
            "metadataTable": _mdt_json(services.metadata_table)}


def _pending_rows(args: argparse.Namespace, pending: tuple[PendingService, ...]) -> str:
    return render_table(["instant", "service", "state", "age", "heartbeat", "file groups", size_header(args),
                         "strategy"],
                        [(p.instant.requested_time, p.kind.value, p.instant.state.name.lower(),
                          age_text(p.age_seconds) if p.age_seconds is not None else "",
                          age_text(p.heartbeat_age_seconds) + " ago" if p.heartbeat_age_seconds is not None else "none",
                          len(p.file_groups), size_text(args, p.bytes), p.strategy) for p in pending])


def show_text(args: argparse.Namespace, services: TableServices) -> str:
    since = services.since_compaction
    lines = [f"{services.table_uri}: {services.table_type}, table version {services.table_version}",
             "pending table services: none" if not services.pending else "pending table services:"]
    if services.pending:
        lines.append(_pending_rows(args, services.pending))
    if since is not None:
        lines.append(f"delta commits since the last compaction: {since.count} (counted from "
                     f"{since.since.action} {since.since.requested_time})")
    backlog = services.backlog
    if backlog.groups:
        lines.append(f"backlog: {len(backlog.groups)} file groups with {backlog.log_files} log files "
                     f"({size_text(args, backlog.log_bytes)}), at most {backlog.max_delta_commits} delta commits "
                     "merged by a snapshot read")
        lines.append(render_table(["partition", "file groups", "log files", size_header(args), "max delta commits"],
                                  [(p.partition or "(none)", p.file_groups, p.log_files, size_text(args, p.log_bytes),
                                    p.max_delta_commits) for p in backlog.partitions]))
    elif services.table_type == "MERGE_ON_READ":
        lines.append("backlog: no file group has log files")
    mdt = services.metadata_table
    if mdt is not None:
        lines.append(f"metadata table: last compaction {mdt.last_compaction or 'none'}, {mdt.delta_commits} delta "
                     f"commits since (compacts at {mdt.max_delta_commits}), "
                     f"{len(mdt.blocking_instants)} data-table instants holding it back")
        if mdt.pending:
            lines.append(_pending_rows(args, mdt.pending))
    return "\n".join(lines)


def why_json(answer: CompactionWhy) -> dict[str, Any]:
    check = answer.trigger
    counted = None if check is None else check.counted
    return {"candidate": answer.candidate, "wouldSchedule": answer.would_schedule,
            "settings": answer.settings.as_properties(),
            "deltaCommitsSinceCompaction": None if counted is None else counted.count,
            "countedFrom": None if counted is None else instant_json(counted.since),
            "secondsSince": None if check is None else check.elapsed,
            "compactable": [{"partition": p, "fileId": f} for p, f in answer.compactable],
            "reasons": [{"kind": r.kind.value, "blocking": r.blocking, "why": r.why, "change": r.change,
                         "setting": r.setting, "instant": instant_json(r.instant) if r.instant else None,
                         "fileGroups": [{"partition": p, "fileId": f} for p, f in r.file_groups], "rule": r.rule}
                        for r in answer.reasons],
            "metadataTable": _mdt_json(answer.metadata_table)}


def why_text(path: str, answer: CompactionWhy) -> str:
    verdict = "yes" if answer.would_schedule else "no"
    lines = [f"{path}: would a writer schedule a compaction now ({answer.candidate})? {verdict}; "
             f"{len(answer.compactable)} file groups a plan would take"]
    for reason in answer.reasons:
        lines += [f"- {reason.kind.value}{'' if reason.blocking else ' (note)'}: {reason.why}",
                  f"  changes with: {reason.change}", f"  Hudi: {reason.rule}"]
    if not answer.reasons:
        lines.append("nothing holds it back")
    return "\n".join(lines)


def compaction_show(args: argparse.Namespace) -> None:
    services = open_table(args).inspect.table_services(dict(args.hoodie_conf or ()))
    emit(args, show_json(services), lambda: show_text(args, services))


def compaction_why(args: argparse.Namespace) -> None:
    table = open_table(args)
    answer = table.inspect.why_not_compacting(dict(args.hoodie_conf or ()))
    emit(args, why_json(answer) | {"table": table.uri}, lambda: why_text(table.uri, answer))


def schedule_json(plan: CompactionSchedule) -> dict[str, Any]:
    return {"table": plan.table_uri, "instant": instant_json(plan.instant) if plan.instant else None,
            "scheduled": plan.scheduled, "dryRun": not plan.scheduled, "reason": plan.reason or None,
            "mergeMode": plan.merge.mode.value, "orderingField": plan.merge.ordering_field or None,
            "bytes": plan.bytes, "missingSchedulePartitions": list(plan.missing_partitions),
            "operations": [{"partition": op.partition, "fileId": op.file_id, "baseInstantTime": op.base_instant_time,
                            "baseFile": op.base_file, "baseFileBytes": op.base_file_size,
                            "logFiles": list(op.log_files), "logBytes": op.log_bytes, "metrics": dict(op.metrics)}
                           for op in plan.operations],
            "leftOut": [{"partition": p, "fileId": f, "why": why} for (p, f), why in sorted(plan.left_out.items())]}


def schedule_text(args: argparse.Namespace, plan: CompactionSchedule) -> str:
    if plan.instant is None:
        return f"{plan.table_uri}: nothing to compact: {plan.reason}"
    verb = "scheduled" if plan.scheduled else "would schedule (dry run; --yes writes the plan)"
    lines = [f"{plan.table_uri}: {verb} compaction {plan.instant.requested_time} of {len(plan.operations)} file "
             f"groups ({size_text(args, plan.bytes)}; {plan.merge.mode.value}"
             f"{', ordering field ' + plan.merge.ordering_field if plan.merge.ordering_field else ''})",
             render_table(["partition", "file group", "base file", "log files", size_header(args)],
                          [(op.partition or "(root)", op.file_id, op.base_file or "(none)", len(op.log_files),
                            size_text(args, op.base_file_size + op.log_bytes)) for op in plan.operations])]
    if plan.left_out:
        lines.append("left out:")
        lines += [f"- {p or '(root)'}/{f}: {why}" for (p, f), why in sorted(plan.left_out.items())]
    return "\n".join(lines)


def run_json(result: CompactionResult) -> dict[str, Any]:
    return {"instant": instant_json(result.instant),
            "rolledBack": instant_json(result.rolled_back) if result.rolled_back else None,
            "files": [{"path": f.path, "partition": f.partition, "fileId": f.file_id, "records": f.records,
                       "bytes": f.bytes, "logFilesMerged": f.log_files, "logRecordsMerged": f.log_records}
                      for f in result.new_files]}


def run_text(args: argparse.Namespace, result: CompactionResult) -> str:
    lines = []
    if result.rolled_back is not None:
        lines.append(f"rolled back the crashed run first ({result.rolled_back.action} "
                     f"{result.rolled_back.requested_time})")
    lines.append(f"compaction {result.instant.requested_time} completed: {len(result.new_files)} new base files")
    lines.append(render_table(["file", "records", size_header(args), "log files merged"],
                              [(f.path, f.records, size_text(args, f.bytes), f.log_files) for f in result.new_files]))
    return "\n".join(lines)


def compaction_schedule(args: argparse.Namespace) -> None:
    from timeline.cli_clean import maintenance_of

    maintenance = maintenance_of(open_table(args), args)
    plan = maintenance.compact(dry_run=not args.yes)
    emit(args, schedule_json(plan), lambda: schedule_text(args, plan))


def compaction_run(args: argparse.Namespace) -> None:
    from timeline.cli_clean import maintenance_of

    maintenance = maintenance_of(open_table(args), args)
    result = maintenance.run_compaction(instant=args.instant)
    emit(args, run_json(result), lambda: run_text(args, result))


def add_compaction_command(commands: Any, command: Callable[..., argparse.ArgumentParser],
                           sizes: Callable[[argparse.ArgumentParser], Any],
                           writers_stopped: Callable[[argparse.ArgumentParser], Any]) -> None:
    """compaction show, why, schedule, run (`command`, `sizes` and `writers_stopped` are cli.py's
    helpers)."""
    parser = commands.add_parser("compaction", help="see compactions, log compactions and clusterings, and why "
                                                    "nothing compacts")
    sub = parser.add_subparsers(dest="sub", required=True)
    show = sizes(command(sub, "show", compaction_show, "pending compactions, log compactions and clusterings with "
                         "their plans, the compaction backlog per partition and the metadata table's compaction; "
                         "writes nothing"))
    show.add_argument("--json", action="store_true", help="print JSON (every file group of the backlog and plans)")
    why = command(sub, "why", compaction_why, "why no compaction is scheduled now, as Hudi's schedulers decide from "
                  "the writers' settings (--hoodie-conf) and the timeline; writes nothing")
    why.add_argument("--json", action="store_true", help="print JSON")
    schedule = writers_stopped(sizes(command(
        sub, "schedule", compaction_schedule, "plan a compaction as Hudi's scheduler does with its default strategy "
        "(LogFileSizeBasedCompactionStrategy, hoodie.compaction.target.io, hoodie.compaction.logfile.size.threshold); "
        "a dry run unless --yes, which writes <t>.compaction.requested under the table's lock; refused with the "
        "reason for merges Cleanline cannot reproduce")))
    schedule.add_argument("--dry-run", action="store_true", help="only show the plan (the default)")
    schedule.add_argument("--yes", action="store_true", help="write the plan (schedule the compaction)")
    schedule.add_argument("--json", action="store_true", help="print JSON")
    run = writers_stopped(sizes(command(
        sub, "run", compaction_run, "run a requested compaction with the local engine (pyarrow): new base files, the "
        "metadata table's update and the commit, under the table's lock; an inflight one left by a crash (no live "
        "heartbeat) is rolled back to requested first")))
    run.add_argument("--instant", metavar="T", default=None, help="the compaction to run (default: the earliest "
                     "pending one)")
    run.add_argument("--json", action="store_true", help="print JSON")
