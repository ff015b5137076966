"""S3 at its limits: Cleanline's S3 storage (timeline/storage/s3.py) through a fault-injecting
proxy (`tests.s3.ChaosProxy`) in front of the real S3-protocol server, a seeded ~10% of requests
answered 503 SlowDown or 500 InternalError, reset, or done by the server with the answer lost, and
keys of DeleteObjects answered with per-key errors. A clean deletes every planned object or
reports it failed, never reports deleted an object that is still there, and its completed
HoodieCleanMetadata lists exactly what went; listings, state-file and metadata-table reads retry
and read what the server holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Lake, S3Server
from tests.helpers import bucket_and_prefix as split
from tests.storage.helpers import ChaosProxy
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import FileStatus, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.exceptions import FileExists, StorageError
from timeline.instant import CLEAN, State
from timeline.mdt.listing import table_listing
from timeline.metadata import decode
from timeline.metadata.records import CleanMetadata
from timeline.storage import S3ConfigError, storage_for
from timeline.storage.arrow import LocalStorage
from timeline.storage.s3 import S3Storage

V8_MOR_MDT = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"  # logs, a metadata table, compaction


@pytest.fixture
def chaos(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Factory: a ChaosProxy in front of the server that this process's S3 clients go through."""
    proxies: list[ChaosProxy] = []

    def start(**faults: Any) -> ChaosProxy:
        proxy = ChaosProxy(s3_server.endpoint, **faults).__enter__()
        proxies.append(proxy)
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        return proxy

    yield start
    for proxy in proxies:
        proxy.__exit__(None, None, None)


def quick(storage: object) -> S3Storage:
    """The store with Cleanline's own rounds backing off in milliseconds (botocore's keep theirs)."""
    assert isinstance(storage, S3Storage)
    storage.retry_base_seconds = 0.01
    return storage


def test_s3_faults_clean_deletes_every_planned_file_or_reports_it_failed(
        s3_server: S3Server, chaos: Any, tmp_path: Path) -> None:
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=8)  # built locally, uploaded as it is
    partitions = [f"city=c{p}" for p in range(8)]
    for t in ("20261101000000000", "20261101010000000"):  # 800 file groups, each rewritten once
        lake.commit(t, {p: [lake.base_file(p, f"fg{g}", t, size=5) for g in range(100)] for p in partitions})
    lake.commit("20261101020000000", {"city=c0": [lake.base_file("city=c0", "fg0", "20261101020000000")]})
    uri = s3_server.upload(tmp_path / "lake")
    bucket, prefix = split(uri)
    before = s3_server.keys(bucket)

    proxy = chaos(rate=0.1, key_rate=0.1, seed=29, stuck=("/fg7_0-1-0_20261101000000000",))
    table = HudiTable.open(uri)
    quick(table.storage).delete_batch_size = 50  # 1 request of 1,000 keys would see few faults
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    planned = {d.path for d in plan.files_to_delete}
    assert len(planned) == 800
    clean = schedule_clean(table, plan, config)
    assert clean is not None
    (result,) = run_pending_cleans(table)

    assert all(proxy.faults[kind] for kind in (*ChaosProxy.KINDS, "key")), proxy.faults
    outcomes = {o.path: o for o in result.outcomes}
    assert set(outcomes) == planned
    assert {o.status for o in outcomes.values()} <= {FileStatus.DELETED, FileStatus.FAILED}
    deleted = {p for p, o in outcomes.items() if o.status is FileStatus.DELETED}
    failed = {p for p, o in outcomes.items() if o.status is FileStatus.FAILED}
    after = s3_server.keys(bucket)
    key_of = {p: p.removeprefix(f"s3://{bucket}/") for p in planned}
    assert not [p for p in deleted if key_of[p] in after], "reported deleted but still there"
    assert all(key_of[p] in after for p in failed), "reported failed but gone"
    stuck = {p for p in planned if "/fg7_0-1-0_20261101000000000" in p}
    assert len(stuck) == 8 and stuck <= failed
    assert all("InternalError" in outcomes[p].error or "SlowDown" in outcomes[p].error for p in stuck)
    # nothing but the deleted files left the bucket (timeline files were added)
    assert {k for k in before if k not in after} == {key_of[p] for p in deleted}
    # the completed clean, read straight from the server, lists exactly what went and what did not
    completed = next(k for k in after if k.startswith(f"{prefix}/.hoodie/timeline/{clean.requested_time}_")
                     and k.endswith(".clean"))
    body = s3_server.client().get_object(Bucket=bucket, Key=completed)["Body"].read()
    raw = decode(body, path=completed, action=CLEAN, state=State.COMPLETED, layout=2)
    assert raw is not None
    meta = CleanMetadata.from_raw(raw)
    listed_ok = {(p, n) for p, m in meta.partitions.items() for n in m.success_delete_files}
    listed_failed = {(p, n) for p, m in meta.partitions.items() for n in m.failed_delete_files}
    assert listed_ok == {(outcomes[p].partition, p.rsplit("/", 1)[1]) for p in deleted}
    assert listed_failed == {(outcomes[p].partition, p.rsplit("/", 1)[1]) for p in failed}
    assert meta.total_files_deleted == len(deleted) == result.deleted


