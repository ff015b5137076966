"""S3 listing and clean-delete benchmark on a local S3-protocol server, measured side by side
in one run.

Starts moto's S3 server (moto[server], the server the tests use, started and stopped by the
tests' `S3Server` of tests/helpers.py) on 127.0.0.1 in a child process (`SeededS3Server` of
bench/common.py): moto's own WSGI application, plus one route of the benchmarks,
`POST /_bench/seed`, that loads objects from a local folder straight into the server's store.
Every measured request goes through the S3 API; the route only makes the set-up affordable
(moto answers about 150 PUTs a second, so putting 100,000 objects would take 11 minutes, and
every repetition of the delete puts 50,000 back).

The table is the clean benchmark's (`generate_clean_table` of bench/common.py: table version 6,
COPY_ON_WRITE, JSON commit metadata listing every file written), by default 100 partitions x
500 file groups: two commits rewrite every file group, a third rewrites those of one
partition, so 100,500 data files of 4 bytes; with `commits_retained=1` the full plan deletes
50,000 of them. It is written to a local temp dir (on /dev/shm when there is one) and seeded
to `s3://cleanline-bench/table`.

Timed, best of N, contenders interleaved:

1. listing: ours = `HudiTable.list_partitions()` on the opened S3 table (a partition walk
   through `Storage.walk`: folders listed concurrently, one ListObjectsV2 stream each, through
   pyarrow.fs); raw = the fastest plain boto3 listing: one delimiter listing of the base, then
   every partition prefix paginated on 32 threads. Also shown (not a target): pyarrow's
   recursive `FileSelector` over the base, one paginated stream of every key, `.hoodie` included.
2. deletes: the full plan is scheduled; ours = `run_pending_cleans(HudiTable.open(uri),
   sizes=<the plan's sizes>)` (the console's call: begin, DeleteObjects batches through
   `Storage.delete_many`, completed clean with its metadata); raw = DeleteObjects of as many
   keys (the same relative paths under another prefix) in 1,000-key batches on 32 threads. Each
   repetition starts from the scheduled state (deleted objects and clean state files put back).
   Shown beside: the CLI's call without sizes (one run), and per-file DELETEs (the request per
   file Cleanline sent before `delete_many`) on a sample, as a rate.

Targets: ours at least half the raw rate, for the listing and for the deletes.

Usage (from the repository root):

    .venv/bin/python bench/s3.py                 # generate, measure, print, clean up
    .venv/bin/python bench/s3.py --json          # results as JSON on stdout
    .venv/bin/python bench/s3.py --record        # also update bench/RESULTS.md
    .venv/bin/python bench/s3.py --partitions 20 --groups 100 -n 2   # a quick run

Progress goes to stderr. Nothing leaves 127.0.0.1: the AWS variables of this process point
at the child server, with test credentials.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    CleanShape,
    SeededS3Server,
    argument_parser,
    bench_root,
    clean_state_file,
    file_system_of,
    generate_clean_table,
    interleaved,
    machine,
    progress,
    publish,
    schedule_full_plan,
    target_lines,
    target_text,
    timed,
)
from tests.helpers import offline_aws_environment  # noqa: E402
from timeline import HudiTable  # noqa: E402
from timeline.clean.executor import (  # noqa: E402
    begin_clean,
    delete_targets,
    finish_clean,
    pending_cleans,
    run_pending_cleans,
)
from timeline.instant import Instant, State  # noqa: E402
from timeline.storage.arrow import ArrowStorage  # noqa: E402

SECTION_BEGIN = "<!-- bench/s3.py: begin -->"
SECTION_END = "<!-- bench/s3.py: end -->"
BUCKET = "cleanline-bench"
RAW_BUCKET = "cleanline-bench-raw"  # the raw delete set: moto scans a whole bucket per listing
TABLE = "table"
RAW = "raw"
THREADS = 32
RATIO_MIN = 0.5


class Server(SeededS3Server):
    """The seeded server, seeding into the benchmark's bucket unless told otherwise."""

    def seed(self, root: str, prefix: str, files: Sequence[str] | None = None, *, bucket: str = BUCKET) -> int:
        return super().seed(root, prefix, files, bucket=bucket)


