"""`cleanline doctor`: what is wrong with a table (or every table under a root), and a repair
shown before it runs. The findings and repairs are the library's (`timeline.doctor`, reached
through `table.inspect.diagnose` and `table.maintenance().plan_repair` / `repair`); this module
only prints them. Exit 0 when healthy, 1 with findings (or a repair that left some), 2 on bad
input."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import timeline  # each name loads its module on first use (timeline/__init__.pyi)
from timeline.cli_output import confirm, emit, open_table, print_json, render_table, size_header, size_text, sized_text

SHOWN = 10  # rows of a list in the readable evidence (JSON has them all)


def add_doctor_command(commands: Any, writers_stopped: Callable[[argparse.ArgumentParser], Any],
                       sizes: Callable[[argparse.ArgumentParser], Any]) -> None:
    doctor = commands.add_parser(
        "doctor", help="find what is wrong with a table, say why, and repair it with a preview",
        description="find what is wrong with a Hudi table (stale pending instants, orphan files, metadata-table "
                    "drift, clean lag, broken timeline pieces), say why, and repair it with a preview; exit 0 when "
                    "healthy, 1 with findings")
    doctor.add_argument("path", help="table base path or URI (with --tables: a root holding tables)")
    doctor.add_argument("--json", action="store_true", help="print JSON: the findings (kind, severity, evidence, "
                        "why, repair), or with --repair the plan and its result")
    doctor.add_argument("--tables", action="store_true", help="diagnose every table under PATH (folders holding "
                        ".hoodie/hoodie.properties; tables are not descended into)")
    doctor.add_argument("--repair", metavar="KIND", help="repair every finding of this kind: shows exactly what "
                        "changes, asks, then runs it under the table's lock")
    doctor.add_argument("--preview", action="store_true", help="with --repair: show the plan, change nothing")
    doctor.add_argument("--yes", action="store_true", help="with --repair: do not ask for confirmation")
    doctor.add_argument("--stale-after", type=_at_least(0), metavar="MINUTES", help="a pending instant with no live "
                        "heartbeat is stale once this old (default 180, Hudi's cleanup_stale_inflight_commits)")
    doctor.add_argument("--orphan-min-age", type=_at_least(0), metavar="HOURS", help="an unreferenced file is an "
                        "orphan only once this old, and older than the oldest pending instant (default 72)")
    doctor.add_argument("--clean-lag", type=_at_least(1, int), metavar="COMMITS", help="a next clean covering this "
                        "many commits is a finding, and the commits per capped clean when the table sets no "
                        "hoodie.clean.max.commits.to.clean (default 100)")
    doctor.add_argument("--include-ingestion-commits", action="store_true", help="with --repair stale-pending: "
                        "also roll back stale commits and delta commits whose writers keep no heartbeat (failed-writes "
                        "policy EAGER), as Hudi's cleanup_stale_inflight_commits(include_ingestion_commits => true); "
                        "DANGEROUS: a writer still running a long write loses it. Use only when its writer is known "
                        "gone; the plan records it")
    sizes(writers_stopped(doctor))
    doctor.set_defaults(handler=doctor_command)


def doctor_command(args: argparse.Namespace) -> int:
    if args.tables:
        if args.repair:
            raise timeline.CleanlineError("--repair works on one table: give its path without --tables")
        return _lake(args)
    if args.repair:
        return _repair(args)
    table = open_table(args)
    findings = table.inspect.diagnose(settings=_settings(args))
    emit(args, [f.to_json() for f in findings], lambda: _findings_text(args, table.uri, findings))
    return 1 if findings else 0


def _at_least(low: int, kind: Callable[[str], float] = float) -> Callable[[str], float]:
    """An argparse type: a number (`kind` of the text) not below `low`."""
    def number(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'a whole' if kind is int else 'a'} number: {text!r}") from None
        if not value >= low:  # also refuses nan
            raise argparse.ArgumentTypeError(f"must be at least {low}: {text!r}")
        return value
    return number


def _settings(args: argparse.Namespace) -> Any:
    """The doctor's settings: the thresholds given (the library's defaults for the others) and
    the writer options of `--hoodie-conf`."""
    from datetime import timedelta

    from timeline.doctor import DoctorSettings

    given: dict[str, Any] = {}
    if args.stale_after is not None:
        given["stale_after"] = timedelta(minutes=args.stale_after)
    if args.orphan_min_age is not None:
        given["orphan_min_age"] = timedelta(hours=args.orphan_min_age)
    if args.clean_lag is not None:
        given["clean_lag_commits"] = args.clean_lag
    if getattr(args, "include_ingestion_commits", False):
        given["include_ingestion_commits"] = True
    return DoctorSettings(options=dict(args.hoodie_conf or ()), **given)


def _findings_text(args: argparse.Namespace, uri: str, findings: Sequence[Any]) -> str:
    if not findings:
        return f"{uri}: healthy, nothing found"
    lines = [f"{uri}: {len(findings)} finding(s)", "",
             render_table(["severity", "kind", "summary"], [(f.severity.value, f.kind, f.summary) for f in findings])]
    for finding in findings:
        lines += ["", f"[{finding.severity.value}] {finding.kind}: {finding.summary}", f"  why: {finding.why}",
                  f"  repair: {finding.repair}"]
        lines += _evidence_lines(args, finding.evidence.to_json(), "  ")
    return "\n".join(lines)


def _value(args: argparse.Namespace, key: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and key.lower().endswith("bytes"):
        return size_text(args, value)
    return "-" if value is None else str(value)


def _evidence_lines(args: argparse.Namespace, evidence: dict[str, Any], indent: str) -> list[str]:
    """Scalars as `key: value`; lists of objects as a table of their first rows."""
    lines = []
    for key, value in evidence.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            headers = [k for k, v in value[0].items() if not isinstance(v, list | dict)]
            rows = [[_value(args, k, row.get(k)) for k in headers] for row in value[:SHOWN]]
            table = render_table([size_header(args) if h.lower().endswith("bytes") else h for h in headers], rows)
            lines += [f"{indent}{key} ({len(value)}):", *(f"{indent}  {line}" for line in table.splitlines())]
            if len(value) > SHOWN:
                lines.append(f"{indent}  ... {len(value) - SHOWN} more (--json lists them all)")
            nested = [(row, k) for row in value[:SHOWN] for k, v in row.items() if isinstance(v, list) and v]
            for row, k in nested[:SHOWN]:
                lines.append(f"{indent}  {row.get('partition', '')} {k}: {', '.join(map(str, row[k][:SHOWN]))}")
        elif isinstance(value, list):
            shown = ", ".join(map(str, value[:SHOWN])) + (f", ... ({len(value)})" if len(value) > SHOWN else "")
            lines.append(f"{indent}{key}: {shown or '-'}")
        else:
            lines.append(f"{indent}{key}: {_value(args, key, value)}")
    return lines


def _lake(args: argparse.Namespace) -> int:
    from timeline.doctor import find_tables

    rows: list[dict[str, Any]] = []
    for uri in find_tables(args.path, roots=args.roots):
        try:
            findings = open_table(args, uri).inspect.diagnose(settings=_settings(args))
        except timeline.CleanlineError as exc:
            rows.append({"table": uri, "error": str(exc), "findings": []})
            continue
        rows.append({"table": uri, "error": None, "findings": [f.to_json() for f in findings]})
    rank = {"error": 2, "warning": 1, "info": 0}

    def worst(row: dict[str, Any]) -> str:
        if row["error"]:
            return "error"
        return max((f["severity"] for f in row["findings"]), key=rank.__getitem__, default="healthy")

    rows.sort(key=lambda r: (-rank.get(worst(r), -1), r["table"]))
    emit(args, rows, lambda: render_table(
        ["table", "worst", "findings", "kinds"],
        [(r["table"], worst(r), len(r["findings"]) if not r["error"] else "-",
          r["error"] or ", ".join(sorted({f["kind"] for f in r["findings"]})) or "-") for r in rows])
        if rows else f"{args.path}: no Hudi table found")
    return 1 if any(r["error"] or r["findings"] for r in rows) else 0


def _repair(args: argparse.Namespace) -> int:
    from timeline.cli_clean import maintenance_of

    table = open_table(args)
    found = table.inspect.diagnose(kinds=[args.repair], settings=_settings(args))
    if not found:
        emit(args, {"plan": None, "result": None, "remaining": []},
             lambda: f"{table.uri}: no {args.repair} finding, nothing to repair")
        return 0
    maintenance = maintenance_of(table, args)
    try:
        plan = maintenance.plan_repair(args.repair, settings=_settings(args))
    except timeline.CleanlineError as exc:  # findings no Cleanline repair fixes: who must act is in the message
        why = str(exc)
        emit(args, {"plan": None, "result": None, "remaining": [f.to_json() for f in found], "why": why},
             lambda: why)
        return 1
    if not args.json:
        print(_plan_text(args, plan))
    if args.preview:
        if args.json:
            print_json({"plan": plan.to_json(), "result": None})
        return 0
    confirm(args, f"Repair {plan.kind} on {table.uri}: {len(plan.changes)} change(s), "
                   f"{sized_text(args, plan.bytes)}?")
    result = maintenance.repair(plan, settings=_settings(args), dry_run=False)
    left = table.inspect.diagnose(kinds=[plan.kind], settings=_settings(args))
    if args.json:
        print_json({"plan": plan.to_json(), "result": result.to_json(), "remaining": [f.to_json() for f in left]})
    else:
        print(_result_text(args, result, left), file=sys.stderr)
    return 0 if result.ok and not left else 1


def _plan_text(args: argparse.Namespace, plan: Any) -> str:
    lines = [f"repair {plan.kind} on {plan.table}: {len(plan.changes)} change(s), {sized_text(args, plan.bytes)}",
             *(f"  fixes: {f.summary}" for f in plan.findings), *(f"  note: {n}" for n in plan.notes), "",
             render_table(["action", "target", size_header(args), "detail"],
                          [(c.action, c.target, size_text(args, c.bytes), c.detail) for c in plan.changes])]
    return "\n".join(lines)


def _result_text(args: argparse.Namespace, result: Any, left: Sequence[Any]) -> str:
    lines = [f"{result.kind}: {len(result.done)} change(s) made, {len(result.skipped)} skipped, "
             f"{len(result.failed)} failed"]
    lines += [f"  skipped {c.action} {c.target}: {why}" for c, why in result.skipped[:SHOWN]]
    lines += [f"  FAILED {c.action} {c.target}: {why}" for c, why in result.failed]
    lines.append("healthy now" if not left else f"still found: {'; '.join(f.summary for f in left)}")
    return "\n".join(lines)
