"""Spark benchmark: the Spark writer's throughput, and the Spark clean job against the local
engine, measured side by side in one run.

One Spark session (`timeline.spark.session.spark_session(master=...)`, `local[2]` by default) is
started and warmed up with trivial jobs first; its start and warm-up are reported separately
and excluded from every timing. Then:

1. writer (first, on the fresh session): `timeline.spark.writer.write` into a table version 8
   copy-on-write table (and a merge-on-read one) partitioned into 36 partitions: an insert of
   1,000,000 rows, then an upsert of 1,000,000 rows (900,000 updates of existing keys and
   100,000 new keys). A write changes the table, so each write is measured once; the input is
   generated and cached in Spark before the clock starts. Reported: rows/s, and the files and
   file groups each write wrote (from its commit metadata, whose counts are checked);
2. clean plan: on the table `bench/clean.py` generates (table version 6, COPY_ON_WRITE, 1,000
   partitions x 10 file groups, 201,000 data files, 30 commits), the full plan
   `plan_clean_spark(spark, path, CleanConfig(commits_retained=10, incremental=False))` against
   `plan_clean(HudiTable.open(path), <the same config>)`, best of N after one warm-up run each,
   interleaved; the two plans must be equal;
3. clean execution: that plan is scheduled once (`schedule_clean`), then
   `run_pending_cleans_spark(spark, path, sizes=<the plan's sizes>)` (run in shares: the
   executors check and delete byte ranges of the plan and read the sizes as they delete, see
   `timeline/clean/sliced.py`) against `run_pending_cleans(HudiTable.open(path), sizes=<the
   same>)`, interleaved, best of N; every run
   starts from the scheduled state (the deleted files and the clean's state files are put back
   as bench/clean.py does, so there is no warm-up), and both engines must publish the same
   completed clean;
4. with more cores (`--more-cores-master`, `local[*]`) when `os.cpu_count() > 2`: the session is
   restarted on it and items 2 and 3 are measured again against the local engine.

Targets: the Spark execution within 1.5x of the local engine on two cores (`--master`); faster
than the local engine with more cores (not measurable on a machine with two cores or fewer).
For the two-core comparison the local engine gets the threads it would have on two cores (its
default is 2 per core); with more cores it uses its default.

Usage (from the repository root):

    .venv/bin/python bench/spark.py                    # generate, measure, print, clean up
    .venv/bin/python bench/spark.py --json             # results as JSON on stdout
    .venv/bin/python bench/spark.py --record           # also update bench/RESULTS.md
    .venv/bin/python bench/spark.py --master local[4]  # another master for the main comparison
    .venv/bin/python bench/spark.py --rows 100000      # a smaller writer run
    .venv/bin/python bench/spark.py --table-types cow  # the copy-on-write writer only

Progress goes to stderr (Spark's own start-up warnings too). Tables go to a fresh
`tempfile.mkdtemp` on `/dev/shm` when there is one, as in the other benchmarks (`--dir` picks
another place, `--keep` leaves them). A run takes about 4 minutes on two cores.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

import pyspark  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

from bench.common import (  # noqa: E402
    CLEAN_TABLE,
    CleanShape,
    argument_parser,
    bench_root,
    clean_state_file,
    file_system_of,
    full_config,
    full_plan,
    generate_clean_table,
    interleaved,
    machine,
    progress,
    publish,
    reset_to_scheduled,
    schedule_full_plan,
    target_lines,
    target_text,
    timed,
)
from timeline import HudiTable  # noqa: E402
from timeline.clean.executor import (  # noqa: E402
    CleanResult,
    run_pending_cleans,
)
from timeline.instant import Instant, State  # noqa: E402
from timeline.spark.clean import (  # noqa: E402
    plan_clean_spark,
    run_pending_cleans_spark,
)
from timeline.spark.session import spark_session  # noqa: E402
from timeline.spark.writer import write  # noqa: E402

SECTION_BEGIN = "<!-- bench/spark.py: begin -->"
SECTION_END = "<!-- bench/spark.py: end -->"
TABLE_TYPES = {"cow": "COPY_ON_WRITE", "mor": "MERGE_ON_READ"}

# Limits of the targets.
EXECUTION_VS_LOCAL_LIMIT = 1.5



# ----------------------------------------------------------------------------------------
# The session


def master_cores(master: str) -> int | None:
    """Cores a `local` master runs tasks on (None for a cluster master)."""
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:\s*,\s*\d+)?\])?", master.strip())
    if found is None:
        return None
    if found.group(1) is None:
        return 1
    return (os.cpu_count() or 1) if found.group(1) == "*" else int(found.group(1))


def start_session(master: str) -> tuple[SparkSession, dict[str, Any]]:
    """Start (or restart) the session on `master` and warm it up: a Python job (starts the
    Python workers) and a SQL job (JIT, codegen). Both are timed, neither is part of a figure."""
    started = time.perf_counter()
    spark = spark_session(app_name="cleanline-bench", master=master)
    start_s = time.perf_counter() - started
    spark.sparkContext.setLogLevel("ERROR")
    began = time.perf_counter()
    sc = spark.sparkContext
    sc.parallelize(range(10_000), sc.defaultParallelism).map(lambda x: x * 2).sum()
    spark.range(10_000).selectExpr("sum(id)").collect()
    warm_s = time.perf_counter() - began
    progress(f"Spark session on {master}: started in {start_s:.1f} s, warmed up in {warm_s:.1f} s")
    return spark, {"master": master, "cores": master_cores(master), "default_parallelism": sc.defaultParallelism,
                   "start_s": start_s, "warm_up_s": warm_s}


# ----------------------------------------------------------------------------------------
# The clean job


def phase_plan(spark: SparkSession, path: str, shape: CleanShape, repeat: int) -> dict[str, Any]:
    """The full plan on Spark against the local engine, after checking they are equal."""
    config = full_config(shape)
    local, distributed = full_plan(path, shape), plan_clean_spark(spark, path, config)
    same = distributed == local
    if not same:
        progress("the Spark plan differs from the local plan")
    deleted, kept = len(local.files_to_delete), len(local.files_kept)
    assert (deleted, kept) == shape.expected_full(), f"plan deletes {deleted}, keeps {kept}"
    del local, distributed
    progress(f"timing the full plan, Spark against the local engine, best of {repeat}")
    runs = interleaved({"local": lambda: full_plan(path, shape),
                        "spark": lambda: plan_clean_spark(spark, path, config)}, repeat)
    local_s, spark_s = runs["local"].best, runs["spark"].best
    return {"same_plan": same, "files_to_delete": deleted, "files_kept": kept, "local_s": local_s,
            "spark_s": spark_s, "spark_over_local": spark_s / local_s, "local_runs_s": runs["local"].runs,
            "spark_runs_s": runs["spark"].runs}


@contextmanager
def unscheduled(path: str, clean: Instant) -> Iterator[None]:
    """The table without its scheduled clean (its requested file moved out of the timeline
    and back), so that plans are taken as on the generated table."""
    requested = f"{path}/.hoodie/{clean_state_file(clean, State.REQUESTED)}"
    aside = f"{path}.requested-clean"
    os.rename(requested, aside)
    try:
        yield
    finally:
        os.rename(aside, requested)


def completed_clean(path: str) -> dict[str, Any]:
    """The last completed clean's metadata, without its duration and with its file lists
    sorted (the engines delete in different orders)."""
    table = HudiTable.open(path)
    last = table.timeline.cleans().completed().last()
    assert last is not None, f"{path}: no completed clean"
    content = dict(table.read_instant(last) or {})
    content.pop("timeTakenInMillis", None)
    for entries in (content.get("partitionMetadata") or {}, content.get("bootstrapPartitionMetadata") or {}):
        for entry in entries.values():
            for key in ("deletePathPatterns", "successDeleteFiles", "failedDeleteFiles"):
                entry[key] = sorted(entry[key])
    return content


def phase_execution(engines: Mapping[str, Callable[[], list[CleanResult]]], path: str, clean: Instant,
                    files: Sequence[tuple[str, str]], repeat: int) -> dict[str, Any]:
    """Run each engine on the scheduled clean, interleaved, `repeat` times; after every run
    the table goes back to the scheduled state."""
    runs: dict[str, list[float]] = {name: [] for name in engines}
    published: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        for name, run in engines.items():
            elapsed, results = timed(run)
            assert len(results) == 1, f"{name}: {len(results)} cleans ran"
            done = results[0]
            assert (done.deleted, done.already_gone, done.failed) == (len(files), 0, 0), \
                f"{name}: deleted {done.deleted}, already gone {done.already_gone}, failed {done.failed}"
            published.setdefault(name, completed_clean(path))
            runs[name].append(elapsed)
            reset_to_scheduled(path, clean, files)
    first = next(iter(published.values()))
    return {"runs_s": runs, "best_s": {name: min(r) for name, r in runs.items()},
            "same_completed_clean": all(content == first for content in published.values())}


def clean_comparison(spark: SparkSession, session: dict[str, Any], path: str, shape: CleanShape, repeat: int,
                     clean: Instant, files: Sequence[tuple[str, str]], sizes: Mapping[str, int]) -> dict[str, Any]:
    """Plan and execution on this session against the local engine."""
    with unscheduled(path, clean):
        plan = phase_plan(spark, path, shape, repeat)
    cores = session["cores"]
    threads = 2 * cores if cores else None   # the local engine's default is 2 threads per core
    if cores and cores >= (os.cpu_count() or 1):
        threads = None
    progress(f"timing the clean execution ({len(files):,} files), Spark on {session['master']} against the "
             f"local engine, {repeat} runs each")
    engines: dict[str, Callable[[], list[CleanResult]]] = {
        "local": lambda: run_pending_cleans(HudiTable.open(path), sizes=sizes, parallelism=threads),
        "spark": lambda: run_pending_cleans_spark(spark, path, sizes=sizes),
    }
    executed = phase_execution(engines, path, clean, files, repeat)
    local_s, spark_s = executed["best_s"]["local"], executed["best_s"]["spark"]
    n = len(files)
    return {"session": session, "plan": plan, "execution": {
        "files_deleted": n, "local_threads": threads or HudiTable.open(path).storage.io_threads,
        "local_s": local_s, "spark_s": spark_s, "spark_over_local": spark_s / local_s,
        "local_files_per_s": n / local_s, "spark_files_per_s": n / spark_s,
        "local_runs_s": executed["runs_s"]["local"], "spark_runs_s": executed["runs_s"]["spark"],
        "same_completed_clean": executed["same_completed_clean"]}}


# ----------------------------------------------------------------------------------------
# The writer


def writer_rows(spark: SparkSession, first: int, count: int, commit: int, partitions: int) -> DataFrame:
    """`count` records with keys `key-<first..first+count>`, spread over `partitions`
    partitions by key; `ts` grows with `commit`, so an upsert's records win."""
    key = F.col("id")
    return spark.range(first, first + count).select(
        F.format_string("key-%09d", key).alias("id"),
        F.format_string("p%02d", (key % partitions).cast("int")).alias("partition"),
        (F.lit(commit * 10**10) + key).alias("ts"),
        F.format_string("rider-%05d", (key % 99_991).cast("int")).alias("rider"),
        (F.lit(3.0) + (key % 8_700) / 100).alias("fare"),
        F.format_string("driver-%04d", (key % 9_973).cast("int")).alias("driver"))


