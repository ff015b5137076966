"""The table lock Hudi writers respect (timeline/locks): chosen from Hudi's configuration, and
mutually exclusive with other holders on real stores and a real ZooKeeper.

- Storage-based (StorageBasedLockProvider): on local files and on the real S3-protocol server
  (`s3_server`), contenders in threads and in separate processes never overlap; a lease that is
  not renewed lets a new owner in (a holder killed with SIGKILL); renewal keeps it; a non-owner
  (or an owner whose lease was taken over) cannot release it; a lock file written the way Hudi's
  Java writes it (Jackson's bytes, checked against Jackson itself) is respected.
- ZooKeeper (ZookeeperBasedLockProvider): on a real ZooKeeper server (conftest.py's `zookeeper`,
  tests/locks/helpers.py), contenders in threads and processes exclude each other, a real
  Curator InterProcessMutex (the class Hudi uses) and Cleanline exclude each other both ways,
  kazoo's own Lock recipe would not, and a lost session (expired on the server, or a killed holder) frees the
  lock and is reported to the old holder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from tests.helpers import REGION, S3Server
from tests.locks.helpers import CuratorContender, ZooKeeperServer, java_command, pyspark_jars
from timeline.locks import (
    STORAGE_BASED_LOCK_PROVIDER,
    ZOOKEEPER_BASED_LOCK_PROVIDER,
    CorruptLockFile,
    HudiLock,
    LockConfigError,
    LockFileOutOfRange,
    LockLost,
    LockNotHeld,
    LockUnavailable,
    StorageBasedLock,
    UnsupportedLockProvider,
    ZookeeperBasedLock,
    lock_for_table,
    lock_required,
)
from timeline.locks.config import ZookeeperLockSettings
from timeline.locks.lock_file import StorageLockData, now_ms
from timeline.locks.zookeeper import sorted_children
from timeline.storage.arrow import ArrowStorage, LocalStorage
from timeline.storage.base import Storage
from timeline.storage.memory import MemoryStorage
from timeline.storage.s3 import S3Settings, S3Storage

ROOT = Path(__file__).resolve().parents[2]
LOCK_FILE = ".hoodie/.locks/table_lock.json"
FAST = {"retry_wait_seconds": 0.02}


# ----------------------------------------------------------------------------------------
# Intervals: each holder records when it held the lock; no two may overlap.

def overlaps(intervals: list[tuple[float, float, str]]) -> list[tuple[Any, Any]]:
    ordered = sorted(intervals)
    return [(a, b) for a, b in zip(ordered, ordered[1:]) if b[0] < a[1]]


# ----------------------------------------------------------------------------------------
# Stores: local files and the S3-protocol server, each with raw access for the "Hudi writer".

@dataclass
class Store:
    name: str
    storage: Storage
    base: str          # the table's base path in the storage's namespace
    uri: str           # the table's URI
    env: dict[str, str]
    read_raw: Callable[[], bytes]
    write_raw: Callable[[bytes], None]

    def lock(self, **options: Any) -> StorageBasedLock:
        return StorageBasedLock(self.storage, self.base, **{**FAST, **options})


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "local":
        base = tmp_path / "table"
        (base / ".hoodie").mkdir(parents=True)

        def write_local(data: bytes) -> None:
            (base / LOCK_FILE).parent.mkdir(parents=True, exist_ok=True)
            (base / LOCK_FILE).write_bytes(data)

        return Store("local", LocalStorage(), str(base), str(base), {}, lambda: (base / LOCK_FILE).read_bytes(),
                     write_local)
    server: S3Server = request.getfixturevalue("s3_server")
    bucket = server.new_bucket("locks")
    storage = S3Storage(bucket=bucket, settings=S3Settings(server.endpoint, REGION))
    raw = server.client()
    key = f"table/{LOCK_FILE}"
    return Store("s3", storage, f"{bucket}/table", f"s3://{bucket}/table", server.env,
                 lambda: bytes(raw.get_object(Bucket=bucket, Key=key)["Body"].read()),
                 lambda data: raw.put_object(Bucket=bucket, Key=key, Body=data))


def hudi_lock_json(expired: bool, valid_until: int, owner: str) -> bytes:
    """The lock file exactly as Hudi's StorageLockFile.toByteArray (Jackson) writes it, by hand:
    compact, `expired`, `validUntil`, `owner` (checked against Jackson itself below)."""
    return f'{{"expired":{"true" if expired else "false"},"validUntil":{valid_until},"owner":"{owner}"}}'.encode()


# ----------------------------------------------------------------------------------------
# Choosing the provider from Hudi's configuration

def test_locks_provider_is_chosen_from_hudi_config(tmp_path: Path) -> None:
    props = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control",
             "hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
             "hoodie.write.lock.storage.validity.timeout.secs": "600",
             "hoodie.write.lock.storage.renew.interval.secs": "60",
             "hoodie.write.lock.wait_time_ms": "2500"}
    lock = lock_for_table(str(tmp_path), props)
    assert isinstance(lock, StorageBasedLock)
    assert lock.path == f"file:{tmp_path}/{LOCK_FILE}"
    assert (lock.validity_ms, lock.renew_interval_seconds, lock.wait_seconds) == (600_000, 60, 2.5)
    defaults = lock_for_table(f"file://{tmp_path}", {"hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER})
    assert isinstance(defaults, StorageBasedLock)
    assert (defaults.validity_ms, defaults.renew_interval_seconds, defaults.wait_seconds) == (300_000, 30, 60)
    old_key = lock_for_table(str(tmp_path), {"hoodie.write.lock.provider": STORAGE_BASED_LOCK_PROVIDER,
                                             "hoodie.write.lock.storage.heartbeat.poll.secs": "5"})
    assert isinstance(old_key, StorageBasedLock) and old_key.renew_interval_seconds == 5
    with pytest.raises(LockConfigError, match="10x"):
        lock_for_table(str(tmp_path), {**props, "hoodie.write.lock.storage.renew.interval.secs": "61"})
    with pytest.raises(LockConfigError, match="10 seconds"):
        lock_for_table(str(tmp_path), {**props, "hoodie.write.lock.storage.validity.timeout.secs": "9",
                                       "hoodie.write.lock.storage.renew.interval.secs": "0"})
    with pytest.raises(LockConfigError, match="1 second"):
        lock_for_table(str(tmp_path), {**props, "hoodie.write.lock.storage.renew.interval.secs": "0"})

    assert lock_required(props)
    assert lock_required({"hoodie.write.concurrency.mode": "NON_BLOCKING_CONCURRENCY_CONTROL"})
    assert not lock_required({}) and not lock_required({"hoodie.write.concurrency.mode": "single_writer"})
    with pytest.raises(LockConfigError, match="hoodie.write.concurrency.mode"):
        lock_required({"hoodie.write.concurrency.mode": "optimistic"})


def test_locks_zookeeper_is_hudis_default_provider_with_its_keys() -> None:
    with pytest.raises(LockConfigError, match="hoodie.write.lock.zookeeper.url"):
        lock_for_table("/t", {})  # no provider set: ZookeeperBasedLockProvider, which needs its url
    props = {"hoodie.write.lock.zookeeper.url": "zk1:2181,zk2:2181", "hoodie.write.lock.zookeeper.port": "2181",
             "hoodie.write.lock.zookeeper.base_path": "/hudi/locks", "hoodie.table.name": "trips"}
    lock = lock_for_table("/t", props, application_id="cleanline-test")
    assert isinstance(lock, ZookeeperBasedLock)
    assert lock.provider_class == ZOOKEEPER_BASED_LOCK_PROVIDER
    assert lock.settings == ZookeeperLockSettings(
        connect_string="zk1:2181,zk2:2181", base_path="/hudi/locks", lock_key="trips", session_timeout_ms=60_000,
        connection_timeout_ms=15_000, retry_wait_ms=1_000, retry_max_wait_ms=16_000, num_retries=15,
        application_id="cleanline-test")
    assert lock.lock_path == "/hudi/locks/trips" and lock.owner == "application_id=cleanline-test"
    keyed = lock_for_table("/t", {**props, "hoodie.write.lock.zookeeper.lock_key": "k",
                                  "hoodie.write.lock.zookeeper.session_timeout_ms": "5000"})
    assert isinstance(keyed, ZookeeperBasedLock)
    assert (keyed.lock_path, keyed.settings.session_timeout_ms) == ("/hudi/locks/k", 5000)
    with pytest.raises(LockConfigError, match="base_path"):
        lock_for_table("/t", {"hoodie.write.lock.zookeeper.url": "zk1"})
    with pytest.raises(LockConfigError, match="must start with /"):
        lock_for_table("/t", {**props, "hoodie.write.lock.zookeeper.base_path": "hudi"})
    with pytest.raises(LockConfigError, match="lock_key"):
        lock_for_table("/t", {k: v for k, v in props.items() if k != "hoodie.table.name"})


@pytest.mark.parametrize("provider", [
    "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider",
    "org.apache.hudi.hive.transaction.lock.HiveMetastoreBasedLockProvider",
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "org.apache.hudi.client.transaction.lock.ZookeeperBasedImplicitBasePathLockProvider",
    "com.example.MyLockProvider",
])
def test_locks_other_providers_are_refused_by_name(provider: str) -> None:
    with pytest.raises(UnsupportedLockProvider) as raised:
        lock_for_table("/t", {"hoodie.write.lock.provider": provider})
    assert raised.value.provider_class == provider and provider in str(raised.value)


def test_locks_storage_based_lock_is_refused_on_stores_without_conditional_writes() -> None:
    hdfs_like = ArrowStorage(pafs.LocalFileSystem(), scheme="hdfs", netloc="nn")
    with pytest.raises(UnsupportedLockProvider, match="no conditional writes on hdfs"):
        StorageBasedLock(hdfs_like, "/t")
    assert StorageBasedLock(MemoryStorage.named("locks-test"), "/t").path.endswith(LOCK_FILE)


# ----------------------------------------------------------------------------------------
# Storage-based lock: the file Hudi writes and reads

def test_locks_lock_file_bytes_are_what_jackson_writes(tmp_path: Path) -> None:
    """StorageLockData (a copy of Hudi's class, same annotations) through an ObjectMapper set up
    as StorageLockFile's: the bytes equal ours, and ours parse back the same (PySpark's jars
    bring Jackson)."""
    source = tmp_path / "LockJson.java"
    source.write_text(textwrap.dedent("""
        import com.fasterxml.jackson.annotation.JsonCreator;
        import com.fasterxml.jackson.annotation.JsonProperty;
        import com.fasterxml.jackson.databind.DeserializationFeature;
        import com.fasterxml.jackson.databind.ObjectMapper;
        public class LockJson {
          public static class StorageLockData {
            private final boolean expired; private final long validUntil; private final String owner;
            @JsonCreator public StorageLockData(@JsonProperty(value = "expired", required = true) boolean expired,
                @JsonProperty(value = "validUntil", required = true) long validUntil,
                @JsonProperty(value = "owner", required = true) String owner) {
              this.expired = expired; this.validUntil = validUntil; this.owner = owner; }
            public long getValidUntil() { return validUntil; }
            public boolean isExpired() { return expired; }
            public String getOwner() { return owner; }
          }
          public static void main(String[] args) throws Exception {
            ObjectMapper mapper = new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
            System.out.write(mapper.writeValueAsBytes(new StorageLockData(
                Boolean.parseBoolean(args[0]), Long.parseLong(args[1]), args[2])));
            System.out.println();
            StorageLockData back = mapper.readValue(args[3].getBytes("UTF-8"), StorageLockData.class);
            System.out.println(back.isExpired() + " " + back.getValidUntil() + " " + back.getOwner());
          }
        }
    """))
    ours = StorageLockData(True, 1730000000123, "7c9e0b5e-writer")
    out = subprocess.run([java_command(), "-cp", f"{pyspark_jars()}/*", str(source), "true", "1730000000123",
                          "7c9e0b5e-writer", ours.to_json().decode()], capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    jackson_bytes, parsed = out.stdout.split(b"\n")[:2]
    assert jackson_bytes == ours.to_json() == hudi_lock_json(True, 1730000000123, "7c9e0b5e-writer")
    assert parsed.decode() == "true 1730000000123 7c9e0b5e-writer"
    # Jackson's leniency, as StorageLockFile reads: unknown fields, string-coerced scalars.
    assert StorageLockData.from_json(b'{"owner":"o","validUntil":"12","expired":"true","audit":1}', "x") \
        == StorageLockData(True, 12, "o")
    for broken in (b'{"owner":"o","validUntil":12}', b'{"owner":"o","validUntil":null,"expired":false}', b"[]", b"{"):
        with pytest.raises(CorruptLockFile):
            StorageLockData.from_json(broken, "x")


@pytest.mark.parametrize("valid_until", ["9e18", "-1", "253402300800000", "9223372036854775808"])
def test_locks_storage_lock_file_out_of_range_lease_is_refused_naming_the_file(store: Store,
                                                                              valid_until: str) -> None:
    """A lease end no datetime holds (after 9999-12-31, before the epoch, beyond a Java long) is
    refused naming the lock file, on both stores, and the file is left as it is."""
    content = f'{{"expired":false,"validUntil":{valid_until},"owner":"someone"}}'.encode()
    store.write_raw(content)
    with pytest.raises(LockFileOutOfRange) as raised:
        store.lock().acquire(0.1)
    assert raised.value.path.endswith(LOCK_FILE) and raised.value.path in str(raised.value)
    assert "is out of range" in str(raised.value)
    assert store.read_raw() == content
    for not_a_number in (b"NaN", b"Infinity"):  # not JSON to Jackson: a corrupt file, never a crash
        with pytest.raises(CorruptLockFile):
            StorageLockData.from_json(b'{"expired":false,"validUntil":%s,"owner":"o"}' % not_a_number, "x")


def test_locks_storage_respects_a_lock_file_written_by_hudi(store: Store) -> None:
    hudi_owner = "4bd1e3b0-7c0f-4a55-9f3e-0b7e2a8c5d11"
    until = now_ms() + 60_000
    store.write_raw(hudi_lock_json(False, until, hudi_owner))
    lock = store.lock()
    with pytest.raises(LockUnavailable) as raised:
        lock.acquire(0.2)
    assert raised.value.holder is not None
    assert (raised.value.holder.owner, raised.value.holder.valid_until_ms) == (hudi_owner, until)
    assert hudi_owner in str(raised.value) and LOCK_FILE in str(raised.value)
    assert lock.holder() == raised.value.holder
    assert store.read_raw() == hudi_lock_json(False, until, hudi_owner)  # untouched

    # Within the 500 ms clock-drift buffer past validUntil the lease still counts as held.
    store.write_raw(hudi_lock_json(False, now_ms() - 100, hudi_owner))
    with pytest.raises(LockUnavailable):
        lock.acquire(0)

    # Released by Hudi (expired: true): ours, and the file is Hudi's format with our lease.
    store.write_raw(hudi_lock_json(True, until, hudi_owner))
    before = now_ms()
    lock.acquire(1)
    written = json.loads(store.read_raw())
    assert list(written) == ["expired", "validUntil", "owner"]
    assert written["expired"] is False and written["owner"] == lock.owner
    assert before + 300_000 <= written["validUntil"] <= now_ms() + 300_000
    assert store.read_raw() == hudi_lock_json(False, written["validUntil"], lock.owner)
    lock.release()
    assert store.read_raw() == hudi_lock_json(True, written["validUntil"], lock.owner)

    # A dangling lock (not released, lease over for more than the drift buffer) is taken over.
    store.write_raw(hudi_lock_json(False, now_ms() - 2_000, hudi_owner))
    with lock:
        assert json.loads(store.read_raw())["owner"] == lock.owner
    assert json.loads(store.read_raw())["expired"] is True


def test_locks_storage_corrupt_lock_file_is_never_taken_over(store: Store) -> None:
    store.write_raw(b'{"owner":"x"}')
    lock = store.lock()
    with pytest.raises((CorruptLockFile, LockUnavailable)) as raised:
        lock.acquire(0.1)
    if store.name == "s3":  # a PUT is atomic: bad content is bad, as Hudi's reader throws
        assert isinstance(raised.value, CorruptLockFile)
    else:  # a local write may be caught half done: unreadable for now, retried until the wait ends
        assert "could not be read" in str(raised.value)
    assert store.read_raw() == b'{"owner":"x"}'


# ----------------------------------------------------------------------------------------
# Storage-based lock: exclusion, expiry, renewal, owners

def contend_in_threads(make_lock: Callable[[str], HudiLock], rounds: int, *, threads: int = 3,
                       close: bool = False) -> tuple[list[tuple[float, float, str]], list[LockUnavailable]]:
    """`threads` contenders each take the lock `rounds` times (retrying while it is held) and
    record when they held it; any error fails the test."""
    intervals: list[tuple[float, float, str]] = []
    errors: list[BaseException] = []
    unavailable: list[LockUnavailable] = []

    def contender(name: str) -> None:
        lock = make_lock(name)
        try:
            for _ in range(rounds):
                while True:
                    try:
                        lock.acquire(0.05)
                        break
                    except LockUnavailable as exc:
                        unavailable.append(exc)
                start = time.time()
                lock.check_held()
                time.sleep(0.01)
                intervals.append((start, time.time(), name))
                lock.release()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            if close:
                lock.close()

    started = [threading.Thread(target=contender, args=(f"t{n}",)) for n in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join(120)
    assert errors == [] and len(intervals) == rounds * threads
    return intervals, unavailable


def test_locks_storage_contenders_in_threads_exclude_each_other(store: Store) -> None:
    intervals, unavailable = contend_in_threads(
        lambda _: store.lock(validity_seconds=10, renew_interval_seconds=1), 6, close=True)
    assert overlaps(intervals) == []
    assert unavailable, "the contenders never met: the test proved nothing"
    assert all(exc.holder is None or exc.holder.owner for exc in unavailable)


CONTENDER_SCRIPT = """
import json, sys, time
sys.path.insert(0, {root!r})
from timeline.locks import LockUnavailable, StorageBasedLock, ZookeeperBasedLock
from timeline.locks.config import ZookeeperLockSettings
from timeline.storage.registry import storage_for

