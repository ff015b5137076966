"""Tables on S3, against a real S3-protocol server (moto_server on 127.0.0.1, `s3_server`):
the CLI and the library read, plan, clean, savepoint, restore and roll back `s3://` copies of
real fixture tables exactly as they do local copies; hudi-rs reads the same S3 table and
agrees; deletes go in DeleteObjects batches and report per-key failures; nothing outside the
table is touched."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote

import hudi
import pytest

from tests.helpers import REGION, V9_MOR, Lake, S3Server, bucket_and_prefix, data_keys, s3_rows, signers
from tests.storage.helpers import STORAGE_CONTRACT, FaultyProxy
from timeline import CleanlineError, HudiTable
from timeline.clean.config import CleanConfig
from timeline.clean.executor import FileStatus, run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.exceptions import FileExists, StorageError
from timeline.failed_writes import failed_writes
from timeline.fsview import list_partitions
from timeline.instant import CLEAN, Instant, State
from timeline.metadata import avro
from timeline.restore import preview_restore, restore
from timeline.rollback import plan_rollback, rollback
from timeline.roots import LakeRoots
from timeline.savepoint import create_savepoint, list_savepoints
from timeline.storage import OutsideTableError, S3ConfigError, parse_s3_roots, storage_for
from timeline.storage.arrow import LocalStorage
from timeline.storage.s3 import S3Settings, S3Storage, s3_settings_for

CLEANLINE = Path(sys.executable).with_name("cleanline")
V6_COW = "sample_table/cow/v6_complexkeygen_hivestyle"        # nested partitions byteField=/shortField=
V6_COW_REPLACE = "sample_table/cow/v6_simplekeygen_nonhivestyle_overwritetable"
V8_MOR = "quickstart_trips_table/mor/avro/v8_trips_8i3u1d"     # logs, metadata table, compaction
V9_MOR_NONPART = "sample_table/mor/avro/v9_txns_nonpart_nometa"

Slice = tuple[str, str, str, str | None, tuple[str, ...]]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The `cleanline` command in a subprocess; it inherits the server's AWS_* variables."""
    return subprocess.run([str(CLEANLINE), *args], capture_output=True, text=True, timeout=120)


def ours(table: HudiTable, as_of: str | None = None) -> list[Slice]:
    return sorted((s.partition, s.file_id, s.base_instant_time, s.base_file.name if s.base_file else None,
                   tuple(log.name for log in s.log_files))
                  for s in table.file_system_view(as_of=as_of).latest_slices())


def theirs(server: S3Server, uri: str, as_of: str | None = None) -> list[Slice]:
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    return sorted((s.partition_path, s.file_id, s.creation_instant_time, s.base_file_name or None,
                   tuple(s.log_file_names))
                  for s in hudi.HudiTable(uri, server.hudi_options).get_file_slices(options))


def written_files(table: HudiTable, since: str) -> set[str]:
    """Table-relative paths of every file written by a completed write at or after `since`."""
    found = set()
    for instant in table.timeline.writes().completed():
        if instant.requested_time >= since:
            for stats in ((table.read_instant(instant) or {}).get("partitionToWriteStats") or {}).values():
                found |= {s["path"] for s in stats or () if s.get("path")}
    return found


def delete_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """DeleteObjects requests (POST ?delete) among recorded ones."""
    return [r for r in requests if r["method"] == "POST" and "?delete" in r["url"]]


# ----------------------------------------------------------------------------------------
# Configuration and the storage contract


