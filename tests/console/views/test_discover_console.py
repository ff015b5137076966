"""The Discover tables page (issue 30): every Hudi table under an allowed root with its name,
type, version and size, the registered ones marked; the ticked ones registered in one step,
each then synced by a worker (a real one on Redis) with its progress on the page; refusals said
and audited; admins only, POST with CSRF."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from console import services
from console.models import AuditEvent, SyncStatus, Table
from tests.console.helpers import login, person, queued_outcome, wait_for
from tests.helpers import FIXTURES, unzip_table
from timeline import HudiTable

pytestmark = pytest.mark.django_db


@pytest.fixture
def lake(settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    from console.celery import app

    monkeypatch.setitem(app.conf, "task_always_eager", True)  # the worker's sync runs here
    root = tmp_path / "lake"
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root), str(tmp_path / "other")]
    return {"cow": unzip_table(FIXTURES / "sample_table/cow/v8_nonpartitioned.zip", root / "sales"),
            "mor": unzip_table(FIXTURES / "sample_table/mor/avro/v9_txns_simple_nometa.zip", root / "ops"),
            "meta": unzip_table(FIXTURES / "sample_table/cow/v9_txns_simple_meta.zip", root / "ops" / "deep")}


def test_discover_page_lists_the_tables_under_a_root_and_registers_the_ticked_ones(
        lake: dict[str, Path], django_capture_on_commit_callbacks) -> None:
    already = services.table_register(path=str(lake["cow"]), user=None, enqueue=False)
    admin = login("admin")
    page = admin.get(reverse("console:discover")).content.decode()
    for key, path in lake.items():
        table = HudiTable.open(str(path))
        assert f'data-path="{table.uri}"' in page and table.config.name in page, key
    assert "3 tables under" in page and "2 not registered yet" in page
    assert reverse("console:overview", args=[already.pk]) in page  # marked, not offered again
    assert page.count('type="checkbox" name="path"') == 2
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin.post(reverse("console:discover_register"),
                            {"path": [HudiTable.open(str(lake["mor"])).uri, HudiTable.open(str(lake["meta"])).uri,
                                      "/etc/passwd"]})
    assert answer.status_code == 302 and answer["Location"] == f"{reverse('console:discover')}?root="
    new = Table.objects.exclude(pk=already.pk)
    assert new.count() == 2 and all(t.sync_status == SyncStatus.OK and t.instants.exists() for t in new)
    assert AuditEvent.objects.filter(action="table.registered").count() == 3
    refused = AuditEvent.objects.get(action="table.register.refused")
    assert refused.parameters["path"] == "/etc/passwd" and "outside the allowed roots" in refused.result
    again = admin.get(reverse("console:discover")).content.decode()  # where the registration goes back to
    assert "2 tables registered" in again and "/etc/passwd: " in again
    assert "0 not registered yet" in again and 'name="path"' not in again
    assert all(f'id="sync-{t.pk}"' in again for t in new) and again.count(">in sync") == 2


def test_discover_is_for_admins_within_the_allowed_roots(lake: dict[str, Path]) -> None:
    operator = login("operator")
    assert operator.get(reverse("console:discover")).status_code == 403
    assert operator.post(reverse("console:discover_register"), {"path": "x"}).status_code == 403
    admin = login("admin")
    assert admin.get(reverse("console:discover_register")).status_code == 405
    outside = admin.get(reverse("console:discover"), {"root": "/"})
    assert outside.status_code == 302 and not Table.objects.exists()
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(person("csrf-admin", "admin"))
    assert guarded.post(reverse("console:discover_register"), {"path": str(lake["cow"])}).status_code == 403
    assert not Table.objects.exists()


def test_discover_registers_each_table_on_a_worker_and_shows_its_progress(start_worker, settings,
                                                                           tmp_path: Path) -> None:
    root = tmp_path / "lake"
    settings.CLEANLINE_ALLOWED_ROOTS = [str(root)]
    paths = [HudiTable.open(str(unzip_table(FIXTURES / f"sample_table/{name}.zip", root / folder))).uri
             for name, folder in (("cow/v8_nonpartitioned", "sales"), ("cow/v9_txns_simple_meta", "ops"))]
    admin = login("admin")
    answer = admin.post(reverse("console:discover_register"), {"path": paths, "root": str(root)})
    assert answer.status_code == 302
    tables = list(Table.objects.order_by("pk"))
    assert [t.path for t in tables] == paths and all(t.sync_status == SyncStatus.QUEUED for t in tables)
    page = admin.get(answer["Location"]).content.decode()  # no worker yet: each is queued, its badge polled
    for table in tables:
        assert f'id="sync-{table.pk}"' in page
        assert f'hx-get="{reverse("console:sync_status", args=[table.pk])}"' in page
    assert page.count(">queued") == 2 and "each is being synced by a worker" in page

    start_worker()
    outcomes = [queued_outcome(t.sync_task_id, 120) for t in tables]  # run by the worker, not here
    assert all(o["changed"] and o["created"] > 0 for o in outcomes)
    wait_for(lambda: all(t.sync_status == SyncStatus.OK for t in Table.objects.all()), 60, "both tables in sync")
    badge = admin.get(reverse("console:sync_status", args=[tables[0].pk])).content.decode()
    assert "in sync" in badge and "hx-get" not in badge  # the polled badge settles
    page = admin.get(answer["Location"]).content.decode()
    assert page.count(">in sync") == 2 and "hx-get" not in page
