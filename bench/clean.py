"""Clean planning and execution benchmark, measured side by side in one run.

Generates a real local table (table version 6, COPY_ON_WRITE, timeline layout 1, v6 JSON commit
metadata whose `partitionToWriteStats` list every file each commit wrote), by default 1,000
partitions x 10 file groups and 201,000 data files over 30 commits:

- a backfill phase: commits 1-20 each rewrite every file group of every partition (20 versions
  per file group);
- a trickle phase: commits 21-30 each rewrite the file groups of 10 hot partitions (1%).

With `commits_retained=10` the earliest commit to retain is the first trickle commit, so a full
plan deletes 19 versions of each of the 10,000 file groups (190,000 files). The trickle phase is
what makes incremental planning meaningful: incremental mode lists the partitions written by the
commits between the previous clean's earliest commit to retain and the new one, and those are
trickle commits touching 1% of the partitions.

Then it times, best of N (one warm-up run first where the work can be repeated unchanged):

1. full plan: `plan_clean(HudiTable.open(path), CleanConfig(commits_retained=10,
   incremental=False))` on the generated table, against a raw listing of the same table
   (`os.scandir` recursion outside `.hoodie` collecting (name, size) with `entry.stat()`);
   peak memory of that plan as the growth of the peak resident set size (VmHWM) of a fresh
   subprocess (and its tracemalloc peak, in a second subprocess);
2. execution: the full plan is scheduled (`schedule_clean`), then `run_pending_cleans` deletes
   its files; against an `os.unlink` loop over the same relative paths in an equivalent set of
   generated files (same folders, names and sizes). Each repetition starts from the scheduled
   state: the deleted files and the clean's state files are put back (so there is no warm-up:
   a run changes the table);
3. incremental plan: after the executed clean (a completed clean recording its
   `earliestCommitToRetain`), 3 new commits rewrite the 10 hot partitions; then
   `plan_clean(HudiTable.open(path), CleanConfig(commits_retained=10))` (incremental, checked:
   it must consider only the hot partitions) against the full plan and the raw listing of the
   same, cleaned table;
4. the metadata table's cost: the same table generated at table version 8 (layout 2, Avro
   metadata) twice, one given a `files` metadata table listing it (`add_files_metadata_table`);
   the full plan's clean of each, interleaved, each run from the scheduled state (the MDT
   deltacommit removed again): the clean keeping the metadata table against the clean of the
   twin without one.

Targets: the full plan within 3x of the raw listing; the incremental plan at least 20x faster
than the full plan (of the generated table, as item 1 times it; the ratio to the full plan of
the same cleaned table is printed too, but cannot reach 20x whatever the implementation: the
hot partitions, written by every recent commit, keep 14 versions per file group where the
others keep 1, so they hold 12% of the files left); the execution's deletion rate at least
half the rate of the os.unlink loop; keeping the metadata table at most 1.5x the clean without one.

Usage (from the repository root):

    .venv/bin/python bench/clean.py                 # generate, measure, print, clean up
    .venv/bin/python bench/clean.py --json          # results as JSON on stdout
    .venv/bin/python bench/clean.py --record        # also update bench/RESULTS.md
    .venv/bin/python bench/clean.py --profile       # cProfile of the plans and of one execution
    .venv/bin/python bench/clean.py --dir D --keep  # write the table in D and leave it there

Progress goes to stderr. The table is always regenerated (a run cleans it); `--keep` leaves it
in its final state (cleaned, plus the new commits). The generator (bench/common.py, shared with
bench/spark.py and bench/s3.py) creates the table with the library's `create_table` and writes
the rest with plain `os` calls (it is not library code), by default to a fresh
`tempfile.mkdtemp` on `/dev/shm` when there is one, as every benchmark does. Every figure is
taken with warm caches (dropping OS caches needs root).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    CLEAN_TABLE,
    CleanShape,
    add_files_metadata_table,
    argument_parser,
    avro_schema,
    bench_root,
    count_files,
    cprofile,
    file_system_of,
    full_plan,
    generate_clean_table,
    interleaved,
    machine,
    partition_name,
    profile_lines,
    profile_text,
    progress,
    publish,
    put_back,
    raw_walk,
    reset_to_scheduled,
    schedule_full_plan,
    target_lines,
    target_text,
    timed,
    write_versions,
)
from timeline import HudiTable  # noqa: E402
from timeline.clean.config import CleanConfig  # noqa: E402
from timeline.clean.executor import run_pending_cleans  # noqa: E402
from timeline.clean.planner import CleanPlan, plan_clean  # noqa: E402
from timeline.instant import format_instant_time, parse_instant_time  # noqa: E402

SECTION_BEGIN = "<!-- bench/clean.py: begin -->"
SECTION_END = "<!-- bench/clean.py: end -->"
RAW_FILES = "unlink_files"

# Limits of the targets.
MDT_TABLE = "clean_table_v8"
FULL_VS_RAW_LIMIT = 3.0
METADATA_TABLE_OVERHEAD_LIMIT = 1.5
FULL_VS_INCREMENTAL_MIN = 20.0
EXECUTION_VS_UNLINK_MIN = 0.5


# ----------------------------------------------------------------------------------------
# Generation


def add_hot_commits(base: str, shape: CleanShape, previous: dict[tuple[int, int], str]) -> list[str]:
    """`new_commits` trickle commits after everything on the timeline (the clean included)."""
    start = parse_instant_time(HudiTable.open(base).new_instant_time())
    times = [format_instant_time(start + dt.timedelta(seconds=1 + n)) for n in range(shape.new_commits)]
    commits = [(shape.commits + n, t) for n, t in enumerate(times)]
    write_versions(base, f"{base}/.hoodie", avro_schema(["city"]), shape, shape.hot_partitions(), commits, previous)
    return times


# ----------------------------------------------------------------------------------------
# The contenders


def incremental_plan(path: str, shape: CleanShape) -> CleanPlan:
    return plan_clean(HudiTable.open(path), CleanConfig(commits_retained=shape.retained))


def raw_unlink(paths: Sequence[str]) -> None:
    for path in paths:
        os.unlink(path)


# ----------------------------------------------------------------------------------------
# Timing


def memory_probe(path: str, shape: CleanShape, mode: str) -> dict[str, Any]:
    """Peak memory of one full plan, in a fresh interpreter. `rss`: the growth of the peak
    resident set size (VmHWM of /proc/self/status) across the call, modules imported and the
    table opened once before.
    Not `ru_maxrss`: on Linux exec carries the parent's peak over into it, so in a child of
    this large process it reads the parent's size.
    `tracemalloc`: the peak of Python allocations traced during the call (slower: every
    allocation is traced)."""
    code = f"""