def write_stats(path: str, instant: str) -> list[dict[str, Any]]:
    table = HudiTable.open(path)
    done = table.timeline.writes().completed().find(instant)
    assert done is not None, f"{path}: write {instant} did not complete"
    content = table.read_instant(done) or {}
    return [stat for stats in (content.get("partitionToWriteStats") or {}).values() for stat in stats]


def phase_writer(spark: SparkSession, root: str, rows: int, partitions: int, table_types: Sequence[str], *,
                 keep: bool) -> dict[str, Any]:
    """Per table type: an insert of `rows` rows, then an upsert of `rows` rows of which a
    tenth are new keys; each measured once. The table is removed afterwards unless `keep`."""
    found: dict[str, Any] = {}
    new_keys = rows // 10
    for kind in table_types:
        path = os.path.join(root, f"writer_{kind}_v8")
        shutil.rmtree(path, ignore_errors=True)
        common: dict[str, Any] = {"table_name": f"bench_writer_{kind}", "record_key": "id", "precombine_field": "ts",
                                  "partition_by": "partition", "table_type": TABLE_TYPES[kind], "table_version": 8}
        groups_before: set[tuple[str, str]] = set()
        writes = {}
        for operation, first, commit in (("insert", 0, 1), ("upsert", new_keys, 2)):
            data = writer_rows(spark, first, rows, commit, partitions).cache()
            assert data.count() == rows
            progress(f"writer: {kind} v8 {operation} of {rows:,} rows (measured once)")
            elapsed, instant = timed(lambda: write(spark, data, path, operation=operation, **common))
            data.unpersist()
            stats = write_stats(path, instant)
            groups = {(s["partitionPath"], s["fileId"]) for s in stats}
            totals = {key: sum(int(s.get(key) or 0) for s in stats)
                      for key in ("numWrites", "numInserts", "numUpdateWrites", "numDeletes", "fileSizeInBytes")}
            writes[operation] = {
                "instant": instant, "rows": rows, "seconds": elapsed, "rows_per_s": rows / elapsed,
                "files_written": len(stats), "file_groups": len(groups), "new_file_groups": len(groups - groups_before),
                "existing_file_groups": len(groups & groups_before), "partitions": len({p for p, _ in groups}),
                "bytes_written": totals["fileSizeInBytes"], "inserts": totals["numInserts"],
                "updates": totals["numUpdateWrites"], "records_written": totals["numWrites"],
            }
            groups_before |= groups
            progress(f"writer: {kind} {operation} {elapsed:.1f} s, {rows / elapsed:,.0f} rows/s, "
                     f"{len(groups)} file groups")
        insert, upsert = writes["insert"], writes["upsert"]
        assert insert["inserts"] == rows, f"{kind}: the insert wrote {insert['inserts']} inserts"
        assert (upsert["updates"], upsert["inserts"]) == (rows - new_keys, new_keys), \
            f"{kind}: the upsert wrote {upsert['updates']} updates and {upsert['inserts']} inserts"
        found[kind] = {"table_type": TABLE_TYPES[kind], "table_version": 8, "path": path,
                       "file_groups_after": len(groups_before), **writes}
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
    return found


