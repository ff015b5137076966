"""Helpers of the clean tests (fixtures are in conftest.py): an archived v8+ timeline, made as
Hudi's archiver makes it."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

from timeline.storage import Storage


def archive_instants(storage: Storage, timeline_folder: str, instants: list[tuple[str, str, str]]) -> None:
    """Move (requested, completion, action) instants of a v8+ timeline to its LSM history as
    Hudi's archiver does: their rows in a Parquet file named by a new manifest, their state
    files gone from the active timeline."""
    rows = pa.table({"instantTime": [r[0] for r in instants], "completionTime": [r[1] for r in instants],
                     "action": [r[2] for r in instants], "metadata": [b""] * len(instants),
                     "plan": [None] * len(instants), "version": [1] * len(instants)})
    sink = io.BytesIO()
    pq.write_table(rows, sink)
    history = f"{timeline_folder}/history"
    name = f"{instants[0][0]}_{instants[-1][0]}_0.parquet"
    storage.write(f"{history}/{name}", sink.getvalue())
    storage.write(f"{history}/manifest_1", json.dumps({"files": [{"fileName": name, "fileLen": 1}]}).encode(),
                  overwrite=True)
    storage.write(f"{history}/_version_", b"1", overwrite=True)
    times = {r[0] for r in instants}
    for status in list(storage.list(timeline_folder)):
        if not status.is_dir and status.name[:17] in times:
            storage.delete(status.path)
