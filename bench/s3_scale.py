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
3. Faults (also alone with `--faults-only`; recorded in a section of their own, so that a run of
   them alone keeps the figures above): the same `--objects` objects deleted by the same delete
   stage, and a real clean of the generated table (planned, scheduled, `run_pending_cleans`),
   both through tests/storage/helpers.py's `ChaosProxy` in front of the server: 10% of all
   requests answered 503 SlowDown or 500, reset, or done with the answer lost; 1% of
   DeleteObjects keys answered with per-key errors, and some keys failing every time. Afterwards
   the buckets are listed straight from the server.

Targets: through the metadata table at least 20x fewer requests and at least 5x faster than
listing storage, for the plan and for the view; the deletes at least 0.8x the raw rate. Through
the proxy (exact counts, no timing target): every object deleted or reported failed, the sum the
objects planned; 0 reported deleted (or gone) that are still at the server; every object
reported failed still there with the store's error, the always-failing keys among them; every
kind of fault given; the completed clean's HoodieCleanMetadata lists exactly the keys that left
the bucket as deleted and the reported failed as failed.

Usage (from the repository root):

    .venv/bin/python bench/s3_scale.py                  # generate, measure, print, clean up
    .venv/bin/python bench/s3_scale.py --record         # also update bench/RESULTS.md
    .venv/bin/python bench/s3_scale.py --partitions 50 --groups 20 --objects 20000 -n 1   # quick
    .venv/bin/python bench/s3_scale.py --faults-only --record   # only the runs through the proxy

Progress goes to stderr. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import logging
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
from tests.storage.helpers import ChaosProxy  # noqa: E402
from timeline import HudiTable  # noqa: E402
from timeline.clean.config import CleanConfig  # noqa: E402
from timeline.clean.executor import FileOutcome, Status, Target, _delete_all, run_pending_cleans, schedule_clean  # noqa: E402
from timeline.clean.planner import plan_clean  # noqa: E402
from timeline.instant import CLEAN, State  # noqa: E402
from timeline.mdt.listing import table_listing  # noqa: E402
from timeline.metadata import decode  # noqa: E402
from timeline.metadata.records import CleanMetadata  # noqa: E402
from timeline.storage import storage_for  # noqa: E402

SECTION_BEGIN = "<!-- bench/s3_scale.py: begin -->"
SECTION_END = "<!-- bench/s3_scale.py: end -->"
FAULTS_BEGIN = "<!-- bench/s3_scale.py faults: begin -->"
FAULTS_END = "<!-- bench/s3_scale.py faults: end -->"
FAULT_BUCKET, FAULT_TABLE_BUCKET = "cleanline-scale-faults", "cleanline-scale-faults-clean"
FAULT_RATE, KEY_RATE = 0.1, 0.01
STUCK_OBJECTS = "999.parquet"  # keys the proxy fails every time: 1 in 1,000 of the objects
STUCK_EVERY = 100              # in the faulted clean, every 100th planned file fails every time
CLEAN_BATCH = 100              # the faulted clean's keys a DeleteObjects (34 requests of 1,000 see few faults)
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


# ----------------------------------------------------------------------------------------
# Faults: the same deletes, and a real clean, through tests/storage/helpers.py's ChaosProxy


def server_keys(client: Any, bucket: str) -> set[str]:
    """Every key of a bucket, listed straight from the server (never through the proxy)."""
    return {o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
            for o in page.get("Contents", ())}


def through(proxy: ChaosProxy) -> None:
    """Point this process's S3 clients made from now on at the proxy."""
    os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint


def checked_outcomes(outcomes: Sequence[FileOutcome], planned: set[str], remaining: set[str],
                     key_of: Callable[[str], str]) -> dict[str, Any]:
    """Counts of a faulted run's outcomes against what the server holds afterwards."""
    by_status = {s: {o.path for o in outcomes if o.status is s} for s in Status}
    still = {s: sum(1 for p in paths if key_of(p) in remaining) for s, paths in by_status.items()}
    errors = [o.error for o in outcomes if o.status is Status.FAILED]
    return {"planned": len(planned), "reported": len(outcomes), "covered": {o.path for o in outcomes} == planned,
            "deleted": len(by_status[Status.DELETED]), "gone": len(by_status[Status.GONE]),
            "failed": len(by_status[Status.FAILED]), "deleted_still_there": still[Status.DELETED],
            "gone_still_there": still[Status.GONE], "failed_still_there": still[Status.FAILED],
            "failed_with_reason": sum(1 for e in errors if "SlowDown" in e or "InternalError" in e),
            "first_error": errors[0] if errors else ""}


