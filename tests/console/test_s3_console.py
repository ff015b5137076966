"""The console on an `s3://` table, on the real S3 server (tests/helpers.py): the table's root has
its endpoint, region and credentials in CLEANLINE_S3_ROOTS, credentials named as environment
variables. The environment's own endpoint (AWS_ENDPOINT_URL) is a closed port in this process
and in the worker, so every request that reaches the server went by the root's settings, and
each recorded request is signed with the root's access key. The worker gets the settings from
its environment through console/settings.py, never from this process's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.urls import reverse

from console import selectors, services
from console.lake import open_table
from console.models import CleanPlan, Job, JobStatus, SyncStatus, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from console.settings import s3_roots
from tests.console.helpers import ROOT, SHORT_RETENTION, login, queued_outcome
from tests.helpers import (
    FIXTURES,
    REGION,
    V9_MOR,
    S3Server,
    bucket_and_prefix,
    data_keys,
    s3_rows,
    signers,
    unzip_table,
)

CLOSED = "http://127.0.0.1:9"
ROOT_KEY, ROOT_SECRET = "lake-root-key", "lake-root-secret"
SECRETS = {"LAKE_S3_KEY_ID": ROOT_KEY, "LAKE_S3_SECRET": ROOT_SECRET}


def roots_json(root: str, endpoint: str) -> str:
    return json.dumps({root: {"endpoint_url": endpoint, "region": REGION, "access_key_id_env": "LAKE_S3_KEY_ID",
                              "secret_access_key_env": "LAKE_S3_SECRET"}})


@contextmanager
def by_the_root(server: S3Server) -> Iterator[None]:
    """Every request the server receives inside the block is signed with the root's key."""
    with server.recording() as requests:
        yield
    assert requests and signers(requests) == {ROOT_KEY}