kind, target, rounds, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if kind == "storage":
    storage, base = storage_for(target)
    lock = StorageBasedLock(storage, base, validity_seconds=10, renew_interval_seconds=1, retry_wait_seconds=0.02)
else:
    hosts, path = target.split("|")
    base_path, key = path.rsplit("/", 1)
    lock = ZookeeperBasedLock(ZookeeperLockSettings(hosts, base_path, key, session_timeout_ms=4000,
                                                    application_id=sys.argv[5]))
print("OWNER", lock.owner, flush=True)
with open(out, "a") as log:
    for _ in range(rounds):
        while True:
            try:
                lock.acquire(0.05)
                break
            except LockUnavailable:
                pass
        start = time.time()
        lock.check_held()
        time.sleep(0.01)
        log.write(json.dumps([start, time.time(), lock.owner]) + "\\n")
        log.flush()
        lock.release()
    if len(sys.argv) > 6 and sys.argv[6] == "hold":
        lock.acquire(30)
        print("HELD", flush=True)
        sys.stdin.readline()  # killed, or told to release
        lock.release()
        print("RELEASED", flush=True)
"""


def contender(tmp_path: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "contender.py"
    script.write_text(CONTENDER_SCRIPT.format(root=str(ROOT)))
    return subprocess.Popen([sys.executable, str(script), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, **env}, cwd=ROOT)


def read_intervals(path: Path) -> list[tuple[float, float, str]]:
    return [tuple(json.loads(line)) for line in path.read_text().splitlines()]  # type: ignore[misc]


def test_locks_storage_contenders_in_processes_exclude_each_other(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "intervals.jsonl"
    processes = [contender(tmp_path, store.env, "storage", store.uri, "8", str(log)) for _ in range(2)]
    for process in processes:
        assert process.wait(180) == 0
    intervals = read_intervals(log)
    assert len(intervals) == 16 and len({owner for *_, owner in intervals}) == 2
    assert overlaps(intervals) == []


def test_locks_storage_expired_lease_lets_a_new_owner_in(store: Store, tmp_path: Path) -> None:
    """A holder killed with SIGKILL never releases or renews: its lease (10 s here) runs out,
    and only then (plus the 500 ms drift buffer) does the next owner get the lock."""
    holder = contender(tmp_path, store.env, "storage", store.uri, "0", str(tmp_path / "x.jsonl"), "-", "hold")
    assert holder.stdout is not None
    owner = holder.stdout.readline().split()[1]
    assert holder.stdout.readline().strip() == "HELD"
    valid_until = json.loads(store.read_raw())["validUntil"]
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    lock = store.lock()
    with pytest.raises(LockUnavailable) as raised:
        lock.acquire(0.1)
    assert raised.value.holder is not None and raised.value.holder.owner == owner
    lock.acquire(30)
    assert now_ms() > valid_until + 500
    assert json.loads(store.read_raw())["owner"] == lock.owner
    lock.release()


def test_locks_storage_renewal_keeps_the_lock_past_its_validity(store: Store) -> None:
    lock = store.lock(validity_seconds=1.5, renew_interval_seconds=0.2)
    other = store.lock()
    lock.acquire(1)
    first = json.loads(store.read_raw())["validUntil"]
    deadline = time.monotonic() + 3.5
    while time.monotonic() < deadline:
        with pytest.raises(LockUnavailable):
            other.acquire(0)
        time.sleep(0.3)
    renewed = json.loads(store.read_raw())
    assert renewed["owner"] == lock.owner and renewed["validUntil"] > first + 2_000
    assert lock.is_held()
    lock.check_held()
    lock.release()
    other.acquire(1)
    other.release()


def test_locks_storage_release_by_a_non_owner_is_refused(store: Store) -> None:
    owner, stranger = store.lock(), store.lock()
    owner.acquire(1)
    content = store.read_raw()
    with pytest.raises(LockNotHeld):
        stranger.release()
    with pytest.raises(LockNotHeld):
        stranger.check_held()
    assert store.read_raw() == content
    owner.check_held()
    owner.release()
    with pytest.raises(LockNotHeld):
        owner.release()  # released once: not a second time


def test_locks_storage_owner_whose_lease_was_taken_over_cannot_release_it(store: Store) -> None:
    """The lease runs out without renewal (renewal interval longer than the lease); a new owner
    takes it; the old one learns it lost the lock and its release leaves the new owner's file."""
    stale = store.lock(validity_seconds=0.5, renew_interval_seconds=60)
    stale.acquire(1)
    newcomer = store.lock()
    newcomer.acquire(10)
    taken = store.read_raw()
    assert json.loads(taken)["owner"] == newcomer.owner
    with pytest.raises(LockLost, match="no longer holds|over"):
        stale.check_held()
    with pytest.raises(LockLost, match="took the lock over"):
        stale.release()
    assert store.read_raw() == taken
    newcomer.check_held()
    newcomer.release()


