"""The table doctor over a generated 1,000,000-file table, as a ratio to listing it.

Generates a local version 6 copy-on-write table (`bench/common.py`'s clean table: 2,000
partitions x 50 file groups x 10 commits, each commit's JSON metadata naming the 100,000 files
it wrote), then damages it a little so that the doctor has something to find (100 orphan files,
aged past the horizon, and a stale pending write), and times, best of N after a warm-up,
interleaved:

- raw walk:  `os.scandir` recursion outside `.hoodie` with a stat per file (name and size),
             the least a listing with sizes does;
- listing:   the library's own listing of the table's partitions (`HudiTable.list_partitions`);
- doctor:    `timeline.doctor.diagnose(HudiTable.open(path))`, every check (it reads every
             instant file, the archived timeline, the heartbeats and markers, lists the table
             once, and proves every file referenced or not).

Target: the doctor <= 2x the raw walk. Its findings are checked each run (the 100 orphans and
the stale write, nothing else). Beside it, without a target, the same comparison on a version 8
table of 100,000 files (`--v8-files`), whose commit metadata is Avro: every write stat is decoded
with fastavro there (no pattern reads Avro), which the ratio shows.

With `--repair`, instead: the orphan repair's cost (issue 38, finding 4). A version 6 table of
6,000 files in one partition folder beside 20,000 orphans (26,000 files in the folder; `--orphans`,
`--kept`); timed, best of N, with the orphans written again (aged, untimed) before each run:

- unlink loop: `os.unlink` of the 20,000 orphans' paths, the least a delete of them costs;
- diagnosis:   `plan_repair` alone (the whole table diagnosed, the findings built);
- repair:      `timeline.doctor.run_repair` of the approved plan: the table located and its folder
               held (`HudiTable.ensure_located`), the planned files diagnosed again under the lock
               (every instant read, then a status of each planned file through the held folder's
               handle, no listing, each decided again by the orphan rule), each folder's place
               checked inside the table, then the deletes by name through the folder's handle.

Target: the repair <= 2x the unlink loop (before the fix each target listed the whole folder
again: 3,000 orphans took 28 s before the first delete).

Usage (from the repository root):

    .venv/bin/python bench/doctor.py                    # generate, measure, print, clean up
    .venv/bin/python bench/doctor.py --record           # also update bench/RESULTS.md
    .venv/bin/python bench/doctor.py --files 200000 --dir D --keep
    .venv/bin/python bench/doctor.py --repair --record    # the orphan repair's row only
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    BASE_BYTES,
    CleanShape,
    argument_parser,
    bench_root,
    count_files,
    cprofile,
    file_system_of,
    generate_clean_table,
    interleaved,
    machine,
    partition_name,
    profile_lines,
    progress,
    publish,
    raw_walk,
    target_lines,
    target_text,
    timed,
    write_file,
)
from timeline import HudiTable  # noqa: E402
from timeline.doctor import diagnose, plan_repair, run_repair  # noqa: E402

SECTION_BEGIN = "<!-- bench/doctor.py: begin -->"
SECTION_END = "<!-- bench/doctor.py: end -->"
REPAIR_BEGIN = "<!-- bench/doctor.py --repair: begin -->"
REPAIR_END = "<!-- bench/doctor.py --repair: end -->"
FILES_PER_PARTITION = 500
ORPHANS = 100
STALE = "20260102000000000"  # after the generated commits (2026-01-01), long before the run


def shape_of(files: int) -> CleanShape:
    return CleanShape(partitions=max(1, files // FILES_PER_PARTITION), groups=50, versions=10, trickle=0, hot=0,
                      retained=3)


def damage(path: str, shape: CleanShape) -> None:
    """100 orphan files (named for an instant no timeline has, written before the pending write:
    the orphan horizon stops at the oldest pending instant) and a pending write left by a crashed
    writer (its requested and inflight instant files, no heartbeat)."""
    old = datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp()
    for k in range(ORPHANS):
        folder = f"{path}/{partition_name(k * shape.partitions // ORPHANS)}"
        orphan = f"{folder}/{k:08x}-dead-0000-0000-000000000000-0_9-9-9_20260101120000000.parquet"
        write_file(orphan, BASE_BYTES)
        os.utime(orphan, (old, old))
    timeline = f"{path}/.hoodie"
    write_file(f"{timeline}/{STALE}.commit.requested")
    write_file(f"{timeline}/{STALE}.inflight")


def doctor(path: str) -> list[Any]:
    return diagnose(HudiTable.open(path))


def check(findings: list[Any]) -> None:
    kinds = sorted(f.kind for f in findings)
    assert kinds == ["orphan-files", "stale-pending"], kinds
    (orphans,) = [f for f in findings if f.kind == "orphan-files"]
    assert orphans.evidence.count == ORPHANS, orphans.evidence.count


def measure(path: str, repeat: int) -> dict[str, Any]:
    check(doctor(path))
    timings = interleaved({"raw walk": lambda: raw_walk(path),
                           "listing": lambda: HudiTable.open(path).list_partitions().partitions,
                           "doctor": lambda: doctor(path)}, repeat)
    best = {name: t.best for name, t in timings.items()}
    ratio, listed = best["doctor"] / best["raw walk"], best["doctor"] / best["listing"]
    return {"seconds": best, "ratios": {"doctor/raw walk": ratio, "doctor/listing": listed},
            "targets": [{"target": "the doctor (every check) <= 2x the raw walk", "value": f"{ratio:.2f}x",
                         "passed": ratio <= 2.0}]}


def measure_v8(root: str, files: int, repeat: int) -> dict[str, Any]:
    """The raw walk and the doctor on a version 8 table (Avro commit metadata), no target."""
    shape = shape_of(files)
    path = os.path.join(root, f"doctor_cow_v8_{shape.data_files}")
    if not os.path.exists(path):
        progress(f"generating {shape.data_files:,} data files of a version 8 table in {path}")
        generate_clean_table(path, shape, version=8)
    assert doctor(path) == []
    timings = interleaved({"raw walk": lambda: raw_walk(path), "doctor": lambda: doctor(path)}, repeat)
    best = {name: t.best for name, t in timings.items()}
    return {"files": count_files(path)[0], "seconds": best, "ratio": best["doctor"] / best["raw walk"]}


def text_report(result: dict[str, Any]) -> str:
    lines = [f"table: {result['files']:,} data files in {result['partitions']:,} partitions ({result['fs']}), "
             f"generated in {result['generated_s']:.0f} s",
             *(f"  {name:<9} {value:7.3f} s" for name, value in result["seconds"].items()),
             *(f"  {name}: {value:.2f}" for name, value in result["ratios"].items()),
             *target_text(result["targets"])]
    if result.get("v8"):
        v8 = result["v8"]
        lines.append(f"version 8 (Avro metadata), {v8['files']:,} files: raw walk {v8['seconds']['raw walk']:.3f} s, "
                     f"doctor {v8['seconds']['doctor']:.3f} s, {v8['ratio']:.2f}x (no target)")
    return "\n".join(lines) + "\n"


def markdown_section(result: dict[str, Any]) -> str:
    m, seconds, ratios = result["machine"], result["seconds"], result["ratios"]
    return "\n".join([
        SECTION_BEGIN, "## The table doctor (`bench/doctor.py`)", "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. A generated "
        f"version 6 copy-on-write table of {result['files']:,} data files in {result['partitions']:,} partitions "
        f"on {result['fs']} (generated in {result['generated_s']:.0f} s): 10 commits, each with JSON metadata "
        f"naming the {(result['files'] - ORPHANS) // 10:,} files it wrote; {ORPHANS} orphan files and a stale "
        f"pending write added. Best of {result['repeat']} interleaved runs after a warm-up. The doctor is "
        "`timeline.doctor.diagnose(HudiTable.open(path))` with every check (it reads every instant file once, "
        "validating the JSON with simdjson and reading the write stats' paths with a pattern, lists the table "
        "once without a stat per file and stats only the files no instant names); its findings are checked "
        f"each run ({ORPHANS} orphans, the stale write). Raw walk = `os.scandir` recursion outside `.hoodie` "
        "with a stat per file; listing = `HudiTable.list_partitions()`.", "",
        "| measurement | seconds | doctor / it |", "|---|---:|---:|",
        f"| raw walk | {seconds['raw walk']:.3f} | {ratios['doctor/raw walk']:.2f} |",
        f"| listing | {seconds['listing']:.3f} | {ratios['doctor/listing']:.2f} |",
        f"| doctor | {seconds['doctor']:.3f} | 1.00 |", "",
        *target_lines(result["targets"]), "",
        *_v8_lines(result),
        "Where the doctor's time goes (cProfile, one run):", "", *profile_lines(result["profile"]), "",
        SECTION_END, ""])


def _v8_lines(result: dict[str, Any]) -> list[str]:
    v8 = result.get("v8")
    if not v8:
        return []
    return [f"Without a target: a version 8 table of {v8['files']:,} files (Avro commit metadata, every write stat "
            f"decoded with fastavro): raw walk {v8['seconds']['raw walk']:.3f} s, doctor {v8['seconds']['doctor']:.3f} "
            f"s, {v8['ratio']:.2f}x.", ""]


# The orphan repair's cost (--repair)

def orphan_paths(path: str, orphans: int) -> list[str]:
    folder = f"{path}/{partition_name(0)}"
    return [f"{folder}/{k:08x}-dead-0000-0000-000000000000-0_9-9-9_20260101120000000.parquet" for k in range(orphans)]


def write_orphans(paths: list[str]) -> None:
    """The orphans (again), older than the doctor's horizon; untimed."""
    old = datetime(2026, 1, 1, 12, tzinfo=UTC).timestamp()
    for orphan in paths:
        write_file(orphan, BASE_BYTES)
        os.utime(orphan, (old, old))