def faulted_deletes(server: SeededS3Server, client: Any, objects: int) -> dict[str, Any]:
    """`objects` objects deleted by the clean executor's delete stage through the proxy."""
    per_folder = 1000
    keys = [f"{TABLE}/{n // per_folder:04d}/{n:07d}.parquet" for n in range(objects)]
    targets = [Target(f"{n // per_folder:04d}", f"s3://{FAULT_BUCKET}/{key}") for n, key in enumerate(keys)]
    progress(f"faults: seeding {objects:,} objects")
    server.seed_synthetic(FAULT_BUCKET, TABLE, objects, per_folder)
    with ChaosProxy(server.endpoint, rate=FAULT_RATE, key_rate=KEY_RATE, seed=29, stuck=(STUCK_OBJECTS,)) as proxy:
        through(proxy)
        storage = storage_for(f"s3://{FAULT_BUCKET}/{TABLE}")[0]
        progress(f"faults: deleting {objects:,} objects through the proxy at {proxy.endpoint}")
        elapsed, outcomes = timed(lambda: _delete_all(storage, targets, {t.path: 4 for t in targets}, None, "bench",
                                                      storage.io_threads))
        os.environ.update(server.env)
    progress(f"faults: {elapsed:.0f} s; listing what is left at the server")
    remaining = server_keys(client, FAULT_BUCKET)
    found = checked_outcomes(outcomes, {t.path for t in targets}, remaining,
                             lambda p: p.removeprefix(f"s3://{FAULT_BUCKET}/"))
    stuck = {t.path for t in targets if STUCK_OBJECTS in t.path}
    failed = {o.path for o in outcomes if o.status is Status.FAILED}
    return {**found, "seconds": elapsed, "remaining": len(remaining), "stuck": len(stuck),
            "stuck_failed": len(stuck & failed), "requests": proxy.requests, "faults": dict(proxy.faults)}


def completed_clean(client: Any, bucket: str, requested_time: str) -> CleanMetadata:
    """The completed clean's HoodieCleanMetadata, read straight from the server."""
    keys = server_keys(client, bucket)
    key = next(k for k in keys if k.startswith(f"{TABLE}/.hoodie/timeline/{requested_time}_") and k.endswith(".clean"))
    body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    raw = decode(body, path=key, action=CLEAN, state=State.COMPLETED, layout=2)
    assert raw is not None, key
    return CleanMetadata.from_raw(raw)


def faulted_clean(server: SeededS3Server, client: Any) -> dict[str, Any]:
    """A clean of the generated table planned, scheduled and run (`run_pending_cleans`)
    through the proxy; its completed metadata compared with what left the server."""
    uri = f"s3://{FAULT_TABLE_BUCKET}/{TABLE}"
    before = server_keys(client, FAULT_TABLE_BUCKET)
    direct = plan_clean(HudiTable.open(uri), CleanConfig(commits_retained=1, incremental=False))
    stuck = tuple(d.path.rsplit("/", 1)[1] for d in direct.files_to_delete[::STUCK_EVERY])
    with ChaosProxy(server.endpoint, rate=FAULT_RATE, key_rate=KEY_RATE, seed=30, stuck=stuck) as proxy:
        through(proxy)
        table = HudiTable.open(uri)
        table.storage.delete_batch_size = CLEAN_BATCH
        progress(f"faults: planning and scheduling a clean of {uri} through the proxy")
        config = CleanConfig(commits_retained=1, incremental=False)
        plan = plan_clean(table, config)
        assert [(d.path, d.delete) for d in plan.decisions] == [(d.path, d.delete) for d in direct.decisions]
        clean = schedule_clean(table, plan, config)
        assert clean is not None
        progress(f"faults: running clean {clean.requested_time} ({len(plan.files_to_delete):,} files to delete)")
        elapsed, (result,) = timed(lambda: run_pending_cleans(table))
        os.environ.update(server.env)
    after = server_keys(client, FAULT_TABLE_BUCKET)
    key_of = {d.path: d.path.removeprefix(f"s3://{FAULT_TABLE_BUCKET}/") for d in plan.files_to_delete}
    found = checked_outcomes(result.outcomes, set(key_of), after, key_of.__getitem__)
    meta = completed_clean(client, FAULT_TABLE_BUCKET, clean.requested_time)
    went = {k for k in before if k not in after}
    listed_ok = {f"{TABLE}/{p}/{n}" if p else f"{TABLE}/{n}" for p, m in meta.partitions.items()
                 for n in m.success_delete_files}
    listed_failed = {f"{TABLE}/{p}/{n}" if p else f"{TABLE}/{n}" for p, m in meta.partitions.items()
                     for n in m.failed_delete_files}
    failed = {key_of[o.path] for o in result.outcomes if o.status is Status.FAILED}
    return {**found, "seconds": elapsed, "files": len(plan.decisions), "stuck": len(stuck),
            "stuck_failed": sum(1 for k in failed if k.rsplit("/", 1)[1] in stuck), "gone_at_server": len(went),
            "listed_deleted": len(listed_ok), "listed_failed": len(listed_failed),
            "listed_equals_gone": listed_ok == went, "listed_failed_equals_failed": listed_failed == failed,
            "total_files_deleted": meta.total_files_deleted, "requests": proxy.requests,
            "faults": dict(proxy.faults)}