def test_locks_storage_check_held_sees_a_takeover_the_holder_missed(store: Store) -> None:
    lock = store.lock()
    lock.acquire(1)
    lock.check_held()
    store.write_raw(hudi_lock_json(False, now_ms() + 60_000, "someone-else"))  # e.g. a broken-in writer
    with pytest.raises(LockLost, match="someone-else"):
        lock.check_held()
    assert not lock.is_held()
    with pytest.raises(LockLost):
        lock.release()
    assert json.loads(store.read_raw())["owner"] == "someone-else"


# ----------------------------------------------------------------------------------------
# ZooKeeper

@pytest.fixture
def zk_lock(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> Callable[..., ZookeeperBasedLock]:
    key = re.sub(r"\W", "_", request.node.name)
    made: list[ZookeeperBasedLock] = []

    def make(application_id: str = "cleanline-test", **settings: Any) -> ZookeeperBasedLock:
        lock = ZookeeperBasedLock(ZookeeperLockSettings(zookeeper.hosts, "/hudi/locks", key,
                                                        application_id=application_id, **settings))
        made.append(lock)
        return lock

    yield make  # type: ignore[misc]
    for lock in made:
        lock.close()


def zk_children(zookeeper: ZooKeeperServer, path: str) -> list[str]:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper.hosts)
    client.start(15)
    try:
        return sorted_children(client.get_children(path))
    finally:
        client.stop()
        client.close()