def test_s3_faults_listing_state_files_and_metadata_table_read_through_faults(
        s3_server: S3Server, s3_table: Any, chaos: Any) -> None:
    uri = s3_table(V8_MOR_MDT)
    clean = HudiTable.open(uri)  # straight to the server
    expected_instants = [(i.requested_time, i.action, i.state) for i in clean.timeline.instants]
    expected_contents = {(i.requested_time, i.action, i.state): clean.storage.read(clean.timeline.path_of(i))
                         for i in clean.timeline.instants}
    expected_slices = sorted(map(repr, clean.file_system_view().latest_slices()))
    expected_listing = {source: {p: sorted((s.name, s.size) for s in files)
                                 for p, files in table_listing(clean, source)[0].partitions.items()}
                        for source in ("metadata", "storage")}

    proxy = chaos(rate=0.1, seed=7)
    for _ in range(3):
        table = HudiTable.open(uri)
        quick(table.storage)
        assert [(i.requested_time, i.action, i.state) for i in table.timeline.instants] == expected_instants
        assert {(i.requested_time, i.action, i.state): table.storage.read(table.timeline.path_of(i))
                for i in table.timeline.instants} == expected_contents
        assert sorted(map(repr, table.file_system_view().latest_slices())) == expected_slices
        for source, expected in expected_listing.items():
            listing, used = table_listing(table, source)
            assert used.value == source
            assert {p: sorted((s.name, s.size) for s in files) for p, files in listing.partitions.items()} == expected
    assert proxy.requests > 100 and sum(proxy.faults.values()) >= 10, (proxy.requests, proxy.faults)


def test_s3_faults_delete_many_counts_a_batch_deleted_when_its_answer_was_lost(
        s3_server: S3Server, chaos: Any) -> None:
    bucket = s3_server.new_bucket()
    keys = [f"t/p{n % 5}/f{n:04d}.parquet" for n in range(600)]
    s3_server.put_many(bucket, keys)
    proxy = chaos(rate=0.5, kinds=("lost",), seed=3)
    storage = quick(storage_for(f"s3://{bucket}/t")[0])
    storage.delete_batch_size = 50
    results = storage.delete_many([f"{bucket}/{k}" for k in keys])
    assert proxy.faults["lost"] >= 6
    assert results == {f"{bucket}/{k}": "deleted" for k in keys}
    assert s3_server.keys(bucket) == {}