import json, sys, time, tracemalloc
sys.path.insert(0, {str(ROOT)!r})
from timeline.clean.config import CleanConfig
from timeline.clean.planner import plan_clean
from timeline import HudiTable

def peak_rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

HudiTable.open({path!r})  # loads the storage modules (pyarrow) before the baseline
before = peak_rss_kib()
if {mode!r} == "tracemalloc":
    tracemalloc.start()
started = time.perf_counter()
plan = plan_clean(HudiTable.open({path!r}), CleanConfig(commits_retained={shape.retained}, incremental=False))
elapsed = time.perf_counter() - started
peak = tracemalloc.get_traced_memory()[1] if {mode!r} == "tracemalloc" else None
after = peak_rss_kib()
print(json.dumps({{"before_kib": before, "after_kib": after, "tracemalloc_peak": peak, "seconds": elapsed,
                  "decisions": len(plan.decisions)}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


# ----------------------------------------------------------------------------------------
# The phases


def phase_full(path: str, shape: CleanShape, repeat: int) -> dict[str, Any]:
    data_files, partitions = count_files(path)
    plan = full_plan(path, shape)
    deleted, kept = len(plan.files_to_delete), len(plan.files_kept)
    want = shape.expected_full()
    assert (deleted, kept) == want, f"full plan deletes {deleted} and keeps {kept} files, expected {want}"
    assert not plan.incremental and len(plan.partitions_considered) == shape.partitions
    del plan
    progress(f"timing the full plan against the raw listing, best of {repeat}")
    runs = interleaved({"full": lambda: full_plan(path, shape), "raw": lambda: raw_walk(path)}, repeat)
    full_s, raw_s = runs["full"].best, runs["raw"].best
    return {"partitions": partitions, "data_files": data_files, "files_to_delete": deleted,
            "files_kept": kept, "full_plan_s": full_s, "raw_listing_s": raw_s, "full_over_raw": full_s / raw_s,
            "full_plan_runs_s": runs["full"].runs, "raw_listing_runs_s": runs["raw"].runs}


def phase_memory(path: str, shape: CleanShape, tracemalloc: bool) -> dict[str, Any]:
    progress("peak memory of the full plan (subprocess)")
    rss = memory_probe(path, shape, "rss")
    found = {"peak_rss_growth_mib": (rss["after_kib"] - rss["before_kib"]) / 1024,
             "peak_rss_mib": rss["after_kib"] / 1024, "baseline_rss_mib": rss["before_kib"] / 1024,
             "tracemalloc_peak_mib": None, "tracemalloc_plan_s": None}
    if tracemalloc:
        traced = memory_probe(path, shape, "tracemalloc")
        found.update(tracemalloc_peak_mib=traced["tracemalloc_peak"] / 2**20, tracemalloc_plan_s=traced["seconds"])
    return found


def phase_execution(path: str, raw_root: str, shape: CleanShape, repeat: int,
                    profile_top: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Schedule the full plan once, then per repetition: run it (table reset to the scheduled
    state first), and unlink as many files from a freshly written equivalent set."""
    scheduled = schedule_full_plan(path, shape)
    clean, files = scheduled.clean, scheduled.files
    # The console runs an approved plan with the sizes it planned; the CLI has none and
    # reads each file's size before deleting it (timed once, reported beside).
    sizes = scheduled.sizes
    progress(f"scheduled clean {clean.requested_time}: {len(files):,} files; timing run_pending_cleans "
             f"against an os.unlink loop, {repeat} runs")
    raw_paths = [f"{raw_root}/{partition}/{name}" for partition, name in files]
    runs: dict[str, list[float]] = {"execution": [], "unlink": []}
    result = None
    for r in range(repeat):
        if r:
            reset_to_scheduled(path, clean, files)
        elapsed, results = timed(lambda: run_pending_cleans(HudiTable.open(path), sizes=sizes))
        runs["execution"].append(elapsed)
        assert len(results) == 1, f"{len(results)} cleans ran"
        result = results[0]
        assert (result.deleted, result.already_gone, result.failed) == (len(files), 0, 0), \
            f"clean deleted {result.deleted}, already gone {result.already_gone}, failed {result.failed}"
        put_back(raw_root, files)
        runs["unlink"].append(timed(lambda: raw_unlink(raw_paths))[0])
    assert result is not None
    reset_to_scheduled(path, clean, files)
    without_sizes, _ = timed(lambda: run_pending_cleans(HudiTable.open(path)))
    profiled = None
    if profile_top:
        reset_to_scheduled(path, clean, files)
        progress("profiling run_pending_cleans")
        profiled = cprofile(lambda: run_pending_cleans(HudiTable.open(path), sizes=sizes), profile_top)
    done = HudiTable.open(path)
    recorded = (done.read_instant(done.timeline.cleans().completed().last()) or {}).get("earliestCommitToRetain")
    assert recorded is not None and recorded == scheduled.earliest_commit_to_retain, f"clean recorded {recorded}"
    exec_s, unlink_s = min(runs["execution"]), min(runs["unlink"])
    n = len(files)
    return {"clean_instant": clean.requested_time, "earliest_commit_to_retain": recorded, "files_deleted": n,
            "execution_s": exec_s, "unlink_s": unlink_s, "execution_files_per_s": n / exec_s,
            "unlink_files_per_s": n / unlink_s, "execution_rate_over_unlink_rate": unlink_s / exec_s,
            "execution_runs_s": runs["execution"], "unlink_runs_s": runs["unlink"],
            "execution_without_sizes_s": without_sizes}, profiled


def phase_incremental(path: str, shape: CleanShape, repeat: int, previous: dict[tuple[int, int], str],
                      full_s_before: float) -> dict[str, Any]:
    new_times = add_hot_commits(path, shape, previous)
    progress(f"added {len(new_times)} commits rewriting {len(shape.hot_partitions())} partitions")
    incremental, full = incremental_plan(path, shape), full_plan(path, shape)
    assert incremental.incremental, f"the plan is not incremental: {incremental.notes}"
    hot = [partition_name(p) for p in shape.hot_partitions()]
    assert list(incremental.partitions_considered) == hot, \
        f"incremental plan considered {len(incremental.partitions_considered)} partitions, expected {len(hot)}"
    same = sorted(d.path for d in incremental.files_to_delete) == sorted(d.path for d in full.files_to_delete)
    assert same, "incremental and full plans delete different files"
    deleted = len(incremental.files_to_delete)
    assert deleted == shape.expected_incremental(), f"incremental plan deletes {deleted} files"
    data_files, partitions = count_files(path)
    considered = len(incremental.partitions_considered)
    hot_files = sum(len(os.listdir(f"{path}/{partition}")) - 1 for partition in hot)  # minus partition metadata
    note = incremental.notes[0] if incremental.notes else ""
    del incremental, full
    progress(f"timing the incremental plan against the full plan and the raw listing, best of {repeat}")
    runs = interleaved({"incremental": lambda: incremental_plan(path, shape), "full": lambda: full_plan(path, shape),
                        "raw": lambda: raw_walk(path)}, repeat)
    inc_s, full_s, raw_s = runs["incremental"].best, runs["full"].best, runs["raw"].best
    return {"new_commits": new_times, "partitions": partitions, "data_files": data_files,
            "partitions_considered": considered, "considered_share": considered / partitions,
            "files_considered": hot_files,
            "files_to_delete": deleted, "note": note,
            "incremental_plan_s": inc_s, "full_plan_s": full_s, "raw_listing_s": raw_s,
            "full_over_incremental": full_s / inc_s, "generated_full_over_incremental": full_s_before / inc_s,
            "incremental_runs_s": runs["incremental"].runs, "full_runs_s": runs["full"].runs,
            "raw_runs_s": runs["raw"].runs}


def phase_metadata_table(root: str, shape: CleanShape, repeat: int) -> dict[str, Any]:
    """The cost of keeping the metadata table: the same clean of a version 8 table generated
    twice, one with a `files` metadata table (`add_files_metadata_table`), interleaved, each run
    from the scheduled state (the MDT deltacommit removed again)."""
    paths = {name: os.path.join(root, f"{MDT_TABLE}_{name}") for name in ("with", "without")}
    scheduled = {}
    for name, path in paths.items():
        shutil.rmtree(path, ignore_errors=True)
        generate_clean_table(path, shape, version=8)
        if name == "with":
            add_files_metadata_table(path)
        scheduled[name] = schedule_full_plan(path, shape)
    progress(f"timing the clean of a version 8 table with and without a metadata table "
             f"({len(scheduled['with'].files):,} files), {repeat} runs each")
    runs: dict[str, list[float]] = {name: [] for name in paths}
    for r in range(repeat):
        for name, path in paths.items():
            if r:
                reset_to_scheduled(path, scheduled[name].clean, scheduled[name].files)
            elapsed, results = timed(lambda: run_pending_cleans(HudiTable.open(path),  # noqa: B023
                                                                sizes=scheduled[name].sizes))  # noqa: B023
            assert results[0].deleted == len(scheduled[name].files)
            runs[name].append(elapsed)
    valid = HudiTable.open(paths["with"]).inspect.validate_metadata_table().ok
    for path in paths.values():
        shutil.rmtree(path, ignore_errors=True)
    best = {name: min(times) for name, times in runs.items()}
    return {"files_deleted": len(scheduled["with"].files), "with_s": best["with"], "without_s": best["without"],
            "with_over_without": best["with"] / best["without"], "runs_s": runs, "validated": valid}


def targets(full: dict[str, Any], execution: dict[str, Any], incremental: dict[str, Any],
            mdt: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"target": f"full plan within {FULL_VS_RAW_LIMIT:g}x of the raw listing ({full['data_files']:,} files)",
         "value": f"full/raw = {full['full_over_raw']:.2f}", "passed": full["full_over_raw"] <= FULL_VS_RAW_LIMIT},
        {"target": f"incremental plan ({incremental['partitions_considered']} of {incremental['partitions']:,} "
                   f"partitions) at least {FULL_VS_INCREMENTAL_MIN:g}x faster than the full plan "
                   f"({full['data_files']:,} files)",
         "value": f"full/incremental = {incremental['generated_full_over_incremental']:.1f} (same cleaned "
                  f"table: {incremental['full_over_incremental']:.1f})",
         "passed": incremental["generated_full_over_incremental"] >= FULL_VS_INCREMENTAL_MIN},
        {"target": f"execution deletes at least {EXECUTION_VS_UNLINK_MIN:g}x as fast as an os.unlink loop "
                   f"({execution['files_deleted']:,} files)",
         "value": f"execution rate/unlink rate = {execution['execution_rate_over_unlink_rate']:.2f}",
         "passed": execution["execution_rate_over_unlink_rate"] >= EXECUTION_VS_UNLINK_MIN},
        {"target": f"a clean keeping the metadata table within {METADATA_TABLE_OVERHEAD_LIMIT:g}x of the same "
                   f"clean without one ({mdt['files_deleted']:,} files; the MDT validates after)",
         "value": f"with/without = {mdt['with_over_without']:.2f}",
         "passed": mdt["with_over_without"] <= METADATA_TABLE_OVERHEAD_LIMIT and mdt["validated"]},
    ]


# ----------------------------------------------------------------------------------------
# Reporting


def memory_text(m: dict[str, Any]) -> str:
    text = (f"peak RSS (VmHWM) grew {m['peak_rss_growth_mib']:.0f} MiB during the plan "
            f"(to {m['peak_rss_mib']:.0f} MiB, "
            f"from {m['baseline_rss_mib']:.0f} MiB after imports; fresh subprocess)")
    if m["tracemalloc_peak_mib"] is not None:
        text += (f"; tracemalloc peak {m['tracemalloc_peak_mib']:.0f} MiB (another subprocess, plan "
                 f"{m['tracemalloc_plan_s']:.1f} s under tracing)")
    return text


def text_report(result: dict[str, Any]) -> str:
    out = io.StringIO()
    m, s = result["machine"], result["shape"]
    f, e, i = result["full"], result["execution"], result["incremental"]
    print(f"Clean benchmark, {m['date']}: nproc {m['nproc']}, Python {m['python']}, table on "
          f"{result['file_system']} ({result['dir']}), best of {result['repeat']}", file=out)
    print(f"table: v6 COW, {f['partitions']:,} partitions x {s['groups']} file groups, {f['data_files']:,} data files, "
          f"{s['versions'] + s['trickle']} commits ({s['versions']} over every partition, {s['trickle']} over "
          f"{s['hot']} hot partitions), commits_retained={s['retained']}", file=out)
    print(file=out)
    print(f"full plan (generated table)   {f['full_plan_s']:8.3f} s  deletes {f['files_to_delete']:,}, "
          f"keeps {f['files_kept']:,} files", file=out)
    print(f"raw listing (same table)      {f['raw_listing_s']:8.3f} s", file=out)
    print(f"  full / raw                  {f['full_over_raw']:8.2f}", file=out)
    print(f"peak memory of the full plan: {memory_text(result['memory'])}", file=out)
    print(file=out)
    print(f"run_pending_cleans            {e['execution_s']:8.3f} s  {e['files_deleted']:,} files, "
          f"{e['execution_files_per_s']:,.0f} files/s", file=out)
    print(f"os.unlink loop                {e['unlink_s']:8.3f} s  {e['files_deleted']:,} files, "
          f"{e['unlink_files_per_s']:,.0f} files/s", file=out)
    print(f"  execution rate / unlink rate{e['execution_rate_over_unlink_rate']:8.2f}", file=out)
    print(f"run_pending_cleans, no sizes  {e['execution_without_sizes_s']:8.3f} s  (reads each size first, "
          f"as the CLI does)", file=out)
    print(file=out)
    print(f"after the clean and {len(i['new_commits'])} commits over {s['hot']} partitions "
          f"({i['data_files']:,} data files):", file=out)
    print(f"incremental plan              {i['incremental_plan_s']:8.4f} s  {i['partitions_considered']} of "
          f"{i['partitions']:,} partitions ({i['considered_share']:.1%}) holding {i['files_considered']:,} files, "
          f"deletes {i['files_to_delete']:,}", file=out)
    print(f"full plan (same table)        {i['full_plan_s']:8.4f} s", file=out)
    print(f"raw listing (same table)      {i['raw_listing_s']:8.4f} s", file=out)
    print(f"  full / incremental          {i['generated_full_over_incremental']:8.1f}  (full plan of the generated "
          f"table; of this cleaned table: {i['full_over_incremental']:.1f})", file=out)
    print(file=out)
    mdt = result["metadata_table"]
    print(f"clean, v8 table with a metadata table  {mdt['with_s']:8.3f} s  without {mdt['without_s']:.3f} s  "
          f"with/without {mdt['with_over_without']:.2f} ({mdt['files_deleted']:,} files; MDT validated after: "
          f"{mdt['validated']})", file=out)
    print(file=out)
    print(f"generation {result['generation_s']:.0f} s, whole run {result['total_s']:.0f} s", file=out)
    print(file=out)
    for line in target_text(result["targets"]):
        print(line, file=out)
    for name, prof in (result.get("profile") or {}).items():
        print(f"\ncProfile of {name} (total {prof['total_s']:.2f} s with profiler overhead), top by own time:",
              file=out)
        for line in [*profile_text(prof["functions"]), "  top by cumulative time:",
                     *profile_text(prof["cumulative"], cumulative=True)]:
            print(line, file=out)
    return out.getvalue()


def markdown_section(result: dict[str, Any]) -> str:
    m, s = result["machine"], result["shape"]
    f, e, i = result["full"], result["execution"], result["incremental"]
    lines = [
        SECTION_BEGIN,
        "## Clean planning and execution (`bench/clean.py`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. Table on "
        f"{result['file_system']}; plans and listings best of {result['repeat']} runs after one warm-up run, "
        f"contenders interleaved; executions best of {result['repeat']} runs, each from the scheduled state "
        "(deleted files put back, no warm-up). "
        f"Whole run {result['total_s']:.0f} s, of which generating the table {result['generation_s']:.0f} s.",
        "",
        f"Table: version 6, COPY_ON_WRITE, layout 1, {f['partitions']:,} partitions (`city=NNNN`) x {s['groups']} "
        f"file groups, {f['data_files']:,} data files, {s['versions'] + s['trickle']} commits with JSON commit "
        f"metadata listing every file written: {s['versions']} commits rewrite every file group, then "
        f"{s['trickle']} rewrite those of {s['hot']} hot partitions. `commits_retained={s['retained']}`. "
        "Full plan = `plan_clean(HudiTable.open(path), CleanConfig(commits_retained=10, incremental=False))`; "
        "raw listing = `os.scandir` recursion outside `.hoodie` collecting (name, size) with `entry.stat()`; "
        "execution = `run_pending_cleans(HudiTable.open(path), sizes=<the plan's sizes>)` on the scheduled full plan "
        "(threads: the storage's io_threads, 2 per core locally); os.unlink loop = the same number of files at the "
        "same relative paths in an "
        f"equivalent generated set. Incremental plan: after that clean, {len(i['new_commits'])} commits "
        f"rewrite the {s['hot']} hot partitions, then `plan_clean(HudiTable.open(path), "
        "CleanConfig(commits_retained=10))` against the full plan of the same table.",
        "",
        "| measurement | table | seconds | detail |",
        "|---|---|---:|---|",
        f"| full plan | generated, {f['data_files']:,} files | {f['full_plan_s']:.3f} | "
        f"deletes {f['files_to_delete']:,}, "
        f"keeps {f['files_kept']:,} files |",
        f"| raw listing | generated | {f['raw_listing_s']:.3f} | full/raw = {f['full_over_raw']:.2f} |",
        f"| run_pending_cleans | scheduled full plan | {e['execution_s']:.3f} | {e['files_deleted']:,} files, "
        f"{e['execution_files_per_s']:,.0f} files/s |",
        f"| os.unlink loop | equivalent files | {e['unlink_s']:.3f} | {e['files_deleted']:,} files, "
        f"{e['unlink_files_per_s']:,.0f} files/s; execution rate/unlink rate = "
        f"{e['execution_rate_over_unlink_rate']:.2f} |",
        f"| run_pending_cleans without sizes | scheduled full plan | {e['execution_without_sizes_s']:.3f} | "
        f"reads each file's size before deleting it, as the CLI does (one run) |",
        f"| incremental plan | cleaned + {len(i['new_commits'])} commits, {i['data_files']:,} files | "
        f"{i['incremental_plan_s']:.4f} | {i['partitions_considered']} of {i['partitions']:,} partitions "
        f"({i['considered_share']:.1%}) holding {i['files_considered']:,} files; deletes {i['files_to_delete']:,} |",
        f"| full plan | same | {i['full_plan_s']:.4f} | full plan of this table / incremental = "
        f"{i['full_over_incremental']:.1f}; full plan of the generated table / incremental = "
        f"{i['generated_full_over_incremental']:.1f} |",
        f"| raw listing | same | {i['raw_listing_s']:.4f} | |",
        f"| clean keeping the metadata table | version 8 twin with a `files` metadata table | "
        f"{result['metadata_table']['with_s']:.3f} | without one: {result['metadata_table']['without_s']:.3f} s; "
        f"with/without = {result['metadata_table']['with_over_without']:.2f} "
        f"({result['metadata_table']['files_deleted']:,} files: the MDT deltacommit, one log block of tombstones; "
        "`mdt validate` clean after) |",
        "",
        f"Peak memory of the full plan of the generated table: {memory_text(result['memory'])}.",
        "",
        *target_lines(result["targets"]),
    ]
    for name, prof in (result.get("profile") or {}).items():
        lines += ["", f"cProfile of {name} (total {prof['total_s']:.2f} s with profiler overhead), top by own time:",
                  "", *profile_lines(prof["functions"])]
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser(__doc__, tables="table (regenerated every run)",
                             keep="keep the table (in its final, cleaned state)")
    parser.add_argument("--profile", action="store_true", help="cProfile the plans and one execution too")
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the tracemalloc memory probe")
    default = CleanShape()
    parser.add_argument("--partitions", type=int, default=default.partitions)
    parser.add_argument("--groups", type=int, default=default.groups, help="file groups per partition")
    parser.add_argument("--versions", type=int, default=default.versions,
                        help="commits rewriting every file group (versions of a cold group)")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.partitions < default.hot or args.groups < 1 or args.versions < 2:
        parser.error(f"--repeat and --groups must be >= 1, --partitions >= {default.hot}, --versions >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shape = CleanShape(partitions=args.partitions, groups=args.groups, versions=args.versions)
    root, created = bench_root(args.dir)
    path, raw_root = os.path.join(root, CLEAN_TABLE), os.path.join(root, RAW_FILES)
    top = 25 if args.profile else 0
    started = time.perf_counter()
    try:
        for folder in (path, raw_root):
            shutil.rmtree(folder, ignore_errors=True)
        progress(f"generating {shape.data_files:,} data files in {path} ({file_system_of(root)})")
        generation_s, previous = timed(lambda: generate_clean_table(path, shape))
        progress(f"generated in {generation_s:.1f} s")
        full = phase_full(path, shape, args.repeat)
        memory = phase_memory(path, shape, not args.no_tracemalloc)
        profiles: dict[str, Any] = {}
        if top:
            progress("profiling the full plan")
            profiles["the full plan (generated table)"] = cprofile(lambda: full_plan(path, shape), top)
        execution, profiled = phase_execution(path, raw_root, shape, args.repeat, top)
        if profiled:
            profiles[f"run_pending_cleans ({execution['files_deleted']:,} files; main thread only, the deletes "
                     "run on the executor's worker threads)"] = profiled
        incremental = phase_incremental(path, shape, args.repeat, previous, full["full_plan_s"])
        mdt = phase_metadata_table(root, shape, args.repeat)
        if top:
            profiles["the incremental plan"] = cprofile(lambda: incremental_plan(path, shape), top)
            profiles["the full plan (cleaned table)"] = cprofile(lambda: full_plan(path, shape), top)
        result: dict[str, Any] = {
            "machine": machine(), "dir": root, "file_system": file_system_of(root), "repeat": args.repeat,
            "shape": asdict(shape), "generation_s": generation_s, "full": full, "memory": memory,
            "execution": execution, "incremental": incremental, "metadata_table": mdt,
            "targets": targets(full, execution, incremental, mdt),
        }
        if profiles:
            result["profile"] = profiles
    finally:
        if not args.keep:
            progress("removing the generated files")
            shutil.rmtree(path, ignore_errors=True)
            shutil.rmtree(raw_root, ignore_errors=True)
            if created:
                shutil.rmtree(root, ignore_errors=True)
    result["total_s"] = time.perf_counter() - started
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
