"""Registering and syncing tables: idempotent, incremental, and clear about bad tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import services
from console.models import Instant, SyncStatus, Table
from timeline import HudiTable

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
