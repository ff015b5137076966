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

Usage (from the repository root):

    .venv/bin/python bench/doctor.py                    # generate, measure, print, clean up
    .venv/bin/python bench/doctor.py --record           # also update bench/RESULTS.md
    .venv/bin/python bench/doctor.py --files 200000 --dir D --keep
"""

from __future__ import annotations

import os
import shutil
import sys
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
from timeline.doctor import diagnose  # noqa: E402

SECTION_BEGIN = "<!-- bench/doctor.py: begin -->"
SECTION_END = "<!-- bench/doctor.py: end -->"
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, tables="generated table", repeat=3)
    parser.add_argument("--files", type=int, default=1_000_000, help="data files of the generated table")
    parser.add_argument("--v8-files", type=int, default=100_000,
                        help="data files of the version 8 table measured without a target (0: skip it)")
    args = parser.parse_args(argv)
    root, created = bench_root(args.dir)
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