def measure_repair(root: str, kept: int, orphans: int, repeat: int) -> dict[str, Any]:
    shape = CleanShape(partitions=1, groups=max(1, kept // 10), versions=10, trickle=0, hot=0, retained=3)
    path = os.path.join(root, f"doctor_repair_{shape.data_files}_{orphans}")
    if not os.path.exists(path):
        progress(f"generating {shape.data_files:,} data files and {orphans:,} orphans in one folder of {path}")
        generate_clean_table(path, shape)
    paths = orphan_paths(path, orphans)
    write_orphans(paths)
    plan = plan_repair(HudiTable.open(path), "orphan-files")
    assert len(plan.changes) == orphans, len(plan.changes)
    files = len(os.listdir(f"{path}/{partition_name(0)}"))

    def unlink_loop() -> None:
        unlink = os.unlink
        for orphan in paths:
            unlink(orphan)

    def repair() -> int:
        table = HudiTable.open(path)
        table.ensure_located(roots=[root])
        result = run_repair(table, plan, dry_run=False)
        assert result.ok and len(result.done) == orphans, (len(result.done), result.failed[:1])
        return len(result.done)

    def diagnosis() -> int:
        return len(plan_repair(HudiTable.open(path), "orphan-files").changes)

    load_before = os.getloadavg()
    runs: dict[str, list[float]] = {"unlink loop": [], "diagnosis": [], "repair": []}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat + 1):  # the first round warms up
        for name, fn in (("unlink loop", unlink_loop), ("diagnosis", diagnosis), ("repair", repair)):
            write_orphans(paths)
            wall, used = _timed_with_cpu(fn)
            runs[name].append(wall)
            cpu[name].append(used)
    best = {name: min(times[1:]) for name, times in runs.items()}
    best_cpu = {name: min(times[1:]) for name, times in cpu.items()}
    ratio = best["repair"] / best["unlink loop"]
    return {"machine": machine(), "load_before": load_before, "load": os.getloadavg(), "fs": file_system_of(path),
            "folder_files": files, "orphans": orphans, "repeat": repeat, "seconds": best, "ratio": ratio,
            "cpu_seconds": best_cpu, "cpu_ratio": best_cpu["repair"] / best_cpu["unlink loop"],
            "targets": [{"target": f"the repair of {orphans:,} orphans in a {files:,}-file folder <= 2x an unlink "
                                   "loop over the same files", "value": f"{ratio:.2f}x", "passed": ratio <= 2.0}]}


def _timed_with_cpu(fn: Any) -> tuple[float, float]:
    """`timed`'s wall-clock seconds of one call (after a garbage collection), and this thread's
    CPU seconds in it."""
    gc.collect()
    cpu, wall = time.thread_time(), time.perf_counter()
    fn()
    return time.perf_counter() - wall, time.thread_time() - cpu


def repair_text(result: dict[str, Any]) -> str:
    return "\n".join([f"{result['orphans']:,} orphans in a folder of {result['folder_files']:,} files "
                      f"({result['fs']}), load average {_load(result['load_before'])} before, "
                      f"{_load(result['load'])} after",
                      *(f"  {name:<11} {value:7.3f} s  (CPU {result['cpu_seconds'][name]:.3f} s)"
                        for name, value in result["seconds"].items()),
                      f"  repair / unlink loop: {result['ratio']:.2f} (CPU time: {result['cpu_ratio']:.2f})",
                      *target_text(result["targets"])]) + "\n"


def _load(load: Sequence[float]) -> str:
    return ", ".join(f"{x:.1f}" for x in load)


def repair_section(result: dict[str, Any]) -> str:
    m, seconds, cpu = result["machine"], result["seconds"], result["cpu_seconds"]
    return "\n".join([
        REPAIR_BEGIN, "## The orphan repair (`bench/doctor.py --repair`)", "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, load average "
        f"{_load(result['load_before'])} before the run and {_load(result['load'])} when it ended (other processes "
        "shared the two cores: timings vary from run to run). A generated version 6 table with "
        f"{result['orphans']:,} orphan files in one partition folder of {result['folder_files']:,} files on "
        f"{result['fs']}. Best of {result['repeat']} interleaved runs after a warm-up, the orphans written again "
        "(untimed) before each. Unlink loop = `os.unlink` of the orphans' paths; diagnosis = `plan_repair` alone, "
        "which the repair runs again under the lock; repair = `run_repair` of the approved plan: the table located "
        "and its folder held; under the lock the timeline's references read again, then per folder of the plan one "
        "pass over the planned names relative to the folder's held descriptor (`Storage.stat_names`: an lstat "
        "each, no listing; a symbolic link, a folder or any other odd entry sends the run to the general re-check "
        "before anything changes), each name decided again by the orphan rule (`_Rule`: its name against what "
        "the timelines name, its parse, its instant's verdict decided once per instant, its modification time "
        "against the horizon); the folder's place checked once (`Containment.plain_folders`: spelled as the table "
        "writes it, resolving to itself below the table, a partition); the deletes by name through the folder's "
        "handle (`Storage.delete_names`), each batch after the held-lock check, Hadoop's checksum files found from "
        "one read of the folder's names. CPU time is this process's "
        "(`time.thread_time`), best of the same runs: steadier than the wall clock on a shared machine, but without "
        "the work the kernel defers after an unlink, which the wall clock of both loops holds.",
        "",
        "| measurement | seconds | CPU seconds | repair / it |", "|---|---:|---:|---:|",
        f"| unlink loop | {seconds['unlink loop']:.3f} | {cpu['unlink loop']:.3f} | {result['ratio']:.2f} |",
        f"| diagnosis (`plan_repair`) | {seconds['diagnosis']:.3f} | {cpu['diagnosis']:.3f} | "
        f"{seconds['repair'] / seconds['diagnosis']:.2f} |",
        f"| repair | {seconds['repair']:.3f} | {cpu['repair']:.3f} | 1.00 |", "",
        *target_lines(result["targets"]), "",
        "History: before the first fix each target listed the whole folder again (quadratic: 3,000 orphans took "
        "28 s before the first delete, 20,000 deleted nothing in 15 minutes); before the second the re-check "
        "diagnosed the whole table again with a status call per orphan (4.94x); before the third it listed the "
        "folder with a stat of every file, parsed each name twice (the rule and `CommittedFiles.of`), built a "
        "value per file at each step, resolved each path alone and found each delete's folder alone (3.49x on a "
        "quiet machine, 0.481 s); before the fourth it read the folder's 26,001 entries to stat the planned ones, "
        "read them again for the containment's symbolic links, built a status and a parsed file per name and a "
        "path per delete (3.24x wall, 3.22x CPU on a quiet machine, load 0.4). What is left above the unlink "
        "loop, each needed: an lstat per planned file through the folder's handle (the horizon needs each file's "
        "modification time read under the lock, and its mode says it is a plain file: a link is not decided by "
        "its status), about half an unlink each here; the timeline's references read again under the lock "
        "(about 0.025 s); one read of the folder's names for Hadoop's checksum files; and the rule's few steps "
        "per file (its name looked up, parsed, its instant's verdict, its age).",
        "", REPAIR_END, ""])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, tables="generated table", repeat=3)
    parser.add_argument("--files", type=int, default=1_000_000, help="data files of the generated table")
    parser.add_argument("--v8-files", type=int, default=100_000,
                        help="data files of the version 8 table measured without a target (0: skip it)")
    parser.add_argument("--repair", action="store_true", help="measure the orphan repair only (its own section)")
    parser.add_argument("--orphans", type=int, default=20_000, help="orphans of the --repair table")
    parser.add_argument("--kept", type=int, default=6_000, help="files the --repair table's commits name")
    args = parser.parse_args(argv)
    root, created = bench_root(args.dir)
    if args.repair:
        try:
            result = measure_repair(root, args.kept, args.orphans, args.repeat)
            publish(result, args, repair_text, repair_section, REPAIR_BEGIN, REPAIR_END)
            return 0 if all(t["passed"] for t in result["targets"]) else 1
        finally:
            if created and not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    shape = shape_of(args.files)
    path = os.path.join(root, f"doctor_cow_v6_{shape.data_files}")
    try:
        generated = 0.0
        if not os.path.exists(path):
            progress(f"generating {shape.data_files:,} data files in {path}")
            generated, _ = timed(lambda: (generate_clean_table(path, shape), damage(path, shape)))
        files, partitions = count_files(path)
        progress("timing the raw walk, the listing and the doctor")
        result = {"machine": machine(), "files": files, "partitions": partitions, "fs": file_system_of(path),
                  "generated_s": generated, "repeat": args.repeat, **measure(path, args.repeat)}
        result["profile"] = cprofile(lambda: doctor(path), 10)["functions"]
        if args.v8_files:
            result["v8"] = measure_v8(root, args.v8_files, args.repeat)
        publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
        return 0 if all(t["passed"] for t in result["targets"]) else 1
    finally:
        if created and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
