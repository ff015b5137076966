"""File-system view and timeline-load benchmark, measured side by side in one run.

Generates real local tables (a v6 COW table and a v8 MOR table with >= 1,000 partitions and
>= 100,000 data files each, and active timelines of 10,000 and 100,000 instants in both
timeline layouts), then times, best of N after one warm-up pass:

- ours:    `HudiTable.open(path).file_system_view().latest_slices()`
- hudi-rs: `hudi.HudiTable(path).get_file_slices()`
- raw:     an `os.scandir` walk collecting (name, size) of every file outside `.hoodie`
- our timeline load, `HudiTable.open(path).timeline`, against a raw scandir+stat of the
  timeline folder.

Usage (from the repository root):

    .venv/bin/python bench/fsview.py                 # generate, measure, print, clean up
    .venv/bin/python bench/fsview.py --json          # results as JSON on stdout
    .venv/bin/python bench/fsview.py --record        # also update bench/RESULTS.md
    .venv/bin/python bench/fsview.py --profile       # cProfile of our file_system_view()
    .venv/bin/python bench/fsview.py --dir D --keep  # keep tables in D; later runs reuse them

Progress goes to stderr. The tables are created with the library's `create_table` and filled
with plain `os` calls (the generator is not library code; its helpers are in bench/common.py).
By default they go to a fresh `tempfile.mkdtemp` on a RAM file system (`/dev/shm`) when there
is one, because creating ~900,000 files on this project's VM disk takes minutes; pass `--dir`
to measure another file system. Every figure is taken with warm caches (dropping OS caches
needs root).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:  # the checkout first, even beside PYTHONPATH: bench/console.py is no `console`
    sys.path.insert(0, str(ROOT))

import hudi  # noqa: E402

from bench.common import (  # noqa: E402
    BASE_BYTES,
    argument_parser,
    avro_schema,
    base_name,
    bench_root,
    commit_metadata,
    count_files,
    cow_v6_props,
    cprofile,
    file_ids,
    file_system_of,
    generate_timeline,
    instant_at,
    interleaved,
    machine,
    new_table,
    partition_name,
    profile_lines,
    profile_text,
    progress,
    publish,
    raw_walk,
    target_lines,
    target_text,
    write_file,
    write_instant,
    write_partition_metadata,
)
from timeline import HudiTable, metadata  # noqa: E402
from timeline.instant import State  # noqa: E402

SECTION_BEGIN = "<!-- bench/fsview.py: begin -->"
SECTION_END = "<!-- bench/fsview.py: end -->"
MANIFEST = "bench-manifest.json"

VIEW_TABLES = ("cow_v6", "mor_v8")
LOG_BYTES = b"#HUDI#"

# Limits of the targets.
VIEW_VS_RAW_LIMIT = 2.0
TIMELINE_10K_LIMIT_S = 0.15


# ----------------------------------------------------------------------------------------
# Generation


@dataclass(frozen=True, slots=True)
class Shape:
    """What the generator writes: `partitions` x `groups` file groups, each with `slices`
    data files (COW: one base file per commit; MOR: base, logs, compaction base, logs)."""

    partitions: int = 1000
    groups: int = 10
    slices: int = 10
    instants: tuple[int, ...] = (10_000, 100_000)


def generate_cow_v6(base: str, shape: Shape) -> None:
    """Table version 6, COPY_ON_WRITE, hive-style partitions `city=0000`..; `shape.slices`
    commits, each rewriting every file group (one new base file per group per commit)."""
    timeline = new_table(base, cow_v6_props("bench_cow_v6"))
    commits = [instant_at(k) for k in range(shape.slices)]
    content = metadata.encode(commit_metadata(avro_schema(["city"]), "UPSERT"),
                              action="commit", state=State.COMPLETED, layout=1)
    for time_ in commits:
        write_instant(timeline, time_, "commit", content, layout=1)
    for p in range(shape.partitions):
        folder = f"{base}/{partition_name(p)}"
        write_partition_metadata(folder, commits[0], 1)
        for g, file_id in enumerate(file_ids(p, shape.groups)):
            for k, time_ in enumerate(commits):
                write_file(f"{folder}/{base_name(file_id, g, k, time_)}", BASE_BYTES)


def mor_plan(slices: int) -> tuple[list[tuple[str, str, str | None]], str, int]:
    """The MOR table's writes in order: (kind, requested time, completion time) with kind
    `base` (the first deltacommit inserts base files), `log` (a deltacommit appending one log
    file per group) or `compaction`; the compaction sits in the middle. The deltacommit just
    before it completes *after* the compaction was requested, so (table version 8) its logs
    belong to the compaction's slice. Returns the plan, the compaction time and the index of
    the compaction."""
    compaction_index = max(1, slices // 2)
    plan: list[tuple[str, str, str | None]] = []
    for k in range(slices):
        kind = "base" if k == 0 else "compaction" if k == compaction_index else "log"
        completion = instant_at(k + 0.5)
        if k == compaction_index - 1 and k > 0:
            completion = instant_at(k + 1.7)   # finishes after the compaction (k + 1.5)
        plan.append((kind, instant_at(k), completion))
    return plan, instant_at(compaction_index), compaction_index


def generate_mor_v8(base: str, shape: Shape) -> None:
    """Table version 8, MERGE_ON_READ, partitions `yyyy/mm/dd` (three fields, not hive
    style); deltacommits writing base files then v8 log files (named by the deltacommit that
    wrote them), one compaction in the middle, all completed."""
    timeline = new_table(base, {
        "hoodie.table.name": "bench_mor_v8", "hoodie.database.name": "default",
        "hoodie.table.type": "MERGE_ON_READ", "hoodie.table.version": "8",
        "hoodie.table.initial.version": "8", "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.path": "timeline", "hoodie.timeline.history.path": "history",
        "hoodie.table.partition.fields": "year,month,day",
        "hoodie.table.recordkey.fields": "id", "hoodie.table.precombine.field": "ts",
        "hoodie.table.base.file.format": "PARQUET", "hoodie.table.log.file.format": "HOODIE_LOG",
        "hoodie.table.keygenerator.type": "COMPLEX", "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
        "hoodie.populate.meta.fields": "true", "hoodie.table.metadata.partitions": "",
    })
    schema = avro_schema(["year", "month", "day"])
    plan, _, _ = mor_plan(shape.slices)
    delta = metadata.encode(commit_metadata(schema, "UPSERT"), action="deltacommit",
                            state=State.COMPLETED, layout=2)
    compacted = metadata.encode(commit_metadata(schema, "COMPACT", compacted=True), action="commit",
                                state=State.COMPLETED, layout=2)
    compaction_plan = metadata.encode({"operations": [], "version": 2}, action="compaction",
                                      state=State.REQUESTED, layout=2)
    for kind, time_, completion in plan:
        if kind == "compaction":
            write_file(f"{timeline}/{time_}.compaction.requested", compaction_plan)
            write_file(f"{timeline}/{time_}.compaction.inflight")
            write_file(f"{timeline}/{time_}_{completion}.commit", compacted)
        else:
            write_instant(timeline, time_, "deltacommit", delta, layout=2, completion=completion)
    for p in range(shape.partitions):
        year, rest = divmod(p, 250)
        folder = f"{base}/{2023 + year}/{rest // 25 + 1:02d}/{rest % 25 + 1:02d}"
        write_partition_metadata(folder, plan[0][1], 3)
        for g, file_id in enumerate(file_ids(p, shape.groups)):
            for k, (kind, time_, _) in enumerate(plan):
                token = f"{g}-{10 + k}-{100 * k + g}"
                if kind == "log":
                    write_file(f"{folder}/.{file_id}_{time_}.log.1_{token}", LOG_BYTES)
                else:
                    write_file(f"{folder}/{file_id}_{token}_{time_}.parquet", BASE_BYTES)


@dataclass(frozen=True, slots=True)
class TableSpec:
    name: str
    kind: str            # "view" or "timeline"
    params: dict[str, Any]
    build: Callable[[str], None]


def table_specs(shape: Shape) -> list[TableSpec]:
    specs = [
        TableSpec("cow_v6", "view", {"partitions": shape.partitions, "groups": shape.groups,
                                     "slices": shape.slices, "rev": 1},
                  lambda base: generate_cow_v6(base, shape)),
        TableSpec("mor_v8", "view", {"partitions": shape.partitions, "groups": shape.groups,
                                     "slices": shape.slices, "rev": 1},
                  lambda base: generate_mor_v8(base, shape)),
    ]
    for instants in shape.instants:
        for layout in (1, 2):
            specs.append(TableSpec(
                f"timeline_l{layout}_{instants}", "timeline", {"instants": instants, "layout": layout, "rev": 1},
                lambda base, n=instants, lay=layout: generate_timeline(base, n, lay)))
    return specs


def read_manifest(root: str) -> dict[str, Any]:
    try:
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as handle:
            loaded: dict[str, Any] = json.load(handle)
            return loaded
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def write_manifest(root: str, manifest: dict[str, Any]) -> None:
    with open(os.path.join(root, MANIFEST), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)


def generate(root: str, specs: Sequence[TableSpec]) -> dict[str, float]:
    """Write every table under `root`, reusing tables a previous `--keep` run completed with
    the same parameters. Returns seconds spent per generated table."""
    manifest = read_manifest(root)
    spent: dict[str, float] = {}
    for spec in specs:
        base = os.path.join(root, spec.name)
        if manifest.get(spec.name) == spec.params and os.path.isdir(base):
            progress(f"reusing {base}")
            continue
        if os.path.exists(base):
            shutil.rmtree(base)
        started = time.perf_counter()
        spec.build(base)
        spent[spec.name] = time.perf_counter() - started
        manifest[spec.name] = spec.params
        write_manifest(root, manifest)
        progress(f"generated {spec.name} in {spent[spec.name]:.1f} s")
    return spent


def remove_tables(root: str, specs: Sequence[TableSpec], *, created_root: bool) -> None:
    for spec in specs:
        shutil.rmtree(os.path.join(root, spec.name), ignore_errors=True)
    try:
        os.unlink(os.path.join(root, MANIFEST))
    except FileNotFoundError:
        pass
    if created_root:
        shutil.rmtree(root, ignore_errors=True)


# ----------------------------------------------------------------------------------------
# The contenders


def ours_view(path: str) -> list[Any]:
    return HudiTable.open(path).file_system_view().latest_slices()


def hudi_rs_view(path: str) -> list[Any]:
    return hudi.HudiTable(path).get_file_slices()


def ours_timeline(path: str) -> Any:
    return HudiTable.open(path).timeline


def raw_timeline(folder: str) -> list[tuple[str, int]]:
    with os.scandir(folder) as entries:
        return [(e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in entries]


def slice_key_ours(s: Any) -> tuple[Any, ...]:
    return (s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
            tuple(log.name for log in s.log_files))


def slice_key_hudi_rs(s: Any) -> tuple[Any, ...]:
    return (s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name or None,
            tuple(s.log_file_names))


def expected_latest(spec: TableSpec) -> tuple[int, int]:
    """(number of latest slices, files in each latest slice) the generator implies."""
    p = spec.params
    groups = p["partitions"] * p["groups"]
    if spec.name == "cow_v6":
        return groups, 1
    plan, _, compaction_index = mor_plan(p["slices"])
    # compaction base + the late deltacommit's log + every log after the compaction
    logs_after = sum(1 for kind, _, _ in plan[compaction_index + 1:] if kind == "log")
    late = 1 if compaction_index - 1 > 0 else 0
    return groups, 1 + logs_after + late


# ----------------------------------------------------------------------------------------
# Timing


def tables(root: str, specs: Sequence[TableSpec], kind: str) -> Iterator[tuple[TableSpec, str]]:
    """The specs of one kind, each with its table's path."""
    for spec in specs:
        if spec.kind == kind:
            yield spec, os.path.join(root, spec.name)


