"""Archival of a long v8 timeline and loading a long LSM history: `python bench/archive.py`.

1. Archiving 10,000 completed commits of a table-version-8 table (`archive_instants`: their
   LSM rows written as Hudi's `LSMTimelineWriter` writes them, the manifest and version file, then
   30,000 state files removed in Hudi's order), against two baselines measured in the same run:
   writing the same Parquet rows (read back from the file Cleanline wrote) with pyarrow alone, and
   the raw floor of the whole job (reading the 30,000 state files, one `pq.write_table` of their
   rows, unlinking them) with plain `os` calls and pyarrow.
2. Loading the archived timeline (`load_archived_timeline`) of LSM histories of 10,000 and 100,000
   instants (made by archiving in batches, so the LSM tree is compacted as Hudi's would be):
   the time per instant of the larger within 2x that of the smaller.

Each archival repetition runs on a fresh copy of the generated table (archival is destructive).
"""

from __future__ import annotations

import datetime as dt
import io
import os
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from bench.common import (  # noqa: E402
    START,
    argument_parser,
    avro_schema,
    bench_root,
    commit_metadata,
    interleaved,
    machine,
    new_table,
    progress,
    publish,
    target_lines,
    target_text,
    timed,
    write_instant,
)
from timeline import HudiTable, metadata  # noqa: E402
from timeline.archive import load_archived_timeline  # noqa: E402
from timeline.archive.archiver import archive_instants  # noqa: E402
from timeline.instant import Instant, State, format_instant_time  # noqa: E402

BEGIN, END = "<!-- bench/archive.py: begin -->", "<!-- bench/archive.py: end -->"
ARCHIVED = 10_000
KEPT = 20


def generate(base: str, commits: int) -> str:
    """A v8 COW table with `commits` completed commits, each with small commit metadata (Avro)."""
    timeline = new_table(base, {
        "hoodie.table.name": "bench_archive", "hoodie.database.name": "default",
        "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.version": "8", "hoodie.timeline.layout.version": "2",
        "hoodie.table.partition.fields": "",
    })
    content = metadata.encode(commit_metadata(avro_schema([]), "UPSERT"), action="commit", state=State.COMPLETED,
                              layout=2)
    for k in range(commits):
        time_ = format_instant_time(START.replace(year=2025) + k * dt.timedelta(seconds=1))
        write_instant(timeline, time_, "commit", content, layout=2, completion=f"{time_[:-3]}500")
    return base


def oldest(table: HudiTable, count: int) -> list[Instant]:
    return list(table.timeline.completed().instants[:count])


def raw_floor(base: str, count: int) -> None:
    """Read the oldest `count` commits' state files, write their rows once with pyarrow, unlink."""
    folder = Path(base, ".hoodie", "timeline")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".commit") or ".commit." in n)
    times = sorted({n[:17] for n in names})[:count]
    chosen = set(times)
    rows: dict[str, list[Any]] = {"instantTime": [], "completionTime": [], "action": [], "metadata": [],
                                  "plan": [], "version": []}
    paths = []
    for name in names:
        if name[:17] not in chosen:
            continue
        path = folder / name
        paths.append(path)
        if name.endswith(".commit"):
            rows["instantTime"].append(name[:17])
            rows["completionTime"].append(name[18:35])
            rows["action"].append("commit")
            rows["metadata"].append(path.read_bytes())
            rows["plan"].append(None)
            rows["version"].append(1)
    pq.write_table(pa.table(rows), str(Path(base, "raw.parquet")), compression="gzip")
    for path in paths:
        os.unlink(path)


def lsm_files(base: str) -> list[Path]:
    history = Path(base, ".hoodie", "timeline", "history")
    return sorted(p for p in history.iterdir() if p.suffix == ".parquet")


def measure_archival(root: str, repeat: int) -> dict[str, Any]:
    template = generate(os.path.join(root, "template"), ARCHIVED + KEPT)
    copies = iter(range(10 ** 6))

    def fresh() -> str:
        target = os.path.join(root, f"run-{next(copies)}")
        shutil.copytree(template, target)
        return target

    prepared: dict[str, list[str]] = {"ours": [], "raw": []}
    for name in prepared:
        prepared[name] = [fresh() for _ in range(repeat + 1)]
    tables = {name: iter(paths) for name, paths in prepared.items()}

    def ours() -> None:
        base = next(tables["ours"])
        table = HudiTable.open(base)
        archive_instants(table, oldest(table, ARCHIVED))

    def raw() -> None:
        raw_floor(next(tables["raw"]), ARCHIVED)

    timings = interleaved({"ours": ours, "raw floor": raw}, repeat)
    written = lsm_files(prepared["ours"][0])
    rows = pa.concat_tables([pq.read_table(p) for p in written])
    pyarrow_alone = min(timed(lambda: pq.write_table(rows, io.BytesIO(), compression="gzip"))[0]
                        for _ in range(repeat + 1))
    archived = load_archived_timeline(HudiTable.open(prepared["ours"][0]))
    assert len(archived) == ARCHIVED, len(archived)
    return {"instants": ARCHIVED, "state_files": 3 * ARCHIVED, "ours_s": timings["ours"].best,
            "raw_s": timings["raw floor"].best, "pyarrow_s": pyarrow_alone, "rows": rows.num_rows,
            "lsm_files": len(written)}