def test_s3_console_register_sync_plan_approve_run_savepoint_rollback_with_the_roots_settings(
        start_worker, settings, s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from console.tasks import run_clean_plan

    bucket = s3_server.new_bucket()
    uri = s3_server.upload(unzip_table(FIXTURES / f"{V9_MOR}.zip", tmp_path / "upload"), bucket,
                           key_prefix="lake/trips")
    root = f"s3://{bucket}/lake"
    configured = roots_json(root, s3_server.endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL", CLOSED)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings.CLEANLINE_ALLOWED_ROOTS = [root]
    settings.CLEANLINE_S3_ROOTS = s3_roots(configured)
    start_worker(CLEANLINE_S3_ROOTS=configured, CLEANLINE_ALLOWED_ROOTS=root, AWS_ENDPOINT_URL=CLOSED, **SECRETS)

    with by_the_root(s3_server):
        table = services.table_register(path=uri, user=None)  # the worker runs the sync it queues
        synced = queued_outcome(Table.objects.get(pk=table.pk).sync_task_id, 120)
    assert table.path == uri
    table.refresh_from_db()
    assert table.sync_status == SyncStatus.OK and synced["created"] == len(open_table(uri).timeline) > 0

    # a savepoint on the latest write, before the clean (after it, timeline/savepoint.py counts the
    # replaced file groups the clean deleted as lost slices and refuses the latest write)
    latest = open_table(uri).timeline.writes().completed().last()
    assert latest is not None
    with by_the_root(s3_server):
        services.savepoint_create(table=table, user=None, instant_time=latest.requested_time, comment="s3")
        assert [s.instant.requested_time for s in selectors.savepoints(table)] == [latest.requested_time]

    with by_the_root(s3_server):
        plan = services.plan_request(table=table, user=None, overrides=SHORT_RETENTION)  # and the build
        assert queued_outcome(CleanPlan.objects.get(pk=plan.pk).task_id, 120) == "draft"
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    retained = [i.requested_time for i in open_table(uri).timeline.writes().completed()
                if i.requested_time >= plan.earliest_retained]
    before = {t: s3_rows(s3_server, uri, t) for t in retained}
    with by_the_root(s3_server):
        plan = services.plan_approve(plan=plan, user=None)
    assert plan.status == ApprovalStatus.APPROVED
    with by_the_root(s3_server):
        run_clean_plan.delay(plan.pk).get(timeout=120)
    plan = CleanPlan.objects.get(pk=plan.pk)
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_done == plan.files_to_delete

    # the report: every planned file deleted, as the completed clean on the lake says; retained instants read as before
    files = list(stored_plan(plan).iter_rows())  # type: ignore[union-attr]
    planned = {f.path for f in files if f.delete}
    reported = {f.path for f in files if f.outcome == "deleted"}
    lake = open_table(uri)
    clean = lake.read_instant(lake.timeline.cleans().last())  # type: ignore[arg-type]
    listed = {n for meta in (clean or {})["partitionMetadata"].values() for n in meta["successDeleteFiles"]}
    assert planned == reported and {p.rsplit("/", 1)[-1] for p in planned} == listed
    _, prefix = bucket_and_prefix(uri)
    assert not {p.removeprefix(f"{uri}/") for p in planned} & data_keys(s3_server, uri)
    assert all(s3_rows(s3_server, uri, t) == before[t] for t in retained)
    assert [s.instant.requested_time for s in selectors.savepoints(table)] == [latest.requested_time]
    admin = login("admin")
    with by_the_root(s3_server):
        report = admin.get(reverse("console:plan_csv", args=[table.pk, plan.pk]))
        assert report.status_code == 200 and len(b"".join(report.streaming_content).splitlines()) > len(planned)
        assert admin.get(reverse("console:file_groups", args=[table.pk])).status_code == 200

    # a failed write after the savepoint, rolled back on the worker
    before_rows, before_keys = s3_rows(s3_server, uri), data_keys(s3_server, uri)
    failed = "20990101000000000"
    client = s3_server.client()
    for state in ("deltacommit.requested", "deltacommit.inflight"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/.hoodie/timeline/{failed}.{state}", Body=b"")
    piece = next(s for s in lake.file_system_view().latest_slices() if s.base_file is not None)
    folder = f"{prefix}/{piece.partition}" if piece.partition else prefix
    client.copy_object(Bucket=bucket, Key=f"{folder}/{piece.file_id}_9-9-9_{failed}.parquet",
                       CopySource={"Bucket": bucket, "Key": f"{folder}/{piece.base_file.name}"})  # type: ignore[union-attr]
    with by_the_root(s3_server):
        page = admin.get(reverse("console:failed_writes", args=[table.pk]))
        assert page.status_code == 200 and failed.encode() in page.content
        job = services.job_request(table=table, user=None, kind=Job.Kind.ROLLBACK, target=failed, confirm_name=failed)
        queued_outcome(Job.objects.get(pk=job.pk).task_id, 120)  # the run the request queued, on the worker
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, job.error
    assert data_keys(s3_server, uri) == before_keys and s3_rows(s3_server, uri) == before_rows
    assert open_table(uri).timeline.find(failed) is None
    assert Table.objects.get(pk=table.pk).instants.filter(action="rollback").exists()


@pytest.mark.parametrize("configured, message", [
    ('{"s3://b/lake": {"secret_access_key": "inline-secret-value"}}', "would hold a secret inline"),
    ('{"s3://b/lake": {"access_key_id_env": "LAKE_S3_KEY_ID", "secret_access_key_env": "NOT_SET_ANYWHERE"}}',
     "names NOT_SET_ANYWHERE, which is not set"),
])
def test_s3_console_a_bad_s3_roots_setting_stops_start_up_naming_root_and_key(configured: str, message: str) -> None:
    started = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, env={**os.environ, "CLEANLINE_S3_ROOTS": configured, **SECRETS})
    assert started.returncode != 0
    assert "CLEANLINE_S3_ROOTS: S3 root 's3://b/lake': " in started.stderr and message in started.stderr
    assert "inline-secret-value" not in started.stderr
