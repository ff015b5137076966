"""Archival in the console (services, selectors, permissions, pages), on a copy
of a real table whose writer options keep 2 to 3 commits (the library archives 9 of its 11
instants): the sync stores what archival moves and what blocks it (a savepoint named with its
instant and since when), the overview shows it; a request waits for a second admin, runs (the
task eagerly, as on commit) and shortens the active timeline, audited as a clean is; a plan the
timeline no longer gives turns stale with nothing written; double submits change nothing; a
savepoint's page says what archival deleting it frees, and deleting it frees exactly that.
The gauges and the alert: tests/console/services/test_archival_alerts.py."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from console import services
from console.models import Archival, AuditEvent, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import KEEP_FEW, completed_commits, hoodie_files, person
from timeline import HudiTable

pytestmark = pytest.mark.django_db


@pytest.fixture
def table(archivable_table: Table) -> Table:
    return archivable_table


def client_of(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def actions(table: Table) -> list[str]:
    return list(AuditEvent.objects.filter(table=table, action__startswith="archival.").order_by("pk")
                .values_list("action", flat=True))


def test_archival_sync_stores_what_archival_moves_and_what_blocks_it(table: Table) -> None:
    lake = HudiTable.open(table.path)
    assert table.archival["active"] == len(lake.timeline) == 11
    assert table.archival["archivable"] == lake.inspect.archival(KEEP_FEW).archivable == 9
    assert table.archival["active_after"] == 2 and table.archival["blockers"] == []
    Table.objects.filter(pk=table.pk).update(archival={})  # a table synced before archival was summed up
    assert not services.table_sync(table=Table.objects.get(pk=table.pk)).changed  # unchanged; its summary is made
    assert Table.objects.get(pk=table.pk).archival == table.archival
    savepoint = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=savepoint, comment="keep")  # syncs
    table.refresh_from_db()
    [blocker] = [b for b in table.archival["blockers"] if b["kind"] == "savepoint"]
    assert blocker["instant"] == savepoint and blocker["since"] and "savepoint" in blocker["why"]
    assert table.archivable_instants == 1 and table.active_instants == 12  # the savepoint is an instant too
    page = client_of(person("vera", "viewer")).get(reverse("console:overview", args=[table.pk])).content.decode()
    assert 'data-kind="savepoint"' in page and f'title="{savepoint}"' in page and "<strong>12</strong> instants" in page
    # the table's options hold the keep counts: without them Hudi's defaults (30) keep everything
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options={})
    table.refresh_from_db()
    assert table.archivable_instants == 0
    assert [b["kind"] for b in table.archival["blockers"]] == ["keep.max not exceeded"]


def test_archival_request_waits_for_a_second_admin_then_shortens_the_timeline(
        table: Table, django_capture_on_commit_callbacks) -> None:
    ada, bob = person("ada", "admin"), person("bob", "admin")
    with django_capture_on_commit_callbacks() as queued:
        archival = services.archival_request(table=table, user=ada)
        again = services.archival_request(table=table, user=ada)  # a double submit
    assert again.pk == archival.pk and Archival.objects.count() == 1 and queued == []  # nothing runs unapproved
    assert archival.status == ApprovalStatus.DRAFT and len(archival.instants) == 9
    assert archival.expected == completed_commits(table)[:9] and archival.plan["active_after"] == 2
    with pytest.raises(ValidationError, match="approver must differ"):
        services.archival_approve(archival=archival, user=ada)
    page = client_of(ada).get(reverse("console:archival_detail", args=[table.pk, archival.pk])).content.decode()
    assert 'id="approval-note"' in page and "Approve and archive" not in page
    page = client_of(bob).get(reverse("console:archival_detail", args=[table.pk, archival.pk])).content.decode()
    assert "Approve and archive" in page
    before = hoodie_files(table)
    with django_capture_on_commit_callbacks(execute=True):
        done = services.archival_approve(archival=archival, user=bob)
    done.refresh_from_db()
    assert done.status == ApprovalStatus.COMPLETED, done.error or done.stale_reason
    assert done.result["archived"] == 9 and done.result["active_after"] == 2
    assert len(HudiTable.open(table.path).timeline) == 2 and hoodie_files(table) != before
    table.refresh_from_db()
    assert table.active_instants == 2 and table.archivable_instants == 0  # synced after the run
    assert table.instants.filter(archived=True).count() == 9
    with django_capture_on_commit_callbacks() as queued:
        assert services.archival_approve(archival=done, user=bob).pk == done.pk  # bob's double submit
    assert queued == []
    assert actions(table) == ["archival.requested", "archival.approval.refused", "archival.approved",
                              "archival.completed"]
    approved = AuditEvent.objects.get(action="archival.approved")
    assert approved.user == bob and approved.parameters["archival"] == archival.pk
    assert AuditEvent.objects.get(action="archival.completed").parameters["lock"]


def test_archival_a_plan_the_timeline_no_longer_gives_turns_stale_with_nothing_written(
        table: Table, django_capture_on_commit_callbacks) -> None:
    ada, bob = person("ada", "admin"), person("bob", "admin")
    archival = services.archival_request(table=table, user=ada)
    held = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=held, comment="since the request")
    before = hoodie_files(table)
    with django_capture_on_commit_callbacks(execute=True):
        services.archival_approve(archival=archival, user=bob)
    archival.refresh_from_db()
    assert archival.status == ApprovalStatus.STALE and "plan it again" in archival.stale_reason
    assert hoodie_files(table) == before and len(HudiTable.open(table.path).timeline) == 12
    assert actions(table)[-2:] == ["archival.approved", "archival.stale"]
    shown = client_of(bob).get(reverse("console:archival_detail", args=[table.pk, archival.pk]))
    assert b"Stale, nothing written" in shown.content
    fresh = services.archival_request(table=table, user=ada)  # a stale archival is not open: ask again
    assert fresh.pk != archival.pk and fresh.expected == completed_commits(table)[:1]


def test_archival_decline_and_refusals(table: Table, django_capture_on_commit_callbacks) -> None:
    ada, bob = person("ada", "admin"), person("bob", "admin")
    archival = services.archival_request(table=table, user=ada)
    declined = services.archival_decline(archival=archival, user=ada, note="not now")  # the requester may decline
    assert declined.status == ApprovalStatus.REJECTED and declined.decision_note == "not now"
    assert services.archival_decline(archival=archival, user=ada).status == ApprovalStatus.REJECTED  # double submit
    with django_capture_on_commit_callbacks() as queued, pytest.raises(ValidationError, match="waiting for approval"):
        services.archival_approve(archival=archival, user=bob)
    assert queued == [] and len(HudiTable.open(table.path).timeline) == 11
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options={})
    with pytest.raises(ValidationError, match="Nothing to archive"):
        services.archival_request(table=table, user=ada)
    assert Archival.objects.count() == 1
    assert actions(table) == ["archival.requested", "archival.declined", "archival.refused"]


def test_archival_pages_and_their_roles(table: Table) -> None:
    operator, viewer = person("olga", "operator"), person("vera", "viewer")
    preview = reverse("console:archival", args=[table.pk])
    shown = client_of(viewer).get(preview).content.decode()
    assert shown.count('<tr><td><span class="instant">') == 9 and "Request archival" not in shown
    assert 'id="active-before">11 instants' in shown and 'id="active-after">2 instants' in shown
    assert client_of(viewer).post(reverse("console:archival_request", args=[table.pk])).status_code == 403
    assert "Request archival of 9 instants" in client_of(operator).get(preview).content.decode()
    response = client_of(operator).post(reverse("console:archival_request", args=[table.pk]))
    archival = Archival.objects.get()
    assert response.url == reverse("console:archival_detail", args=[table.pk, archival.pk])
    approve = reverse("console:archival_approve", args=[table.pk, archival.pk])
    assert client_of(operator).post(approve).status_code == 403 and client_of(operator).get(approve).status_code == 405
    assert 'id="open-archival"' in client_of(operator).get(preview).content.decode()
    assert client_of(person("out", "viewer")).get(reverse("console:archival_detail",
                                                          args=[table.pk, 999])).status_code == 404


def test_archival_savepoint_page_says_what_deleting_it_frees(table: Table) -> None:
    savepoint = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=savepoint, comment="keep")
    admin = client_of(person("ada", "admin"))
    page = admin.get(reverse("console:savepoint", args=[table.pk, savepoint])).content.decode()
    # now archival moves the commit before the savepoint; without it, 9 commits (12 - 9 - the savepoint: 2 left)
    assert "lets archival move <strong>8 more instants</strong>" in page
    assert "from 12 to <strong>2</strong> instants" in page and "archival takes it to 11" in page
    assert page.count("<tr><td><span class=\"instant\">") == 8 and 'name="confirm"' in page
    viewer = client_of(person("vera", "viewer")).get(reverse("console:savepoint", args=[table.pk, savepoint]))
    assert b"8 more instants" in viewer.content and b'name="confirm"' not in viewer.content
    assert admin.get(reverse("console:savepoint", args=[table.pk, completed_commits(table)[2]])).status_code == 404
    services.savepoint_delete(table=table, user=None, instant_time=savepoint)
    after = HudiTable.open(table.path).inspect.archival(KEEP_FEW)
    assert after.archivable == 9 and after.active_after == 2  # what the page said deleting it frees


def test_archival_savepoint_that_blocks_nothing_frees_nothing(table: Table) -> None:
    services.table_settings_update(table=table, user=None, auto_clean=False, auto_max_files=1000,
                                   auto_max_bytes=1000, write_options={})
    savepoint = completed_commits(table)[1]
    services.savepoint_create(table=table, user=None, instant_time=savepoint, comment="keep")
    page = client_of(person("ada", "admin")).get(reverse("console:savepoint", args=[table.pk, savepoint]))
    assert b"Deleting this savepoint frees nothing for archival now" in page.content
    assert b"keep.max not exceeded" in page.content


def test_archival_of_a_table_with_a_metadata_table_says_what_its_own_archival_moves(
        console_table, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    """A table with a metadata table: the summary, the preview and the finished archival say
    what the metadata table's own archival moves (it runs right after the data table's, by its
    own rules: the library's `ArchivalPlan.metadata_table`)."""
    table = services.table_settings_update(table=console_table("sample_table/cow/v9_txns_simple_meta"), user=None,
                                           auto_clean=False, auto_max_files=1000, auto_max_bytes=1000,
                                           write_options=KEEP_FEW)
    planned = HudiTable.open(table.path).inspect.archival(KEEP_FEW).metadata_table
    assert planned is not None and planned.archivable > 0
    assert table.archival["metadata_table"]["archivable"] == planned.archivable
    ada, bob = person("ada", "admin"), person("bob", "admin")
    page = client_of(ada).get(reverse("console:archival", args=[table.pk])).content.decode()
    assert f'id="metadata-table-archivable">{planned.archivable} of its {planned.active_before} instants' in page
    archival = services.archival_request(table=table, user=ada)
    with django_capture_on_commit_callbacks(execute=True):
        done = services.archival_approve(archival=archival, user=bob)
    done.refresh_from_db()
    assert done.status == ApprovalStatus.COMPLETED, done.error or done.stale_reason
    assert done.result["metadata_table_archived"] == planned.archivable
    page = client_of(ada).get(reverse("console:archival_detail", args=[table.pk, archival.pk])).content.decode()
    assert f"Its metadata table's own archival moved {planned.archivable} instants." in page