def test_s3_settings_read_endpoint_and_region_as_aws_sdks_do() -> None:
    settings = S3Settings.from_environ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_DEFAULT_REGION": "eu-west-1"})
    assert settings == S3Settings("http://127.0.0.1:9000", "eu-west-1")
    assert settings.arrow_options("b") == {"scheme": "http", "endpoint_override": "127.0.0.1:9000",
                                           "region": "eu-west-1", "request_timeout": 120, "connect_timeout": 10}
    specific = S3Settings.from_environ({"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "https://s3.local:9443",
                                        "AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "eu-west-1"})
    assert specific == S3Settings("https://s3.local:9443", "ap-south-1")
    assert specific.arrow_options("b")["scheme"] == "https"


def test_s3_storage_honours_the_endpoint_variables(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3_server.new_bucket()
    s3_server.client().put_object(Bucket=bucket, Key="t/a", Body=b"here")
    storage, path = storage_for(f"s3a://{bucket}/t/a")
    assert isinstance(storage, S3Storage) and storage.read(path) == b"here"
    assert storage.uri(path) == f"s3a://{bucket}/t/a"  # the table's own scheme is kept
    # AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL: pointed at a closed port, nothing answers
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9")
    elsewhere, path = storage_for(f"s3://{bucket}/t/a")
    with pytest.raises(StorageError):
        elsewhere.read(path)
    with pytest.raises(StorageError):
        elsewhere.write(f"{bucket}/t/b", b"x")
    assert s3_server.keys(bucket) == {"t/a": 4}


# ----------------------------------------------------------------------------------------
# Per-root settings (LakeRoots, parse_s3_roots), passed to the table: each root its endpoint,
# region, credentials

CLOSED = "http://127.0.0.1:9"  # nothing listens: a request that goes by the environment fails


def test_s3_roots_parse_reads_credentials_from_the_variables_named() -> None:
    text = json.dumps({
        "s3://lake/warehouse": {"endpoint_url": "http://127.0.0.1:9000", "region": "eu-west-1",
                                "access_key_id_env": "LAKE_KEY", "secret_access_key_env": "LAKE_SECRET",
                                "session_token_env": "LAKE_TOKEN"},
        "s3a://other": {"profile": "ops"}, "s3://third/x": {}})
    roots = parse_s3_roots(text, {"LAKE_KEY": "key-1", "LAKE_SECRET": "secret-1", "LAKE_TOKEN": "token-1"})
    assert roots == {"s3://lake/warehouse": S3Settings("http://127.0.0.1:9000", "eu-west-1", "key-1", "secret-1",
                                                       "token-1"),
                     "s3a://other": S3Settings(profile="ops"), "s3://third/x": S3Settings()}
    assert "secret-1" not in repr(roots) and "token-1" not in repr(roots)
    assert parse_s3_roots("  ") == {}


@pytest.mark.parametrize("text, message", [
    ('{"s3://b/l": {"secret_access_key": "x"}}', "'secret_access_key' would hold a secret inline"),
    ('{"s3://b/l": {"aws_access_key_id": "x"}}', "'aws_access_key_id' would hold a secret inline"),
    ('{"s3://b/l": {"endpoint": "http://h:1"}}', "unknown key 'endpoint'"),
    ('{"s3://b/l": {"access_key_id_env": "KEY", "secret_access_key_env": "UNSET"}}', "names UNSET, which is not set"),
    ('{"s3://b/l": {"access_key_id_env": "KEY"}}', "give both or neither"),
    ('{"s3://b/l": {"session_token_env": "KEY"}}', "a session token needs"),
    ('{"s3://b/l": {"profile": "p", "access_key_id_env": "KEY", "secret_access_key_env": "KEY"}}', "not both"),
    ('{"s3://b/l": {"endpoint_url": "127.0.0.1:9000"}}', "not an http:// or https:// URL"),
    ('{"s3://b/l": {"region": 5}}', "non-empty string"),
    ('{"s3://b/l": "http://h:1"}', "give an object of settings"),
    ('{"gs://b/l": {}}', "not an s3:// URI"),
    ('{"/lake": {}}', "not an s3:// URI"),
    ('{"s3://b/l": {}, "s3a://b/l/": {}}', "'s3a://b/l/' is given twice"),
    ('["s3://b/l"]', "give a JSON object"),
    ('{"s3://b/l": ', "not valid JSON"),
])
def test_s3_roots_parse_refuses_what_it_cannot_use_naming_root_and_key(text: str, message: str) -> None:
    with pytest.raises(S3ConfigError, match=re.escape(message)) as refused:
        parse_s3_roots(text, {"KEY": "k"})
    if "JSON" not in message:
        assert "S3 root" in str(refused.value)


def test_s3_settings_for_takes_the_longest_root_on_whole_segments_over_the_environment() -> None:
    roots = LakeRoots(s3={"s3://b/lake": S3Settings("http://root:1", None, "k", "s"),
                          "s3://b/lake/hot": S3Settings(region="r2"), "s3://b": S3Settings(profile="p")})
    env = {"AWS_ENDPOINT_URL": "http://env:9", "AWS_REGION": "env-region"}
    assert roots.s3_for("s3a://b/lake/t", env) == S3Settings("http://root:1", "env-region", "k", "s")
    assert s3_settings_for("s3://b/lake", env, roots=roots.s3) == S3Settings("http://root:1", "env-region", "k", "s")
    # the longest root wins whole: its own region, the environment's endpoint and credentials
    assert roots.s3_for("s3n://b/lake/hot/t", env) == S3Settings("http://env:9", "r2")
    assert roots.s3_for("s3://b/lakehouse/t", env) == S3Settings("http://env:9", "env-region", profile="p")
    assert roots.s3_for("s3://b2/lake/t", env) == S3Settings("http://env:9", "env-region")
    # no roots given: the environment's alone
    assert s3_settings_for("s3://b/lake/t", env) == S3Settings("http://env:9", "env-region")
    assert LakeRoots().s3_for("s3://b/lake/t", env) == S3Settings("http://env:9", "env-region")
    with pytest.raises(S3ConfigError, match="not an s3:// URI"):
        LakeRoots(s3={"hdfs://nn/lake": S3Settings()})


def test_s3_root_settings_open_tables_below_it_with_its_endpoint_and_credentials(
        s3_server: S3Server, s3_table: Any, fixture_lake: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    uri = s3_table(V9_MOR_NONPART)
    bucket, _ = bucket_and_prefix(uri)
    monkeypatch.setenv("AWS_ENDPOINT_URL", CLOSED)
    with pytest.raises(CleanlineError):
        HudiTable.open(uri)  # by the environment: nothing answers
    roots = LakeRoots(s3={f"s3://{bucket}": S3Settings(s3_server.endpoint, REGION, "root-key", "root-secret")})
    with s3_server.recording() as requests:
        table = HudiTable.open(uri, roots=roots)
        assert ours(table) == ours(HudiTable.open(str(fixture_lake[V9_MOR_NONPART])))
        k = [i for i in table.timeline.commits().completed() if i.action in ("commit", "deltacommit")][1]
        create_savepoint(table, k.requested_time, user="tester")  # boto3's conditional PUT
    assert {r["method"] for r in requests} >= {"GET", "HEAD", "PUT"}
    assert signers(requests) == {"root-key"}
    assert [i.instant.requested_time for i in list_savepoints(HudiTable.open(uri, roots=roots))] == [k.requested_time]
    other = s3_server.new_bucket()  # another bucket, outside the root: the environment's closed endpoint
    s3_server.client().put_object(Bucket=other, Key="t/a", Body=b"x")
    storage, path = storage_for(f"s3://{other}/t/a", s3=roots.storage_options_for(f"s3://{other}/t/a"))
    with pytest.raises(StorageError):
        storage.read(path)
    # settings given to storage_for are used as they are (what a Spark executor would be handed)
    given = S3Settings(s3_server.endpoint, REGION, "given-key", "given-secret")
    with s3_server.recording() as requests:
        storage, path = storage_for(f"s3://{other}/t/a", s3=given)
        assert storage.read(path) == b"x"
    assert signers(requests) == {"given-key"}


def test_s3_storage_options_given_to_open_win_over_the_roots_and_travel_with_the_table(
        s3_server: S3Server, s3_table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`HudiTable.open(uri, storage_options=...)`, as delta-rs's `DeltaTable(uri, storage_options=...)`:
    the table's store signs with them, over its root's settings, and the table keeps them for the
    workers of its runs (`table.storage_options`)."""
    uri = s3_table(V9_MOR_NONPART)
    bucket, _ = bucket_and_prefix(uri)
    monkeypatch.setenv("AWS_ENDPOINT_URL", CLOSED)
    roots = LakeRoots(s3={f"s3://{bucket}": S3Settings(s3_server.endpoint, REGION, "root-key", "root-secret")})
    given = S3Settings(s3_server.endpoint, REGION, "given-key", "given-secret")
    with s3_server.recording() as requests:
        table = HudiTable.open(uri, storage_options=given, roots=roots)
        assert len(table.timeline) > 0
    assert signers(requests) == {"given-key"} and table.storage_options == given
    assert HudiTable.open(uri, roots=roots).storage_options == roots.s3_for(uri)


def test_s3_root_profile_signs_with_the_profile_from_the_aws_files(
        s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text("[lake-ops]\naws_access_key_id = profile-key\naws_secret_access_key = profile-secret\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ENDPOINT_URL", CLOSED)
    bucket = s3_server.new_bucket()
    s3_server.put_many(bucket, ["t/p/a", "t/p/b"])
    roots = LakeRoots(s3={f"s3://{bucket}/t": S3Settings(s3_server.endpoint, REGION, profile="lake-ops")})
    storage, base = storage_for(f"s3://{bucket}/t", s3=roots.s3_for(f"s3://{bucket}/t"))
    with s3_server.recording() as requests:
        assert sorted(s.name for s in storage.list(f"{base}/p")) == ["a", "b"]  # pyarrow
        assert storage.delete_many([f"{base}/p/a"]) == {f"{base}/p/a": "deleted"}  # boto3
    assert signers(requests) == {"profile-key"} and len(requests) == 2
    roots = LakeRoots(s3={f"s3://{bucket}/t": S3Settings(s3_server.endpoint, REGION, profile="no-such-profile")})
    with pytest.raises(StorageError, match="no-such-profile"):
        storage_for(f"s3://{bucket}/t", s3=roots.s3_for(f"s3://{bucket}/t"))


@pytest.mark.parametrize("contract", STORAGE_CONTRACT, ids=lambda f: f.__name__)
def test_s3_storage_keeps_the_storage_contract(s3_server: S3Server, contract: Any) -> None:
    bucket = s3_server.new_bucket()
    storage, root = storage_for(f"s3://{bucket}/root")
    contract((storage, root))


def test_s3_create_if_absent_write_has_exactly_one_winner(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    storage, root = storage_for(f"s3://{bucket}/t")
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            storage.write(f"{root}/.hoodie/timeline/1.clean.requested", str(n).encode())
            outcomes.append(f"won {n}")
        except FileExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(outcomes) == 8 and len(winners) == 1
    assert storage.read(f"{root}/.hoodie/timeline/1.clean.requested") == winners[0].split()[1].encode()


# ----------------------------------------------------------------------------------------
# Reading: CLI and library, compared with the local copy and with hudi-rs


@pytest.mark.parametrize("table_id", [V6_COW, V8_MOR])
def test_s3_cli_table_info_timeline_and_fsview_equal_the_local_table(
        s3_table: Any, fixture_lake: dict[str, Path], table_id: str) -> None:
    uri, local = s3_table(table_id), str(fixture_lake[table_id])
    info = cli("table", "info", uri, "--json")
    assert info.returncode == 0, info.stderr
    remote_info, local_info = json.loads(info.stdout), json.loads(cli("table", "info", local, "--json").stdout)
    differing = {k for k in local_info if remote_info.get(k) != local_info[k]}
    assert all(local in str(local_info[k]) or uri in str(remote_info[k]) for k in differing), differing
    assert remote_info["completedInstants"] == local_info["completedInstants"] > 0
    for command in (["timeline", "--archived"], ["fsview"], ["fsview", "--all-slices"]):
        remote = cli(command[0], uri, *command[1:], "--json")
        assert remote.returncode == 0, remote.stderr
        got, expected = json.loads(remote.stdout), json.loads(cli(command[0], local, *command[1:], "--json").stdout)
        if command[0] == "timeline" and local_info["tableVersion"] == 6:
            for row in got + expected:  # v6 completion times are the files' modification times
                row.pop("completionTime")
        assert got == expected, command
    assert "MERGE_ON_READ" in cli("table", "info", uri).stdout or "COPY_ON_WRITE" in cli("table", "info", uri).stdout


@pytest.mark.parametrize("table_id", [V6_COW, V6_COW_REPLACE, V8_MOR, V9_MOR])
def test_s3_fsview_equals_hudi_rs_on_s3_and_the_local_table(
        s3_server: S3Server, s3_table: Any, fixture_lake: dict[str, Path], table_id: str) -> None:
    uri = s3_table(table_id)
    table, local = HudiTable.open(uri), HudiTable.open(str(fixture_lake[table_id]))
    expected = theirs(s3_server, uri)
    assert expected and ours(table) == expected == ours(local)
    for instant in table.timeline.writes().completed():
        assert ours(table, instant.requested_time) == theirs(s3_server, uri, instant.requested_time), instant
    remote = {p: sorted((s.name, s.size) for s in files) for p, files in table.list_partitions().partitions.items()}
    listed = {p: sorted((s.name, s.size) for s in files) for p, files in local.list_partitions().partitions.items()}
    assert remote == listed


def test_s3_listing_lists_partition_folders_concurrently_and_skips_hoodie(
        s3_server: S3Server, s3_table: Any) -> None:
    uri = s3_table(V6_COW)
    bucket, prefix = bucket_and_prefix(uri)
    siblings = threading.Barrier(3, timeout=20)  # the three byteField= folders, listed at once or never

    class Probe(S3Storage):
        def list(self, path: str) -> Any:
            if path.rsplit("/", 1)[-1].startswith("byteField="):
                siblings.wait()
            return super().list(path)

    storage = Probe(bucket=bucket)
    with s3_server.recording() as requests:
        listing = list_partitions(storage, f"{bucket}/{prefix}")
    listings = [r for r in requests if r["method"] == "GET" and "list-type=2" in r["url"]]
    assert len(listings) == len(requests)  # one ListObjectsV2 per folder walked, nothing else
    assert not any(".hoodie" in r["url"] for r in listings)
    # the base, the byteField= folders and the partitions below them, nothing below a partition
    walked = {prefix} | {f"{prefix}/{p}" for p in listing.partitions} | {f"{prefix}/{p.split('/')[0]}"
                                                                          for p in listing.partitions}
    assert len(listing.partitions) == 3 and len(walked) == 7  # byteField=10, 20 and 30
    assert sorted(r["url"].split("prefix=")[1] for r in listings) == sorted(quote(f"{w}/", safe="") for w in walked)


# ----------------------------------------------------------------------------------------
# Cleaning


def test_s3_clean_plan_schedule_run_matches_the_local_table(
        s3_server: S3Server, s3_table: Any, table_copy: Any) -> None:
    uri, local = s3_table(V9_MOR), str(table_copy(V9_MOR))
    before_rows = s3_rows(s3_server, uri)
    planned = cli("clean", "plan", uri, "--retain-commits", "1", "--allow-short-retention", "--json")
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    local_plan = json.loads(cli("clean", "plan", local, "--retain-commits", "1", "--allow-short-retention",
                                "--json").stdout)
    assert json.dumps(plan).replace(uri, "BASE") == json.dumps(local_plan).replace(f"file:{local}", "BASE")
    doomed = {f["filePath"].removeprefix(uri + "/") for f in plan["files"] if f["delete"]}
    assert doomed and all(f.endswith((".parquet",)) or ".log." in f for f in doomed)
    before = data_keys(s3_server, uri)
    assert doomed <= before

    scheduled = cli("clean", "schedule", uri, "--retain-commits", "1", "--allow-short-retention")
    assert scheduled.returncode == 0, scheduled.stderr
    instant = scheduled.stdout.strip()
    with s3_server.recording() as requests:
        ran = cli("clean", "run", uri)
    assert ran.returncode == 0, ran.stderr
    assert f"{instant}: {len(doomed)} deleted" in ran.stdout and f"{len(doomed)}/{len(doomed)} files" in ran.stderr
    # one DeleteObjects for the whole plan, no per-file DELETE or HEAD of a data file
    assert len(delete_requests(requests)) == 1
    assert not [r for r in requests if r["method"] in ("DELETE", "HEAD") and "/.hoodie/" not in r["url"]]

    assert data_keys(s3_server, uri) == before - doomed
    table = HudiTable.open(uri)
    ectr = plan["earliestInstantToRetain"]["timestamp"]
    assert written_files(table, ectr) <= data_keys(s3_server, uri)  # every retained file is there
    assert s3_rows(s3_server, uri) == before_rows
    shown = json.loads(cli("clean", "show", uri, instant, "--json").stdout)
    assert shown["metadata"]["totalFilesDeleted"] == len(doomed)
    bucket, prefix = bucket_and_prefix(uri)
    names = [k for k in s3_server.keys(bucket, f"{prefix}/.hoodie/timeline/") if instant in k]
    completed = next(k for k in names if k.endswith(".clean"))
    body = s3_server.client().get_object(Bucket=bucket, Key=completed)["Body"].read()
    assert avro.record_name(body) == "org.apache.hudi.avro.model.HoodieCleanMetadata"
    # the same clean on the local copy deletes the same files
    assert cli("clean", "schedule", local, "--retain-commits", "1", "--allow-short-retention").returncode == 0
    assert cli("clean", "run", local).returncode == 0
    assert {str(p.relative_to(local)) for p in Path(local).rglob("*") if p.is_file() and ".hoodie" not in p.parts} \
        == data_keys(s3_server, uri)


def test_s3_clean_sends_one_delete_request_per_batch(s3_server: S3Server, tmp_path: Path) -> None:
    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=8)  # built locally, then uploaded
    partitions = [f"city=c{p}" for p in range(5)]
    for t in ("20261101000000000", "20261101010000000"):  # 250 file groups, each rewritten once
        lake.commit(t, {p: [lake.base_file(p, f"fg{g}", t, size=3) for g in range(50)] for p in partitions})
    lake.commit("20261101020000000", {"city=c0": [lake.base_file("city=c0", "fg0", "20261101020000000")]})
    uri = s3_server.upload(tmp_path / "lake")
    table = HudiTable.open(uri)
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    assert len(plan.files_to_delete) == 250
    schedule_clean(table, plan, config)
    table.storage.delete_batch_size = 100  # S3 takes 1,000 keys a request; fewer keeps the test small
    seen: list[int] = []
    with s3_server.recording() as requests:
        (result,) = run_pending_cleans(table, progress=lambda p: seen.append(p.files_done))
    assert (result.deleted, result.failed, result.bytes_deleted) == (250, 0, 250 * 3)  # sizes from listings
    assert sorted(r["body"].count(b"<Key>") for r in delete_requests(requests)) == [50, 100, 100]
    assert not [r for r in requests if r["method"] in ("DELETE", "HEAD") and "/.hoodie/" not in r["url"]]
    assert seen[-1] == 250 and seen == sorted(seen)
    keys = s3_server.keys(*bucket_and_prefix(uri))
    assert not [k for k in keys if k.endswith("_20261101000000000.parquet")]
    assert len([k for k in keys if k.endswith("_20261101010000000.parquet")]) == 250


def test_s3_clean_reports_files_the_store_refuses_as_failed(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    storage, base = storage_for(f"s3://{bucket}/lake")
    lake = Lake(storage, base, version=6)
    for t in ("20261101000000000", "20261101010000000", "20261101020000000"):
        lake.commit(t, {p: [lake.base_file(p, "fg1", t)] for p in ("city=sf", "city=la")})
    deny_deletes(s3_server, bucket, "lake/city=la/*")
    table = HudiTable.open(f"s3://{bucket}/lake")
    config = CleanConfig(commits_retained=1)
    plan = plan_clean(table, config)
    schedule_clean(table, plan, config)
    (result,) = run_pending_cleans(table)
    assert (result.deleted, result.failed) == (1, 1)
    meta = result.metadata.partitions
    assert meta["city=la"].failed_delete_files == ("fg1_0-1-0_20261101000000000.parquet",)
    assert not meta["city=la"].success_delete_files
    assert meta["city=sf"].success_delete_files == ("fg1_0-1-0_20261101000000000.parquet",)
    (failed,) = [o for o in result.outcomes if o.status is FileStatus.FAILED]
    assert failed.partition == "city=la" and failed.error  # the store's reason is kept
    assert sum(1 for k in s3_server.keys(bucket, "lake/city=la/") if k.endswith(".parquet")) == 3
    assert sum(1 for k in s3_server.keys(bucket, "lake/city=sf/") if k.endswith(".parquet")) == 2


def test_s3_clean_naming_another_bucket_or_a_folder_outside_the_table_deletes_nothing(s3_server: S3Server) -> None:
    bucket, other = s3_server.new_bucket(), s3_server.new_bucket("other")
    victims = {other: "lake/city=sf/victim.parquet", bucket: "elsewhere/city=sf/victim.parquet"}
    for b, key in victims.items():
        s3_server.client().put_object(Bucket=b, Key=key, Body=b"keep me")
    storage, base = storage_for(f"s3://{bucket}/lake")
    lake = Lake(storage, base, version=8)
    for t in ("20261101000000000", "20261101010000000", "20261101020000000"):
        lake.commit(t, {"city=sf": [lake.base_file("city=sf", "fg1", t)]})
    own = f"s3://{bucket}/lake/city=sf/fg1_0-1-0_20261101000000000.parquet"
    before = s3_server.keys(bucket)
    for entry in (f"s3://{other}/lake/city=sf/victim.parquet", f"s3a://{other}/lake/city=sf/victim.parquet",
                  f"s3://{bucket}/elsewhere/city=sf/victim.parquet", f"s3://{bucket}/lake/../elsewhere/city=sf/victim.parquet",
                  f"s3://{bucket}/lake-other/city=sf/victim.parquet", f"s3://{bucket}/lake/.hoodie/hoodie.properties"):
        plan = {"earliestInstantToRetain": None, "lastCompletedCommitTimestamp": "20261101020000000",
                "policy": "KEEP_LATEST_COMMITS", "filesToBeDeletedPerPartition": {}, "version": 2,
                "filePathsToBeDeletedPerPartition": {"city=sf": [
                    {"filePath": own, "isBootstrapBaseFile": False},
                    {"filePath": entry, "isBootstrapBaseFile": False}]},
                "partitionsToBeDeleted": [], "extraMetadata": None}
        clean = Instant("20261101030000000", CLEAN, State.REQUESTED)
        lake.instant_file(clean, plan)
        table = HudiTable.open(f"s3://{bucket}/lake")
        with pytest.raises(OutsideTableError, match="nothing was deleted"):
            run_pending_cleans(table)
        requested = f"lake/.hoodie/timeline/{clean.requested_time}.clean.requested"
        assert s3_server.keys(bucket) == {**before, requested: s3_server.keys(bucket)[requested]}, entry
        assert s3_server.keys(other) == {victims[other]: 7}  # and not even the table's own file went
        assert not [k for k in s3_server.keys(bucket) if ".clean.inflight" in k or k.endswith(".clean")]
        storage.delete(f"{bucket}/{requested}")


# ----------------------------------------------------------------------------------------
# Savepoint, restore, rollback


def test_s3_savepoint_then_restore_reads_as_the_savepoint(s3_server: S3Server, s3_table: Any) -> None:
    uri = s3_table(V9_MOR_NONPART)
    table = HudiTable.open(uri)
    writes = [i for i in table.timeline.commits().completed() if i.action in ("commit", "deltacommit")]
    k = writes[1].requested_time
    expected = s3_rows(s3_server, uri, k)
    create_savepoint(table, k, user="tester")
    (info,) = list_savepoints(table)
    assert info.instant.requested_time == k
    later = sorted(i.requested_time for i in table.timeline.writes() if i.requested_time > k)
    assert sorted(i.requested_time for i in preview_restore(table, k).instants) == later
    restore(table, k)
    after = HudiTable.open(uri)
    assert [i for i in after.timeline.writes() if i.requested_time > k] == []
    assert s3_rows(s3_server, uri) == expected
    assert written_files(after, "0") <= data_keys(s3_server, uri)


def test_s3_rollback_of_a_failed_write_deletes_its_files(s3_server: S3Server, s3_table: Any) -> None:
    uri = s3_table(V9_MOR)
    before_rows, before_keys = s3_rows(s3_server, uri), data_keys(s3_server, uri)
    table = HudiTable.open(uri)
    bucket, prefix = bucket_and_prefix(uri)
    failed = "20990101000000000"
    client = s3_server.client()
    for state in ("deltacommit.requested", "deltacommit.inflight"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/.hoodie/timeline/{failed}.{state}", Body=b"")
    written = []
    for piece in table.file_system_view().latest_slices()[:2]:
        assert piece.base_file is not None
        folder = f"{prefix}/{piece.partition}" if piece.partition else prefix
        name = f"{piece.file_id}_9-9-9_{failed}.parquet"
        client.copy_object(Bucket=bucket, Key=f"{folder}/{name}",
                           CopySource={"Bucket": bucket, "Key": f"{folder}/{piece.base_file.name}"})
        written.append(f"{folder}/{name}"[len(prefix) + 1:])
    table.reload()
    assert [i.requested_time for i in failed_writes(table)] == [failed]
    (pending,) = [i for i in table.timeline.pending() if i.requested_time == failed]
    assert sorted(p.rsplit("/", 1)[-1] for _, p, _ in plan_rollback(table, pending).files_to_delete) \
        == sorted(w.rsplit("/", 1)[-1] for w in written)
    done = rollback(table, failed)
    assert data_keys(s3_server, uri) == before_keys
    assert HudiTable.open(uri).timeline.find(failed) is None
    assert HudiTable.open(uri).timeline.rollbacks().completed().last() == done
    assert s3_rows(s3_server, uri) == before_rows


# ----------------------------------------------------------------------------------------
# Batched deletes


def deny_deletes(server: S3Server, bucket: str, pattern: str) -> None:
    """A bucket policy that refuses s3:DeleteObject on keys matching `pattern`."""
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": [f"arn:aws:s3:::{bucket}",
                                                                            f"arn:aws:s3:::{bucket}/*"]},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
         "Resource": f"arn:aws:s3:::{bucket}/{pattern}"}]}
    server.client().put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))


def test_s3_delete_many_deletes_2500_objects_in_3_requests(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    keys = [f"t/p{n % 7}/f{n:05d}.parquet" for n in range(2500)]
    s3_server.put_many(bucket, keys)
    storage, _ = storage_for(f"s3://{bucket}/t")
    with s3_server.recording() as requests:
        results = storage.delete_many([f"{bucket}/{k}" for k in keys])
    assert results == {f"{bucket}/{k}": "deleted" for k in keys}
    sent = delete_requests(requests)
    assert len(sent) == len(requests) == 3
    assert sorted(r["body"].count(b"<Key>") for r in sent) == [500, 1000, 1000]
    assert s3_server.keys(bucket) == {}
    # a key already gone is "deleted" too: S3 does not tell them apart (see timeline/storage/s3.py)
    assert storage.delete_many([f"{bucket}/{keys[0]}"]) == {f"{bucket}/{keys[0]}": "deleted"}


def test_s3_delete_many_reports_refused_keys_and_a_missing_bucket_as_failed(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    keys = [f"t/open/f{n}" for n in range(5)] + [f"t/locked/f{n}" for n in range(3)]
    s3_server.put_many(bucket, keys)
    deny_deletes(s3_server, bucket, "t/locked/*")
    storage, _ = storage_for(f"s3://{bucket}/t")
    results = storage.delete_many([f"{bucket}/{k}" for k in keys] + [f"{bucket}/"])
    assert {p for p, r in results.items() if r == "deleted"} == {f"{bucket}/t/open/f{n}" for n in range(5)}
    refused = {p: r for p, r in results.items() if "/locked/" in p}
    assert len(refused) == 3 and all(r.startswith("failed: AccessDenied") for r in refused.values())
    assert results[f"{bucket}/"].startswith("failed: not an object key")
    assert set(s3_server.keys(bucket)) == {f"t/locked/f{n}" for n in range(3)}
    missing = storage.delete_many(["no-such-bucket-cleanline/t/a", "no-such-bucket-cleanline/t/b"])
    assert set(missing) == {"no-such-bucket-cleanline/t/a", "no-such-bucket-cleanline/t/b"}
    assert all(r.startswith("failed: NoSuchBucket") for r in missing.values()), missing


def test_s3_delete_many_default_deletes_one_by_one_and_tells_gone(tmp_path: Path) -> None:
    storage, base = storage_for(str(tmp_path))
    (tmp_path / "a").write_bytes(b"1")
    (tmp_path / "locked").mkdir()
    results = storage.delete_many([f"{base}/a", f"{base}/b", f"{base}/locked"])
    assert results[f"{base}/a"] == "deleted" and results[f"{base}/b"] == "gone"
    assert results[f"{base}/locked"].startswith("failed: ")
    assert storage.delete_batch_size == 1000  # local: a tight unlink loop a clean task


def test_s3_subprocesses_see_the_server_and_nothing_else(s3_server: S3Server) -> None:
    assert os.environ["AWS_ENDPOINT_URL"] == s3_server.endpoint
    printed = subprocess.run([sys.executable, "-c", "import os; print(os.environ['AWS_ENDPOINT_URL'])"],
                             capture_output=True, text=True, timeout=60)
    assert printed.stdout.strip() == s3_server.endpoint


def test_s3_delete_many_retries_throttled_requests_and_keys(s3_server: S3Server,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3_server.new_bucket()
    keys = [f"t/f{n}" for n in range(3)]
    s3_server.put_many(bucket, keys)
    paths = [f"{bucket}/{k}" for k in keys]
    with FaultyProxy(s3_server.endpoint, throttle=2, slow_keys=1) as proxy:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        storage, _ = storage_for(f"s3://{bucket}/t")
        assert isinstance(storage, S3Storage)
        storage.retry_base_seconds = 0.01
        # two 503 SlowDown answers, then an answer with a per-key SlowDown, then the retry of that key
        assert storage.delete_many(paths) == {p: "deleted" for p in paths}
        assert proxy.deletes == 4
        assert s3_server.keys(bucket) == {}
        s3_server.put_many(bucket, keys)
        proxy.throttle, proxy.deletes = 1000, 0  # throttled for good: reported, never raised
        storage, _ = storage_for(f"s3://{bucket}/t")
        storage.request_attempts, storage.retry_base_seconds = 2, 0.01
        results = storage.delete_many(paths)
        assert all(r.startswith("failed: SlowDown") for r in results.values()) and len(results) == 3, results
        assert proxy.deletes == 2 * storage.key_retry_attempts  # botocore's attempts in each of Cleanline's rounds
        assert set(s3_server.keys(bucket)) == set(keys)


def test_s3_spark_clean_job_deletes_in_batches_too(s3_server: S3Server, spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The Spark engine's executors delete with DeleteObjects batches as the local engine does
    (they did one DELETE a file), sizes from one listing per folder when the plan has none."""
    from timeline.spark.clean import run_pending_cleans_spark

    lake = Lake(LocalStorage(), str(tmp_path / "lake"), version=8)
    partitions = [f"city=c{p}" for p in range(4)]
    for t in ("20261101000000000", "20261101010000000"):
        lake.commit(t, {p: [lake.base_file(p, f"fg{g}", t, size=3) for g in range(30)] for p in partitions})
    lake.commit("20261101020000000", {"city=c0": [lake.base_file("city=c0", "fg0", "20261101020000000")]})
    uri = s3_server.upload(tmp_path / "lake")
    table = HudiTable.open(uri)
    config = CleanConfig(commits_retained=1)
    assert schedule_clean(table, plan_clean(table, config), config) is not None
    with s3_server.recording() as requests:
        (result,) = run_pending_cleans_spark(spark, uri)
    assert (result.deleted, result.failed, result.bytes_deleted) == (120, 0, 120 * 3)
    assert sum(r["body"].count(b"<Key>") for r in delete_requests(requests)) == 120
    assert not [r for r in requests if r["method"] in ("DELETE", "HEAD") and "/.hoodie/" not in r["url"]]


def test_s3_clean_and_rollback_keep_the_metadata_table(s3_server: S3Server, s3_table: Any) -> None:
    """On an s3:// table with a metadata table: `mdt validate` is clean before; a clean writes
    its MDT deltacommit (validated after, hudi-rs rows unchanged); rolling back the latest write
    rolls its MDT deltacommit back too."""
    uri = s3_table("sample_table/cow/v9_txns_simple_meta")
    assert cli("mdt", "validate", uri).returncode == 0
    before_rows = s3_rows(s3_server, uri)
    table = HudiTable.open(uri)
    config = CleanConfig(commits_retained=1)
    clean = schedule_clean(table, plan_clean(table, config), config)
    assert clean is not None
    (result,) = run_pending_cleans(table)
    assert result.deleted > 0 and result.failed == 0
    validated = cli("mdt", "validate", uri, "--json")
    assert validated.returncode == 0 and json.loads(validated.stdout)["ok"], validated.stdout
    assert s3_rows(s3_server, uri) == before_rows
    bucket, prefix = bucket_and_prefix(uri)
    assert [k for k in s3_server.keys(bucket, f"{prefix}/.hoodie/metadata/.hoodie/timeline/")
            if k.rsplit("/", 1)[-1].startswith(clean.requested_time + "_") and k.endswith(".deltacommit")]
    latest = table.reload().timeline.writes().completed().last()
    assert latest is not None
    rollback(table, latest.requested_time)
    assert cli("mdt", "validate", uri).returncode == 0
    assert not [k for k in s3_server.keys(bucket, f"{prefix}/.hoodie/metadata/")
                if f"_{latest.requested_time}." in k or f"/{latest.requested_time}." in k]
