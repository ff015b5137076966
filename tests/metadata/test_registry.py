"""The codec registry: every instant state file of every fixture decodes; corrupt content
raises an error naming the file; encoding follows the table's layout."""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
import pytest

from tests.helpers import FIXTURE_IDS, Lake, huge_commit, huge_file_id, peak_growth
from timeline import HudiTable, InstantSummary, metadata
from timeline.exceptions import CorruptInstantError
from timeline.instant import Instant, State
from timeline.metadata import avro
from timeline.metadata.records import CommitMetadata, WriteStat
from timeline.storage import MemoryStorage
from timeline.table import check_state_file_at


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_registry_decodes_every_state_file_of_every_fixture(fixture_lake: dict[str, Path], table_id: str) -> None:
    table = HudiTable.open(str(fixture_lake[table_id]))
    for instant in table.timeline:
        for state, status in table.timeline.files_of(instant).items():
            content = table.read_instant(instant, state)
            if status.size == 0:
                assert content is None
                continue
            assert isinstance(content, dict), status.path
            done = instant.at(state)
            if done.action in ("commit", "deltacommit") and state is State.COMPLETED:
                assert "partitionToWriteStats" in content
            if done.action == "replacecommit" and state is State.COMPLETED:
                assert content["partitionToReplaceFileIds"]
            if done.action == "rollback" and state is State.COMPLETED:
                assert content["commitsRollback"]


def test_registry_commit_metadata_is_json_in_layout1_and_avro_in_layout2() -> None:
    content = {"partitionToWriteStats": {"p": [{"fileId": "f", "path": "p/f_1_2.parquet"}]},
               "compacted": False, "extraMetadata": {}, "operationType": "UPSERT"}
    v6 = metadata.encode(content, action="commit", state=State.COMPLETED, layout=1)
    v8 = metadata.encode(content, action="commit", state=State.COMPLETED, layout=2)
    assert v6.startswith(b"{\n  \"partitionToWriteStats\" : {")
    assert avro.record_name(v8) == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    for data, layout in ((v6, 1), (v8, 2)):
        decoded = metadata.decode(data, path="x", action="commit", state=State.COMPLETED, layout=layout)
        assert decoded is not None and decoded["partitionToWriteStats"]["p"][0]["fileId"] == "f"
    plan = metadata.encode({"policy": "KEEP_LATEST_COMMITS", "version": 2}, action="clean",
                           state=State.REQUESTED, layout=1)
    assert avro.record_name(plan) == "org.apache.hudi.avro.model.HoodieCleanerPlan"


@pytest.mark.parametrize(("action", "state", "data", "message"), [
    ("commit", State.COMPLETED, b"{not json", "invalid JSON"),
    ("commit", State.COMPLETED, b"[1, 2]", "expected a JSON object"),
    ("clean", State.COMPLETED, b"{}", "expected an Avro HoodieCleanMetadata"),
    ("clean", State.COMPLETED, b"Obj\x01garbage", "Avro"),
    ("clean", State.REQUESTED, None, "expected HoodieCleanerPlan, found an Avro HoodieCleanMetadata"),
    ("compaction", State.COMPLETED, b"x", "no known content"),
])
def test_registry_corrupt_content_names_the_file(action: str, state: State, data: bytes | None, message: str) -> None:
    if data is None:
        data = avro.encode("HoodieCleanMetadata", {
            "startCleanTime": "1", "timeTakenInMillis": 1, "totalFilesDeleted": 0,
            "earliestCommitToRetain": "", "partitionMetadata": {}})
    with pytest.raises(CorruptInstantError) as raised:
        metadata.decode(data, path="/t/.hoodie/1.clean", action=action, state=state, layout=1)
    assert "/t/.hoodie/1.clean" in str(raised.value) and message in str(raised.value)