def test_locks_zookeeper_contenders_in_threads_exclude_each_other(zk_lock: Callable[..., ZookeeperBasedLock]
                                                                  ) -> None:
    intervals, unavailable = contend_in_threads(zk_lock, 5)
    assert overlaps(intervals) == []
    assert unavailable and all(exc.holder and exc.holder.owner.startswith("application_id=t") for exc in unavailable)


def test_locks_zookeeper_contenders_in_processes_exclude_each_other(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock], tmp_path: Path) -> None:
    target = f"{zookeeper.hosts}|{zk_lock().lock_path}"
    log = tmp_path / "intervals.jsonl"
    processes = [contender(tmp_path, {}, "zookeeper", target, "6", str(log), f"p{n}") for n in range(2)]
    for process in processes:
        assert process.wait(180) == 0
    intervals = read_intervals(log)
    assert len(intervals) == 12 and {owner for *_, owner in intervals} == {"application_id=p0", "application_id=p1"}
    assert overlaps(intervals) == []

    holder = contender(tmp_path, {}, "zookeeper", target, "0", str(log), "holder", "hold")
    assert holder.stdout is not None and holder.stdin is not None
    holder.stdout.readline()
    assert holder.stdout.readline().strip() == "HELD"
    lock = zk_lock("cleanline")
    with pytest.raises(LockUnavailable) as raised:
        lock.acquire(0.2)
    assert raised.value.holder is not None and raised.value.holder.owner == "application_id=holder"
    assert lock.node is None and len(zk_children(zookeeper, lock.lock_path)) == 1  # our waiting node is gone
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "RELEASED"
    lock.acquire(5)
    lock.release()
    assert holder.wait(30) == 0


