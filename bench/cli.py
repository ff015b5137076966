"""The `cleanline` command as a whole process, against a raw walk of the same table in the same run.

Generates a local v6 copy-on-write table of about 101,000 data files (1,000 partitions), then
times whole processes, best of N after a warm-up, interleaved:

- raw:   a Python process that walks the table with `os.scandir` (name and size of every file
         outside `.hoodie`) and prints the count: the least a listing command can do;
- fsview: `cleanline fsview PATH --json` (every latest file slice, as JSON);
- plan:   `cleanline clean plan PATH --json` (the table's clean settings; every file's reason).

Targets (ratios from one run): fsview <= 2x raw, plan <= 3x raw. Output goes to /dev/null. The
processes may keep compiled bytecode, as an installed command does (in a cache folder beside the
generated table, whatever PYTHONDONTWRITEBYTECODE says); the warm-up run fills it.

Usage (from the repository root):

    .venv/bin/python bench/cli.py              # generate, measure, print, clean up
    .venv/bin/python bench/cli.py --record     # also update bench/RESULTS.md
    .venv/bin/python bench/cli.py --dir D --keep
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    CleanShape,
    argument_parser,
    bench_root,
    count_files,
    file_system_of,
    generate_clean_table,
    interleaved,
    machine,
    progress,
    publish,
    target_lines,
    target_text,
)
from timeline.internal.forks import local_processes  # noqa: E402

SECTION_BEGIN = "<!-- bench/cli.py: begin -->"
SECTION_END = "<!-- bench/cli.py: end -->"
SHAPE = CleanShape(partitions=1000, groups=5, versions=20, trickle=10, hot=10)
RAW = """
import os, sys
found, stack = 0, [sys.argv[1]]
while stack:
    with os.scandir(stack.pop()) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != ".hoodie":
                    stack.append(entry.path)
            else:
                entry.stat(follow_symlinks=False)
                found += 1
print(found)
"""
CLEANLINE = [str(Path(sys.executable).with_name("cleanline"))]


def run(command: list[str], env: dict[str, str]) -> int:
    return subprocess.run(command, stdout=subprocess.DEVNULL, env=env, check=True).returncode


def installed_env(cache: str) -> dict[str, str]:
    """The environment of a command as installed: Python may keep compiled bytecode (pip compiles
    an installed package's; PYTHONDONTWRITEBYTECODE, set on some machines, would make every run
    compile every module again), in a cache folder outside the tree (PYTHONPYCACHEPREFIX)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def measure(path: str, repeat: int, cache: str) -> dict[str, Any]:
    commands = {
        "raw": [sys.executable, "-c", RAW, path],
        "fsview": [*CLEANLINE, "fsview", path, "--json"],
        "plan": [*CLEANLINE, "clean", "plan", path, "--json"],
    }
    env = installed_env(cache)
    timings = interleaved({name: (lambda c=c: run(c, env)) for name, c in commands.items()}, repeat)
    best = {name: t.best for name, t in timings.items()}
    fsview, plan = best["fsview"] / best["raw"], best["plan"] / best["raw"]
    return {"seconds": best, "ratios": {"fsview": fsview, "plan": plan}, "targets": [
        {"target": "`cleanline fsview --json` <= 2x the raw walk (whole processes)", "value": f"{fsview:.2f}x",
         "passed": fsview <= 2.0},
        {"target": "`cleanline clean plan --json` <= 3x the raw walk (whole processes)", "value": f"{plan:.2f}x",
         "passed": plan <= 3.0}]}


def text_report(result: dict[str, Any]) -> str:
    seconds = result["seconds"]
    lines = [f"table: {result['files']:,} data files in {result['partitions']:,} partitions ({result['fs']})",
             *(f"  {name:<7} {value:7.3f} s" for name, value in seconds.items()), *target_text(result["targets"])]
    return "\n".join(lines) + "\n"


def markdown_section(result: dict[str, Any]) -> str:
    m = result["machine"]
    seconds = result["seconds"]
    return "\n".join([
        SECTION_BEGIN, "## The CLI as a whole process (bench/cli.py)", "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. A generated v6 "
        f"copy-on-write table of {result['files']:,} data files in {result['partitions']:,} partitions on "
        f"{result['fs']}; whole processes (start-up included, output to /dev/null, compiled bytecode kept as an "
        f"installed command keeps it), best of {result['repeat']} interleaved runs after a warm-up. The plan is "
        f"listed and made by {result['processes']} processes (`CLEANLINE_LOCAL_PROCESSES`, default: the cores); "
        "`fsview --json` names no sizes, so it lists without a stat per file, where the raw walk stats every "
        "file (the least a listing with sizes does).", "",
        "| process | seconds | ratio to the raw walk |", "|---|---:|---:|",
        f"| raw `os.scandir` walk in a Python process | {seconds['raw']:.3f} | 1.00 |",
        f"| `cleanline fsview PATH --json` | {seconds['fsview']:.3f} | {result['ratios']['fsview']:.2f} |",
        f"| `cleanline clean plan PATH --json` | {seconds['plan']:.3f} | {result['ratios']['plan']:.2f} |", "",
        *target_lines(result["targets"]), "", SECTION_END, ""])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, tables="generated table", repeat=3)
    args = parser.parse_args(argv)
    root, created = bench_root(args.dir)
    path = os.path.join(root, "cli_cow_v6")
    try:
        if not os.path.exists(path):
            progress(f"generating {SHAPE.data_files:,} data files in {path}")
            generate_clean_table(path, SHAPE)
        files, partitions = count_files(path)
        progress("timing whole processes")
        result = {"machine": machine(), "files": files, "partitions": partitions, "fs": file_system_of(path),
                  "repeat": args.repeat, "processes": local_processes(),
                  **measure(path, args.repeat, os.path.join(root, "pycache"))}
        publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
        return 0 if all(t["passed"] for t in result["targets"]) else 1
    finally:
        if created and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