@pytest.mark.parametrize("data, problem", [
    (b'{"a": [1, 2.5, "x"], "b": {"c": null}}', None),
    (b'{"n": 123456789012345678901234567890}', None),
    (b'{"x": NaN}', None),  # simdjson refuses these three, Python reads them: intact, as decode says
    (b'{"x": 1e999}', None),
    (b'{"s": "\\\\ud800"}', None),
    (b"  \n", None),
    (b'\xef\xbb\xbf{"a": 1}', "invalid JSON"),  # a byte order mark: simdjson skips it, Python refuses it
    (b'{"a": 1} x', "invalid JSON"),
    (b'{"a": "\x01"}', "invalid JSON"),
    (b'{"a": "\xff\xfe"}', "invalid JSON"),
    (b'{"a": 1', "invalid JSON"),
    (b"[1]", "expected a JSON object"),
])
def test_registry_json_check_agrees_with_decode(data: bytes, problem: str | None) -> None:
    """The intact check validates JSON with simdjson (no Python object per value) and passes
    exactly what `decode` (Python's reader) reads."""
    raw = data.decode("unicode_escape").encode("latin-1")
    where = dict(path="/t/.hoodie/1.commit", action="commit", state=State.COMPLETED, layout=1)
    if problem is None:
        metadata.check(io.BytesIO(raw), len(raw), **where)
        decoded = metadata.decode(raw, **where)
        assert decoded is None or isinstance(decoded, dict)
        return
    for read in (lambda: metadata.check(io.BytesIO(raw), len(raw), **where), lambda: metadata.decode(raw, **where)):
        with pytest.raises(CorruptInstantError, match=problem):
            read()
    assert metadata.decode(b'{"n": 123456789012345678901234567890}', **where) == {"n": 123456789012345678901234567890}


def test_registry_truncated_avro_in_a_table_is_reported_with_its_path() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    lake.commit("20261101000000000", {})
    path = "/t/.hoodie/timeline/20261101000000000_20261101000000999.commit"
    lake.storage.write(path, lake.storage.read(path)[:40], overwrite=True)
    table = HudiTable.load(lake.storage, "/t")
    with pytest.raises(CorruptInstantError, match=path):
        table.read_instant(table.timeline.instants[0])


def test_registry_legacy_layout2_file_without_completion_time_is_json() -> None:
    lake = Lake(MemoryStorage(), "/t", version=8)
    content = {"partitionToWriteStats": {}, "compacted": False, "extraMetadata": {}, "operationType": "INSERT"}
    lake.storage.write("/t/.hoodie/timeline/20261101000000000.commit",
                       metadata.encode(content, action="commit", state=State.COMPLETED, layout=1))
    table = HudiTable.load(lake.storage, "/t")
    instant = table.timeline.instants[0]
    assert instant == Instant("20261101000000000", "commit", State.COMPLETED, instant.completion_time)
    assert table.read_instant(instant) == content


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_registry_streamed_write_stats_equal_the_decoded_ones(fixture_lake: dict[str, Path], table_id: str) -> None:
    """Every commit metadata of every fixture, v6 JSON and v8+ Avro, streams stat for stat
    what decoding whole gives, and sums to the same summary."""
    table = HudiTable.open(str(fixture_lake[table_id]))
    for instant in table.timeline:
        for status in table.timeline.files_of(instant).values():
            record = table.read_record_file(status.path)
            streams = table.streams_write_stats(status.path)
            assert streams == (status.size > 0 and isinstance(record, CommitMetadata)), status.path
            if not streams:
                continue
            # the intact check as it runs on a file above the stream size: a stream for JSON and Avro
            check_state_file_at(table.storage, status.path, status.size, table._codec_of(status.path), stream_above=0)
            assert isinstance(record, CommitMetadata)
            with table.stream_write_stats(status.path) as entries:
                streamed = None if entries is None else list(entries)
            if not record.has_write_stats:
                assert streamed is None
                continue
            assert streamed is not None
            assert [s for _, s in streamed if s is not None] == record.stats()
            assert InstantSummary.streamed(streamed) == InstantSummary.of(record)
            for partition, stats in record.write_stats.items():
                assert table.inspect.write_stats(status.path, partition=partition, start=1, count=2) == list(stats[1:3])


def test_registry_stream_write_stats_reads_nulls_skips_scalars_and_names_a_corrupt_file() -> None:
    where = "/t/.hoodie/1.commit"

    def streamed(data: bytes) -> list[tuple[str, str | None]] | None:
        entries = metadata.stream_write_stats(io.BytesIO(data), path=where)
        return None if entries is None else [(p, None if s is None else s.file_id) for p, s in entries]

    assert streamed(b'{"extraMetadata": {"partitionToWriteStats": 1}, "operationType": "INSERT"}') is None
    assert streamed(b'{"partitionToWriteStats": null}') == []
    assert streamed(b'{"compacted": false, "partitionToWriteStats": {"p": null, "q": [1, [2], {"fileId": "f", '
                    b'"runtimeStats": {"a": [1]}}, null, {"fileId": "g"}]}}') == [
        ("p", None), ("q", None), ("q", "f"), ("q", "g")]
    for data in (b'{"partitionToWriteStats": {"p": [{"fileId": "f"}, {"fileId"', b"[1]", b"",
                 b'{"partitionToWriteStats": {"p": 1}}', b'{"partitionToWriteStats": [1]}'):
        with pytest.raises(CorruptInstantError, match=where):
            streamed(data)


