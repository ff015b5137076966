"""The sync at scale (issue 29): a sync reads only the instants whose state files came or went,
the archived timeline only when its folder changed, and takes its figures from the metadata table
(or keeps the last full listing's, with the reclaimable figure from the last plan), never a full
storage listing per sync. Each test compares an incremental sync with a full sync of the same
lake: after it, the full sync finds no row to change and (with a metadata table) the same figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, Instant, SyncMark, Table
from tests.console.helpers import KEEP_FEW, completed_commits, person
from tests.helpers import Lake
from timeline import CleanConfig, HudiTable
from timeline.mdt.listing import ListingSource, table_listing
from timeline.storage.arrow import LocalStorage

pytestmark = pytest.mark.django_db

WITH_MDT = ["sample_table/cow/v9_txns_simple_meta", "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"]
WITHOUT_MDT = ["sample_table/cow/v9_txns_simple_nometa", "sample_table/cow/v6_simplekeygen_nonhivestyle"]
ROW_FIELDS = ("requested_time", "action", "state", "completion_time", "archived", "partitions", "files", "records",
              "bytes")


def rows(table: Table) -> list[tuple[Any, ...]]:
    return sorted(Instant.objects.filter(table=table).values_list(*ROW_FIELDS))


def _without_moments(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_moments(v) for k, v in value.items() if k != "at"}
    if isinstance(value, list):
        return [_without_moments(v) for v in value]
    return value


def figures(table: Table) -> tuple[Any, ...]:
    table = Table.objects.get(pk=table.pk)
    return table.total_files, table.total_bytes, _without_moments(table.layout_summary)


def compare_with_full(table: Table, *, same_figures: bool) -> None:
    """The rows, the archival summary (and the figures) the incremental sync left are those a
    full sync makes: the full sync after it changes no row. Without a metadata table the
    figures are not compared: they stay as the last full listing found them."""
    before_rows, before_figures = rows(table), figures(table)
    archival = Table.objects.get(pk=table.pk).archival
    again = services.table_sync(table=Table.objects.get(pk=table.pk), full=True)
    assert (again.created, again.updated, again.deleted) == (0, 0, 0)
    assert rows(table) == before_rows
    assert Table.objects.get(pk=table.pk).archival == archival
    if same_figures:
        assert figures(table) == before_figures


@pytest.fixture(autouse=True)
def archival_each_sync(settings) -> None:
    """Archival re-planned at every changed sync, so that the summaries compare."""
    settings.CLEANLINE_ARCHIVAL_SUMMARY_SECONDS = 0


@pytest.mark.parametrize("fixture", WITH_MDT + WITHOUT_MDT)
def test_sync_incremental_equals_full_after_new_instants(console_table, fixture: str) -> None:
    table = console_table(fixture)
    lake = HudiTable.open(table.path)
    first = table.figures_source
    commits = completed_commits(table)
    lake.maintenance().create_savepoint(commits[0], user="test", comment="keep")
    pending = lake.new_instant_time()
    (Path(lake.timeline.folder) / f"{pending}.commit.requested").write_bytes(b"")  # a write that began
    result = services.table_sync(table=table)
    assert result.changed and result.created == 2 and result.deleted == 0
    assert Instant.objects.get(table=table, requested_time=commits[0], action="savepoint").state == "COMPLETED"
    assert Instant.objects.get(table=table, requested_time=pending).state == "REQUESTED"
    table.refresh_from_db()
    if fixture in WITH_MDT:
        assert table.figures_source["kind"] == "metadata" and table.figures_source["at"] > first["at"]
    else:  # no metadata table: the figures stay as the first sync's full listing found them
        assert table.figures_source == first and first["kind"] == "storage"
    compare_with_full(table, same_figures=True)


@pytest.mark.parametrize("version", [6, 8])
def test_sync_incremental_reads_new_commits_from_their_completed_files(settings, tmp_path: Path, version: int) -> None:
    """New completed commits (the bench's case: their completed file came, nothing went) are read
    from those files alone: the same rows, with what each commit reports, as a full sync."""
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=version)
    times = [f"202611010{i:02d}000000" for i in range(8)]
    for time_ in times[:4]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-8:-6]}", time_)]})
    table = services.table_register(path=lake.base, user=None, enqueue=False)
    services.table_sync(table=table)
    for time_ in times[4:]:
        lake.commit(time_, {"city=sf": [lake.base_file("city=sf", f"fg{time_[-8:-6]}", time_, size=333)],
                            "city=la": [lake.base_file("city=la", f"fh{time_[-8:-6]}", time_)]})
    result = services.table_sync(table=table)
    assert (result.created, result.updated, result.deleted) == (4, 0, 0)
    new = Instant.objects.get(table=table, requested_time=times[-1])
    assert (new.state, new.partitions, new.files) == ("COMPLETED", 2, 2) and new.bytes > 0
    assert new.completion_time  # a layout-1 completion time comes from the completed file's modification time
    compare_with_full(table, same_figures=False)


@pytest.mark.parametrize("fixture", WITH_MDT + WITHOUT_MDT[:1])
def test_sync_incremental_equals_full_after_a_clean(console_table, fixture: str) -> None:
    """A clean by a Hudi writer (here the library, outside the console): the clean's row comes,
    and with a metadata table the figures follow it (files, bytes, reclaimable) at this sync."""
    table = console_table(fixture)
    lake = HudiTable.open(table.path)
    config = CleanConfig.from_properties(lake.config.props, commits_retained=1)
    plan = lake.maintenance().clean(config, enforce_retention=False, dry_run=False)
    assert plan.files_to_delete, "the fixture has something to clean with one commit retained"
    result = services.table_sync(table=table)
    assert result.changed and result.created == 1
    assert Instant.objects.filter(table=table, action="clean", state="COMPLETED").exists()
    compare_with_full(table, same_figures=fixture in WITH_MDT)


def test_sync_incremental_equals_full_after_archival(archivable_table: Table) -> None:
    table = archivable_table
    active_before = table.archival["active"]
    outcome = HudiTable.open(table.path).maintenance(options=KEEP_FEW).archive(dry_run=False)
    assert outcome.result is not None and len(outcome.result.archived) == 9
    result = services.table_sync(table=table)
    assert result.changed and result.deleted == 0  # archived, not gone
    assert Instant.objects.filter(table=table, archived=True).count() == 9
    table.refresh_from_db()
    assert table.archival["active"] == active_before - 9 == 2
    compare_with_full(table, same_figures=False)  # no metadata table: the figures are the first sync's


def test_sync_reads_the_archived_timeline_only_when_its_folder_changed(archivable_table: Table) -> None:
    table = archivable_table
    HudiTable.open(table.path).maintenance(options=KEEP_FEW).archive(dry_run=False)
    services.table_sync(table=table)
    archived = Instant.objects.filter(table=table, archived=True).order_by("requested_time").first()
    assert archived is not None
    Instant.objects.filter(pk=archived.pk).update(completion_time="marked")  # only a re-read of the archive mends it
    lake = HudiTable.open(table.path)
    lake.maintenance().create_savepoint(completed_commits(table)[-1], user="test", comment="")
    assert services.table_sync(table=table).created == 1
    assert Instant.objects.get(pk=archived.pk).completion_time == "marked"  # the archive was not read
    assert services.table_sync(table=table, full=True).updated == 1
    assert Instant.objects.get(pk=archived.pk).completion_time == archived.completion_time


@pytest.mark.parametrize("fixture", [WITH_MDT[0], WITHOUT_MDT[1]])
def test_sync_removes_the_row_of_a_deleted_instant(console_table, fixture: str) -> None:
    table = console_table(fixture)
    lake = HudiTable.open(table.path)
    pending = lake.new_instant_time()
    requested = Path(lake.timeline.folder) / f"{pending}.commit.requested"
    requested.write_bytes(b"")
    assert services.table_sync(table=table).created == 1
    requested.unlink()  # the write's instant is gone (removed by hand, or rolled back by its writer)
    result = services.table_sync(table=table)
    assert (result.created, result.updated, result.deleted) == (0, 0, 1)
    assert not Instant.objects.filter(table=table, requested_time=pending).exists()
    compare_with_full(table, same_figures=True)


def test_sync_of_an_unchanged_table_lists_only_the_timeline_folder_names(console_table) -> None:
    """The last sync's names are kept (SyncMark) and an unchanged table is found so from one
    unsized listing: nothing written, the figures as they were."""
    table = console_table(WITHOUT_MDT[0])
    mark = SyncMark.objects.get(table=table)
    assert mark.names and mark.config_digest
    before = figures(table)
    assert not services.table_sync(table=table).changed
    assert figures(table) == before


def test_sync_without_metadata_table_takes_reclaimable_from_the_last_plan(console_table) -> None:
    table = console_table(WITHOUT_MDT[0])
    listed = table.reclaimable
    assert table.reclaimable_source["kind"] == "storage" and "bytes" in listed
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides={
        "commits_retained": 1, "allow_short_retention": True}))
    assert plan.files_to_delete > 0
    lake = HudiTable.open(table.path)
    lake.maintenance().create_savepoint(completed_commits(table)[-1], user="test", comment="")
    services.table_sync(table=table)
    table.refresh_from_db()
    assert table.reclaimable["bytes"] == plan.bytes_to_delete and table.reclaimable["files"] == plan.files_to_delete
    assert table.reclaimable_source["kind"] == "plan" and table.reclaimable_source["plan"] == plan.pk
    assert table.figures_source["kind"] == "storage"  # the totals stay the first sync's listing
    page = Client()
    page.force_login(person("vera", "viewer"))
    html = page.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert f"plan #{plan.pk}</a> at" in html and "from a full storage listing at" in html


def test_sync_with_metadata_table_says_so_on_the_overview(console_table) -> None:
    table = console_table(WITH_MDT[0])
    assert table.figures_source["kind"] == table.reclaimable_source["kind"] == "metadata"
    listed, _ = table_listing(HudiTable.open(table.path), ListingSource.METADATA)
    assert table.total_files == sum(len(f) for f in listed.partitions.values())
    page = Client()
    page.force_login(person("vera", "viewer"))
    html = page.get(reverse("console:overview", args=[table.pk])).content.decode()
    assert html.count("from the metadata table at") == 2


def test_sync_full_resync_from_the_page_and_the_api(console_table) -> None:
    table = console_table(WITHOUT_MDT[0])
    first = table.figures_source["at"]
    page = Client()
    page.force_login(person("olga", "operator"))
    assert page.get(reverse("console:sync", args=[table.pk])).status_code == 405
    page.post(reverse("console:sync", args=[table.pk]), {"full": "1"})
    table.refresh_from_db()
    assert table.sync_full  # the task's sync reads everything and lists the table
    services.table_sync(table=table)
    table.refresh_from_db()
    assert not table.sync_full and table.figures_source["at"] > first
    event = AuditEvent.objects.filter(table=table, action="table.sync.requested").latest("pk")
    assert event.parameters == {"full": True}
    olga = table.registered_by or person("otto", "operator")
    token = services.token_create(actor=olga, owner=olga, name="ci")[1]
    api = Client(headers={"Authorization": f"Bearer {token}"})
    answer = api.post(f"/api/v1/tables/{table.pk}/sync?full=true")
    assert answer.status_code == 202 and "Full re-sync" in answer.json()["detail"]
    assert Table.objects.get(pk=table.pk).sync_full
