"""The table version pages (console/views_versions.py): the table's version with what the other
versions mean and the preflight's blockers, "Rehearse" (its task runs, its report shown) and
"Request" (a version change's page with the rehearsal's report, decided through the one decide
view), and the approvals queue holding it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client, TestCase
from django.urls import reverse

from console.models_versions import VersionChange
from tests.console.helpers import person
from timeline import HudiTable
from timeline.versions import READERS

pytestmark = pytest.mark.django_db

TABLE = "sample_table/cow/v9_txns_simple_nometa"


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post(client: Client, url: str, data: dict[str, Any] | None = None) -> Any:
    with TestCase.captureOnCommitCallbacks(execute=True):  # the tasks it queues run (eagerly) as on commit
        return client.post(url, data or {})


def test_versions_pages_rehearse_request_queue_and_approve(table: Any) -> None:
    ada, bob = person("ada", "admin"), person("bob", "admin")
    operator = client_of(person("olga", "operator"))
    page = operator.get(reverse("console:versions", args=[table.pk])).content.decode()
    assert "Table version <strong>9</strong>" in page and READERS[9] in page and READERS[8] in page
    assert "Table version 8 (older: a downgrade)" in page and "NineToEightDowngradeHandler" in page
    assert "Not rehearsed yet" in page and "Request the move to 8" not in page  # no rehearsal yet
    viewer_page = client_of(person("vera", "viewer")).get(reverse("console:versions", args=[table.pk])).content
    assert b">Rehearse</button>" not in viewer_page

    pending = Path(table.path.removeprefix("file:")) / ".hoodie" / "timeline" / "20990101000000000.commit.requested"
    pending.write_bytes(b"")
    blocked = operator.get(reverse("console:versions", args=[table.pk])).content.decode()
    assert "blocked" in blocked and "pending write" in blocked and "20990101000000000" in blocked
    pending.unlink()

    assert post(client_of(ada), reverse("console:version_rehearse", args=[table.pk]), {"to": "8"}).status_code == 302
    page = operator.get(reverse("console:versions", args=[table.pk])).content.decode()
    assert "Passed" in page and "12 rows" in page and "Request the move to 8" in page

    asked = post(client_of(ada), reverse("console:version_request", args=[table.pk]), {"to": "8"})
    change = VersionChange.objects.get(table=table)
    assert asked.url == reverse("console:version_change", args=[table.pk, change.pk]) and change.is_waiting
    mine = client_of(ada).get(asked.url).content.decode()
    assert "another admin must approve it" in mine and "Approve: rehearse again" not in mine
    assert "The rehearsal it rests on" in mine and "12 rows" in mine
    queue = client_of(bob).get(reverse("console:approvals")).content.decode()
    assert "version change" in queue and change.summary in queue
    assert "Approve: rehearse again" in client_of(bob).get(asked.url).content.decode()

    post(client_of(bob), reverse("console:version_change_approve", args=[table.pk, change.pk]))
    change.refresh_from_db()
    assert change.is_completed, change.error
    assert HudiTable.open(table.path).version == 8
    done = client_of(ada).get(asked.url).content.decode()
    assert "The table moved from table version 9 to" in done and "The rehearsal under the lock" in done
    after = operator.get(reverse("console:versions", args=[table.pk])).content.decode()
    assert "Table version <strong>8</strong>" in after