def s3_client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, config=Config(max_pool_connections=THREADS + 4))


# ----------------------------------------------------------------------------------------
# The raw contenders: plain boto3, done the fastest way


def raw_list(client: Any, prefix: str) -> list[tuple[str, int]]:
    """(key, size) of every object of the table outside `.hoodie/`: one delimiter listing of
    the base, then each partition prefix paginated on its own thread."""
    top = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/", Delimiter="/")
    folders = [p["Prefix"] for p in top.get("CommonPrefixes") or () if not p["Prefix"].endswith("/.hoodie/")]
    found = [(o["Key"], o["Size"]) for o in top.get("Contents") or ()]

    def below(folder: str) -> list[tuple[str, int]]:
        keys = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=folder):
            keys += [(o["Key"], o["Size"]) for o in page.get("Contents") or ()]
        return keys

    with ThreadPoolExecutor(THREADS) as pool:
        for keys in pool.map(below, folders):
            found += keys
    return found


def raw_delete(client: Any, keys: Sequence[str], bucket: str = RAW_BUCKET) -> int:
    """DeleteObjects in 1,000-key batches on THREADS threads; returns the keys deleted."""
    batches = [keys[i:i + 1000] for i in range(0, len(keys), 1000)]

    def delete(batch: Sequence[str]) -> int:
        answer = client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
        if answer.get("Errors"):
            raise RuntimeError(f"raw delete failed: {answer['Errors'][:3]}")
        return len(batch)

    with ThreadPoolExecutor(THREADS) as pool:
        return sum(pool.map(delete, batches))


# ----------------------------------------------------------------------------------------
# Phases


def files_of(listing: Any) -> list[Any]:
    return [f for files in listing.partitions.values() for f in files]


def phase_listing(uri: str, client: Any, repeat: int) -> dict[str, Any]:
    table = HudiTable.open(uri)
    storage: ArrowStorage = table.storage  # type: ignore[assignment]
    contenders: dict[str, Callable[[], Any]] = {
        "ours": lambda: files_of(table.list_partitions()),
        "raw": lambda: raw_list(client, TABLE),
    }
    progress(f"timing the listings, {repeat} interleaved runs")
    timings = interleaved(contenders, repeat)
    (ours_n,), (raw_n,) = (timings[n].sizes for n in ("ours", "raw"))
    assert ours_n == raw_n, f"ours listed {ours_n} files, raw {raw_n}"
    ours_s, raw_s = timings["ours"].best, timings["raw"].best
    progress("timing pyarrow's recursive listing once")
    recursive_s, recursive = timed(lambda: list(storage.list_recursive(table.base)))
    return {"files": ours_n, "partitions": len(table.list_partitions().partitions),
            "ours_s": ours_s, "raw_s": raw_s, "recursive_s": recursive_s, "recursive_keys": len(recursive),
            "ours_files_per_s": ours_n / ours_s, "raw_files_per_s": raw_n / raw_s, "ours_rate_over_raw": raw_s / ours_s,
            "runs_s": {name: t.runs for name, t in timings.items()}}


def reset_to_scheduled(server: Server, client: Any, local: str, clean: Instant, doomed: Sequence[str]) -> None:
    """Undo an executed clean: its inflight and completed state files go, the deleted objects
    come back; the requested plan stays."""
    for state in (State.INFLIGHT, State.COMPLETED):
        client.delete_object(Bucket=BUCKET, Key=f"{TABLE}/.hoodie/{clean_state_file(clean, state)}")
    server.seed(local, TABLE, doomed)