# ----------------------------------------------------------------------------------------
# Targets and reporting


def targets(main: dict[str, Any], more: dict[str, Any] | None, more_note: str) -> list[dict[str, Any]]:
    execution, plan = main["execution"], main["plan"]
    found: list[dict[str, Any]] = [
        {"target": f"Spark plan equals the local plan ({plan['files_to_delete']:,} deletes, "
                   f"{plan['files_kept']:,} keeps)",
         "value": "equal" if plan["same_plan"] else "different", "passed": plan["same_plan"]},
        {"target": "Spark execution publishes the same completed clean as the local engine",
         "value": "same" if execution["same_completed_clean"] else "different",
         "passed": execution["same_completed_clean"]},
        {"target": f"Spark execution ({main['session']['master']}) within {EXECUTION_VS_LOCAL_LIMIT:g}x of the local "
                   f"engine on {cores_text(main['session']['cores'])} ({execution['files_deleted']:,} files)",
         "value": f"spark/local = {execution['spark_over_local']:.2f}",
         "passed": execution["spark_over_local"] <= EXECUTION_VS_LOCAL_LIMIT},
    ]
    if more is None:
        found.append({"target": "Spark execution faster than the local engine with more cores",
                      "value": more_note, "passed": None})
    else:
        e = more["execution"]
        found.append({"target": f"Spark execution ({more['session']['master']}, {more['session']['cores']} cores) "
                                "faster than the local engine with more cores",
                      "value": f"spark/local = {e['spark_over_local']:.2f}", "passed": e["spark_s"] < e["local_s"]})
    return found