def run_views(root: str, specs: Sequence[TableSpec], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    contenders: dict[str, Callable[[], Any]] = {}
    for spec, path in tables(root, specs, "view"):
        data_files, partitions = count_files(path)
        progress(f"{spec.name}: warm-up and cross-check ({data_files:,} data files, {partitions:,} partitions)")
        ours = sorted(slice_key_ours(s) for s in ours_view(path))
        theirs = sorted(slice_key_hudi_rs(s) for s in hudi_rs_view(path))
        raw_walk(path)
        want_slices, want_files = expected_latest(spec)
        assert len(ours) == len(theirs), f"{spec.name}: ours {len(ours)} slices, hudi-rs {len(theirs)}"
        assert len(ours) == want_slices, f"{spec.name}: {len(ours)} slices, expected {want_slices}"
        files_per_slice = {1 + len(s[4]) if s[3] else len(s[4]) for s in ours}
        assert files_per_slice == {want_files}, f"{spec.name}: files per slice {files_per_slice}, expected {want_files}"
        first_difference = next(((a, b) for a, b in zip(ours, theirs) if a != b), None)
        if first_difference:
            progress(f"{spec.name}: slices differ, first: ours {first_difference[0]} hudi-rs {first_difference[1]}")
        results[spec.name] = {
            "partitions": partitions, "data_files": data_files, "latest_slices": len(ours),
            "files_per_latest_slice": want_files, "same_slices_as_hudi_rs": ours == theirs,
        }
        contenders[f"{spec.name}/ours"] = partial(ours_view, path)
        contenders[f"{spec.name}/hudi-rs"] = partial(hudi_rs_view, path)
        contenders[f"{spec.name}/raw"] = partial(raw_walk, path)
        del ours, theirs
    progress(f"timing file-system views, best of {repeat}")
    timings = interleaved(contenders, repeat, warm_up=False)
    for name, entry in results.items():
        sizes = timings[f"{name}/ours"].sizes, timings[f"{name}/hudi-rs"].sizes
        assert sizes[0] == sizes[1] == {entry["latest_slices"]}, f"{name}: slice counts {sizes}"
        ours_s = timings[f"{name}/ours"].best
        rs_s = timings[f"{name}/hudi-rs"].best
        raw_s = timings[f"{name}/raw"].best
        entry.update({
            "ours_s": ours_s, "hudi_rs_s": rs_s, "raw_s": raw_s,
            "ours_runs_s": timings[f"{name}/ours"].runs, "hudi_rs_runs_s": timings[f"{name}/hudi-rs"].runs,
            "raw_runs_s": timings[f"{name}/raw"].runs,
            "ours_over_raw": ours_s / raw_s, "hudi_rs_over_raw": rs_s / raw_s, "ours_over_hudi_rs": ours_s / rs_s,
        })
    return results


def run_timelines(root: str, specs: Sequence[TableSpec], repeat: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    contenders: dict[str, Callable[[], Any]] = {}
    for spec, path in tables(root, specs, "timeline"):
        folder = f"{path}/.hoodie/timeline" if spec.params["layout"] == 2 else f"{path}/.hoodie"
        loaded = ours_timeline(path)
        assert len(loaded) == spec.params["instants"], f"{spec.name}: {len(loaded)} instants loaded"
        files = len(raw_timeline(folder))
        del loaded
        results[spec.name] = {"instants": spec.params["instants"], "layout": spec.params["layout"],
                              "timeline_files": files}
        contenders[f"{spec.name}/ours"] = partial(ours_timeline, path)
        contenders[f"{spec.name}/raw"] = partial(raw_timeline, folder)
    progress(f"timing timeline loads, best of {repeat}")
    timings = interleaved(contenders, repeat, warm_up=False)
    for name, entry in results.items():
        ours_s, raw_s = timings[f"{name}/ours"].best, timings[f"{name}/raw"].best
        entry.update({"ours_s": ours_s, "raw_s": raw_s, "ours_runs_s": timings[f"{name}/ours"].runs,
                      "ours_over_raw": ours_s / raw_s})
    return results


def targets(views: dict[str, Any], timelines: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for name, r in views.items():
        found.append({"target": f"{name}: our view faster than hudi-rs get_file_slices",
                      "value": f"ours/hudi-rs = {r['ours_over_hudi_rs']:.2f}", "passed": r["ours_s"] < r["hudi_rs_s"]})
        found.append({"target": f"{name}: our view within {VIEW_VS_RAW_LIMIT:g}x of the raw walk",
                      "value": f"ours/raw = {r['ours_over_raw']:.2f}",
                      "passed": r["ours_over_raw"] <= VIEW_VS_RAW_LIMIT})
    for name, r in timelines.items():
        if r["instants"] == 10_000:
            found.append({"target": f"{name}: 10,000-instant timeline (layout {r['layout']}) loaded in under "
                                    f"{TIMELINE_10K_LIMIT_S} s",
                          "value": f"{r['ours_s']:.3f} s", "passed": r["ours_s"] < TIMELINE_10K_LIMIT_S})
    return found


def best_of(fn: Callable[[], Any], repeat: int, *, pause_gc: bool = False) -> float:
    """Best wall-clock time of `repeat` calls after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        if pause_gc:
            gc.disable()
        try:
            started = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
        del result
    return best


def profile(root: str, specs: Sequence[TableSpec], repeat: int, top: int) -> dict[str, Any]:
    """Where our time goes: wall-clock phases without a profiler (config, timeline, listing,
    view from a listing; the whole view with the garbage collector paused), then cProfile of
    `HudiTable.open(path).file_system_view()` and of the 10,000-instant timeline loads."""
    found: dict[str, Any] = {}
    for spec in specs:
        path = os.path.join(root, spec.name)
        if spec.kind == "view":
            table = HudiTable.open(path)
            table.timeline  # noqa: B018 - loaded once for the listing/view phases
            listing = table.list_partitions()
            phases = {
                "open (hoodie.properties)": best_of(lambda: HudiTable.open(path), repeat),
                "open + timeline load": best_of(lambda: HudiTable.open(path).timeline, repeat),
                "list_partitions": best_of(table.list_partitions, repeat),
                "file_system_view(listing=...).latest_slices()":
                    best_of(lambda: table.file_system_view(listing=listing).latest_slices(), repeat),
                "whole view": best_of(lambda: ours_view(path), repeat),
                "whole view, gc paused": best_of(lambda: ours_view(path), repeat, pause_gc=True),
                "raw walk": best_of(lambda: raw_walk(path), repeat),
            }
            del table, listing
            found[spec.name] = {"phases": phases,
                                **cprofile(lambda: HudiTable.open(path).file_system_view(), top)}
        elif spec.params["instants"] == 10_000:
            phases = {
                "open + timeline load": best_of(lambda: ours_timeline(path), repeat),
                "open + timeline load, gc paused": best_of(lambda: ours_timeline(path), repeat, pause_gc=True),
            }
            found[spec.name] = {"phases": phases, **cprofile(lambda: ours_timeline(path), top)}
    return found


# ----------------------------------------------------------------------------------------
# Reporting


def text_report(result: dict[str, Any]) -> str:
    out = io.StringIO()
    m = result["machine"]
    print(f"File-system view benchmark, {m['date']}: nproc {m['nproc']}, Python {m['python']}, "
          f"hudi-rs {m['hudi_rs']}, tables on {result['file_system']} ({result['dir']}), "
          f"best of {result['repeat']} after one warm-up", file=out)
    print("", file=out)
    header = (f"{'table':<8} {'partitions':>10} {'data files':>10} {'slices':>7} {'ours s':>8} {'hudi-rs s':>9} "
              f"{'raw s':>7} {'ours/raw':>8} {'rs/raw':>7} {'ours/rs':>7}  same slices")
    print(header, file=out)
    for name, r in result["views"].items():
        print(f"{name:<8} {r['partitions']:>10,} {r['data_files']:>10,} {r['latest_slices']:>7,} {r['ours_s']:>8.3f} "
              f"{r['hudi_rs_s']:>9.3f} {r['raw_s']:>7.3f} {r['ours_over_raw']:>8.2f} {r['hudi_rs_over_raw']:>7.2f} "
              f"{r['ours_over_hudi_rs']:>7.2f}  {'yes' if r['same_slices_as_hudi_rs'] else 'NO'}", file=out)
    print("", file=out)
    print(f"{'timeline':<22} {'instants':>9} {'files':>8} {'ours s':>8} {'raw s':>7} {'ours/raw':>8}", file=out)
    for name, r in result["timelines"].items():
        print(f"{name:<22} {r['instants']:>9,} {r['timeline_files']:>8,} {r['ours_s']:>8.3f} {r['raw_s']:>7.3f} "
              f"{r['ours_over_raw']:>8.2f}", file=out)
    print("", file=out)
    generated = sum(result["generation_s"].values())
    print(f"generation {generated:.0f} s (tables reused: "
          f"{len(result['views']) + len(result['timelines']) - len(result['generation_s'])}), "
          f"whole run {result['total_s']:.0f} s", file=out)
    print("", file=out)
    for line in target_text(result["targets"]):
        print(line, file=out)
    for name, prof in (result.get("profile") or {}).items():
        what = "HudiTable.open(path).file_system_view()" if name in VIEW_TABLES else "HudiTable.open(path).timeline"
        print(f"\n{name}: wall clock, best of {result['repeat']}, no profiler:", file=out)
        for phase, seconds in prof["phases"].items():
            print(f"  {seconds:8.3f} s  {phase}", file=out)
        print(f"cProfile of {what} (total {prof['total_s']:.2f} s, profiler overhead and no GC time "
              "attribution), top by own time:", file=out)
        for line in profile_text(prof["functions"]):
            print(line, file=out)
    return out.getvalue()


def markdown_section(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        SECTION_BEGIN,
        "## File-system view and timeline load (`bench/fsview.py`)",
        "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, "
        f"hudi-rs (`hudi`) {m['hudi_rs']}. Tables on {result['file_system']}; best of {result['repeat']} "
        "runs after one warm-up run, contenders interleaved (by default the tables go to `/dev/shm`: "
        "creating ~900,000 files on this VM's disk takes minutes; `--dir` picks another file system). "
        f"Whole run {result['total_s']:.0f} s, of which generating the tables "
        f"{sum(result['generation_s'].values()):.0f} s.",
        "",
        "Ours = `HudiTable.open(path).file_system_view().latest_slices()` (config, timeline, listing and "
        "view); hudi-rs = `hudi.HudiTable(path).get_file_slices()`; raw walk = `os.scandir` recursion "
        "outside `.hoodie` collecting (name, size) with `entry.stat()`. cow_v6: table version 6, "
        "partitions `city=NNNN`, 10 commits each rewriting every file group. mor_v8: table version 8, "
        "partitions `yyyy/mm/dd`, base files, v8 log files and one compaction per file group (a "
        "deltacommit completing after the compaction puts its logs in the new slice).",
        "",
        "| table | partitions | data files | latest slices | ours (s) | hudi-rs (s) | raw walk (s) "
        "| ours/raw | hudi-rs/raw | ours/hudi-rs | same slices |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, r in result["views"].items():
        lines.append(f"| {name} | {r['partitions']:,} | {r['data_files']:,} | {r['latest_slices']:,} "
                     f"| {r['ours_s']:.3f} | {r['hudi_rs_s']:.3f} | {r['raw_s']:.3f} | {r['ours_over_raw']:.2f} "
                     f"| {r['hudi_rs_over_raw']:.2f} "
                     f"| {r['ours_over_hudi_rs']:.2f} | {'yes' if r['same_slices_as_hudi_rs'] else 'no'} |")
    lines += ["", "Timeline load = `HudiTable.open(path).timeline` over completed commits (requested, inflight "
              "and completed file each, empty); raw listing = `os.scandir` + `entry.stat()` of the timeline folder.",
              "", "| timeline | layout | instants | files | ours (s) | raw listing (s) | ours/raw |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in result["timelines"].items():
        lines.append(f"| {name} | {r['layout']} | {r['instants']:,} | {r['timeline_files']:,} | {r['ours_s']:.3f} "
                     f"| {r['raw_s']:.3f} | {r['ours_over_raw']:.2f} |")
    lines += ["", *target_lines(result["targets"])]
    for name, prof in (result.get("profile") or {}).items():
        what = "HudiTable.open(path).file_system_view()" if name in VIEW_TABLES else "HudiTable.open(path).timeline"
        phases = "; ".join(f"{phase} {seconds:.3f} s" for phase, seconds in prof["phases"].items())
        lines += ["", f"**{name}**, wall clock without profiler: {phases}.", "",
                  f"cProfile of `{what}` (total {prof['total_s']:.2f} s with profiler overhead), top by own time:",
                  "", *profile_lines(prof["functions"])]
    lines.append(SECTION_END)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argument_parser(__doc__, tables="tables (kept tables there are reused)",
                             keep="keep the generated tables")
    parser.add_argument("--profile", action="store_true", help="cProfile our file_system_view() too")
    default = Shape()
    parser.add_argument("--partitions", type=int, default=default.partitions)
    parser.add_argument("--groups", type=int, default=default.groups, help="file groups per partition")
    parser.add_argument("--slices", type=int, default=default.slices, help="data files per file group")
    parser.add_argument("--instants", default="10000,100000", help="timeline sizes, comma separated")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.slices < 3 or args.partitions < 1 or args.groups < 1:
        parser.error("--repeat, --partitions and --groups must be >= 1 and --slices >= 3")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shape = Shape(args.partitions, args.groups, args.slices,
                  tuple(int(n) for n in args.instants.split(",") if n.strip()))
    root, created = bench_root(args.dir)
    specs = table_specs(shape)
    started = time.perf_counter()
    try:
        progress(f"tables in {root} ({file_system_of(root)})")
        generated = generate(root, specs)
        views = run_views(root, specs, args.repeat)
        timelines = run_timelines(root, specs, args.repeat)
        result: dict[str, Any] = {
            "machine": machine(hudi_rs=getattr(hudi, "__version__", "?")), "dir": root,
            "file_system": file_system_of(root), "repeat": args.repeat,
            "shape": asdict(shape), "generation_s": generated, "views": views, "timelines": timelines,
            "targets": targets(views, timelines),
        }
        if args.profile:
            progress("profiling file_system_view()")
            result["profile"] = profile(root, specs, args.repeat, 25)
    finally:
        if not args.keep:
            progress("removing the generated tables")
            remove_tables(root, specs, created_root=created)
    result["total_s"] = time.perf_counter() - started
    publish(result, args, text_report, markdown_section, SECTION_BEGIN, SECTION_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
