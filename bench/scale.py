"""Scale benchmark: clean plans and cleans of multi-million-file tables on a real Spark
standalone cluster (a master and two one-core workers on 127.0.0.1, started from the `pyspark`
package's own launcher as the tests start it), with the plan streamed into a plan store.

1. Two generated tables, version 6 COPY_ON_WRITE, 500 data files a partition (50 file groups x
   10 commits; 3 commits retained, so 6 of every 10 files go): 500,000 files (1,000 partitions)
   and 2,000,000 files (4,000 partitions), every file on storage.
2. Each is planned on the cluster by a driver process of its own (as a Celery worker is one),
   executors writing the plan's parts into the plan store; the driver's peak resident memory
   (the Python process; its JVM is reported too) and the planning time (the session's start
   excluded) are measured. The local engine plans each in a process of its own too, partition
   by partition into the store (its peak memory measured).
3. The lake tables (issue 29): 2,000,000 and 10,000,000 files, 1,000 a partition (100 file groups
   x 10 commits; 2,000 and 10,000 partitions), version 8, with a metadata table whose `files`
   partition lists every file (one base HFile, as Hudi's initialisation writes it) while storage
   holds every partition's folder but only every 100th partition's files (10M real files do not
   fit this machine's tmpfs and inodes). Both engines plan them through the metadata table
   (`--listing auto`, Hudi's choice), as in 2.
4. The 2,000,000-file and the 10,000,000-file plans are made reviewable in the console: the
   totals kept on a plan row (`console.services.plan_store`), then the first page, a partition
   filter and a file-name search, each requested through Django's test client (first request
   counted in the time to reviewable, then the median of `--repeat`).
5. The 2,000,000-file table's clean: scheduled once (`<t>.clean.requested` from the store), then
   the same files are deleted by a raw `os.unlink` loop (timed; the files are put back) and by
   the cluster (`run_pending_cleans_spark` in a driver process; the plan is checked and deleted
   in shares by the executors, which read the sizes as they delete), files/s compared.
6. The crossover: tables of 20,000 to 400,000 files planned by the local engine (in this
   process) and on the cluster (a warm session); the smallest size at which the cluster is
   faster sets the default of CLEANLINE_SPARK_MIN_FILES.

Targets: driver peak RSS grows less than 10% from 0.5M to 2M files and from 2M to 10M (lake
tables); planning time 2M/0.5M at most 4.4 and 10M/2M at most 5.5 on the cluster; the local
engine's peak memory grows less than 25% from 0.5M to 2M files; the 2M and 10M plans reviewable
within 60 s after planning, each page under 300 ms; the cluster's clean at least 0.5x the unlink
loop's files/s.
Run: `.venv/bin/python bench/scale.py [--small N] [--large N] [--lake-small N] [--lake N]
[--repeat N] [--json] [--record]` (about 40 minutes on two cores; tables on /dev/shm unless
--dir)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))
# the cluster's daemons and executors (started with this process's environment) run this checkout
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402

django.setup()

from django.contrib.auth.models import Group, User  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment, teardown_test_environment  # noqa: E402
from django.urls import reverse  # noqa: E402

from bench.common import (  # noqa: E402
    BASE_BYTES,
    MDT_RECORD_SCHEMA,
    CleanShape,
    argument_parser,
    avro_schema,
    base_name,
    bench_root,
    cow_v6_props,
    file_ids,
    file_system_of,
    generate_clean_table,
    instant_at,
    machine,
    new_table,
    partition_name,
    progress,
    publish,
    put_back,
    target_lines,
    target_text,
    timed,
    write_file,
    write_partition_metadata,
    write_versions,
)
from console import services  # noqa: E402
from tests.helpers import StandaloneCluster  # noqa: E402
from timeline import HudiTable  # noqa: E402
from timeline.clean.config import CleanConfig  # noqa: E402
from timeline.clean.executor import schedule_clean  # noqa: E402
from timeline.instant import Instant, State  # noqa: E402
from timeline.internal.plan_store import StoredPlan  # noqa: E402
from timeline.spark.writer.create import create_table  # noqa: E402
from timeline.storage import storage_for  # noqa: E402

SECTION_BEGIN = "<!-- bench/scale.py: begin -->"
SECTION_END = "<!-- bench/scale.py: end -->"
FILES_PER_PARTITION = 500
RSS_GROWTH_LIMIT = 0.10
TIME_RATIO_LIMIT = 4.4
LAKE_TIME_RATIO_LIMIT = 5.5       # 10M/2M: linear, with a little room
LOCAL_RSS_GROWTH_LIMIT = 0.25     # the local engine, 0.5M -> 2M files
REVIEWABLE_LIMIT_S = 60.0
PAGE_LIMIT_MS = 300.0
EXECUTION_VS_UNLINK_MIN = 0.5
CROSSOVER_FILES = (20_000, 50_000, 100_000, 200_000, 400_000)
CONFIG = CleanConfig(commits_retained=3)

# A driver process on the cluster: plan one or more tables into stores, or run a table's pending
# clean; prints one JSON line per command. Planning times exclude the session's start.
DRIVER = """
import json, os, sys, time
from timeline.clean.config import CleanConfig
from timeline.spark.clean import plan_clean_spark_stored, run_pending_cleans_spark
from timeline.spark.session import spark_session

