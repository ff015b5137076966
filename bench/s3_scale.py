"""S3 at scale on a local S3-protocol server, measured side by side in one run: planning and the
file-system view through the metadata table against listing storage, and a million deletes
against plain boto3 (issue 29).

The server is moto's (moto[server], the tests' `S3Server` with the benchmarks' seeding route:
`SeededS3Server` of bench/common.py) on 127.0.0.1 in a child process; requests are counted at the
server with moto's request recorder (`S3Server.recording`), in runs of their own (recording
slows the server down), never in the timed runs.

1. Listing: the clean table's generator (bench/common.py `generate_clean_table`, table version 8,
   COPY_ON_WRITE), by default 1,000 partitions x 34 file groups x 3 commits: 102,000 data files
   of which a plan retaining 1 commit deletes 34,000,
   given a metadata table whose `files` partition lists them (`add_files_metadata_table`: one
   file group, as Hudi's initialisation makes it), generated locally and seeded to
   `s3://cleanline-scale/table`. Contenders, each opening the table afresh (best of N,
   interleaved): `plan_clean(table, commits_retained=1, source="metadata")` against
   `source="storage"` (a partition walk, one ListObjectsV2 stream per folder), and the
   file-system view's latest slices over `table_listing(table, "metadata")` against the view
   listing storage itself (`cleanline fsview --listing metadata|storage`). The plans must be
   equal file for file (path, size, decision), the views slice for slice.
2. Deletes: `--objects` objects (1,000,000 by default; 1,000 a folder, 4 bytes each) seeded into
   a bucket and deleted by the clean executor's delete stage (`_delete_all` of
   timeline/clean/executor.py, the code `run_pending_cleans` runs between moving the clean to
   inflight and completing it: DeleteObjects of 1,000 keys across folders through
   `S3Storage.delete_many`, with its retries, on the storage's 32 threads, sizes from the plan),
   then seeded again and deleted by plain boto3: DeleteObjects in 1,000-key batches on 32 threads.
   Every object must be gone after each.

Targets: through the metadata table at least 20x fewer requests and at least 5x faster than
listing storage, for the plan and for the view; the deletes at least 0.8x the raw rate.

Usage (from the repository root):

    .venv/bin/python bench/s3_scale.py                  # generate, measure, print, clean up
    .venv/bin/python bench/s3_scale.py --record         # also update bench/RESULTS.md
    .venv/bin/python bench/s3_scale.py --partitions 50 --groups 20 --objects 20000 -n 1   # quick

Progress goes to stderr. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

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
    add_files_metadata_table,
    argument_parser,
    bench_root,
    file_system_of,
    generate_clean_table,
    interleaved,
    machine,
    progress,
    publish,
    target_lines,
    target_text,
    timed,
)
from tests.helpers import offline_aws_environment  # noqa: E402
from timeline import HudiTable  # noqa: E402
from timeline.clean.config import CleanConfig  # noqa: E402
from timeline.clean.executor import Status, Target, _delete_all  # noqa: E402
from timeline.clean.planner import plan_clean  # noqa: E402
from timeline.mdt.listing import table_listing  # noqa: E402

SECTION_BEGIN = "<!-- bench/s3_scale.py: begin -->"
SECTION_END = "<!-- bench/s3_scale.py: end -->"
BUCKET, OURS_BUCKET, RAW_BUCKET = "cleanline-scale", "cleanline-scale-ours", "cleanline-scale-raw"
TABLE = "table"
THREADS = 32
FEWER_MIN, FASTER_MIN, DELETE_MIN = 20.0, 5.0, 0.8


def s3_client(endpoint: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, config=Config(max_pool_connections=THREADS + 4))


def plan_with(uri: str, source: str) -> list[tuple[str, int, bool]]:
    plan = plan_clean(HudiTable.open(uri), CleanConfig(commits_retained=1, incremental=False), source=source)
    assert plan.listing == source, plan.listing
    return [(d.path, d.size, d.delete) for d in plan.decisions]


def view_with(uri: str, source: str) -> list[tuple[str, str, str, str | None, tuple[str, ...]]]:
    table = HudiTable.open(uri)
    listing = table_listing(table, "metadata")[0] if source == "metadata" else None
    return sorted((s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
                   tuple(log.name for log in s.log_files))
                  for s in table.file_system_view(listing=listing).latest_slices())


def requests_of(server: SeededS3Server, fn: Callable[[], Any]) -> int:
    with server.recording() as requests:
        fn()
    return len(requests)


def phase_listing(server: SeededS3Server, uri: str, repeat: int) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for what, fn in (("plan", plan_with), ("fsview", view_with)):
        progress(f"{what}: checking metadata == storage and counting requests")
        through_mdt, through_storage = fn(uri, "metadata"), fn(uri, "storage")
        assert through_mdt == through_storage, f"{what}: the metadata table's and storage's differ"
        counts = {source: requests_of(server, lambda s=source: fn(uri, s)) for source in ("metadata", "storage")}
        progress(f"{what}: timing, {repeat} interleaved runs")
        timings = interleaved({"metadata": lambda: fn(uri, "metadata"), "storage": lambda: fn(uri, "storage")},
                              repeat, warm_up=False)
        found[what] = {"entries": len(through_mdt), "deleted": sum(1 for row in through_mdt if row[-1] is True),
                       "requests": counts, "fewer_requests": counts["storage"] / counts["metadata"],
                       "seconds": {n: t.best for n, t in timings.items()},
                       "faster": timings["storage"].best / timings["metadata"].best,
                       "runs_s": {n: t.runs for n, t in timings.items()}}
    return found


def raw_delete(client: Any, bucket: str, keys: Sequence[str]) -> int:
    """DeleteObjects in 1,000-key batches on THREADS threads; returns the keys deleted."""
    def delete(batch: Sequence[str]) -> int:
        answer = client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True})
        if answer.get("Errors"):
            raise RuntimeError(f"raw delete failed: {answer['Errors'][:3]}")
        return len(batch)

    with ThreadPoolExecutor(THREADS) as pool:
        return sum(pool.map(delete, [keys[i:i + 1000] for i in range(0, len(keys), 1000)]))


def empty(client: Any, bucket: str) -> bool:
    return not client.list_objects_v2(Bucket=bucket, MaxKeys=1).get("KeyCount")


def phase_deletes(server: SeededS3Server, client: Any, objects: int, repeat: int) -> dict[str, Any]:
    per_folder = 1000
    keys = [f"{TABLE}/{n // per_folder:04d}/{n:07d}.parquet" for n in range(objects)]
    targets = [Target(f"{n // per_folder:04d}", f"s3://{OURS_BUCKET}/{key}") for n, key in enumerate(keys)]
    sizes = {t.path: 4 for t in targets}
    runs: dict[str, list[float]] = {"ours": [], "raw": []}
    seeding: list[float] = []
    for r in range(repeat):
        progress(f"run {r + 1}: seeding {objects:,} objects for ours")
        seeded_s, _ = timed(lambda: server.seed_synthetic(OURS_BUCKET, TABLE, objects, per_folder))
        seeding.append(seeded_s)
        storage = HudiTable.open(f"s3://{BUCKET}/{TABLE}").storage
        assert storage.io_threads == THREADS
        progress(f"run {r + 1}: ours deleting ({seeded_s:.0f} s to seed)")
        elapsed, outcomes = timed(lambda: _delete_all(storage, targets, sizes, None, "bench", storage.io_threads))
        assert len(outcomes) == objects and all(o.status is Status.DELETED for o in outcomes)
        assert empty(client, OURS_BUCKET), "ours left objects behind"
        runs["ours"].append(elapsed)
        del outcomes
        progress(f"run {r + 1}: seeding {objects:,} objects for raw")
        server.seed_synthetic(RAW_BUCKET, TABLE, objects, per_folder)
        progress(f"run {r + 1}: raw deleting")
        elapsed, deleted = timed(lambda: raw_delete(client, RAW_BUCKET, keys))
        assert deleted == objects and empty(client, RAW_BUCKET), "raw left objects behind"
        runs["raw"].append(elapsed)
    ours_s, raw_s = min(runs["ours"]), min(runs["raw"])
    return {"objects": objects, "folders": -(-objects // per_folder), "ours_s": ours_s, "raw_s": raw_s,
            "ours_per_s": objects / ours_s, "raw_per_s": objects / raw_s, "ours_rate_over_raw": raw_s / ours_s,
            "runs_s": runs, "seeding_s": seeding}


def targets(listing: dict[str, Any], deletes: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for what, label in (("plan", "clean plan"), ("fsview", "file-system view")):
        li = listing[what]
        found += [
            {"target": f"{label} through the metadata table: at least {FEWER_MIN:g}x fewer requests than listing "
                       "storage", "value": f"{li['requests']['storage']:,} / {li['requests']['metadata']:,} = "
                                           f"{li['fewer_requests']:.0f}x", "passed": li["fewer_requests"] >= FEWER_MIN},
            {"target": f"{label} through the metadata table: at least {FASTER_MIN:g}x faster than listing storage",
             "value": f"{li['seconds']['storage']:.2f} s / {li['seconds']['metadata']:.2f} s = {li['faster']:.1f}x",
             "passed": li["faster"] >= FASTER_MIN},
        ]
    found.append({"target": f"{deletes['objects']:,} objects deleted at least {DELETE_MIN:g}x the rate of plain boto3 "
                            f"DeleteObjects batches ({THREADS} threads each)",
                  "value": f"ours/raw rate = {deletes['ours_rate_over_raw']:.2f}",
                  "passed": deletes["ours_rate_over_raw"] >= DELETE_MIN})
    return found


def text_report(result: dict[str, Any]) -> str:
    li, de, s = result["listing"], result["deletes"], result["shape"]
    lines = [f"S3 at scale on moto_server at 127.0.0.1 ({result['machine']['nproc']} cores), "
             f"best of {result['repeat']}",
             f"table: {s['partitions']:,} partitions x {s['groups']} file groups x {s['versions']} commits, "
             "a metadata table"]
    for what in ("plan", "fsview"):
        x = li[what]
        lines.append(f"  {what:6}  metadata {x['seconds']['metadata']:7.2f} s {x['requests']['metadata']:6,} requests"
                     f"   storage {x['seconds']['storage']:7.2f} s {x['requests']['storage']:6,} requests"
                     f"   ({x['entries']:,} entries, equal)")
    lines += [f"deletes of {de['objects']:,} objects: ours {de['ours_s']:.2f} s ({de['ours_per_s']:,.0f}/s), raw "
              f"{de['raw_s']:.2f} s ({de['raw_per_s']:,.0f}/s)", ""]
    return "\n".join(lines + target_text(result["targets"])) + "\n"


def runs_text(seconds: Sequence[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


def markdown_section(result: dict[str, Any]) -> str:
    m, s, li, de = result["machine"], result["shape"], result["listing"], result["deletes"]
    rows = []
    for what, label in (("plan", "clean plan (`plan_clean(source=...)`)"),
                        ("fsview", "file-system view (`cleanline fsview --listing ...`)")):
        x = li[what]
        for source in ("metadata", "storage"):
            rows.append(f"| {label}, {source} | {x['seconds'][source]:.3f} | {x['requests'][source]:,} | "
                        f"runs {runs_text(x['runs_s'][source])} s |")
    lines = [
        SECTION_BEGIN,
        "## S3 at scale: listing through the metadata table, a million deletes (`bench/s3_scale.py`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. Server: moto "
        f"{result['moto']} (`SeededS3Server` of bench/common.py: moto's application in a child process, 127.0.0.1, "
        f"threaded), the client in this process, both on the machine's {m['nproc']} cores. Best of "
        f"{result['repeat']} runs, contenders interleaved. Requests counted at the server (moto's request recorder) "
        f"in runs of their own. Whole run {result['total_s']:.0f} s, of which generating and seeding the table "
        f"{result['generation_s']:.0f} s.",
        "",
        f"Table: bench/common.py's clean-table generator, version 8 COPY_ON_WRITE, {s['partitions']:,} partitions x "
        f"{s['groups']} file groups x {s['versions']} commits = {s['partitions'] * s['groups'] * s['versions']:,} data "
        "files (4-byte objects), with a metadata table whose `files` partition lists them "
        "(`add_files_metadata_table`), at "
        f"`s3://{BUCKET}/{TABLE}`. Each run opens the table afresh. The plan ({li['plan']['entries']:,} files, "
        f"{li['plan']['deleted']:,} deleted) and the view ({li['fsview']['entries']:,} latest slices) through the "
        "metadata table equal storage's file for file.",
        "",
        "| contender | seconds | requests at the server | detail |",
        "|---|---:|---:|---|",
        *rows,
        "",
        f"Deletes: {de['objects']:,} objects in {de['folders']:,} folders, seeded through the server's seeding route "
        f"before each contender ({runs_text(de['seeding_s'])} s for ours). Ours = the clean executor's delete stage "
        "(`_delete_all` of timeline/clean/executor.py, what `run_pending_cleans` runs between inflight and "
        "completed, with the plan's sizes: DeleteObjects of 1,000 keys across folders through "
        f"`S3Storage.delete_many` with its retry rounds, {THREADS} threads); raw = boto3 DeleteObjects in 1,000-key "
        f"batches on {THREADS} threads. Every object was gone after each run.",
        "",
        "| contender | seconds | objects/s | runs |",
        "|---|---:|---:|---|",
        f"| ours | {de['ours_s']:.2f} | {de['ours_per_s']:,.0f} | {runs_text(de['runs_s']['ours'])} s |",
        f"| raw | {de['raw_s']:.2f} | {de['raw_per_s']:,.0f} | {runs_text(de['runs_s']['raw'])} s |",
        "",
        *target_lines(result["targets"]),
        SECTION_END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, repeat=3)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=34, help="file groups per partition")
    parser.add_argument("--versions", type=int, default=3, help="commits rewriting every file group (at least 2)")
    parser.add_argument("--objects", type=int, default=1_000_000, help="objects deleted by each contender")
    parser.add_argument("--delete-repeat", type=int, default=1, help="delete runs per contender")
    args = parser.parse_args(argv)
    from importlib.metadata import version

    shape = CleanShape(partitions=args.partitions, groups=args.groups, versions=args.versions, trickle=0, hot=0,
                       new_commits=0, retained=1)
    root, _ = bench_root()
    local = os.path.join(root, TABLE)
    started = time.perf_counter()
    server = SeededS3Server(Path(root) / "s3-server").start()
    offline_aws_environment()
    os.environ.update(server.env)
    try:
        progress(f"S3 server at {server.endpoint}; generating {shape.data_files:,} data files and a metadata table "
                 f"in {local} ({file_system_of(root)})")
        began = time.perf_counter()
        generate_clean_table(local, shape, version=8)
        add_files_metadata_table(local)
        client = s3_client(server.endpoint)
        for bucket in (BUCKET, OURS_BUCKET, RAW_BUCKET):
            client.create_bucket(Bucket=bucket)
        seeded = server.seed(local, TABLE, bucket=BUCKET)
        shutil.rmtree(local)
        generation_s = time.perf_counter() - began
        progress(f"seeded {seeded:,} objects in {generation_s:.1f} s")
        listing = phase_listing(server, f"s3://{BUCKET}/{TABLE}", args.repeat)
        deletes = phase_deletes(server, client, args.objects, args.delete_repeat)
        result: dict[str, Any] = {"machine": machine(), "moto": version("moto"), "repeat": args.repeat,
                                  "shape": asdict(shape), "generation_s": generation_s, "listing": listing,
                                  "deletes": deletes, "targets": targets(listing, deletes)}
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    result["total_s"] = time.perf_counter() - started
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0 if all(t["passed"] for t in result["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