def phased_clean(uri: str, sizes: dict[str, int]) -> dict[str, float]:
    """run_pending_cleans's steps, timed one by one: begin (the plan read and checked again,
    inflight), the deletes (`delete_targets` per 1,000 files on the storage's threads, as
    `_delete_all` runs them), finish (metadata, completed clean)."""
    started = time.perf_counter()
    table = HudiTable.open(uri)
    (clean,) = pending_cleans(table)
    plan, chosen = begin_clean(table, clean)
    began = time.perf_counter()
    storage = table.storage
    batch = storage.delete_batch_size
    with ThreadPoolExecutor(storage.io_threads) as pool:
        outcomes = [row for rows in pool.map(lambda chunk: delete_targets(storage, chunk, sizes),
                                             [chosen[i:i + batch] for i in range(0, len(chosen), batch)])
                    for row in rows]
    deleted = time.perf_counter()
    finish_clean(table, clean, plan, outcomes, started)
    return {"begin_s": began - started, "deletes_s": deleted - began, "finish_s": time.perf_counter() - deleted}


def phase_deletes(server: Server, uri: str, local: str, client: Any, shape: CleanShape, repeat: int,
                  sample: int) -> dict[str, Any]:
    scheduled = schedule_full_plan(uri, shape)
    clean, sizes = scheduled.clean, scheduled.sizes
    doomed = [f"{partition}/{name}" for partition, name in scheduled.files]
    expected, _ = shape.expected_full()
    assert len(doomed) == expected, f"the plan deletes {len(doomed)} files, expected {expected}"
    raw_keys = [f"{RAW}/{relative}" for relative in doomed]
    n = len(doomed)
    progress(f"scheduled clean {clean.requested_time}: {n:,} files; timing run_pending_cleans against raw "
             f"DeleteObjects, {repeat} runs")
    runs: dict[str, list[float]] = {"ours": [], "raw": []}
    for r in range(repeat):
        if r:
            reset_to_scheduled(server, client, local, clean, doomed)
        elapsed, results = timed(lambda: run_pending_cleans(HudiTable.open(uri), sizes=sizes))
        (result,) = results
        assert (result.deleted, result.failed) == (n, 0), f"deleted {result.deleted}, failed {result.failed}"
        runs["ours"].append(elapsed)
        server.seed(local, RAW, doomed, bucket=RAW_BUCKET)
        elapsed, deleted = timed(lambda: raw_delete(client, raw_keys))
        assert deleted == n
        runs["raw"].append(elapsed)
    left = [k for k, _ in raw_list(client, TABLE)]
    assert not set(left) & {f"{TABLE}/{d}" for d in doomed}, "a planned file is still there"
    reset_to_scheduled(server, client, local, clean, doomed)
    phases = phased_clean(uri, sizes)
    reset_to_scheduled(server, client, local, clean, doomed)
    without_sizes, _ = timed(lambda: run_pending_cleans(HudiTable.open(uri)))
    progress(f"timing per-file DELETEs of {sample:,} objects")
    server.seed(local, RAW, doomed[:sample], bucket=RAW_BUCKET)
    # pyarrow's delete_file through the generic backend, as s3:// tables were cleaned before
    arrow = ArrowStorage(HudiTable.open(uri).storage.fs, scheme="s3")  # type: ignore[attr-defined]
    with ThreadPoolExecutor(THREADS) as pool:
        per_file_s, _ = timed(lambda: list(pool.map(arrow.delete, [f"{RAW_BUCKET}/{k}" for k in raw_keys[:sample]])))
    ours_s, raw_s = min(runs["ours"]), min(runs["raw"])
    return {"clean_instant": clean.requested_time, "files_deleted": n, "ours_s": ours_s, "raw_s": raw_s,
            "ours_files_per_s": n / ours_s, "raw_files_per_s": n / raw_s, "ours_rate_over_raw": raw_s / ours_s,
            "ours_without_sizes_s": without_sizes, "phases_s": phases, "per_file_sample": sample,
            "per_file_s": per_file_s, "per_file_files_per_s": sample / per_file_s, "runs_s": runs}


def targets(listing: dict[str, Any], deletes: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"target": f"listing at least {RATIO_MIN:g}x the raw rate ({listing['files']:,} files, "
                   f"{listing['partitions']:,} partitions)",
         "value": f"ours/raw rate = {listing['ours_rate_over_raw']:.2f}",
         "passed": listing["ours_rate_over_raw"] >= RATIO_MIN},
        {"target": f"clean deletes at least {RATIO_MIN:g}x the raw rate ({deletes['files_deleted']:,} files)",
         "value": f"ours/raw rate = {deletes['ours_rate_over_raw']:.2f}",
         "passed": deletes["ours_rate_over_raw"] >= RATIO_MIN},
    ]


