"""The archived timeline: v6 archive log files and the v8 LSM history."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import Lake
from timeline import HudiTable
from timeline.archive import load_archived_timeline
from timeline.exceptions import CorruptInstantError
from timeline.instant import State
from timeline.logformat import avro_data_block, command_block
from timeline.metadata import avro
from timeline.storage import MemoryStorage


def entry(time: str, action: str, state: str, transition: str | None = None) -> dict:
    return {"commitTime": time, "actionType": action, "actionState": state,
            "stateTransitionTime": transition, "version": 1}


def test_archive_v6_reads_entries_from_every_archive_file_in_order() -> None:
    lake = Lake(MemoryStorage(), "/t", version=6)
    schema = avro.writer_schema_json("HoodieArchivedMetaEntry")
    first = avro_data_block([
        entry("20260101000000000", "commit", "REQUESTED"), entry("20260101000000000", "commit", "INFLIGHT"),
        entry("20260101000000000", "commit", "COMPLETED", "20260101000001000"),
        entry("20260102000000000", "compaction", "REQUESTED"),
    ], schema, "20260301000000000")
    second = avro_data_block([
        entry("20260102000000000", "commit", "COMPLETED", "20260102000009000"),
        entry("20260103000000000", "clean", "COMPLETED", "20260103000001000"),
    ], schema, "20260302000000000")
    lake.storage.write("/t/.hoodie/archived/.commits_.archive.1_1-0-1", first + command_block("1", "0"))
    lake.storage.write("/t/.hoodie/archived/.commits_.archive.2_1-0-1", second)
    lake.storage.write("/t/.hoodie/archived/mergeArchivePlan", b"ignored")
    archived = load_archived_timeline(HudiTable.load(lake.storage, "/t"))
    assert [(i.requested_time, i.action, i.state, i.completion_time) for i in archived] == [
        ("20260101000000000", "commit", State.COMPLETED, "20260101000001000"),
        ("20260102000000000", "commit", State.COMPLETED, "20260102000009000"),
        ("20260103000000000", "clean", State.COMPLETED, "20260103000001000"),
    ]


def test_archive_v8_lsm_reads_the_files_of_the_latest_manifest() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    history = "/t/.hoodie/timeline/history"

    def parquet(rows: list[tuple[str, str, str]]) -> bytes:
        table = pa.table({"instantTime": [r[0] for r in rows], "completionTime": [r[1] for r in rows],
                          "action": [r[2] for r in rows], "metadata": [b""] * len(rows),
                          "plan": [None] * len(rows), "version": [1] * len(rows)})
        sink = io.BytesIO()
        pq.write_table(table, sink)
        return sink.getvalue()

    lake.storage.write(f"{history}/1_2_0.parquet", parquet([("1", "11", "commit"), ("2", "21", "clean")]))
    lake.storage.write(f"{history}/3_3_0.parquet", parquet([("3", "31", "deltacommit")]))
    lake.storage.write(f"{history}/0_0_0.parquet", parquet([("0", "01", "commit")]))  # compacted away
    lake.storage.write(f"{history}/manifest_2", json.dumps({"files": [
        {"fileName": "1_2_0.parquet", "fileLen": 1}, {"fileName": "3_3_0.parquet", "fileLen": 1}]}).encode())
    lake.storage.write(f"{history}/_version_", b"2")
    archived = load_archived_timeline(HudiTable.load(lake.storage, "/t"))
    assert [(i.requested_time, i.completion_time, i.action) for i in archived] == [
        ("1", "11", "commit"), ("2", "21", "clean"), ("3", "31", "deltacommit")]


def test_archive_missing_or_empty_history_is_an_empty_timeline() -> None:
    for version in (6, 8):
        lake = Lake(MemoryStorage(), "/t", version=version)
        assert len(load_archived_timeline(HudiTable.load(lake.storage, "/t"))) == 0


def test_archive_corrupt_manifest_names_the_file() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.storage.write("/t/.hoodie/timeline/history/_version_", b"1")
    lake.storage.write("/t/.hoodie/timeline/history/manifest_1", b"{broken")
    with pytest.raises(CorruptInstantError, match="manifest_1"):
        load_archived_timeline(HudiTable.load(lake.storage, "/t"))


@pytest.mark.parametrize(("content", "latest"), [
    (b"2", 2), (b"+2", 2), (b"2\n", 3), (b" 2", 3), (b"two", 3), (b"99999999999", 3), (None, 3)])
def test_archive_lsm_state_reads_the_version_file_as_integer_parse_int(content: bytes | None, latest: int) -> None:
    """LSMTimeline.latestSnapshotVersion: `Integer.parseInt(fromUTF8Bytes(content))` (a sign and
    digits, nothing else, within 32 bits), else the highest manifest; the one reading the plan,
    the LSM writer and the doctor share (`lsm_state`)."""
    from timeline.archived_timeline import lsm_state

    storage = MemoryStorage()
    folder = "/t/.hoodie/timeline/history"
    for n in (1, 2, 3):
        storage.write(f"{folder}/manifest_{n}", json.dumps({"files": []}).encode())
    if content is not None:
        storage.write(f"{folder}/_version_", content)
    state = lsm_state(storage, folder)
    assert state.latest == latest and sorted(state.manifests) == [1, 2, 3]
    assert (state.version_status is None) == (content is None)