def cores_text(cores: int | None) -> str:
    return "the cluster" if cores is None else "two cores" if cores == 2 else f"{cores} cores"


def comparison_lines(c: dict[str, Any]) -> list[str]:
    s, p, e = c["session"], c["plan"], c["execution"]
    return [
        f"Spark session on {s['master']} ({s['default_parallelism']} default parallelism): started in "
        f"{s['start_s']:.1f} s, warm-up jobs {s['warm_up_s']:.1f} s (excluded below)",
        f"  full plan        local {p['local_s']:7.3f} s   spark {p['spark_s']:7.3f} s   spark/local "
        f"{p['spark_over_local']:5.2f}   same plan: {'yes' if p['same_plan'] else 'NO'}",
        f"  execution        local {e['local_s']:7.3f} s   spark {e['spark_s']:7.3f} s   spark/local "
        f"{e['spark_over_local']:5.2f}   ({e['files_deleted']:,} files; {e['local_files_per_s']:,.0f} vs "
        f"{e['spark_files_per_s']:,.0f} files/s; local engine {e['local_threads']} threads; same completed clean: "
        f"{'yes' if e['same_completed_clean'] else 'NO'})",
    ]


def writer_lines(writer: dict[str, Any], rows: int, partitions: int) -> list[str]:
    lines = [f"writer: table version 8, {partitions} partitions, {rows:,} rows per write, each write measured once "
             "(a write changes the table); input generated and cached before the clock starts",
             f"  {'table':<14} {'operation':<9} {'rows':>10} {'seconds':>8} {'rows/s':>8} {'files':>6}  "
             f"{'file groups written':<32} {'MiB':>6}"]
    for w in writer.values():
        for op in ("insert", "upsert"):
            r = w[op]
            groups = f"{r['file_groups']:,} ({r['new_file_groups']:,} new, {r['existing_file_groups']:,} existing)"
            lines.append(f"  {w['table_type']:<14} {op:<9} {r['rows']:>10,} {r['seconds']:>8.1f} "
                         f"{r['rows_per_s']:>8,.0f} "
                         f"{r['files_written']:>6,}  {groups:<32} {r['bytes_written'] / 2**20:>6.1f}")
    return lines


