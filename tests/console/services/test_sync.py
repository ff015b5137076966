"""Registering and syncing tables: idempotent, incremental, and clear about bad tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import selectors, services
from console.models import Instant, SyncStatus, Table
from console.models_write_stats import IndexedWriteStat, WriteStatsIndex
from timeline import HudiTable, State

pytestmark = pytest.mark.django_db

V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"


@pytest.fixture
def allowed(settings, tmp_path: Path) -> Path:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    return tmp_path


def test_sync_register_mirrors_config_and_every_instant(allowed: Path, table_copy) -> None:
    path = table_copy(V8_MOR)
    table = services.table_register(path=str(path), user=None)
    assert (table.name, table.table_type, table.table_version, table.layout_version) == (
        "v8_trips_8i3u1d", "MERGE_ON_READ", 8, 2)
    assert table.partition_fields == ["city"] and table.metadata_table_enabled
    result = services.table_sync(table=table)
    lake = HudiTable.open(str(path))
    rows = {(i.requested_time, i.action, i.state, i.completion_time) for i in table.instants.all()}
    assert rows == {(i.requested_time, i.action, i.state.name, i.completion_time) for i in lake.timeline}
    assert result.created == len(lake.timeline) and table.sync_status == SyncStatus.OK
    first = Instant.objects.get(table=table, requested_time="20251220210108078")
    assert first.partitions == 3 and first.files >= 3 and first.records > 0 and first.bytes > 0


def test_sync_of_an_unchanged_table_writes_nothing(allowed: Path, table_copy) -> None:
    table = services.table_register(path=str(table_copy(V8_MOR)), user=None)
    services.table_sync(table=table)
    with CaptureQueriesContext(connection) as queries:
        result = services.table_sync(table=table)
    assert not result.changed
    assert not [q for q in queries.captured_queries if not q["sql"].lstrip().upper().startswith("SELECT")]


def test_sync_is_incremental_and_removes_instants_that_left(allowed: Path, table_copy) -> None:
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = services.table_register(path=str(path), user=None)
    services.table_sync(table=table)
    before = Instant.objects.filter(table=table).count()
    lake = HudiTable.open(str(path))
    last = lake.timeline.commits().completed().last()
    assert last is not None
    from timeline.rollback import rollback
    done = rollback(lake, last.requested_time)
    result = services.table_sync(table=table)
    assert result.changed and result.created == 1 and result.deleted == 1
    assert Instant.objects.filter(table=table).count() == before
    assert Instant.objects.filter(table=table, requested_time=done.requested_time, action="rollback").exists()
    assert not Instant.objects.filter(table=table, requested_time=last.requested_time).exists()


@pytest.mark.parametrize(("setup", "message"), [
    (lambda root: "", "Give the table's base path"),
    (lambda root: "/etc", "outside the allowed roots"),
    (lambda root: str(root / "missing"), "is not a Hudi table"),
    (lambda root: (root / "plain").mkdir() or str(root / "plain"), "no .hoodie folder"),
])
def test_sync_register_refuses_bad_paths_and_writes_nothing(allowed: Path, setup, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        services.table_register(path=setup(allowed), user=None)
    assert not Table.objects.exists()


def test_sync_register_refuses_a_second_registration(allowed: Path, table_copy) -> None:
    path = str(table_copy(V8_MOR))
    services.table_register(path=path, user=None)
    with pytest.raises(ValidationError, match="already registered"):
        services.table_register(path=path, user=None)


def test_sync_failure_is_recorded_on_the_row(allowed: Path, table_copy) -> None:
    from console.tasks import sync_table
    path = table_copy(V8_MOR)
    table = services.table_register(path=str(path), user=None)
    (path / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=x\nhoodie.table.version=3\n")
    sync_table.apply(args=[table.pk])
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.FAILED and "version 3 is not supported" in table.sync_error


def test_sync_indexes_the_write_stats_of_commits_too_large_to_show(allowed: Path, table_copy, settings) -> None:
    """Issue 38: every completed commit file above CLEANLINE_INSTANT_INLINE_MAX_BYTES has its write
    stats indexed by the sync, in the file's order and per partition; a sync again keeps the index,
    and an instant that left the timeline takes its index with it."""
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = services.table_register(path=str(path), user=None)
    services.table_sync(table=table)
    lake = HudiTable.open(str(path))
    writes = [i for i in lake.timeline.completed() if i.action in ("commit", "replacecommit")]
    indexes = {i.requested_time: i for i in WriteStatsIndex.objects.filter(table=table)}
    assert writes and set(indexes) == {i.requested_time for i in writes}
    for instant in writes:
        completed = lake.state_files(instant)[State.COMPLETED]
        index = indexes[instant.requested_time]
        stats = lake.inspect.write_stats(completed)
        assert index.complete and index.file == completed.rsplit("/", 1)[-1]
        assert index.size == Path(completed.removeprefix("file:")).stat().st_size
        assert selectors.indexed_write_stats(index, partition=None, start=0, count=10_000) == stats
        assert index.count == len(stats) == table.instants.get(requested_time=instant.requested_time).files
        for partition in {s.partition for s in stats}:
            assert selectors.indexed_write_stats(index, partition=partition, start=1, count=10_000) == [
                s for s in stats if s.partition == partition][1:]
    kept = {i.pk for i in indexes.values()}
    services.table_sync(table=table, full=True)
    assert set(WriteStatsIndex.objects.filter(table=table).values_list("pk", flat=True)) == kept

    from timeline.rollback import rollback
    rollback(lake, writes[-1].requested_time)
    services.table_sync(table=table)
    assert set(WriteStatsIndex.objects.filter(table=table).values_list("requested_time", flat=True)) == {
        i.requested_time for i in writes[:-1]}
    assert not IndexedWriteStat.objects.filter(index__requested_time=writes[-1].requested_time).exists()


def test_sync_in_full_indexes_commits_synced_before_the_index(allowed: Path, table_copy, settings) -> None:
    """Issue 38: commits synced while no index was kept (before the index existed, or while they
    were under the limit) are indexed by the next full sync, and only once; an incremental sync
    leaves unchanged instants unread."""
    path = table_copy("sample_table/cow/v9_txns_simple_nometa")
    table = services.table_register(path=str(path), user=None)
    services.table_sync(table=table)
    assert not WriteStatsIndex.objects.filter(table=table).exists()  # every commit is under 4 MiB
    settings.CLEANLINE_INSTANT_INLINE_MAX_BYTES = 100
    services.table_sync(table=table)
    assert not WriteStatsIndex.objects.filter(table=table).exists()
    services.table_sync(table=table, full=True)
    lake = HudiTable.open(str(path))
    writes = {i.requested_time for i in lake.timeline.completed() if i.action in ("commit", "replacecommit")}
    indexes = WriteStatsIndex.objects.filter(table=table, complete=True)
    assert writes and set(indexes.values_list("requested_time", flat=True)) == writes
    kept = set(indexes.values_list("pk", flat=True))
    services.table_sync(table=table, full=True)
    assert set(WriteStatsIndex.objects.filter(table=table).values_list("pk", flat=True)) == kept
