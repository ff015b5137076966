"""Compaction of a merge-on-read table with the local engine: `python bench/compaction.py`.

Generates a table-version-8 merge-on-read table (no metadata table) of `--mb` MB of gzip Parquet
base files in `--groups` file groups, then one delta commit updating `--updated` (30%) of every
file group's records through an Avro log block (Hudi's default log block format), and times,
interleaved (best of `--repeat`, the compaction's files and instants removed again after each):

- pyarrow: per file group, `pq.read_table` of the base file, a read of the log file's bytes and a
  gzip `pq.write_table` of the base rows: the read and write of the same bytes, nothing merged;
- compaction: `HudiTable.maintenance().compact(dry_run=False)` then `run_compaction()`
  (timeline/services/compactor.py): the plan, the merge of every base file with its log records,
  the new base files with Hudi's meta fields and bloom filter, and the commit.

Target: the compaction <= 2x pyarrow. Then the driver's memory: the peak resident set growth of
a compaction of 100 and of 1,000 file groups (`--small-rows` records each, a base file with its
431 KB bloom filter footer), which must stay flat: one file group is held at a time, so each more
file group may keep only its write stat (under 64 KiB), never its records or footer.

Usage (from the repository root):

    .venv/bin/python bench/compaction.py                  # 1 GB, print
    .venv/bin/python bench/compaction.py --mb 100 --record
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from bench.common import (  # noqa: E402
    argument_parser,
    bench_root,
    file_system_of,
    interleaved,
    machine,
    peak_growth,
    progress,
    publish,
    target_lines,
    target_text,
)
from timeline import HudiTable, transition  # noqa: E402
from timeline.files import base_file_name, log_file_name  # noqa: E402
from timeline.instant import DELTA_COMMIT, Instant, State  # noqa: E402
from timeline.logformat import avro_data_block  # noqa: E402
from timeline.metadata.written import by_partition, commit_metadata, write_stat  # noqa: E402
from timeline.spark.writer.create import create_table, table_spec  # noqa: E402
from timeline.storage import storage_for  # noqa: E402

BEGIN, END = "<!-- bench/compaction.py: begin -->", "<!-- bench/compaction.py: end -->"
META = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
        "_hoodie_file_name"]
ARROW = pa.schema([*(pa.field(m, pa.string()) for m in META), pa.field("id", pa.string()),
                   pa.field("part", pa.string()), pa.field("ts", pa.int64()), pa.field("value", pa.float64()),
                   pa.field("payload", pa.string())])
DATA_AVRO = ('{"type":"record","name":"bench_record","namespace":"hoodie.bench","fields":['
             '{"name":"id","type":["null","string"],"default":null},'
             '{"name":"part","type":["null","string"],"default":null},'
             '{"name":"ts","type":["null","long"],"default":null},'
             '{"name":"value","type":["null","double"],"default":null},'
             '{"name":"payload","type":["null","string"],"default":null}]}')
AVRO = DATA_AVRO.replace('"fields":[', '"fields":[' + ",".join(
    f'{{"name":"{m}","type":["null","string"],"default":null}}' for m in META) + ",")
T1, T2 = "20260101000000000", "20260101000100000"
PER_GROUP_BYTES = 64 * 1024
ROW_BYTES = 60  # about what one record takes in gzip Parquet here (a random payload)


def generate(base: str, groups: int, rows: int, updated: float) -> None:
    """The table: `groups` file groups of `rows` records in one partition, then 30% updated."""
    storage, root = storage_for(base)
    spec = table_spec("bench", "MERGE_ON_READ", 8, "id", "ts", "part", False)
    create_table(storage, root, spec.properties(DATA_AVRO))
    table = HudiTable.open(base)
    os.makedirs(os.path.join(base, "p"), exist_ok=True)
    Path(base, "p", ".hoodie_partition_metadata").write_text("commitTime=" + T1 + "\npartitionDepth=1\n")
    inserts, logs = [], []
    for g in range(groups):
        file_id = f"{g:08d}-0000-0000-0000-000000000000-0"
        name = base_file_name(file_id, "0-0-0", T1)
        keys = [f"k{g:06d}-{i:08d}" for i in range(rows)]
        table_rows = pa.table({"_hoodie_commit_time": [T1] * rows,
                               "_hoodie_commit_seqno": [f"{T1}_{g}_{i}" for i in range(rows)],
                               "_hoodie_record_key": keys, "_hoodie_partition_path": ["p"] * rows,
                               "_hoodie_file_name": [name] * rows, "id": keys, "part": ["p"] * rows,
                               "ts": [1] * rows, "value": [float(i) for i in range(rows)],
                               "payload": [hashlib.sha256(k.encode()).hexdigest()[:40] for k in keys]}, schema=ARROW)
        pq.write_table(table_rows, os.path.join(base, "p", name), compression="gzip")
        size = os.path.getsize(os.path.join(base, "p", name))
        inserts.append(write_stat(file_id=file_id, path=f"p/{name}", num_writes=rows, num_inserts=rows,
                                  total_write_bytes=size, partition_path="p", file_size_in_bytes=size))
        changed = [{**r, "_hoodie_commit_time": T2, "_hoodie_commit_seqno": f"{T2}_{g}_{i}", "ts": 2,
                    "value": -r["value"]}
                   for i, r in enumerate(table_rows.slice(0, int(rows * updated)).to_pylist())]
        log = log_file_name(file_id, T2, 1, "0-0-0")
        block = avro_data_block(changed, AVRO, T2)
        Path(base, "p", log).write_bytes(block)
        logs.append(write_stat(file_id=file_id, path=f"p/{log}", prev_commit=T1, num_writes=len(changed),
                               num_update_writes=len(changed), total_write_bytes=len(block), partition_path="p",
                               file_size_in_bytes=len(block), log_version=1, log_offset=0, base_file="",
                               log_files=[log]))
    for time_, stats, operation in ((T1, inserts, "BULK_INSERT"), (T2, logs, "UPSERT")):
        requested = Instant(time_, DELTA_COMMIT, State.REQUESTED)
        transition.write_state(table, requested, None)
        inflight = transition.start(table, requested, None)
        transition.complete(table, inflight, commit_metadata(by_partition(stats), operation, AVRO))


def compact(base: str) -> int:
    maintenance = HudiTable.open(base).maintenance()
    maintenance.compact(dry_run=False)
    return len(maintenance.run_compaction().new_files)


def reset(base: str) -> None:
    """Remove what a compaction wrote (its base files, state files, markers), untimed."""
    timeline = os.path.join(base, ".hoodie", "timeline")
    done = {name.split(".")[0].split("_")[0] for name in os.listdir(timeline) if ".compaction." in name}
    for name in os.listdir(timeline):
        if name.split(".")[0].split("_")[0] in done:
            os.remove(os.path.join(timeline, name))
    for name in os.listdir(os.path.join(base, "p")):
        if name.endswith(".parquet") and not name.endswith(f"_{T1}.parquet"):
            os.remove(os.path.join(base, "p", name))
    shutil.rmtree(os.path.join(base, ".hoodie", ".temp"), ignore_errors=True)


def baseline(base: str, scratch: str) -> int:
    """pyarrow's read of every base file and log file and write of the base rows."""
    folder = os.path.join(base, "p")
    count = 0
    for name in sorted(os.listdir(folder)):
        if name.endswith(f"_{T1}.parquet"):
            rows = pq.read_table(os.path.join(folder, name))
            pq.write_table(rows, scratch, compression="gzip")
            count += 1
        elif ".log." in name:
            Path(folder, name).read_bytes()
    return count


