"""`cleanline version check PATH --to N`: the preflight of a table version change
(`HudiTable.inspect.version_check`): each of Hudi's steps to the target with every blocker its
handler would meet (naming the instant or setting, what clears it and the Hudi rule) and what the
change will rewrite. Reads only; exit 1 while a blocker stands, 0 when the change may go on (or
there is nothing to do), 2 for a target Cleanline does not check."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from timeline.cli_output import emit, instant_json, open_table

if TYPE_CHECKING:
    from timeline.versions import Blocker, VersionCheck


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


def add_version_command(commands: Any, command: Callable[..., argparse.ArgumentParser]) -> None:
    """version check (`command` is cli.py's helper)."""
    parser = commands.add_parser("version", help="table version changes: check what stops one")
    sub = parser.add_subparsers(dest="sub", required=True)
    check = command(sub, "check", version_check, "the preflight of moving the table to table version N (6, 8 or "
                    "9; one step at a time, 6->8->9 and 9->8->6): every blocker Hudi's upgrade and downgrade "
                    "handlers would meet, with its instant or setting, what clears it and the Hudi rule, and the "
                    "settings the change rewrites; writes nothing. Exit 1 while a blocker stands, 0 when the change "
                    "may go on (or the table is already at N), 2 for a version Cleanline does not check")
    check.add_argument("--to", type=int, required=True, metavar="N", help="the target table version (6, 8 or 9)")
    check.add_argument("--json", action="store_true", help="print JSON")