def own_peak_kib():
    # VmHWM: this process's own peak resident memory. Not getrusage's ru_maxrss, which a process
    # started by fork and exec inherits from its parent (the bench process, which held the
    # generated table: its size, not the driver's, showed there).
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

def jvm_peak_kib():
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if pid.isdigit() and int(fields[1]) == os.getpid():
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            return int(line.split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return 0

master, commands = sys.argv[1], json.loads(sys.argv[2])
started = time.perf_counter()
spark = spark_session(master=master, app_name="cleanline-scale",
                      conf={"spark.executor.memory": "1g", "spark.driver.memory": "1g"})
spark.sparkContext.setLogLevel("ERROR")
spark.sparkContext.parallelize(range(1000), 4).map(lambda x: x).count()
print(json.dumps({"session_s": time.perf_counter() - started}), flush=True)
for what, path, folder in commands:
    began = time.perf_counter()
    if what == "plan":
        plan = plan_clean_spark_stored(spark, path, CleanConfig(commits_retained=3), folder)
        found = {"files": plan.files, "deletes": plan.files_to_delete, "parts": len(plan.parts)}
    else:
        (result,) = run_pending_cleans_spark(spark, path)  # sizes: read by the executors as they delete
        found = {"deleted": result.deleted, "gone": result.already_gone, "failed": result.failed}
    found.update(what=what, seconds=time.perf_counter() - began,
                 python_peak_kib=own_peak_kib(), jvm_peak_kib=jvm_peak_kib())
    print(json.dumps(found), flush=True)
spark.stop()
"""


# The local engine in a process of its own (a Celery worker without Spark): time and peak memory.
LOCAL = """
import json, sys, time
from timeline.clean.config import CleanConfig
from timeline.internal.plan_store import plan_clean_stored
from timeline import HudiTable
began = time.perf_counter()
plan = plan_clean_stored(HudiTable.open(sys.argv[1]), CleanConfig(commits_retained=3), sys.argv[2],
                         source="auto")  # the lake tables through their metadata table, as Hudi lists them
print(json.dumps({"seconds": time.perf_counter() - began, "files": plan.files, "listing": plan.listing,
                  "python_peak_kib": next(int(line.split()[1]) for line in open("/proc/self/status")
                                          if line.startswith("VmHWM:"))}))  # not ru_maxrss: see DRIVER
"""


def local_plan(path: str, folder: str) -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", LOCAL, path, folder], env={**os.environ, "PYTHONPATH": str(ROOT)},
                         cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if run.returncode != 0:
        raise RuntimeError(f"the local plan failed:\n{run.stderr[-4000:]}")
    found: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return found


def shape_of(files: int) -> CleanShape:
    return CleanShape(partitions=files // FILES_PER_PARTITION, groups=50, versions=10, trickle=0, hot=0, retained=3)


def drive(cluster: StandaloneCluster, commands: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """Run the driver once on the cluster; its JSON lines (the session's first)."""
    run = subprocess.run([sys.executable, "-c", DRIVER, cluster.url, json.dumps(commands)],
                         env={**cluster.env, "PYTHONPATH": str(ROOT)}, cwd=ROOT, capture_output=True, text=True,
                         timeout=3 * 3600)
    if run.returncode != 0:
        raise RuntimeError(f"the driver failed:\n{run.stderr[-4000:]}")
    return [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]


LAKE_FILES_PER_PARTITION = 1_000  # the lake tables: 100 file groups x 10 commits a partition
LAKE_SAMPLE_EVERY = 100           # every 100th partition's files are on storage too
LAKE_BASE_FILE = "files-0000-0_0-0-0_00000000000000010.hfile"


def lake_shape(files: int) -> CleanShape:
    return CleanShape(partitions=files // LAKE_FILES_PER_PARTITION, groups=100, versions=10, trickle=0, hot=0,
                      retained=3)


def generate_lake_table(base: str, shape: CleanShape, sample_every: int = LAKE_SAMPLE_EVERY) -> int:
    """A version 8 COPY_ON_WRITE table whose metadata table lists `shape.data_files` files while
    storage holds only a sample of them (where 10M real files do not fit this machine's inodes
    and tmpfs): every partition's folder and partition metadata, the files (and the commits'
    write stats) of every `sample_every`-th partition. The metadata table's `files` partition is
    one base HFile written at its initialisation instant `00000000000000010`, as Hudi's
    initialisation of the files partition writes it (bulk insert into HFile base files; 1 MB
    GZ blocks), listing every partition and file. Returns the files written to storage."""
    from timeline import transition
    from timeline.config import MDT_PARTITIONS, update_config
    from timeline.hfile import write_hfile
    from timeline.metadata.mdt_payload import (
        encode_record,
        files_record,
        partition_identifier,
        partition_list_record,
    )

    props = cow_v6_props("bench_lake_v8")
    props.update({"hoodie.table.version": "8", "hoodie.timeline.layout.version": "2",
                  "hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history"})
    timeline = new_table(base, props)
    schema = avro_schema(["city"])
    times = [instant_at(k) for k in range(shape.commits)]
    names = [partition_name(p) for p in range(shape.partitions)]
    for name in names:
        write_partition_metadata(f"{base}/{name}", times[0], 1)
    sampled = list(range(0, shape.partitions, sample_every))
    write_versions(base, timeline, schema, shape, sampled, list(enumerate(times)), {}, layout=2)
    mdt_base = f"{base}/.hoodie/metadata"
    create_table(storage_for(mdt_base)[0], mdt_base, {
        "hoodie.table.name": "bench_lake_v8_metadata", "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": "8", "hoodie.timeline.layout.version": "2", "hoodie.timeline.path": "timeline",
        "hoodie.timeline.history.path": "history", "hoodie.table.base.file.format": "HFILE",
        "hoodie.table.recordkey.fields": "key", "hoodie.populate.meta.fields": "false",
        "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload"})
    write_partition_metadata(f"{mdt_base}/files", "00000000000000010", 1)
    mdt_table = HudiTable.open(mdt_base)
    init = Instant("00000000000000010", "deltacommit", State.REQUESTED)
    transition.write_state(mdt_table, init, None)
    inflight = transition.start(mdt_table, init, None)
    cells = [(b"__all_partitions__", encode_record(partition_list_record(
        [partition_identifier(n) for n in names], deleted=False), MDT_RECORD_SCHEMA))]
    size = len(BASE_BYTES)
    for p, name in enumerate(names):  # city=NNNN sorts after __all_partitions__
        files = {base_name(file_id, g, k, t): size for k, t in enumerate(times)
                 for g, file_id in enumerate(file_ids(p, shape.groups))}
        cells.append((name.encode(), encode_record(files_record(name, added=files), MDT_RECORD_SCHEMA)))
    assert [c[0] for c in cells] == sorted(c[0] for c in cells)
    data = write_hfile(cells, [("schema", MDT_RECORD_SCHEMA.encode())], created_ms=0, block_size=1 << 20)
    del cells
    write_file(f"{mdt_base}/files/{LAKE_BASE_FILE}", data)
    transition.complete(mdt_table, inflight, None)
    update_config(storage_for(base)[0], base, {MDT_PARTITIONS: "files"})
    return len(sampled) * shape.groups * shape.versions


def generate_lake(root: str, files: int) -> str:
    return generate(root, files, lake=True)


def generate(root: str, files: int, *, lake: bool = False) -> str:
    """The table of `files` files under `root` (generated once): every file on storage, or with
    `lake` listed by its metadata table with a sample on storage (`generate_lake_table`)."""
    path = os.path.join(root, f"{'lake' if lake else 'table'}-{files}")
    if not os.path.exists(path):
        progress(f"generating a {files:,}-file table{' listed by its metadata table' if lake else ''} in {path}")
        elapsed, on_storage = timed(lambda: generate_lake_table(path, lake_shape(files)) if lake
                                    else generate_clean_table(path, shape_of(files)))
        progress(f"  generated in {elapsed:.0f} s" + (f" ({on_storage:,} of its files on storage)" if lake else ""))
    return path


def review(table_path: str, folder: str, repeat: int) -> dict[str, Any]:
    """Keep the stored plan's totals on a plan row, then request its review pages."""
    from django.conf import settings
    from django.db import connection

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    settings.CLEANLINE_ALLOWED_ROOTS = [os.path.dirname(table_path)]
    try:
        from console.models import CleanPlan

        table = services.table_register(path=table_path, user=None)
        services.table_sync(table=table)
        plan = CleanPlan.objects.create(table=table, settings=CONFIG.as_properties(), policy=CONFIG.policy.value)
        user = User.objects.create_user("bench", password="pw")
        user.groups.add(Group.objects.get(name="viewer"))
        client = Client()
        client.force_login(user)
        started = time.perf_counter()
        stored = StoredPlan.open(folder)
        services.plan_store(plan=plan, stored=stored, warnings=[])
        partition = stored.sums[len(stored.sums) // 2].partition
        name = next(stored.deletes()).file_name
        base = reverse("console:plan", args=[table.pk, plan.pk])
        urls = {"totals and first page": base, "a partition": f"{base}?show=delete&partition={partition}",
                "a file-name search": f"{base}?show=all&q={name[:8]}"}
        first = {}
        for label, url in urls.items():
            began = time.perf_counter()
            response = client.get(url)
            first[label] = (time.perf_counter() - began) * 1000
            assert response.status_code == 200, (url, response.status_code)
        reviewable_s = time.perf_counter() - started
        pages = {}
        for label, url in urls.items():
            samples = []
            for _ in range(repeat):
                began = time.perf_counter()
                client.get(url)
                samples.append((time.perf_counter() - began) * 1000)
            pages[label] = {"first_ms": first[label], "median_ms": statistics.median(samples), "max_ms": max(samples)}
        return {"reviewable_s": reviewable_s, "pages": pages}
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()  # reviewed again for the next plan


def execution(cluster: StandaloneCluster, path: str, folder: str) -> dict[str, Any]:
    """Schedule the plan's clean, delete its files with a raw unlink loop (timed, then put
    back), then run the clean on the cluster."""
    stored = StoredPlan.open(folder)
    table = HudiTable.open(path)
    progress("scheduling the clean from the plan store")
    schedule_s, clean = timed(lambda: schedule_clean(table, stored.to_clean_plan(), CONFIG, force=True))
    assert clean is not None
    files = [(r.partition, r.file_name) for r in stored.deletes()]
    paths = [f"{path}/{p}/{n}" for p, n in files]
    progress(f"raw unlink loop over {len(paths):,} files")
    unlink = os.unlink
    began = time.perf_counter()
    for p in paths:
        unlink(p)
    unlink_s = time.perf_counter() - began
    put_back(path, files)
    progress("the clean on the cluster")
    session, ran = drive(cluster, [("run", path, folder)])
    assert ran["deleted"] == len(paths) and not ran["failed"], ran
    return {"files": len(paths), "schedule_s": schedule_s, "unlink_s": unlink_s, "cluster_s": ran["seconds"],
            "unlink_files_per_s": len(paths) / unlink_s, "cluster_files_per_s": len(paths) / ran["seconds"],
            "ratio": unlink_s / ran["seconds"], "session_s": session["session_s"]}


def crossover(cluster: StandaloneCluster, root: str, sizes: Sequence[int]) -> dict[str, Any]:
    """Local engine against the cluster (warm session) on smaller tables."""
    paths = {files: generate(root, files) for files in sizes}
    progress("crossover: the cluster plans each table (warm session)")
    found = drive(cluster, [("plan", p, os.path.join(root, "store", f"cross-{n}")) for n, p in paths.items()])[1:]
    rows = []
    for (files, path), remote in zip(paths.items(), found, strict=True):
        table = HudiTable.open(path)
        services_ = table.maintenance()
        services_.plan_clean_stored(CONFIG, os.path.join(root, "store", f"warm-{files}"), enforce_retention=False)
        local_s, _ = timed(lambda: services_.plan_clean_stored(  # noqa: B023
            CONFIG, os.path.join(root, "store", f"local-{files}"), enforce_retention=False))  # noqa: B023
        rows.append({"files": files, "local_s": local_s, "cluster_s": remote["seconds"]})
        progress(f"  {files:,} files: local {local_s:.2f} s, cluster {remote['seconds']:.2f} s")
    faster = [r["files"] for r in rows if r["cluster_s"] < r["local_s"]]
    return {"rows": rows, "crossover_files": min(faster) if faster else None}


def run(small: int, large: int, repeat: int, directory: str | None, keep: bool,
        crossover_files: Sequence[int] = CROSSOVER_FILES,
        lake_sizes: tuple[int, int] = (2_000_000, 10_000_000)) -> dict[str, Any]:
    root, created = bench_root(directory)
    cluster = StandaloneCluster(Path(root) / "cluster").start()
    try:
        planned = {files: plan_both(cluster, root, generate(root, files), files, "plan")
                   for files in (small, large)}
        lakes = {files: plan_both(cluster, root, generate_lake(root, files), files, "lake")
                 for files in lake_sizes}
        large_path, large_folder = os.path.join(root, f"table-{large}"), os.path.join(root, "store", f"plan-{large}")
        progress("reviewing the large plan in the console")
        reviewed = review(large_path, large_folder, repeat)
        progress(f"reviewing the {lake_sizes[1]:,}-file plan in the console")
        lake_reviewed = review(os.path.join(root, f"lake-{lake_sizes[1]}"),
                               os.path.join(root, "store", f"lake-{lake_sizes[1]}"), repeat)
        executed = execution(cluster, large_path, large_folder)
        crossed = crossover(cluster, root, crossover_files)
    finally:
        cluster.stop()
        if created and not keep:
            shutil.rmtree(root, ignore_errors=True)
    targets = plan_targets(planned, small, large, TIME_RATIO_LIMIT, "")
    targets += plan_targets(lakes, *lake_sizes, LAKE_TIME_RATIO_LIMIT, " (lake tables, through the metadata table)")
    a, b = planned[small]["local"], planned[large]["local"]
    local_growth = b["python_peak_kib"] / a["python_peak_kib"] - 1
    targets.append({"target": f"the local engine's peak memory grows less than {LOCAL_RSS_GROWTH_LIMIT:.0%} from "
                              f"{small:,} to {large:,} files",
                    "value": f"{local_growth:+.1%} ({a['python_peak_kib'] / 1024:.0f} -> "
                             f"{b['python_peak_kib'] / 1024:.0f} MiB)",
                    "passed": local_growth < LOCAL_RSS_GROWTH_LIMIT})
    for files, seen in ((large, reviewed), (lake_sizes[1], lake_reviewed)):
        targets.append({"target": f"the {files:,}-file plan reviewable within {REVIEWABLE_LIMIT_S:.0f} s after "
                                  "planning", "value": f"{seen['reviewable_s']:.2f} s",
                        "passed": seen["reviewable_s"] <= REVIEWABLE_LIMIT_S})
        targets += [{"target": f"{files:,} files: {label} under {PAGE_LIMIT_MS:.0f} ms (median)",
                     "value": f"{p['median_ms']:.0f} ms", "passed": p["median_ms"] < PAGE_LIMIT_MS}
                    for label, p in seen["pages"].items()]
    targets.append({"target": f"cluster clean at least {EXECUTION_VS_UNLINK_MIN}x the unlink loop's files/s",
                    "value": f"{executed['ratio']:.2f}x ({executed['cluster_files_per_s']:,.0f} vs "
                             f"{executed['unlink_files_per_s']:,.0f} files/s)",
                    "passed": executed["ratio"] >= EXECUTION_VS_UNLINK_MIN})
    return {"machine": machine(), "file_system": file_system_of(root), "planned": planned, "lakes": lakes,
            "review": reviewed, "lake_review": lake_reviewed, "execution": executed, "crossover": crossed,
            "targets": targets, "small": small, "large": large, "lake_sizes": list(lake_sizes)}


def plan_both(cluster: StandaloneCluster, root: str, path: str, files: int, kind: str) -> dict[str, Any]:
    """Plan a table on the cluster (a driver process of its own) and by the local engine (a
    process of its own), each into a plan store."""
    progress(f"planning {files:,} files on the cluster")
    session, result = drive(cluster, [("plan", path, os.path.join(root, "store", f"{kind}-{files}"))])
    assert result["files"] == files, result
    local = local_plan(path, os.path.join(root, "store", f"{kind}-local-{files}"))
    assert local["files"] == files, local
    progress(f"  {result['seconds']:.1f} s, driver peak {result['python_peak_kib'] / 1024:.0f} MiB; the local "
             f"engine {local['seconds']:.1f} s, peak {local['python_peak_kib'] / 1024:.0f} MiB")
    return {**result, "session_s": session["session_s"], "local": local}


def plan_targets(planned: dict[int, dict[str, Any]], small: int, large: int, limit: float, what: str
                 ) -> list[dict[str, Any]]:
    a, b = planned[small], planned[large]
    growth = b["python_peak_kib"] / a["python_peak_kib"] - 1
    ratio = b["seconds"] / a["seconds"]
    return [
        {"target": f"driver peak RSS grows less than {RSS_GROWTH_LIMIT:.0%} from {small:,} to {large:,} files{what}",
         "value": f"{growth:+.1%} ({a['python_peak_kib'] / 1024:.0f} -> {b['python_peak_kib'] / 1024:.0f} MiB)",
         "passed": growth < RSS_GROWTH_LIMIT},
        {"target": f"cluster planning time {large:,}/{small:,} at most {limit}{what}",
         "value": f"{ratio:.2f} ({a['seconds']:.1f} s -> {b['seconds']:.1f} s)", "passed": ratio <= limit}]


def crossover_estimate(result: dict[str, Any]) -> float | None:
    """Where the cluster overtakes the local engine: the first measured size at which it is
    faster, else the meeting point of the straight lines through the two large tables' times
    (None when the cluster is never faster)."""
    if result["crossover"]["crossover_files"] is not None:
        return float(result["crossover"]["crossover_files"])
    (n1, a), (n2, b) = sorted((int(k), v) for k, v in result["planned"].items())
    local = (b["local"]["seconds"] - a["local"]["seconds"]) / (n2 - n1)
    cluster = (b["seconds"] - a["seconds"]) / (n2 - n1)
    if local <= cluster:
        return None
    gap = (a["seconds"] - a["local"]["seconds"])  # the cluster's extra time at n1
    return n1 + gap / (local - cluster)


def text_report(result: dict[str, Any]) -> str:
    lines = [f"Scale benchmark on a 2-worker standalone cluster ({result['file_system']})"]
    for kind, tables in (("plan", result["planned"]), ("lake", result["lakes"])):
        for files, p in tables.items():
            lines.append(f"{kind} {int(files):>10,} files: cluster {p['seconds']:7.1f} s, driver peak "
                         f"{p['python_peak_kib'] / 1024:6.0f} MiB (JVM {p['jvm_peak_kib'] / 1024:.0f} MiB), "
                         f"{p['parts']} parts; local {p['local']['seconds']:.1f} s, peak "
                         f"{p['local']['python_peak_kib'] / 1024:.0f} MiB ({p['local']['listing']})")
    for files, seen in ((result["large"], result["review"]), (result["lake_sizes"][1], result["lake_review"])):
        lines.append(f"{files:,}-file plan reviewable after {seen['reviewable_s']:.2f} s")
        lines += [f"  {label:<24} first {p['first_ms']:6.0f} ms, median {p['median_ms']:6.0f} ms"
                  for label, p in seen["pages"].items()]
    e = result["execution"]
    lines.append(f"clean of {e['files']:,} files: cluster {e['cluster_s']:.1f} s, unlink loop {e['unlink_s']:.1f} s "
                 f"({e['ratio']:.2f}x); scheduled in {e['schedule_s']:.1f} s")
    lines += [f"crossover {r['files']:>8,} files: local {r['local_s']:.2f} s, cluster {r['cluster_s']:.2f} s"
              for r in result["crossover"]["rows"]]
    estimate = crossover_estimate(result)
    lines.append(f"cluster faster from about {estimate:,.0f} files" if estimate is not None
                 else "the cluster was not faster at any size measured, nor on the lines through the large tables")
    return "\n".join([*lines, "", *target_text(result["targets"])]) + "\n"


def plan_rows(tables: dict[Any, dict[str, Any]], what: str) -> list[str]:
    lines = []
    for files, p in tables.items():
        lines.append(f"| plan of {int(files):,} files{what} on the cluster ({p['parts']} parts) | "
                     f"{p['seconds']:.1f} s, driver peak {p['python_peak_kib'] / 1024:.0f} MiB "
                     f"(its JVM {p['jvm_peak_kib'] / 1024:.0f} MiB) |")
        lines.append(f"| plan of {int(files):,} files{what} by the local engine (a process of its own) | "
                     f"{p['local']['seconds']:.1f} s, peak {p['local']['python_peak_kib'] / 1024:.0f} MiB |")
    return lines


def markdown_section(result: dict[str, Any]) -> str:
    m = result["machine"]
    lake_small, lake_large = result["lake_sizes"]
    lines = [SECTION_BEGIN, "## Multi-million-file plans and cleans on a cluster (`bench/scale.py`)", "",
             f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, tables on "
             f"{result['file_system']}. A standalone cluster (master and two one-core workers, 1 GiB executors) "
             "on the same machine; each plan by a driver process of its own, executors writing the plan store; "
             "times exclude the session's start. The local engine plans partition by partition into the store, "
             "in a process of its own.", "",
             f"The lake tables ({lake_small:,} and {lake_large:,} files, {LAKE_FILES_PER_PARTITION:,} a partition, "
             "version 8) are listed by their metadata table: its `files` partition (one base HFile, as Hudi's "
             "initialisation writes it) lists every file, while storage holds every partition's folder but only "
             f"every {LAKE_SAMPLE_EVERY}th partition's files ({lake_large // LAKE_SAMPLE_EVERY:,} of the "
             f"{lake_large:,}): 10M real files do not fit this machine's tmpfs and inodes. Both engines plan them "
             "through the metadata table (auto, Hudi's choice); nothing per file is read from storage. Their "
             "commits' write stats name the sampled partitions' files only (a full plan does not read them).", "",
             "| measurement | result |", "|---|---:|",
             *plan_rows(result["planned"], ""), *plan_rows(result["lakes"], " (lake, metadata table)")]
    for files, seen in ((result["large"], result["review"]), (lake_large, result["lake_review"])):
        lines.append(f"| {files:,}-file plan reviewable after planning | {seen['reviewable_s']:.2f} s |")
        lines += [f"| {files:,}-file plan, page: {label} | first {p['first_ms']:.0f} ms, median "
                  f"{p['median_ms']:.0f} ms |" for label, p in seen["pages"].items()]
    e = result["execution"]
    lines += [f"| clean of {e['files']:,} files on the cluster | {e['cluster_s']:.1f} s "
              f"({e['cluster_files_per_s']:,.0f} files/s) |",
              f"| the same files, raw `os.unlink` loop | {e['unlink_s']:.1f} s "
              f"({e['unlink_files_per_s']:,.0f} files/s) |",
              f"| the clean scheduled from the store (`<t>.clean.requested`) | {e['schedule_s']:.1f} s |"]
    lines += [f"| crossover, {r['files']:,} files: local engine / cluster | "
              f"{r['local_s']:.2f} s / {r['cluster_s']:.2f} s |"
              for r in result["crossover"]["rows"]]
    estimate = crossover_estimate(result)
    where = (f"the cluster overtakes it at about {estimate:,.0f} files (the first size measured faster, or where the "
             "straight lines through the two large tables' times meet)" if estimate is not None else
             "in this run the cluster was never faster, not even on the lines through the two large tables' times "
             "(the machine's two cores also run the cluster's JVMs)")
    lines += ["", f"The local engine plans faster at every crossover size; {where}; warm session, a new one costs "
              f"about {result['execution']['session_s']:.0f} s more. Neither engine's memory grows with the "
              "listing now: the local engine lists, plans and writes a partition at a time (a top folder of "
              "storage, or a key of the metadata table's stream); CLEANLINE_SPARK_MIN_FILES is left at 1,000,000 "
              "(a choice of speed only now).", "", *target_lines(result["targets"]), SECTION_END]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__, tables="tables and plan stores", repeat=5, repeat_help="requests per page")
    parser.add_argument("--small", type=int, default=500_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    parser.add_argument("--lake-small", type=int, default=2_000_000,
                        help="files of the smaller table listed by its metadata table")
    parser.add_argument("--lake", type=int, default=10_000_000,
                        help="files of the larger table listed by its metadata table")
    parser.add_argument("--crossover", default=",".join(map(str, CROSSOVER_FILES)),
                        help="comma-separated table sizes (files) of the crossover measurement")
    args = parser.parse_args(argv)
    result = run(args.small, args.large, args.repeat, args.dir, args.keep,
                 [int(n) for n in args.crossover.split(",") if n.strip()], (args.lake_small, args.lake))
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0 if all(t["passed"] for t in result["targets"]) else 1


if __name__ == "__main__":
    sys.exit(main())