# ----------------------------------------------------------------------------------------
# Reports


def text_report(result: dict[str, Any]) -> str:
    li, de = result["listing"], result["deletes"]
    lines = [
        f"S3 benchmark on moto_server at 127.0.0.1 ({result['machine']['nproc']} cores), best of {result['repeat']}",
        f"listing {li['files']:,} files in {li['partitions']:,} partitions:",
        f"  ours  HudiTable.list_partitions()   {li['ours_s']:8.3f} s  {li['ours_files_per_s']:10,.0f} files/s",
        f"  raw   boto3, prefixes on {THREADS} threads  {li['raw_s']:8.3f} s  {li['raw_files_per_s']:10,.0f} files/s",
        f"  (pyarrow recursive FileSelector, {li['recursive_keys']:,} keys with .hoodie, one run: "
        f"{li['recursive_s']:.3f} s)",
        f"deleting {de['files_deleted']:,} files:",
        f"  ours  run_pending_cleans(sizes=...)  {de['ours_s']:8.3f} s  {de['ours_files_per_s']:10,.0f} files/s",
        f"  raw   DeleteObjects x1000, {THREADS} threads {de['raw_s']:8.3f} s  "
        f"{de['raw_files_per_s']:10,.0f} files/s",
        "  of which (one run) begin {begin_s:.3f} s, deletes {deletes_s:.3f} s, finish {finish_s:.3f} s".format(
            **de["phases_s"]),
        f"  (without sizes, as the CLI: {de['ours_without_sizes_s']:.3f} s; per-file DELETE on {THREADS} threads: "
        f"{de['per_file_files_per_s']:,.0f} files/s over {de['per_file_sample']:,} files)",
        "",
    ]
    lines += target_text(result["targets"])
    return "\n".join(lines) + "\n"


