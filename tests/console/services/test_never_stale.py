"""Never stale (issue 43): a table registered while a write was still being written is listed
again when the sync's own change check finds that write moved (and again while each listing
finds one pending), not kept with the partial figures of its first listing; the first sync of a
table registered by `manage.py bootstrap` or the demo lake's build runs the doctor and keeps a
history point; a change Cleanline makes (here an archival) keeps a history point at once."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from console import services
from console.models import SyncMark, Table
from console.models_approvals import ApprovalStatus
from console.models_health import TableHealth
from console.models_history import TableSnapshot
from console.services.health import table_sync_checked
from tests.console.helpers import person
from tests.helpers import Lake
from timeline.instant import Instant, State
from timeline.storage.arrow import LocalStorage

pytestmark = pytest.mark.django_db
TIMES = [f"202611010{i:02d}000000" for i in range(8)]


def data_files(base: str) -> int:
    """The files of the table's partition (its data files and partition metadata), as a storage
    listing counts them."""
    return sum(1 for _ in (Path(base) / "city=sf").iterdir())


def base_file(lake: Lake, file_id: str, time: str) -> str:
    """The write's base file of `file_id`, written unless the write wrote it already."""
    written = list(Path(lake.partition_path("city=sf")).glob(f"{file_id}_*_{time}.parquet"))
    return written[0].name if written else lake.base_file("city=sf", file_id, time)


def commit(lake: Lake, time: str, state: State = State.COMPLETED) -> None:
    """A write rewriting file group fg1 and adding one of its own (fg<hour>): begun and left
    inflight, or completed (its completed state file alone when it was begun already)."""
    files = {"city=sf": [base_file(lake, "fg1", time), base_file(lake, f"fg{time[8:10]}", time)]}
    if state is State.COMPLETED and list(Path(lake.timeline_folder).glob(f"{time}.*")):
        done = Instant(time, "commit", State.COMPLETED, time[:-3] + "999")
        lake.instant_file(done, lake.commit_metadata(files, None, "UPSERT", time=time))
    else:
        lake.commit(time, files, state=state)


def test_a_table_registered_mid_write_is_listed_again_when_the_write_moves(settings, tmp_path: Path) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=8)
    for time in TIMES[:3]:
        commit(lake, time)
    base_file(lake, "fg1", TIMES[3])  # the build's next write: one file written so far
    lake.commit(TIMES[3], {}, state=State.INFLIGHT)
    table = services.table_register(path=lake.base, user=None, enqueue=False)
    services.table_sync(table=table)
    table.refresh_from_db()
    first_listing = table.figures_source
    assert SyncMark.objects.get(table=table).writing == {"pending": [TIMES[3]], "relisted": 0}
    assert table.total_files == data_files(lake.base) == 8
    # the build goes on: its write completes with a second file, and two more writes follow
    commit(lake, TIMES[3])
    commit(lake, TIMES[4])
    commit(lake, TIMES[5], state=State.INFLIGHT)  # and one is being written at the next sync
    assert services.table_sync(table=table).changed
    table.refresh_from_db()
    assert table.total_files == data_files(lake.base) == 13  # listed again: not the 7 of the first listing
    assert table.figures_source["kind"] == "storage" and table.figures_source["at"] > first_listing["at"]
    assert SyncMark.objects.get(table=table).writing == {"pending": [TIMES[5]], "relisted": 1}
    commit(lake, TIMES[5])  # the build ends
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.total_files == data_files(lake.base) == 13
    assert SyncMark.objects.get(table=table).writing == {"pending": [], "relisted": 2}
    relisted_at = table.figures_source["at"]
    commit(lake, TIMES[6])  # later writes: incremental syncs as before, no listing (no metadata table)
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.figures_source["at"] == relisted_at and table.total_files == 13 < data_files(lake.base) == 15


def test_a_write_that_died_pending_starts_no_listing(settings, tmp_path: Path) -> None:
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=8)
    commit(lake, TIMES[0])
    lake.commit(TIMES[1], {}, state=State.INFLIGHT)  # it never moves again
    table = services.table_register(path=lake.base, user=None, enqueue=False)
    services.table_sync(table=table)
    table.refresh_from_db()
    listed_at = table.figures_source["at"]
    commit(lake, TIMES[2])
    assert services.table_sync(table=table).changed
    table.refresh_from_db()
    assert table.figures_source["at"] == listed_at
    assert SyncMark.objects.get(table=table).writing == {"pending": [TIMES[1]], "relisted": 0}


def test_the_first_sync_of_a_registered_table_runs_the_doctor_and_keeps_a_history_point(
        console_table, settings, tmp_path: Path, table_copy, django_capture_on_commit_callbacks) -> None:
    # the demo lake's build: registered and synced at once, with its health and a history point
    table = services.table_register(path=str(table_copy("sample_table/cow/v9_txns_simple_nometa")), user=None,
                                    enqueue=False)
    table_sync_checked(table=table)
    assert TableHealth.objects.filter(table=table).exists() and TableSnapshot.objects.filter(table=table).count() == 1
    # manage.py bootstrap: its tables synced on the way to the first page, the doctor and the
    # history point in the worker's first sync right after (Celery runs eagerly here)
    lake = tmp_path / "bootstrap-lake"
    lake.mkdir()
    Path(table_copy("sample_table/cow/v6_nonpartitioned")).rename(lake / "v6")
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    with django_capture_on_commit_callbacks(execute=True):
        call_command("bootstrap", str(lake), stdout=StringIO(), stderr=StringIO())
    bootstrapped = Table.objects.get(path__endswith="/bootstrap-lake/v6")
    assert TableHealth.objects.filter(table=bootstrapped).exists()
    assert TableSnapshot.objects.filter(table=bootstrapped).count() == 1


def test_an_archival_keeps_a_history_point_at_once(archivable_table: Table, django_capture_on_commit_callbacks) -> None:
    table = archivable_table
    ada, bob = person("ada", "admin"), person("bob", "admin")
    before = list(TableSnapshot.objects.filter(table=table).values_list("active_instants", flat=True))
    archival = services.archival_request(table=table, user=ada)
    with django_capture_on_commit_callbacks(execute=True):
        services.archival_approve(archival=archival, user=bob)
    archival.refresh_from_db()
    assert archival.status == ApprovalStatus.COMPLETED, archival.error
    points = list(TableSnapshot.objects.filter(table=table).order_by("at", "pk").values_list("active_instants",
                                                                                             flat=True))
    assert len(points) == len(before) + 1 and points[-1] == 2  # the archival's own point: 11 instants, 9 moved