def run(args: Any) -> dict[str, Any]:
    root, created = bench_root(args.dir)
    try:
        rows = max(1, int(args.mb * 1024 * 1024 / ROW_BYTES / args.groups))
        big = os.path.join(root, "big")
        progress(f"generating {args.groups} file groups of {rows:,} records in {big}")
        generate(big, args.groups, rows, args.updated)
        base_bytes = sum(os.path.getsize(os.path.join(big, "p", n)) for n in os.listdir(os.path.join(big, "p"))
                         if n.endswith(".parquet"))
        log_bytes = sum(os.path.getsize(os.path.join(big, "p", n)) for n in os.listdir(os.path.join(big, "p"))
                        if ".log." in n)
        scratch = os.path.join(root, "scratch.parquet")

        def compaction() -> int:
            try:
                return compact(big)
            finally:
                reset(big)

        progress("timing")
        timings = interleaved({"pyarrow": lambda: baseline(big, scratch), "compaction": compaction}, args.repeat,
                              warm_up=False)
        memory = {}
        for groups in (100, 1000):
            small = os.path.join(root, f"small{groups}")
            generate(small, groups, args.small_rows, args.updated)
            _, grown = peak_growth(lambda path=small: compact(path))
            memory[groups] = grown
            shutil.rmtree(small)
        ratio = timings["compaction"].best / timings["pyarrow"].best
        per_group = (memory[1000] - memory[100]) / 900  # what each more file group keeps
        flat = per_group <= PER_GROUP_BYTES
        return {"machine": machine(), "load": os.getloadavg(), "fs": file_system_of(root), "groups": args.groups,
                "rows": rows * args.groups, "base_bytes": base_bytes, "log_bytes": log_bytes,
                "pyarrow_s": timings["pyarrow"].best, "compaction_s": timings["compaction"].best,
                "memory": memory, "small_rows": args.small_rows,
                "targets": [{"target": f"compaction of {base_bytes / 1e9:.2f} GB of base files ({args.updated:.0%} "
                             "of records updated through log files) <= 2x pyarrow's read and write of the same bytes",
                             "value": f"{ratio:.2f}x", "passed": ratio <= 2.0},
                            {"target": "driver memory flat from 100 to 1,000 file groups (peak growth; each "
                                       "more file group keeps at most its write stat, under 64 KiB, never its "
                                       "records or footer)",
                             "value": f"{memory[100] / 2**20:.1f} MiB -> {memory[1000] / 2**20:.1f} MiB, "
                                      f"{per_group / 1024:.1f} KiB per file group", "passed": flat}]}
    finally:
        if created and not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def text(result: dict[str, Any]) -> str:
    lines = [f"{result['rows']:,} records in {result['groups']} file groups: base {result['base_bytes']:,} bytes, "
             f"logs {result['log_bytes']:,} bytes",
             f"pyarrow {result['pyarrow_s']:.2f} s, compaction {result['compaction_s']:.2f} s",
             *target_text(result["targets"])]
    return "\n".join(lines) + "\n"