def runs(seconds: Sequence[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


def markdown_section(result: dict[str, Any]) -> str:
    m, s, li, de = result["machine"], result["shape"], result["listing"], result["deletes"]
    lines = [
        SECTION_BEGIN,
        "## S3 listing and clean deletes (`bench/s3.py`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. Server: moto "
        f"{result['moto']} (`moto_server`'s application in a child process, 127.0.0.1, threaded), the client in "
        f"this process; the same machine, so both share its {m['nproc']} cores. Best of {result['repeat']} runs, "
        f"contenders interleaved; listings after one warm-up run, deletes from the scheduled state each time. "
        f"Whole run {result['total_s']:.0f} s, of which generating and seeding the table "
        f"{result['generation_s']:.0f} s.",
        "",
        f"Table: bench/clean.py's generator, version 6 COPY_ON_WRITE, {s['partitions']} partitions x {s['groups']} "
        f"file groups, {li['files']:,} files listed (data files and partition metadata), 4-byte objects at "
        f"`s3://{BUCKET}/{TABLE}`; `commits_retained={s['retained']}` plans {de['files_deleted']:,} deletes. "
        f"Ours = `HudiTable.list_partitions()` (partition walk, folders listed concurrently through pyarrow.fs) and "
        "`run_pending_cleans(HudiTable.open(uri), sizes=<the plan's sizes>)` (DeleteObjects batches of 1,000 "
        f"through `Storage.delete_many` on {THREADS} threads, with the clean's instants and metadata); raw = boto3 "
        f"done the fastest way: one delimiter listing, then every partition prefix paginated on {THREADS} threads; "
        f"DeleteObjects of as many keys in 1,000-key batches on {THREADS} threads. The rates are moto's, not "
        "S3's: moto scans the whole bucket for every ListObjectsV2 request and runs on one core (a Python "
        "process), so every contender is bound by the server and the runs vary by tens of per cent.",
        "",
        "| measurement | seconds | files/s | detail |",
        "|---|---:|---:|---|",
        f"| listing, ours | {li['ours_s']:.3f} | {li['ours_files_per_s']:,.0f} | ours/raw rate = "
        f"{li['ours_rate_over_raw']:.2f}; runs {runs(li['runs_s']['ours'])} s |",
        f"| listing, raw | {li['raw_s']:.3f} | {li['raw_files_per_s']:,.0f} | runs {runs(li['runs_s']['raw'])} s |",
        f"| listing, pyarrow recursive FileSelector | {li['recursive_s']:.3f} | "
        f"{li['recursive_keys'] / li['recursive_s']:,.0f} | one paginated stream of all {li['recursive_keys']:,} keys, "
        "`.hoodie` included (the alternative to the walk; one run) |",
        f"| clean deletes, ours | {de['ours_s']:.3f} | {de['ours_files_per_s']:,.0f} | ours/raw rate = "
        f"{de['ours_rate_over_raw']:.2f}; runs {runs(de['runs_s']['ours'])} s |",
        f"| clean deletes, raw | {de['raw_s']:.3f} | {de['raw_files_per_s']:,.0f} | "
        f"runs {runs(de['runs_s']['raw'])} s |",
        "| ours, phase by phase (one run) | {0:.3f} | {1:,.0f} | begin (plan read and checked again, inflight) "
        "{begin_s:.3f} s, deletes {deletes_s:.3f} s ({1:,.0f} files/s), finish (metadata, completed clean) "
        "{finish_s:.3f} s |".format(sum(de["phases_s"].values()), de["files_deleted"] / de["phases_s"]["deletes_s"],
                                   **de["phases_s"]),
        f"| clean deletes, ours without sizes | {de['ours_without_sizes_s']:.3f} | "
        f"{de['files_deleted'] / de['ours_without_sizes_s']:,.0f} | the CLI's call: sizes from one listing per "
        "partition first (one run) |",
        f"| per-file DELETE, {THREADS} threads | {de['per_file_s']:.3f} | {de['per_file_files_per_s']:,.0f} | "
        f"{de['per_file_sample']:,} files through pyarrow's delete_file, as before `delete_many` |",
        "",
        *target_lines(result["targets"]),
        SECTION_END,
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser(__doc__)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--groups", type=int, default=500, help="file groups per partition")
    parser.add_argument("--per-file-sample", type=int, default=2000, help="objects deleted one request each")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.partitions < 2 or args.groups < 1:
        parser.error("--repeat and --groups must be >= 1, --partitions >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from importlib.metadata import version

    shape = CleanShape(partitions=args.partitions, groups=args.groups, versions=2, trickle=1, hot=1, new_commits=0,
                  retained=1)
    root, _ = bench_root()
    local = os.path.join(root, TABLE)
    started = time.perf_counter()
    server = Server(Path(root) / "s3-server").start()
    offline_aws_environment()
    os.environ.update(server.env)
    try:
        progress(f"S3 server at {server.endpoint}; generating {shape.data_files:,} data files in {local} "
                 f"({file_system_of(root)})")
        began = time.perf_counter()
        generate_clean_table(local, shape)
        client = s3_client(server.endpoint)
        client.create_bucket(Bucket=BUCKET)
        client.create_bucket(Bucket=RAW_BUCKET)
        seeded = server.seed(local, TABLE)
        generation_s = time.perf_counter() - began
        progress(f"seeded {seeded:,} objects in {generation_s:.1f} s")
        uri = f"s3://{BUCKET}/{TABLE}"
        listing = phase_listing(uri, client, args.repeat)
        deletes = phase_deletes(server, uri, local, client, shape, args.repeat, args.per_file_sample)
        result: dict[str, Any] = {
            "machine": machine(), "moto": version("moto"), "repeat": args.repeat, "shape": asdict(shape),
            "generation_s": generation_s, "listing": listing, "deletes": deletes,
            "targets": targets(listing, deletes),
        }
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    result["total_s"] = time.perf_counter() - started
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0 if all(t["passed"] for t in result["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