def fault_targets(deletes: dict[str, Any], clean: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for run, label in ((deletes, f"{deletes['planned']:,} objects deleted through the proxy"),
                       (clean, f"a clean of {clean['planned']:,} files run through the proxy")):
        done = run["deleted"] + run["gone"] + run["failed"]
        found += [
            {"target": f"{label}: every object deleted or reported failed",
             "value": f"{run['deleted']:,} deleted + {run['gone']:,} gone + {run['failed']:,} failed = {done:,} "
                      f"of {run['planned']:,}", "passed": done == run["planned"] == run["reported"] and run["covered"]},
            {"target": f"{label}: 0 reported deleted that still exist (listed at the server)",
             "value": f"{run['deleted_still_there'] + run['gone_still_there']:,}",
             "passed": run["deleted_still_there"] + run["gone_still_there"] == 0},
            {"target": f"{label}: every object reported failed is still there, with the store's error",
             "value": f"{run['failed_still_there']:,} of {run['failed']:,} there, {run['failed_with_reason']:,} "
                      f"with SlowDown/InternalError; {run['stuck_failed']:,} of {run['stuck']:,} always-failing "
                      "keys among them",
             "passed": run["failed_still_there"] == run["failed"] == run["failed_with_reason"]
                       and run["stuck_failed"] == run["stuck"] > 0},
            {"target": f"{label}: the proxy gave every kind of fault",
             "value": ", ".join(f"{k} {v:,}" for k, v in sorted(run["faults"].items())) + f" in {run['requests']:,} "
                      "requests", "passed": all(run["faults"].get(k, 0) > 0 for k in (*ChaosProxy.KINDS, "key"))},
        ]
    found.append({"target": "the completed clean lists exactly what was deleted (and what failed)",
                  "value": f"listed deleted {clean['listed_deleted']:,}, gone at the server {clean['gone_at_server']:,}"
                           f", equal: {clean['listed_equals_gone']}; listed failed {clean['listed_failed']:,}, equal "
                           f"to the reported failed: {clean['listed_failed_equals_failed']}",
                  "passed": clean["listed_equals_gone"] and clean["listed_failed_equals_failed"]
                            and clean["total_files_deleted"] == clean["deleted"] + clean["gone"]})
    return found


def faults_text(result: dict[str, Any]) -> str:
    de, cl = result["deletes"], result["clean"]
    lines = [f"S3 faults through tests/storage/helpers.py's ChaosProxy ({FAULT_RATE:.0%} of requests, "
             f"{KEY_RATE:.0%} of DeleteObjects keys)",
             f"deletes of {de['planned']:,} objects: {de['seconds']:.1f} s, {de['remaining']:,} left at the server",
             f"clean of {cl['files']:,} files ({cl['planned']:,} planned deletes): {cl['seconds']:.1f} s", ""]
    return "\n".join(lines + target_text(result["targets"])) + "\n"


def faults_section(result: dict[str, Any]) -> str:
    m, de, cl, s = result["machine"], result["deletes"], result["clean"], result["shape"]
    lines = [
        FAULTS_BEGIN,
        "## S3 at its limits: a million deletes and a clean through a fault-injecting proxy "
        "(`bench/s3_scale.py --faults-only`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, moto "
        f"{result['moto']} (`SeededS3Server`), whole run {result['total_s']:.0f} s (timings for information only; the "
        "machine was shared). Between the client and the server: `ChaosProxy` of tests/storage/helpers.py, the proxy "
        f"the tests use, on 127.0.0.1: a seeded {FAULT_RATE:.0%} of all requests (DeleteObjects, listings, GETs, "
        "HEADs, PUTs) answered 503 SlowDown or 500 InternalError, reset without an answer, or done by the server "
        f"with the answer lost, in turn; in DeleteObjects it forwards, {KEY_RATE:.0%} of the keys answered with a "
        "per-key SlowDown/InternalError (kept on the server), and some keys failed every time. Afterwards every "
        "bucket is listed straight from the server, not through the proxy.",
        "",
        f"1. The delete stage `bench/s3_scale.py` measures as ours (`_delete_all`, {THREADS} threads, DeleteObjects "
        f"of 1,000 keys with `S3Storage`'s retries) on {de['planned']:,} objects in {-(-de['planned'] // 1000):,} "
        f"folders; keys ending `{STUCK_OBJECTS}` ({de['stuck']:,}) fail every time. {de['seconds']:.1f} s, "
        f"{de['requests']:,} requests at the proxy; {de['remaining']:,} objects left at the server.",
        f"2. A real clean of bench/common.py's generated table (version 8 COPY_ON_WRITE, {s['partitions']:,} "
        f"partitions x {s['groups']} file groups x {s['versions']} commits = {cl['files']:,} files, with a metadata "
        f"table) seeded to `s3://{FAULT_TABLE_BUCKET}/{TABLE}`: planned (retaining 1 commit, {cl['planned']:,} files "
        "to delete), scheduled and run with `run_pending_cleans` all through the proxy, "
        f"{CLEAN_BATCH} keys a DeleteObjects (more requests, more faults); every {STUCK_EVERY}th planned file "
        f"({cl['stuck']:,}) fails every time. The run took {cl['seconds']:.1f} s, {cl['requests']:,} requests at the "
        "proxy. The completed clean (its HoodieCleanMetadata read from the server) is compared with the keys that "
        "left the bucket.",
        "",
        "| run | planned | deleted | gone | failed | reported deleted, still there | failed, still there |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *(f"| {name} | {r['planned']:,} | {r['deleted']:,} | {r['gone']:,} | {r['failed']:,} | "
          f"{r['deleted_still_there'] + r['gone_still_there']:,} | {r['failed_still_there']:,} |"
          for name, r in (("delete stage", de), ("clean", cl))),
        "",
        f"A failed file's outcome reads, e.g.: `{de['first_error'] or cl['first_error']}`.",
        "",
        *target_lines(result["targets"]),
        FAULTS_END,
    ]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, repeat=3)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=34, help="file groups per partition")
    parser.add_argument("--versions", type=int, default=3, help="commits rewriting every file group (at least 2)")
    parser.add_argument("--objects", type=int, default=1_000_000, help="objects deleted by each contender")
    parser.add_argument("--delete-repeat", type=int, default=1, help="delete runs per contender")
    parser.add_argument("--faults-only", action="store_true",
                        help="only the runs through the fault-injecting proxy (their own section of RESULTS.md)")
    args = parser.parse_args(argv)
    from importlib.metadata import version

    shape = CleanShape(partitions=args.partitions, groups=args.groups, versions=args.versions, trickle=0, hot=0,
                       new_commits=0, retained=1)
    root, _ = bench_root()
    local = os.path.join(root, TABLE)
    started = time.perf_counter()
    server = SeededS3Server(Path(root) / "s3-server")
    server.start()
    offline_aws_environment()
    os.environ.update(server.env)
    base = {"machine": machine(), "moto": version("moto"), "shape": asdict(shape)}
    result: dict[str, Any] | None = None
    try:
        progress(f"S3 server at {server.endpoint}; generating {shape.data_files:,} data files and a metadata table "
                 f"in {local} ({file_system_of(root)})")
        began = time.perf_counter()
        generate_clean_table(local, shape, version=8)
        add_files_metadata_table(local)
        client = s3_client(server.endpoint)
        for bucket in (BUCKET, OURS_BUCKET, RAW_BUCKET, FAULT_BUCKET, FAULT_TABLE_BUCKET):
            client.create_bucket(Bucket=bucket)
        seeded = server.seed(local, TABLE, bucket=FAULT_TABLE_BUCKET)
        if not args.faults_only:
            server.seed(local, TABLE, bucket=BUCKET)
        shutil.rmtree(local)
        generation_s = time.perf_counter() - began
        progress(f"seeded {seeded:,} objects in {generation_s:.1f} s")
        if not args.faults_only:
            listing = phase_listing(server, f"s3://{BUCKET}/{TABLE}", args.repeat)
            deletes = phase_deletes(server, client, args.objects, args.delete_repeat)
            result = {**base, "repeat": args.repeat, "generation_s": generation_s, "listing": listing,
                      "deletes": deletes, "targets": targets(listing, deletes)}
            result["total_s"] = time.perf_counter() - started
        faults_began = time.perf_counter()
        logging.getLogger("timeline").setLevel(logging.ERROR)  # no warning a batch for the keys failing every time
        faulted = {"deletes": faulted_deletes(server, client, args.objects), "clean": faulted_clean(server, client)}
        faults: dict[str, Any] = {**base, **faulted, "targets": fault_targets(faulted["deletes"], faulted["clean"]),
                                  "total_s": time.perf_counter() - faults_began + generation_s}
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    if result is not None:
        publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    publish(faults, args, faults_text, faults_section, FAULTS_BEGIN, FAULTS_END)
    return 0 if all(t["passed"] for r in (result or {}, faults) for t in r.get("targets", ())) else 1


if __name__ == "__main__":
    sys.exit(main())
