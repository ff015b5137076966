"""`cleanline index verify|rebuild|drop <table> [--index NAME] [--full] [--json]`: the metadata
table's index partitions (column stats, partition stats, record index, secondary indexes)
verified against the data (the doctor's index-drift check, `timeline.doctor`), rebuilt from the
data with the estimate shown first, or dropped with the queries that lose them named. Rebuild
and drop ask before changing anything (--yes skips the question, --preview only shows the plan)
and run under the table's lock (--hoodie-conf names it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from timeline.cli_output import confirm, emit, open_table, print_json, render_table, size_header, size_text

KIND = "index-drift"


def add_index_command(commands: Any, command: Callable[..., argparse.ArgumentParser],
                      writers_stopped: Callable[[argparse.ArgumentParser], Any],
                      sizes: Callable[[argparse.ArgumentParser], Any]) -> None:
    """index verify, index rebuild, index drop (`command`, `writers_stopped` and `sizes` are
    cli.py's helpers)."""
    parser = commands.add_parser("index", help="verify the metadata table's indexes against the data, rebuild or "
                                               "drop one")
    sub = parser.add_subparsers(dest="sub", required=True)
    verify = sizes(command(sub, "verify", index_verify, "the table's index partitions with their state and size, "
                           "each verified against the data (min/max/counts against the Parquet footers, every key's "
                           "file group, every secondary value's keys); exit 1 with findings; writes nothing"))
    verify.add_argument("--full", action="store_true", help="check every record key of the record index (default: "
                        "a sample of file groups on tables with more than 200,000 keys, its size and confidence "
                        "stated)")
    rebuild = sizes(writers_stopped(command(sub, "rebuild", index_rebuild, "rebuild an index partition from the "
                                            "data as Hudi's initialisation computes it (only its drifted records, "
                                            "one metadata-table deltacommit under the table's lock), the estimate "
                                            "shown first; without --index every drifted index")))
    drop = sizes(writers_stopped(command(sub, "drop", index_drop, "drop one index partition (out of "
                                         "hoodie.table.metadata.partitions, its folder, its definition) so that no "
                                         "reader trusts it and Hudi writers rebuild it; names the queries that lose "
                                         "it")))
    for cmd in (verify, rebuild, drop):
        cmd.add_argument("--index", metavar="NAME", required=cmd is drop,
                         help="the index partition (column_stats, partition_stats, record_index, "
                              "secondary_index_<name>, ...)")
        cmd.add_argument("--json", action="store_true", help="print JSON")
    for cmd in (rebuild, drop):
        cmd.add_argument("--preview", action="store_true", help="show the plan, change nothing")
        cmd.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def _settings(args: argparse.Namespace, *, full: bool = False) -> Any:
    from timeline.doctor import DoctorSettings

    return DoctorSettings(options=dict(args.hoodie_conf or ()), index_full=full)


def _about(finding: Any, index: str | None) -> bool:
    return index is None or getattr(finding.evidence, "index", None) == index


def _verified(table: Any, args: argparse.Namespace, *, full: bool = False) -> list[Any]:
    found = table.inspect.diagnose(kinds=[KIND], settings=_settings(args, full=full))
    return [f for f in found if _about(f, args.index)]


def _state_json(state: Any) -> dict[str, Any]:
    return {"name": state.name, "state": state.state, "fileGroups": state.file_groups, "records": state.records,
            "bytes": state.bytes, "defined": state.defined, "serves": state.serves}


def index_verify(args: argparse.Namespace) -> int:
    from timeline.doctor import index_states

    table = open_table(args)
    states = [s for s in index_states(table) if args.index is None or s.name == args.index]
    findings = _verified(table, args, full=args.full)
    failing = [f for f in findings if f.severity.value != "info"]

    def text() -> str:
        lines = [f"{table.uri}: {len(states)} index partition(s)"]
        if states:
            lines.append(render_table(["index", "state", "file groups", "records", size_header(args), "findings"],
                                      [(s.name, s.state, s.file_groups, s.records, size_text(args, s.bytes),
                                        sum(_about(f, s.name) for f in findings)) for s in states]))
        for finding in findings:
            lines += ["", f"[{finding.severity.value}] {finding.summary}", f"  why: {finding.why}",
                      f"  repair: {finding.repair}"]
            lines += [f"  {k}: {v}" for k, v in finding.evidence.to_json().items() if not isinstance(v, list)]
            for key, value in finding.evidence.to_json().items():
                if isinstance(value, list) and value:
                    lines.append(f"  {key} ({len(value)} shown):")
                    lines += [f"    {row}" for row in value[:10]]
        if not findings:
            lines.append("every index agrees with the data")
        return "\n".join(lines)

    emit(args, {"table": table.uri, "indexes": [_state_json(s) for s in states],
                "findings": [f.to_json() for f in findings]}, text)
    return 1 if failing else 0


def _plan_text(args: argparse.Namespace, plan: Any) -> str:
    lines = [f"{plan.kind} on {plan.table}: {len(plan.changes)} change(s)",
             *(f"  fixes: {f.summary}" for f in plan.findings), *(f"  note: {n}" for n in plan.notes), "",
             render_table(["action", "target", size_header(args), "detail"],
                          [(c.action, c.target, size_text(args, c.bytes), c.detail) for c in plan.changes])]
    return "\n".join(lines)


def _run(args: argparse.Namespace, table: Any, plan: Any, question: str) -> int:
    from timeline.cli_clean import maintenance_of

    if not args.json:
        print(_plan_text(args, plan))
    if args.preview:
        if args.json:
            print_json({"plan": plan.to_json(), "result": None})
        return 0
    confirm(args, question)
    result = maintenance_of(table, args).repair(plan, settings=_settings(args), dry_run=False)
    left = [f for f in _verified(table, args) if f.severity.value != "info"]
    if args.json:
        print_json({"plan": plan.to_json(), "result": result.to_json(), "remaining": [f.to_json() for f in left]})
    else:
        print(_result_text(result, left), file=sys.stderr)
    return 0 if result.ok and not left else 1


def _result_text(result: Any, left: Sequence[Any]) -> str:
    lines = [f"{len(result.done)} change(s) made, {len(result.skipped)} skipped, {len(result.failed)} failed"]
    lines += [f"  skipped {c.action} {c.target}: {why}" for c, why in result.skipped[:10]]
    lines += [f"  FAILED {c.action} {c.target}: {why}" for c, why in result.failed]
    lines.append("verified clean" if not left else f"still found: {'; '.join(f.summary for f in left)}")
    return "\n".join(lines)


def index_rebuild(args: argparse.Namespace) -> int:
    import timeline
    from timeline.cli_clean import maintenance_of
    from timeline.doctor import plan_index_rebuild

    table = open_table(args)
    try:
        if args.index is None:
            plan = maintenance_of(table, args).plan_repair(KIND, settings=_settings(args))
        else:
            plan = plan_index_rebuild(table, args.index, settings=_settings(args))
    except timeline.CleanlineError as exc:
        why = str(exc)
        emit(args, {"plan": None, "result": None, "why": why}, lambda: why)
        return 0 if "already agrees" in why or "no index-drift finding" in why else 1
    return _run(args, table, plan, f"Rebuild {args.index or 'the drifted indexes'} of {table.uri} "
                                   f"({len(plan.changes)} change(s))?")


def index_drop(args: argparse.Namespace) -> int:
    import timeline
    from timeline.doctor import plan_index_drop

    table = open_table(args)
    try:
        plan = plan_index_drop(table, args.index)
    except timeline.CleanlineError as exc:
        why = str(exc)
        emit(args, {"plan": None, "result": None, "why": why}, lambda: why)
        return 1
    return _run(args, table, plan, f"Drop {args.index} of {table.uri}? Queries lose it")