def measure_loading(root: str, repeat: int) -> list[dict[str, Any]]:
    results = []
    for count in (10_000, 100_000):
        progress(f"archiving {count:,} instants into an LSM history")
        base = generate(os.path.join(root, f"history-{count}"), count + KEPT)
        table = HudiTable.open(base)
        instants = oldest(table, count)
        for start in range(0, count, 10_000):  # in batches, as archival after each commit would
            archive_instants(table, instants[start:start + 10_000])
            table.reload()
        best = min(timed(lambda: load_archived_timeline(HudiTable.open(base)))[0] for _ in range(repeat))
        loaded = len(load_archived_timeline(HudiTable.open(base)))
        assert loaded == count, loaded
        results.append({"instants": count, "load_s": best, "per_instant_us": best / count * 1e6,
                        "lsm_files": len(lsm_files(base))})
    return results


def main() -> None:
    parser = argument_parser(__doc__, tables="tables")
    args = parser.parse_args()
    root, _ = bench_root(args.dir)
    try:
        progress(f"generating a v8 table of {ARCHIVED + KEPT:,} commits under {root}")
        archival = measure_archival(root, args.repeat)
        loading = measure_loading(root, args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    small, large = loading
    growth = large["per_instant_us"] / small["per_instant_us"]
    targets = [{"target": "a 100,000-instant LSM timeline loads within 2x the 10,000-instant one per instant",
                "value": f"{growth:.2f}x", "passed": growth <= 2}]
    result = {"machine": machine(), "archival": archival, "loading": loading, "targets": targets}
    publish(result, args, text, section, BEGIN, END)


def text(result: dict[str, Any]) -> str:
    a = result["archival"]
    lines = [f"archiving {a['instants']:,} v8 commits: ours {a['ours_s']:.2f} s, raw floor {a['raw_s']:.2f} s "
             f"({a['ours_s'] / a['raw_s']:.2f}x), the same Parquet rows with pyarrow alone {a['pyarrow_s']:.3f} s "
             f"({a['ours_s'] / a['pyarrow_s']:.1f}x)"]
    lines += [f"loading an LSM history of {r['instants']:,} instants: {r['load_s']:.3f} s "
              f"({r['per_instant_us']:.1f} us per instant, {r['lsm_files']} files)" for r in result["loading"]]
    return "\n".join(lines + target_text(result["targets"])) + "\n"


def section(result: dict[str, Any]) -> str:
    m, a = result["machine"], result["archival"]
    lines = [BEGIN, "## Archival and the LSM history (`bench/archive.py`)", "",
             f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}. Tables on "
             "tmpfs where available; best of the runs, contenders interleaved; each archival run on a fresh copy.",
             "", "| job | instants | state files | seconds | ours / it |", "|---|---:|---:|---:|---:|",
             f"| ours: `archive_instants` (LSM rows, manifest, version file, state files removed) | {a['instants']:,} "
             f"| {a['state_files']:,} | {a['ours_s']:.3f} | 1.00 |",
             f"| raw floor: read the state files, one `pq.write_table`, unlink | {a['instants']:,} "
             f"| {a['state_files']:,} | {a['raw_s']:.3f} | {a['ours_s'] / a['raw_s']:.2f} |",
             f"| the same Parquet rows written with pyarrow alone | {a['rows']:,} | - | {a['pyarrow_s']:.3f} "
             f"| {a['ours_s'] / a['pyarrow_s']:.1f} |", "",
             "| LSM history | instants | files | load (s) | per instant (us) |", "|---|---:|---:|---:|---:|"]
    lines += [f"| `load_archived_timeline` | {r['instants']:,} | {r['lsm_files']} | {r['load_s']:.3f} "
              f"| {r['per_instant_us']:.1f} |" for r in result["loading"]]
    return "\n".join([*lines, "", *target_lines(result["targets"]), END]) + "\n"


if __name__ == "__main__":
    main()