def test_locks_zookeeper_nodes_are_curators_and_only_the_owner_releases(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock]) -> None:
    owner, stranger = zk_lock("owner"), zk_lock("stranger")
    owner.acquire(5)
    assert owner.node is not None
    name = owner.node.rsplit("/", 1)[1]
    assert re.fullmatch(r"_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}", name)
    with pytest.raises(LockNotHeld):
        stranger.release()
    with pytest.raises(LockNotHeld):
        stranger.check_held()
    assert zk_children(zookeeper, owner.lock_path) == [name]
    owner.check_held()
    owner.release()
    assert zk_children(zookeeper, owner.lock_path) == []
    with pytest.raises(LockNotHeld):
        owner.release()


def test_locks_zookeeper_and_curators_interprocessmutex_exclude_each_other(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock], tmp_path: Path) -> None:
    lock = zk_lock("cleanline")
    curator = CuratorContender(tmp_path / "curator", zookeeper.hosts, lock.lock_path, "spark-app-1").start()
    try:
        assert curator.command("acquire 5000") == "ACQUIRED"
        with pytest.raises(LockUnavailable) as raised:
            lock.acquire(0.5)
        assert raised.value.holder is not None and raised.value.holder.owner == "application_id=spark-app-1"
        assert curator.command("release") == "RELEASED"
        lock.acquire(5)
        assert curator.command("acquire 700") == "TIMEOUT"
        lock.check_held()
        # Curator waits behind our node and gets the lock as soon as we release it.
        results: list[str] = []
        waiting = threading.Thread(target=lambda: results.append(curator.command("acquire 10000")))
        waiting.start()
        time.sleep(0.5)
        lock.release()
        waiting.join(30)
        assert results == ["ACQUIRED"]
        with pytest.raises(LockUnavailable):
            lock.acquire(0.2)
        assert curator.command("release") == "RELEASED"
    finally:
        curator.stop()


