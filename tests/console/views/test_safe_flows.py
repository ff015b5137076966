"""Safe flows: a plan being made never looks like an empty plan; the savepoint form offers only
writes the library accepts and keeps the user's input when it refuses one."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from console import services
from console.models import Table
from tests.console.helpers import SHORT_RETENTION, login
from timeline import HudiTable

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


def test_safe_flows_a_plan_being_made_says_so_and_shows_no_empty_totals(table: Table) -> None:
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    page = login("viewer").get(reverse("console:plan", args=[table.pk, plan.pk]))
    assert b"The plan is being made" in page.content and b"Files to delete" not in page.content
    assert b"Nothing to delete" not in page.content and b"No file matches" not in page.content
    built = services.plan_build(plan=plan)
    page = login("operator").get(reverse("console:plan", args=[table.pk, built.pk]))
    assert b"The plan is being made" not in page.content and b"Files to delete" in page.content


def test_safe_flows_savepoint_form_offers_accepted_writes_and_keeps_input_on_refusal(table: Table) -> None:
    lake = HudiTable.open(table.path)
    offered = [i.requested_time for i in lake.inspect.savepoint_candidates()]
    admin = login("admin")
    page = admin.get(reverse("console:savepoints", args=[table.pk])).content.decode()
    assert [o for o in offered if f'<option value="{o}"' in page] == offered
    assert page.count("<option value=") == len(offered)
    services.savepoint_create(table=table, user=None, instant_time=offered[0], comment="first")
    refused = admin.post(reverse("console:savepoint_create", args=[table.pk]),
                         {"instant": offered[0], "comment": "my careful comment"})
    body = refused.content.decode()
    assert refused.status_code == 400 and "already savepointed" in body and 'value="my careful comment"' in body
    assert f'<option value="{offered[0]}"' not in body  # savepointed now: no longer offered


def test_safe_flows_rollback_has_a_preview_page_with_files_and_a_typed_confirmation(
        table: Table, django_capture_on_commit_callbacks) -> None:
    from pathlib import Path

    from console.models import Job, JobStatus
    from tests.helpers import fake_failed_write

    failed = "20990101000000000"
    fake_failed_write(Path(table.path.removeprefix("file:")), failed, markers=True)
    services.table_sync(table=table)
    listing = login("viewer").get(reverse("console:failed_writes", args=[table.pk])).content.decode()
    preview_url = reverse("console:rollback_preview", args=[table.pk, failed])
    assert preview_url in listing and 'name="confirm"' not in listing  # no one-click rollback
    admin = login("admin")
    page = admin.get(preview_url).content.decode()
    row = next(r for r in HudiTable.open(table.path).inspect.failed_writes() if r.instant.requested_time == failed)
    assert row.preview is not None and row.preview.files_to_delete
    assert all(path in page for _, path, _ in row.preview.files_to_delete)
    assert "A rollback cannot be undone" in page and f"Type {failed} (" in page  # its readable time beside it
    assert re.search(rf"Type {failed} \(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d \w+\) to confirm", page)
    assert admin.get(reverse("console:rollback_preview", args=[table.pk, "20010101000000000"])).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        admin.post(reverse("console:rollback_run", args=[table.pk]), {"target": failed, "confirm": failed})
    job = Job.objects.get()
    assert job.status == JobStatus.COMPLETED
    result = admin.get(reverse("console:job", args=[table.pk, job.pk])).content.decode()
    assert "The failed write" in result and "is rolled back (rollback instant" in result
    assert "<dt>rollback</dt>" not in result and "&#x27;rollback&#x27;" not in result  # no raw result dump


def test_safe_flows_restore_preview_lists_the_files_paged_with_a_warning(table: Table) -> None:
    lake = HudiTable.open(table.path)
    first = lake.timeline.commits().completed().first()
    assert first is not None
    services.savepoint_create(table=table, user=None, instant_time=first.requested_time, comment="")
    preview = HudiTable.open(table.path).inspect.restore_preview(first.requested_time)
    paths = [path for r in preview.rollbacks for _, path, _ in r.files_to_delete]
    assert paths
    page = login("viewer").get(reverse("console:restore", args=[table.pk, first.requested_time])).content.decode()
    assert "A restore cannot be undone" in page and f"deletes {len(paths)} file" in page
    assert all(p in page for p in paths[:50])


def test_safe_flows_audit_rows_link_to_their_objects_and_read_as_text(table: Table) -> None:
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)
    services.plan_build(plan=plan)
    page = login("viewer").get(reverse("console:audit")).content.decode()
    assert f'href="{reverse("console:plan", args=[table.pk, plan.pk])}">plan {plan.pk}</a>' in page
    assert f'href="{reverse("console:overview", args=[table.pk])}">{table.name}</a>' in page
    assert "{&#x27;plan&#x27;" not in page  # no Python dict text
    assert '<span class="key">plan</span>: ' in page  # parameters as key: value, not a dict's text


def test_safe_flows_refusals_and_denied_access_are_audited(table: Table) -> None:
    from console.models import AuditEvent

    viewer, admin = login("viewer"), login("admin")
    assert viewer.post(reverse("console:plan_request", args=[table.pk]), {}).status_code == 403
    denied = AuditEvent.objects.get(action="access.denied")
    assert denied.table == table and denied.username == "u-viewer" and denied.parameters["method"] == "POST"
    plan = services.plan_build(plan=services.plan_request(table=table, user=None, overrides=SHORT_RETENTION))
    services.plan_reject(plan=plan, user=None, note="no")
    admin.post(reverse("console:plan_approve", args=[table.pk, plan.pk]))  # a rejected plan is not approvable
    refused = AuditEvent.objects.get(action="plan_approve.refused")
    assert refused.table == table and "Only a draft plan" in refused.result and refused.username == "u-admin"
    admin.post(reverse("console:restore_run", args=[table.pk]), {"target": "20240101000000000", "confirm": "nope"})
    assert "Type the table" in AuditEvent.objects.get(action="restore.refused").result


def test_safe_flows_the_sync_badge_polls_while_a_sync_is_queued_and_stops_after(table: Table) -> None:
    from console.models import SyncStatus

    viewer = login("viewer")
    poll = f'hx-get="{reverse("console:sync_status", args=[table.pk])}"'
    assert poll not in viewer.get(reverse("console:overview", args=[table.pk])).content.decode()
    Table.objects.filter(pk=table.pk).update(sync_status=SyncStatus.QUEUED)
    for url in (reverse("console:overview", args=[table.pk]), reverse("console:catalog"),
                reverse("console:sync_status", args=[table.pk])):
        assert poll in viewer.get(url).content.decode(), url
    from console.tasks import sync_table

    sync_table.apply(args=(table.pk,))  # the task settles the badge (eager, as the fixture's tasks run)
    assert Table.objects.get(pk=table.pk).sync_status == SyncStatus.OK
    assert poll not in viewer.get(reverse("console:sync_status", args=[table.pk])).content.decode()


def test_safe_flows_a_refused_plan_request_keeps_what_was_typed(table: Table) -> None:
    from console.models import CleanPlan

    operator = login("operator")
    refused = operator.post(reverse("console:plan_request", args=[table.pk]),
                            {"policy": "KEEP_LATEST_COMMITS", "commits_retained": "1"})  # below the table's 10
    body = refused.content.decode()
    assert refused.status_code == 400 and "allow less retention" in body
    assert 'name="commits_retained" value="1"' in body and not CleanPlan.objects.exists()
    invalid = operator.post(reverse("console:plan_request", args=[table.pk]), {"commits_retained": "-4"})
    assert invalid.status_code == 400 and 'value="-4"' in invalid.content.decode()


def test_safe_flows_a_refused_rollback_has_a_preview_link_saying_hudis_rule_and_the_way_forward(table: Table) -> None:
    """A failed write with a commit completed after it (Hudi's validateRollbackCommitSequence
    refuses it): the failed-writes page links its preview, which says the rule and offers the
    ways forward (the newer failed write first, a savepoint before it to restore to); the API
    says the same."""
    import json
    from pathlib import Path

    from tests.console.helpers import person
    from tests.helpers import fake_failed_write

    path = Path(table.path.removeprefix("file:"))
    first = HudiTable.open(table.path).timeline.commits().completed().first()
    assert first is not None
    older = str(int(first.requested_time) + 1)  # between the first commit and the next
    fake_failed_write(path, older, markers=True)
    fake_failed_write(path, "20990101000000000", markers=True)
    services.table_sync(table=table)
    viewer = login("viewer")
    listing = viewer.get(reverse("console:failed_writes", args=[table.pk])).content.decode()
    preview_url = reverse("console:rollback_preview", args=[table.pk, older])
    assert f'href="{preview_url}" class="way-forward"' in listing and "Why, and the way forward" in listing
    page = viewer.get(preview_url).content.decode()
    assert "validateRollbackCommitSequence" in page and "The way forward" in page
    assert reverse("console:rollback_preview", args=[table.pk, "20990101000000000"]) in page  # the newer one first
    assert reverse("console:savepoints", args=[table.pk]) in page and 'name="confirm"' not in page
    services.savepoint_create(table=table, user=None, instant_time=first.requested_time, comment="")
    page = viewer.get(preview_url).content.decode()
    assert reverse("console:restore", args=[table.pk, first.requested_time]) in page
    assert "restore the table to the savepoint" in page  # its time shown as a date (the |instants filter)
    reader = person("api-viewer", "viewer")
    token = services.token_create(actor=reader, owner=reader, name="ci")[1]
    answer = viewer.get(f"/api/v1/tables/{table.pk}/failed-writes", HTTP_AUTHORIZATION=f"Bearer {token}")
    refusal = {r["instant"]: r["refusal"] for r in json.loads(answer.content)}[older]
    assert "validateRollbackCommitSequence" in refusal and f"the savepoint {first.requested_time}" in refusal