def test_s3_faults_a_key_failing_every_round_is_failed_and_still_there(s3_server: S3Server, chaos: Any) -> None:
    bucket = s3_server.new_bucket()
    keys = [f"t/f{n}" for n in range(40)]
    s3_server.put_many(bucket, keys)
    proxy = chaos(rate=0.0, stuck=("t/f1",))  # f1, f10..f19: a per-key error every time
    storage = quick(storage_for(f"s3://{bucket}/t")[0])
    with s3_server.recording() as requests:
        results = storage.delete_many([f"{bucket}/{k}" for k in keys])
    stuck = {f"{bucket}/t/f1"} | {f"{bucket}/t/f1{n}" for n in range(10)}
    assert {p for p, r in results.items() if r != "deleted"} == stuck
    assert all(results[p].startswith(("failed: SlowDown", "failed: InternalError"))
               and f"after {storage.key_retry_attempts} rounds" in results[p] for p in stuck), results
    assert set(s3_server.keys(bucket)) == {p.split("/", 1)[1] for p in stuck}
    # a request a round (the first forwarded, the next four all-failing ones answered by the
    # proxy), then one HEAD per key still failing
    assert proxy.requests == storage.key_retry_attempts + len(stuck) == 5 + 11
    assert [r["method"] for r in requests].count("POST") == 1
    assert [r["method"] for r in requests].count("HEAD") == len(stuck)
    assert proxy.faults["key"] == 11 * 5


def test_s3_faults_create_if_absent_recognises_its_own_write_after_a_lost_answer(
        s3_server: S3Server, chaos: Any) -> None:
    bucket = s3_server.new_bucket()
    proxy = chaos(rate=1.0, kinds=("lost",))
    storage = quick(storage_for(f"s3://{bucket}/t")[0])
    storage.request_attempts = 2
    proxy.rate = 0.0
    storage.write(f"{bucket}/t/warm", b"x")  # the client is made; now the first attempt's answer is lost
    original = proxy.random.random
    answers = iter([0.0])  # the next request gets the fault, those after it none
    proxy.random.random = lambda: next(answers, 1.0)  # type: ignore[method-assign]
    proxy.rate = 0.5
    storage.write(f"{bucket}/t/.hoodie/20261101000000000.clean.inflight", b"plan")
    assert proxy.faults["lost"] == 1
    proxy.random.random = original  # type: ignore[method-assign]
    proxy.rate = 0.0
    with pytest.raises(FileExists):  # another writer's create still loses
        storage.write(f"{bucket}/t/.hoodie/20261101000000000.clean.inflight", b"plan")
    body = s3_server.client().get_object(Bucket=bucket, Key="t/.hoodie/20261101000000000.clean.inflight")["Body"]
    assert body.read() == b"plan"


def test_s3_faults_settings_come_from_the_environment(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3_server.new_bucket()
    default = storage_for(f"s3://{bucket}/t")[0]
    assert isinstance(default, S3Storage)
    assert (default.request_attempts, default.key_retry_attempts, default.io_threads) == (5, 5, 32)
    monkeypatch.setenv("CLEANLINE_S3_MAX_ATTEMPTS", "9")
    monkeypatch.setenv("CLEANLINE_S3_CONCURRENCY", "8")
    tuned = storage_for(f"s3://{bucket}/t")[0]
    assert isinstance(tuned, S3Storage)
    assert (tuned.request_attempts, tuned.key_retry_attempts, tuned.io_threads, tuned.listing_threads) == (9, 9, 8, 8)
    monkeypatch.setenv("CLEANLINE_S3_MAX_ATTEMPTS", "0")
    with pytest.raises(S3ConfigError, match="CLEANLINE_S3_MAX_ATTEMPTS"):
        storage_for(f"s3://{bucket}/t")


def test_s3_faults_listings_keep_retrying_under_sustained_server_errors(
        s3_server: S3Server, chaos: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The AWS SDK's standard retry strategy spends a retry quota on 5xx answers and stops
    retrying once it is gone (found by bench/s3_scale.py: a clean of 34,000 files failed
    finishing, on a listing of the metadata table's timeline); pyarrow's requests keep retrying."""
    bucket = s3_server.new_bucket()
    s3_server.put_many(bucket, [f"t/p{n}/f" for n in range(5)])
    monkeypatch.setenv("CLEANLINE_S3_MAX_ATTEMPTS", "8")
    proxy = chaos(rate=0.3, kinds=("internal",), seed=5)
    storage = storage_for(f"s3://{bucket}/t")[0]
    failed = 0
    for n in range(400):
        try:
            assert [s.name for s in storage.list(f"{bucket}/t/p{n % 5}")] == ["f"]
        except StorageError:
            failed += 1
    assert proxy.faults["internal"] > 100
    assert failed == 0
