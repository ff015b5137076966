"""The write commands a scheduler runs against a remote console (`cleanline --api URL --token T`):
`clean plan TABLE` (the plan's id), `plan wait ID --until STAGE`, `plan approve ID`, `plan run ID`,
`archive request TABLE`, `doctor repair request TABLE KIND`, over the console's REST API and its
one approval workflow (`timeline.internal.remote`). Exit codes: 0 done or reached, 1 refused by
the console or the plan failed, was rejected or went stale, 2 bad input (or the console not
reached), 3 `plan wait` timed out."""

from __future__ import annotations

import argparse
from typing import Any

from timeline.cli_output import emit, print_json
from timeline.exceptions import CleanlineError

UNTIL = ("reviewable", "approved", "completed", "failed")


def _needs_api(args: argparse.Namespace) -> int:
    name = "doctor repair request" if args.command == "doctor-repair-request" else f"{args.command} {args.sub}"
    raise CleanlineError(f"`{name}` runs against a remote console: give --api URL --token T")


def plan_wait(args: argparse.Namespace) -> int:
    return _needs_api(args)


def plan_approve(args: argparse.Namespace) -> int:
    return _needs_api(args)


def plan_run(args: argparse.Namespace) -> int:
    return _needs_api(args)


def archive_request(args: argparse.Namespace) -> int:
    return _needs_api(args)


def repair_request(args: argparse.Namespace) -> int:
    return _needs_api(args)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more), not {text!r}")
    return value


def add_automation_commands(commands: Any, archive: Any) -> None:
    """plan wait/approve/run; archive request (into `archive`, the archive command's subparsers);
    doctor-repair-request (what `doctor repair request` is parsed as, see `doctor_argv`)."""
    plan = commands.add_parser("plan", help="follow, approve and run a remote console's clean plan (with --api)")
    sub = plan.add_subparsers(dest="sub", required=True)
    wait = sub.add_parser("wait", help="poll the plan until it reaches a stage: exit 0 reached, 1 failed, rejected "
                          "or stale, 2 bad input, 3 timeout")
    wait.add_argument("id", type=int, help="the plan's id (as `clean plan` printed it)")
    wait.add_argument("--until", required=True, choices=UNTIL, help="reviewable (a draft to review, or later), "
                      "approved (or running, completed), completed, failed")
    wait.add_argument("--timeout", type=_seconds, default=3600.0, metavar="S", help="give up after S seconds "
                      "(exit 3; default 3600)")
    wait.add_argument("--json", action="store_true", help="print the plan as JSON when reached")
    wait.set_defaults(handler=plan_wait)
    approve = sub.add_parser("approve", help="approve a draft plan (the console refuses its requester, exit 1)")
    approve.add_argument("id", type=int, help="the plan's id")
    approve.add_argument("--note", default="", help="why (kept as the decision's note)")
    approve.add_argument("--json", action="store_true", help="print the decision as JSON")
    approve.set_defaults(handler=plan_approve)
    run = sub.add_parser("run", help="check that an approved plan's clean is run: the console runs it once its "
                         "approval's check passes (exit 1 when it is not approved)")
    run.add_argument("id", type=int, help="the plan's id")
    run.add_argument("--json", action="store_true", help="print the plan as JSON")
    run.set_defaults(handler=plan_run)
    requested = archive.add_parser("request", help="ask a remote console for an archival (with --api); another "
                                   "admin approves it")
    requested.add_argument("path", help="the registered table's id, name or path")
    requested.add_argument("--json", action="store_true", help="print JSON")
    requested.set_defaults(handler=archive_request)
    repair = commands.add_parser("doctor-repair-request", help="`doctor repair request TABLE KIND` (with --api): ask "
                                 "a remote console for the repair of every finding of KIND")
    repair.add_argument("path", help="the registered table's id, name or path")
    repair.add_argument("kind", help="the finding's kind")
    repair.add_argument("--json", action="store_true", help="print JSON")
    repair.set_defaults(handler=repair_request)


def doctor_argv(argv: list[str]) -> list[str]:
    """`doctor repair request ...` as the parser knows it (`doctor` itself takes a PATH)."""
    for i in range(len(argv) - 2):
        if argv[i:i + 3] == ["doctor", "repair", "request"]:
            return [*argv[:i], "doctor-repair-request", *argv[i + 3:]]
    return argv


def run_remote_write(args: argparse.Namespace, client: Any, clean_plan: Any) -> int | None:
    """The write command `args` names, against `client` (None when it is no write command)."""
    from timeline.internal import remote

    handler = args.handler
    if handler is clean_plan:
        overrides = {"policy": args.policy, "commits_retained": args.retain_commits,
                     "file_versions_retained": args.retain_versions, "hours_retained": args.retain_hours,
                     "allow_short_retention": args.allow_short_retention or None}
        if args.listing is not None:
            overrides["listing"] = args.listing
        made = remote.request_plan(client, client.table(args.path), {k: v for k, v in overrides.items()
                                                                     if v is not None})
        emit(args, made, lambda: str(made["id"]))
        return 0
    if handler is plan_wait:
        reached = remote.wait_plan(client, args.id, args.until, args.timeout)
        emit(args, reached, lambda: f"plan {reached['id']}: {reached['status']}")
        return 0
    if handler is plan_approve:
        decided = remote.approve(client, "clean-plan", args.id, args.note)
        emit(args, decided, lambda: f"plan {decided['id']}: {decided['status']}")
        return 0
    if handler is plan_run:
        found = remote.plan(client, args.id)
        if found["status"] not in remote.IN_FLIGHT:
            raise remote.RemoteError(f"plan {args.id} is {found['status']}: only an approved plan runs (approve it "
                                     "with `plan approve`)" if found["status"] in ("planning", "draft") else
                                     f"plan {args.id} is {found['status']}: it will not run", 1)
        if args.json:
            print_json(found)
        else:
            print(f"plan {found['id']}: {found['status']}")
        return 0
    if handler is archive_request:
        archival = remote.request_archival(client, client.table(args.path))
        emit(args, archival, lambda: str(archival["id"]))
        return 0
    if handler is repair_request:
        repair = remote.request_repair(client, client.table(args.path), args.kind)
        emit(args, repair, lambda: str(repair["id"]))
        return 0
    return None