def text_report(result: dict[str, Any]) -> str:
    out = io.StringIO()
    m, s = result["machine"], result["shape"]
    print(f"Spark benchmark, {m['date']}: nproc {m['nproc']}, Python {m['python']}, PySpark {m['pyspark']}, "
          f"tables on {result['file_system']} ({result['dir']}), best of {result['repeat']}", file=out)
    print(f"clean table (bench/clean.py's): v6 COW, {s['partitions']:,} partitions x {s['groups']} file groups, "
          f"{s['partitions'] * s['groups'] * s['versions'] + s['hot'] * s['groups'] * s['trickle']:,} data files, "
          f"{s['versions'] + s['trickle']} commits, commits_retained={s['retained']}; generated in "
          f"{result['generation_s']:.0f} s", file=out)
    print(file=out)
    for line in comparison_lines(result["main"]):
        print(line, file=out)
    if result["more_cores"] is not None:
        print(file=out)
        for line in comparison_lines(result["more_cores"]):
            print(line, file=out)
    else:
        print(f"more cores: {result['more_cores_note']}", file=out)
    if result["writer"]:
        print(file=out)
        for line in writer_lines(result["writer"], result["rows"], result["writer_partitions"]):
            print(line, file=out)
    print(file=out)
    print(f"whole run {result['total_s']:.0f} s", file=out)
    print(file=out)
    for line in target_text(result["targets"]):
        print(line, file=out)
    return out.getvalue()