def test_locks_kazoos_own_lock_recipe_would_not_exclude_curator(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock], tmp_path: Path) -> None:
    """Why timeline/locks/zookeeper.py does not use kazoo's Lock: Curator sorts kazoo's
    `<hex>__lock__<seq>` nodes by their whole name, so a Curator contender that came later can
    sort first and both hold the "lock" at once (kazoo even told to see Curator's nodes)."""
    from kazoo.client import KazooClient

    path = zk_lock().lock_path
    client = KazooClient(hosts=zookeeper.hosts)
    client.start(15)
    kazoo_lock = client.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
    while kazoo_lock.prefix[0] == "0":  # a prefix starting with "0" may still sort first; take another
        kazoo_lock = client.Lock(path, "kazoo", extra_lock_patterns=["-lock-"])
    curator = CuratorContender(tmp_path / "curator", zookeeper.hosts, path).start()
    try:
        assert kazoo_lock.acquire(timeout=5)
        assert curator.command("acquire 2000") == "ACQUIRED"  # both "hold" it
        assert curator.command("release") == "RELEASED"
        kazoo_lock.release()
    finally:
        curator.stop()
        client.stop()
        client.close()


def test_locks_zookeeper_session_loss_frees_the_lock_and_tells_the_holder(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock]) -> None:
    holder, next_owner = zk_lock("holder"), zk_lock("next")
    holder.acquire(5)
    holder.check_held()
    assert holder._client is not None
    zookeeper.expire_session(holder._client.client_id)  # the server ends the holder's session
    next_owner.acquire(15)
    assert next_owner.holder() is not None and next_owner.holder().owner == "application_id=next"  # type: ignore[union-attr]
    deadline = time.monotonic() + 15
    while holder.is_held() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not holder.is_held()
    with pytest.raises(LockLost):
        holder.check_held()
    with pytest.raises(LockLost):
        holder.release()
    next_owner.check_held()
    next_owner.release()


def test_locks_zookeeper_killed_holder_frees_the_lock_when_its_session_times_out(
        zookeeper: ZooKeeperServer, zk_lock: Callable[..., ZookeeperBasedLock], tmp_path: Path) -> None:
    lock = zk_lock("after-crash")
    holder = contender(tmp_path, {}, "zookeeper", f"{zookeeper.hosts}|{lock.lock_path}", "0",
                       str(tmp_path / "x.jsonl"), "doomed", "hold")  # session timeout 4 s
    assert holder.stdout is not None
    holder.stdout.readline()
    assert holder.stdout.readline().strip() == "HELD"
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    killed = time.monotonic()
    with pytest.raises(LockUnavailable) as raised:
        lock.acquire(0.5)  # the session outlives its process until the server times it out
    assert raised.value.holder is not None and raised.value.holder.owner == "application_id=doomed"
    lock.acquire(20)
    assert time.monotonic() - killed > 1
    lock.check_held()
    lock.release()