def test_registry_summary_of_a_commit_above_the_stream_size_is_summed_as_it_is_read(tmp_path: Path,
                                                                                  table_copy) -> None:
    """A completed commit above STREAM_CHECK_BYTES is summed from its stream, to what its
    decoded record reports; its stats page from any point and within a partition."""
    base = table_copy("sample_table/cow/v6_simplekeygen_nonhivestyle")
    path, count = huge_commit(str(base / ".hoodie"), "20240418172900000", ["10", "20", "30"],
                              size=metadata.STREAM_CHECK_BYTES + (1 << 20))
    table = HudiTable.open(str(base))
    instant = table.timeline.instants[-1]
    assert instant.requested_time == "20240418172900000"
    record = table.read(instant, CommitMetadata)
    summary = table.inspect.summary(instant)
    assert summary == InstantSummary.of(record) == InstantSummary(3, count, count * (count + 1) // 2,
                                                                  1000 * count + count * (count - 1) // 2)
    last_two = [huge_file_id(i) for i in range(2, count, 3)][-2:]  # partition 30's, the last in the file
    assert [s.file_id for s in table.inspect.write_stats(path, start=count - 2, count=5)] == last_two
    assert [s.file_id for s in table.inspect.write_stats(path, partition="20", count=2)] == [
        huge_file_id(1), huge_file_id(4)]


class RecordingSink:
    """A `WriteStatsSink` that wants files above `above` bytes and keeps what it is handed."""

    def __init__(self, above: int) -> None:
        self.above = above
        self.asked: list[tuple[str, int]] = []
        self.stats: list[tuple[str, WriteStat]] = []
        self.finished = 0

    def wants(self, path: str, size: int) -> bool:
        self.asked.append((path, size))
        return size > self.above

    def add(self, partition: str, stat: WriteStat) -> None:
        self.stats.append((partition, stat))

    def done(self) -> None:
        self.finished += 1


def test_registry_summary_hands_a_wanted_commits_write_stats_to_its_sink(fixture_lake: dict[str, Path]) -> None:
    """Issue 38: a commit file its sink wants, however small, is summed from its stream and each
    stat handed over in the file's order, then `done`; one not wanted is summed as before."""
    table = HudiTable.open(str(fixture_lake["sample_table/cow/v6_simplekeygen_nonhivestyle"]))
    instant = next(i for i in table.timeline.completed() if i.requested_time == "20240418172804498")
    path = table.state_files(instant)[State.COMPLETED]
    size = table.storage.status(path).size
    wanting = RecordingSink(above=0)
    assert table.inspect.summary(instant, sink=wanting) == table.inspect.summary(instant)
    assert wanting.asked == [(path, size)] and wanting.finished == 1
    assert [stat for _, stat in wanting.stats] == table.inspect.write_stats(path)
    assert [partition for partition, _ in wanting.stats] == ["30", "10"]
    refusing = RecordingSink(above=size)
    assert table.inspect.summary(instant, sink=refusing) == table.inspect.summary(instant)
    assert refusing.asked == [(path, size)] and not refusing.stats and refusing.finished == 0


def _avro_commit(map_bytes: bytes) -> bytes:
    """A HoodieCommitMetadata container whose write stats map is `map_bytes` as given (the
    union's branch included), then no other field set and version 1."""
    return avro.container("HoodieCommitMetadata", map_bytes + b"\x00\x00\x00\x02\x00")


def _avro_stat(file_id: str) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, avro.schema("HoodieWriteStat"), {"fileId": file_id, "numWrites": 2},
                               strict_allow_default=True)
    return out.getvalue()


def _long(value: int) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, "long", value)
    return out.getvalue()