def comparison_rows(c: dict[str, Any]) -> list[str]:
    s, p, e = c["session"], c["plan"], c["execution"]
    return [
        f"| full plan | {s['master']} | {p['local_s']:.3f} | {p['spark_s']:.3f} | {p['spark_over_local']:.2f} | "
        f"same plan: {'yes' if p['same_plan'] else 'no'}; deletes {p['files_to_delete']:,}, "
        f"keeps {p['files_kept']:,} |",
        f"| execution | {s['master']} | {e['local_s']:.3f} | {e['spark_s']:.3f} | {e['spark_over_local']:.2f} | "
        f"{e['files_deleted']:,} files: {e['local_files_per_s']:,.0f} vs {e['spark_files_per_s']:,.0f} files/s; local "
        f"engine {e['local_threads']} threads; same completed clean: {'yes' if e['same_completed_clean'] else 'no'} |",
    ]


def markdown_section(result: dict[str, Any]) -> str:
    m, s, main = result["machine"], result["shape"], result["main"]
    sessions = [main["session"]] + ([result["more_cores"]["session"]] if result["more_cores"] else [])
    started = "; ".join(f"{x['master']}: started in {x['start_s']:.1f} s, warm-up jobs {x['warm_up_s']:.1f} s"
                        for x in sessions)
    lines = [
        SECTION_BEGIN,
        "## Spark writer and Spark clean job (`bench/spark.py`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, PySpark "
        f"{m['pyspark']} (Java 17). Tables on {result['file_system']}. Spark sessions from "
        "`spark_session(master=...)`, started and warmed up with trivial jobs before anything is timed "
        f"({started}). Whole run {result['total_s']:.0f} s.",
        "",
        f"Clean job on bench/clean.py's table (version 6, COPY_ON_WRITE, {s['partitions']:,} partitions x "
        f"{s['groups']} file groups, {main['plan']['files_to_delete'] + main['plan']['files_kept']:,} data files, "
        f"{s['versions'] + s['trickle']} commits), `CleanConfig(commits_retained={s['retained']}, incremental=False)`. "
        "Plan: `plan_clean_spark(spark, path, config)` against `plan_clean(HudiTable.open(path), config)`, best of "
        f"{result['repeat']} after one warm-up run each, interleaved. Execution: "
        "`run_pending_cleans_spark(spark, path, sizes=...)` against `run_pending_cleans(HudiTable.open(path), "
        f"sizes=...)` on the scheduled plan, interleaved, best of {result['repeat']}, each run from the scheduled "
        "state (deleted files put back, no warm-up).",
        "",
        "| measurement | master | local engine (s) | Spark (s) | Spark/local | detail |",
        "|---|---|---:|---:|---:|---|",
        *comparison_rows(main),
        *(comparison_rows(result["more_cores"]) if result["more_cores"] else []),
        "",
    ]
    if result["more_cores"] is None:
        lines += [f"More cores: {result['more_cores_note']}.", ""]
    if result["writer"]:
        lines += [
            f"Writer: `write(spark, df, path, ...)` on {main['session']['master']}, table version 8, "
            f"{result['writer_partitions']} partitions, record key `id`, precombine `ts`, default max file size: an "
            f"insert of {result['rows']:,} rows, then an upsert of {result['rows']:,} rows ({result['rows'] // 10:,} "
            "of them new keys). Each write measured once (a write changes the table); the input is generated and "
            "cached in Spark before the clock starts.",
            "",
            "| table | operation | rows | seconds | rows/s | files written | file groups written (new + existing) "
            "| MiB written |",
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for w in result["writer"].values():
            for op in ("insert", "upsert"):
                r = w[op]
                lines.append(f"| {w['table_type']} | {op} | {r['rows']:,} | {r['seconds']:.1f} "
                             f"| {r['rows_per_s']:,.0f} "
                             f"| {r['files_written']:,} | {r['file_groups']:,} ({r['new_file_groups']:,} + "
                             f"{r['existing_file_groups']:,}) | {r['bytes_written'] / 2**20:.1f} |")
        lines.append("")
    lines += target_lines(result["targets"])
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser(__doc__, tables="tables")
    parser.add_argument("--master", default="local[2]", help="Spark master of the main comparison (local[2])")
    parser.add_argument("--more-cores-master", default="local[*]",
                        help="master of the more-cores comparison, run when os.cpu_count() > 2 (local[*])")
    parser.add_argument("--partitions", type=int, default=CleanShape().partitions,
                        help="partitions of the clean table (1,000; 10 file groups each)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per write (1,000,000)")
    parser.add_argument("--writer-partitions", type=int, default=36, help="partitions of the writer's tables (36)")
    parser.add_argument("--table-types", default="cow,mor", help="writer tables: cow, mor or both (cow,mor)")
    args = parser.parse_args(argv)
    args.table_types = [t.strip().lower() for t in args.table_types.split(",") if t.strip()]
    if args.repeat < 1 or args.rows < 10 or args.writer_partitions < 1 or args.partitions < CleanShape().hot:
        parser.error(f"--repeat and --writer-partitions must be >= 1, --rows >= 10, --partitions >= {CleanShape().hot}")
    if unknown := [t for t in args.table_types if t not in TABLE_TYPES]:
        parser.error(f"unknown table types {unknown}: use cow and/or mor")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shape = CleanShape(partitions=args.partitions)
    root, created = bench_root(args.dir)
    path = os.path.join(root, CLEAN_TABLE)
    cpus = os.cpu_count() or 1
    started = time.perf_counter()
    spark: SparkSession | None = None
    try:
        spark, session = start_session(args.master)
        # The writer first, on a fresh session: the clean job's experiments leave broadcasts behind.
        writer = phase_writer(spark, root, args.rows, args.writer_partitions, args.table_types, keep=args.keep)
        shutil.rmtree(path, ignore_errors=True)
        progress(f"generating the clean table ({shape.data_files:,} data files) in {path} ({file_system_of(root)})")
        generation_s, _ = timed(lambda: generate_clean_table(path, shape))
        scheduled = schedule_full_plan(path, shape)
        clean, files, sizes = scheduled.clean, scheduled.files, scheduled.sizes
        main_cmp = clean_comparison(spark, session, path, shape, args.repeat, clean, files, sizes)
        more, more_note = None, ""
        more_cores = master_cores(args.more_cores_master)
        if cpus <= 2:
            more_note = f"not measurable on a {cpus}-core machine (os.cpu_count() = {cpus})"
        elif more_cores is not None and session["cores"] is not None and more_cores <= session["cores"]:
            more_note = f"not measured: {args.more_cores_master} has no more cores than {args.master}"
        else:
            spark.stop()
            spark, more_session = start_session(args.more_cores_master)
            more = clean_comparison(spark, more_session, path, shape, args.repeat, clean, files, sizes)
        result: dict[str, Any] = {
            "machine": machine(pyspark=pyspark.__version__), "dir": root,
            "file_system": file_system_of(root), "repeat": args.repeat,
            "shape": asdict(shape), "generation_s": generation_s, "main": main_cmp, "more_cores": more,
            "more_cores_note": more_note, "writer": writer, "rows": args.rows,
            "writer_partitions": args.writer_partitions, "targets": targets(main_cmp, more, more_note),
        }
    finally:
        if spark is not None:
            spark.stop()
        if not args.keep:
            progress("removing the generated tables")
            shutil.rmtree(path, ignore_errors=True)
            for kind in TABLE_TYPES:
                shutil.rmtree(os.path.join(root, f"writer_{kind}_v8"), ignore_errors=True)
            if created:
                shutil.rmtree(root, ignore_errors=True)
    result["total_s"] = time.perf_counter() - started
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
