"""`cleanline version check|rehearse|upgrade|downgrade PATH --to N`.

- `check`: the preflight of a table version change (`HudiTable.inspect.version_check`): each of
  Hudi's steps to the target with every blocker its handler would meet (naming the instant or
  setting, what clears it and the Hudi rule) and what the change will rewrite. Reads only; exit 1
  while a blocker stands, 0 when the change may go on (or there is nothing to do), 2 for a target
  Cleanline does not check.
- `rehearse`: the change run on a copy (`.hoodie` copied, data files linked) and verified
  (`Maintenance.rehearse_version_change`); writes nothing to the table; exit 0 when it passed.
- `upgrade` / `downgrade`: the change itself (`Maintenance.change_version`), after a passing
  rehearsal on a local table, asked for unless --yes; exit 1 when refused or the rehearsal failed."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from timeline.cli_clean import maintenance_of
from timeline.cli_output import confirm, emit, instant_json, open_table
from timeline.exceptions import CleanlineError

if TYPE_CHECKING:
    from timeline.versions import Blocker, Rehearsal, StepPlan, VersionChangePlan, VersionCheck


def _blocker_json(blocker: Blocker) -> dict[str, Any]:
    return {"kind": blocker.kind.value, "blocking": blocker.blocking, "why": blocker.why, "clears": blocker.clears,
            "rule": blocker.rule, "instant": instant_json(blocker.instant) if blocker.instant else None,
            "setting": blocker.setting,
            "fileGroups": [{"partition": p, "fileId": f} for p, f in blocker.file_groups]}


def check_json(check: VersionCheck) -> dict[str, Any]:
    return {"table": check.table_uri, "currentVersion": check.current, "targetVersion": check.target,
            "ready": check.ready, "blockers": len(check.blockers),
            "steps": [{"from": s.step.from_version, "to": s.step.to_version, "handler": s.step.handler,
                       "blocked": s.blocked, "blockers": [_blocker_json(b) for b in s.blockers]}
                      for s in check.steps]}


def check_text(check: VersionCheck) -> str:
    if not check.steps:
        return f"{check.table_uri}: already at table version {check.current}: nothing to do"
    verdict = ("ready" if check.ready else f"blocked ({len(check.blockers)} blocker(s))")
    lines = [f"{check.table_uri}: table version {check.current} -> {check.target}: {verdict}"]
    for step in check.steps:
        lines.append(f"step {step.step.from_version} -> {step.step.to_version} ({step.step.handler}): "
                     f"{'blocked' if step.blocked else 'clear'}")
        for b in step.blockers:
            named = [b.instant.requested_time if b.instant else (b.setting or ""),
                     f"{len(b.file_groups)} file group(s)" if b.file_groups else ""]
            what = ", ".join(n for n in named if n)
            lines += [f"- {'BLOCKS' if b.blocking else 'note'}: {b.kind.value}{f' [{what}]' if what else ''}: {b.why}",
                      f"  clears: {b.clears}", f"  Hudi: {b.rule}"]
    return "\n".join(lines)


def version_check(args: argparse.Namespace) -> int:
    check = open_table(args).inspect.version_check(args.to, options=dict(args.hoodie_conf or ()))
    emit(args, check_json(check), lambda: check_text(check))
    return 0 if check.ready else 1


def _plan_json(plan: VersionChangePlan) -> dict[str, Any]:
    return {"table": plan.table_uri, "currentVersion": plan.current, "targetVersion": plan.target,
            "dryRun": plan.dry_run, "done": plan.done, "refused": list(plan.refused),
            "resumed": list(plan.resumed) if plan.resumed else None,
            "steps": [_step_json(s) for s in (plan.ran or plan.steps)], "check": check_json(plan.check)}


def _step_json(step: StepPlan) -> dict[str, Any]:
    return {"from": step.step.from_version, "to": step.step.to_version, "handler": step.step.handler,
            "metadataTable": step.metadata_table, "indexDefinitions": step.index_definitions,
            "properties": dict(step.properties),
            "instantFiles": [{"from": m.source, "to": m.target, "convert": m.convert} for m in step.moves]}


def _plan_text(plan: VersionChangePlan) -> str:
    if plan.done:
        head = f"{plan.table_uri}: moved from table version {plan.current} to {plan.target}"
    elif plan.refused:
        head = f"{plan.table_uri}: table version {plan.current} -> {plan.target}: refused"
    else:
        head = f"{plan.table_uri}: table version {plan.current} -> {plan.target}: the plan (nothing written)"
    lines = [head]
    if plan.interrupted:
        lines.append(f"an interrupted step {plan.interrupted[0]} -> {plan.interrupted[1]} is finished first")
    if plan.resumed:
        lines.append(f"finished the interrupted step {plan.resumed[0]} -> {plan.resumed[1]} first")
    lines += [f"- step {s.describe()}" for s in (plan.ran or plan.steps)]
    lines += [f"- refused: {r}" for r in plan.refused]
    return "\n".join(lines)


def _rehearsal_json(report: Rehearsal) -> dict[str, Any]:
    return {"table": report.table_uri, "targetVersion": report.target, "passed": report.passed,
            "refused": list(report.refused), "timelineDifferences": list(report.timeline_differences),
            "fsviewDifferences": list(report.fsview_differences), "metadataTable": report.metadata_table,
            "metadataTableOk": report.metadata_table_ok, "rows": report.rows, "rowsEqual": report.rows_equal,
            "notes": list(report.notes), "plan": _plan_json(report.plan) if report.plan else None}


def _rehearsal_text(report: Rehearsal) -> str:
    lines = [f"{report.table_uri}: rehearsal of the move to table version {report.target}: "
             f"{'PASSED' if report.passed else 'FAILED'}"]
    lines += [f"- refused: {r}" for r in report.refused]
    if report.plan is not None:
        lines += [f"- step {s.describe()}" for s in report.plan.ran]
        lines.append(f"- timeline: {'equal' if not report.timeline_differences else 'DIFFERS'}")
        lines += [f"  {d}" for d in report.timeline_differences]
        lines.append(f"- file-system view: {'equal' if not report.fsview_differences else 'DIFFERS'}")
        lines += [f"  {d}" for d in report.fsview_differences]
        lines.append(f"- metadata table: {report.metadata_table}")
        rows = ("not compared" if report.rows_equal is None
                else f"{report.rows} row(s) {'equal' if report.rows_equal else 'DIFFER'}")
        lines.append(f"- hudi-rs rows: {rows}")
    lines += [f"- note: {n}" for n in report.notes]
    return "\n".join(lines)


def version_rehearse(args: argparse.Namespace) -> int:
    table = open_table(args)
    report = maintenance_of(table, args).rehearse_version_change(args.to, drop_metadata_table=args.drop_metadata_table)
    emit(args, _rehearsal_json(report), lambda: _rehearsal_text(report))
    return 0 if report.passed else 1


def version_change(args: argparse.Namespace) -> int:
    table = open_table(args)
    upgrade = args.sub == "upgrade"
    if (args.to <= table.version) if upgrade else (args.to >= table.version):
        raise CleanlineError(f"{table.uri}: table version {table.version}: `version {args.sub} --to {args.to}` "
                             f"is not an {args.sub} (use `version {'downgrade' if upgrade else 'upgrade'}`)")
    maintenance = maintenance_of(table, args)
    plan = maintenance.change_version(args.to, drop_metadata_table=args.drop_metadata_table)
    if plan.refused and plan.interrupted is None:
        emit(args, _plan_json(plan), lambda: _plan_text(plan))
        return 1
    if table.storage.scheme in ("", "file") and not args.no_rehearsal:
        report = maintenance.rehearse_version_change(args.to, drop_metadata_table=args.drop_metadata_table)
        if not report.passed:
            emit(args, _rehearsal_json(report), lambda: _rehearsal_text(report))
            return 1
    if not args.json:
        print(_plan_text(plan), file=sys.stderr)
    confirm(args, f"{args.sub.capitalize()} {table.uri} from table version {table.version} to {args.to}?")
    done = maintenance.change_version(args.to, dry_run=False, drop_metadata_table=args.drop_metadata_table)
    emit(args, _plan_json(done), lambda: _plan_text(done))
    return 0


def add_version_command(commands: Any, command: Callable[..., argparse.ArgumentParser],
                        writers_stopped: Callable[[argparse.ArgumentParser], argparse.ArgumentParser]) -> None:
    """version check|rehearse|upgrade|downgrade (`command` and `writers_stopped` are cli.py's helpers)."""
    parser = commands.add_parser("version", help="table version changes: check, rehearse, upgrade, downgrade")
    sub = parser.add_subparsers(dest="sub", required=True)
    check = command(sub, "check", version_check, "the preflight of moving the table to table version N (6, 8 or "
                    "9; one step at a time, 6->8->9 and 9->8->6): every blocker Hudi's upgrade and downgrade "
                    "handlers would meet, with its instant or setting, what clears it and the Hudi rule, and the "
                    "settings the change rewrites; writes nothing. Exit 1 while a blocker stands, 0 when the change "
                    "may go on (or the table is already at N), 2 for a version Cleanline does not check")
    check.add_argument("--to", type=int, required=True, metavar="N", help="the target table version (6, 8 or 9)")
    check.add_argument("--json", action="store_true", help="print JSON")
    rehearse = writers_stopped(command(
        sub, "rehearse", version_rehearse, "run the change to table version N on a copy of the table (.hoodie "
        "copied, data files linked; local tables) and verify it: the same timeline and file-system view, the "
        "metadata table valid, the same rows read by hudi-rs; writes nothing to the table. Exit 1 when it failed"))
    for cmd in (rehearse,):
        cmd.add_argument("--to", type=int, required=True, metavar="N", help="the target table version (6, 8 or 9)")
        cmd.add_argument("--drop-metadata-table", action="store_true",
                         help="drop the metadata table where a step needs Hudi to compact it or drop index "
                              "partitions (Hudi writers rebuild it); refused otherwise")
        cmd.add_argument("--json", action="store_true", help="print JSON")
    for name, what in (("upgrade", "up"), ("downgrade", "down")):
        change = writers_stopped(command(
            sub, name, version_change, f"move the table {what} to table version N as Hudi's UpgradeDowngrade does, "
            "one step at a time under the table's lock, after the preflight (refused while a blocker stands) and a "
            "passing rehearsal (local tables); an interrupted change is finished first. Asks unless --yes"))
        change.add_argument("--to", type=int, required=True, metavar="N", help="the target table version (6, 8 or 9)")
        change.add_argument("--drop-metadata-table", action="store_true",
                            help="drop the metadata table where a step needs Hudi to compact it or drop index "
                                 "partitions (Hudi writers rebuild it); refused otherwise")
        change.add_argument("--no-rehearsal", action="store_true", help="skip the rehearsal on a copy")
        change.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        change.add_argument("--json", action="store_true", help="print JSON")