def test_registry_stream_write_stats_reads_avro_blocks_nulls_and_compressed_files() -> None:
    """Avro maps and arrays in several blocks, negative counts with their byte sizes (as Java
    may write them), a null map, a deflated container: what `decode` reads, a stat at a time."""
    where = "/t/.hoodie/timeline/1_2.commit"

    def streamed(data: bytes) -> list[tuple[str, str | None]] | None:
        entries = metadata.stream_write_stats(io.BytesIO(data), path=where)
        return None if entries is None else [(p, None if s is None else s.file_id) for p, s in entries]

    def decoded(data: bytes) -> list[tuple[str, str | None]]:
        record = metadata.decode(data, path=where, action="commit", state=State.COMPLETED, layout=2)
        commit = CommitMetadata.from_raw(record or {})
        return [e for p, stats in commit.write_stats.items() for e in [(p, None), *((p, s.file_id) for s in stats)]]

    a, b, c = _avro_stat("a"), _avro_stat("b"), _avro_stat("c")
    key = _long(len("p")) + b"p"
    blocks = (b"\x02" + _long(-1) + _long(len(key) + 10) + key
              + _long(-2) + _long(len(a + b)) + a + b + _long(1) + c + b"\x00"
              + _long(1) + _long(1) + b"q" + b"\x00" + b"\x00")
    several = _avro_commit(blocks)
    assert streamed(several) == decoded(several) == [("p", None), ("p", "a"), ("p", "b"), ("p", "c"), ("q", None)]
    assert streamed(_avro_commit(b"\x00")) == [] == decoded(_avro_commit(b"\x00"))
    plain = metadata.encode({"partitionToWriteStats": {"x": [{"fileId": "f"}], "y": []}, "operationType": "INSERT"},
                            action="commit", state=State.COMPLETED, layout=2)
    deflated = io.BytesIO()
    fastavro.writer(deflated, avro.schema("HoodieCommitMetadata"), fastavro.reader(io.BytesIO(plain)), codec="deflate")
    for data in (plain, deflated.getvalue()):
        assert streamed(data) == decoded(data) == [("x", None), ("x", "f"), ("y", None)]
    # truncated inside a stat, inside a key, inside the header (a cut past the map is not seen:
    # reading stops where the map ends, as for JSON; the intact check reads the whole file)
    for broken in (several[:several.rindex(c) + 3], several[:several.rindex(b"\x02q") + 1], plain[:30]):
        with pytest.raises(CorruptInstantError, match=where):
            streamed(broken)


def test_registry_check_streams_a_large_avro_commit_and_refuses_what_decode_refuses() -> None:
    """Above the stream size, Avro commit metadata is checked a write stat at a time: what
    decodes passes; a cut anywhere (the sync marker too), bytes after the record, a second
    record and another record's type fail as `decode` fails, naming the file."""
    where = dict(path="/t/.hoodie/timeline/1_2.commit", action="commit", state=State.COMPLETED, layout=2)
    record = {"partitionToWriteStats": {"x": [{"fileId": "f"}, {"fileId": "g"}], "y": []}, "operationType": "INSERT"}
    good = metadata.encode(record, action="commit", state=State.COMPLETED, layout=2)
    nulls = metadata.encode({"partitionToWriteStats": None}, action="commit", state=State.COMPLETED, layout=2)
    for data in (good, nulls):
        metadata.check(io.BytesIO(data), len(data), stream_above=0, **where)
    stats = [{"fileId": f"{i:08x}-0", "path": f"x/{i:08x}-0_0-1-0_1.parquet", "numWrites": i} for i in range(60_000)]
    large = metadata.encode({"partitionToWriteStats": {"x": stats}}, action="commit", state=State.COMPLETED, layout=2)
    del stats
    _, grown = peak_growth(lambda: metadata.check(io.BytesIO(large), len(large), stream_above=0, **where))
    assert grown < 16 << 20, f"checking a {len(large) >> 20} MiB commit grew the peak by {grown >> 20} MiB"
    twice = io.BytesIO()
    fastavro.writer(twice, avro.schema("HoodieCommitMetadata"), [record, record])
    other = avro.encode("HoodieReplaceCommitMetadata", record)
    for data, problem in ((good[:-3], "sync marker"), (good[:-40], "invalid Avro"), (good + b"x", "found more"),
                          (twice.getvalue(), "one Avro record"), (other, "found an Avro HoodieReplaceCommitMetadata")):
        with pytest.raises(CorruptInstantError, match=problem):
            metadata.check(io.BytesIO(data), len(data), stream_above=0, **where)
        with pytest.raises(CorruptInstantError):
            metadata.decode(data, **where)
