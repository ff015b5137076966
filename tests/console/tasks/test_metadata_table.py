"""The console and a table with a metadata table: a clean planned, approved and run on a real
Celery worker keeps the metadata table (validated after); the overview shows its partitions and
validates it on demand; dropping it is an admin's typed, audited repair action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.test import Client

from console import services
from console.models import AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from tests.console.helpers import SHORT_RETENTION, login, person, queued_outcome
from tests.helpers import rows
from timeline import HudiTable

TABLE = "sample_table/cow/v9_txns_simple_meta"


def registered(settings: Any, tmp_path: Path, table_copy: Any, start_worker: Any = None) -> tuple[Path, Table]:
    """A copy of the fixture with a metadata table, registered and synced: here, or, given
    `start_worker`, by a worker started then, running the sync its registration queued."""
    settings.CLEANLINE_ALLOWED_ROOTS = [str(tmp_path)]
    path = table_copy(TABLE)
    if start_worker is None:
        table = services.table_register(path=str(path), user=None, enqueue=False)
        services.table_sync(table=table)
        return path, table
    start_worker()
    table = services.table_register(path=str(path), user=None)
    assert queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 300)["changed"]
    table.refresh_from_db()
    return path, table


def test_console_cleans_a_table_with_a_metadata_table_without_dropping_it(start_worker, settings, tmp_path: Path,
                                                                         table_copy) -> None:
    from console.tasks import run_clean_plan

    path, table = registered(settings, tmp_path, table_copy, start_worker)
    plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)  # the worker builds it
    assert queued_outcome(CleanPlan.objects.get(pk=plan.pk).task_id, 300) == "draft"
    plan = services.plan_approve(plan=CleanPlan.objects.get(pk=plan.pk), user=None)
    assert plan.status == ApprovalStatus.APPROVED
    latest = rows(path)
    run_clean_plan.delay(plan.pk).get(timeout=300)
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.COMPLETED and plan.files_to_delete > 0
    lake = HudiTable.open(str(path))
    assert lake.config.metadata_table_enabled and (path / ".hoodie" / "metadata").exists()
    assert lake.inspect.validate_metadata_table().ok
    assert rows(path) == latest
    approved = AuditEvent.objects.get(action="clean.plan.approved", table=table)
    assert approved.parameters["metadata_table_updated"] is True


def test_overview_shows_validates_and_admin_drops_the_metadata_table(db, settings, tmp_path: Path,
                                                                      table_copy) -> None:
    path, table = registered(settings, tmp_path, table_copy)
    viewer, admin = login("viewer"), Client()
    admin.force_login(person("ada", "admin"))
    page = viewer.get(f"/tables/{table.pk}/").content.decode()
    assert "Metadata table" in page and "record_index" in page and "Drop the metadata table" not in page
    checked = viewer.get(f"/tables/{table.pk}/?validate_mdt=1").content.decode()
    assert 'id="mdt-valid"' in checked
    (next(p for p in path.glob("region=*/*.parquet"))).unlink()
    broken = viewer.get(f"/tables/{table.pk}/?validate_mdt=1").content.decode()
    assert 'id="mdt-invalid"' in broken and "only in the metadata table" in broken
    assert viewer.post(f"/tables/{table.pk}/metadata-table/drop", {"confirm": table.name}).status_code == 403
    admin.post(f"/tables/{table.pk}/metadata-table/drop", {"confirm": "wrong"})
    assert (path / ".hoodie" / "metadata").exists()
    admin.post(f"/tables/{table.pk}/metadata-table/drop", {"confirm": table.name})
    assert not (path / ".hoodie" / "metadata").exists()
    assert not Table.objects.get(pk=table.pk).metadata_table_enabled
    event = AuditEvent.objects.get(action="metadata_table.dropped")
    assert event.username == "ada" and "files" in event.parameters["partitions"]