def section(result: dict[str, Any]) -> str:
    m = result["machine"]
    load = ", ".join(f"{v:.1f}" for v in result["load"])
    return "\n".join([
        BEGIN, "## Compaction with the local engine (`bench/compaction.py`)", "",
        f"Recorded {m['date']} on {m['platform']}: `nproc` = {m['nproc']}, Python {m['python']}, load average "
        f"{load} when it ended (other processes shared the cores: timings vary). A generated table-version-8 "
        f"merge-on-read table on {result['fs']}: {result['rows']:,} records in {result['groups']} file groups, "
        f"{result['base_bytes']:,} bytes of gzip Parquet base files and {result['log_bytes']:,} bytes of Avro log "
        "blocks updating 30% of the records. Best of the interleaved runs. pyarrow = per file group a read of the "
        "base file and the log file's bytes and a gzip write of the base rows; compaction = schedule and run "
        f"(`Maintenance.compact`, `run_compaction`). Memory: peak resident growth compacting 100 and 1,000 file "
        f"groups of {result['small_rows']:,} records.", "",
        "| measurement | seconds |", "|---|---:|",
        f"| pyarrow read and write | {result['pyarrow_s']:.2f} |",
        f"| compaction | {result['compaction_s']:.2f} |", "",
        *target_lines(result["targets"]), "", END, ""])


def main() -> None:
    parser = argument_parser(__doc__, tables="tables", repeat=1)
    parser.add_argument("--mb", type=float, default=1024.0, help="MB of base files (default 1024)")
    parser.add_argument("--groups", type=int, default=64, help="file groups (default 64)")
    parser.add_argument("--updated", type=float, default=0.3, help="share of records updated (default 0.3)")
    parser.add_argument("--small-rows", type=int, default=500, help="records per file group of the memory runs")
    args = parser.parse_args()
    publish(run(args), args, text, section, BEGIN, END)


if __name__ == "__main__":
    main()
