"""Hudi's ZooKeeper lock: Curator's InterProcessMutex at `<base_path>/<lock_key>`, spoken with
kazoo's ZooKeeper primitives.

Follows `org.apache.hudi.client.transaction.lock.ZookeeperBasedLockProvider` /
`BaseZookeeperBasedLockProvider` (connect string, timeouts, retry policy, `createPathIfNotExists`,
`tryLock`, `unlock`), `HoodieInterProcessMutex` (the node's data) and Apache Curator's
`InterProcessMutex` / `LockInternals` / `StandardLockInternalsDriver` (the protocol).

Why not kazoo's own `Lock` recipe: it names its nodes `<uuid hex>__lock__<seq>` while Curator
names them `_c_<uuid>-lock-<seq>` (`withProtection()`, lock name `lock-`), and Curator orders the
children by the text after the last `lock-` in each name (`standardFixForSorting`), falling back
to the whole name. A kazoo node has no `lock-`, so Curator sorts it by its random hex prefix:
a Curator writer with a higher sequence number can sort before it, and both would believe they
hold the lock. (kazoo's `extra_lock_patterns` makes kazoo see Curator's nodes, not the reverse.)
So this module writes exactly Curator's nodes:

- an EPHEMERAL_SEQUENTIAL node `_c_<random UUID>-lock-` under the lock path, with the data
  `application_id=<id>` (HoodieInterProcessMutex.getLockNodeBytes);
- the lock is held by the node first in Curator's order (`getsTheLock` with maxLeases 1); a
  contender watches the node just before its own and re-checks when it goes;
- on a connection loss during the create, the node is found again by its protected UUID;
- releasing deletes the own node only (and never another one); the session's end (a crash,
  an expiry) deletes it on the server, which is how a dead holder's lock comes free.

While the lock is held, kazoo's connection thread keeps the session alive with pings (the
"renewal"), and a state listener marks the lock lost when the session is lost; `check_held`
re-reads the children (after a sync) before a publish.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from timeline.locks.base import HudiLock, LockError, LockHolder, LockLost, LockNotHeld, LockUnavailable
from timeline.locks.config import ZOOKEEPER_BASED_LOCK_PROVIDER, ZookeeperLockSettings, wait_seconds

log = logging.getLogger(__name__)

LOCK_NAME = "lock-"  # InterProcessMutex.LOCK_NAME
PROTECTED_PREFIX = "_c_"  # ProtectedUtils.PROTECTED_PREFIX
PROTECTED_SEPARATOR = "-"  # ProtectedUtils.PROTECTED_SEPARATOR


def fix_for_sorting(name: str, lock_name: str = LOCK_NAME) -> str:
    """`StandardLockInternalsDriver.standardFixForSorting`: the text after the last `lock_name`
    (the sequence number), or the whole name when it has none."""
    index = name.rfind(lock_name)
    if index >= 0:
        index += len(lock_name)
        return name[index:] if index <= len(name) else ""
    return name


def sorted_children(children: list[str]) -> list[str]:
    """`LockInternals.getSortedChildren`: every child of the lock path in Curator's order."""
    return sorted(children, key=fix_for_sorting)


def _require_kazoo() -> None:
    try:
        import kazoo  # noqa: F401
    except ImportError as exc:  # pragma: no cover - kazoo is a dependency
        raise LockError("the ZooKeeper lock needs the kazoo package (pip install kazoo)") from exc


class ZookeeperBasedLock(HudiLock):
    """`ZookeeperBasedLockProvider` with Curator's InterProcessMutex protocol.

    Like Hudi's LockManager, which builds a provider for each `lock()` and closes it after
    `unlock()`, each acquisition opens its own ZooKeeper session and the release closes it. Not
    re-entrant (Java: `checkArgument(lock == null)`)."""

    provider_class = ZOOKEEPER_BASED_LOCK_PROVIDER

    def __init__(self, settings: ZookeeperLockSettings, *, wait_seconds: float = 60.0) -> None:
        super().__init__()
        self.settings = settings
        self.wait_seconds = wait_seconds
        self._client: Any = None
        self._node: str | None = None  # full path of our lock node while held
        self._session_id: int | None = None
        self._lost: str | None = None
        self._suspended = False
        self._wake = threading.Event()
        self._owner = f"application_id={settings.application_id}"
        self._listeners: dict[int, Callable[[str], None]] = {}  # id(client) -> its state listener

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], *, application_id: str | None = None
                        ) -> ZookeeperBasedLock:
        return cls(ZookeeperLockSettings.from_properties(properties, application_id=application_id),
                   wait_seconds=wait_seconds(properties))

    @property
    def path(self) -> str:
        return f"zookeeper://{self.settings.connect_string}{self.settings.lock_path}"

    @property
    def lock_path(self) -> str:
        return self.settings.lock_path

    @property
    def owner(self) -> str:
        """The lock node's data, `application_id=<id>` (HoodieInterProcessMutex)."""
        return self._owner

    @property
    def node(self) -> str | None:
        """The full path of this object's lock node while it holds the lock."""
        with self._state_lock:
            return self._node

    # -- connection ------------------------------------------------------------------------

    def _connect(self) -> Any:
        """`BaseZookeeperBasedLockProvider`'s constructor: a client with the session and
        connection timeouts and the retry policy, blocked until connected
        (`blockUntilConnected`), then `createPathIfNotExists`."""
        _require_kazoo()
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.retry import KazooRetry

        s = self.settings
        retry = KazooRetry(max_tries=s.num_retries, delay=s.retry_wait_ms / 1000, backoff=2,
                           max_delay=max(s.retry_wait_ms, s.retry_max_wait_ms) / 1000, ignore_expire=False)
        client = KazooClient(hosts=s.connect_string, timeout=s.session_timeout_ms / 1000, command_retry=retry,
                             logger=logging.getLogger("kazoo.client"))

        def on_state(state: str) -> None:
            self._on_state(client, state)

        client.add_listener(on_state)
        try:
            client.start(timeout=s.connection_timeout_ms / 1000)
        except KazooTimeoutError as exc:
            client.remove_listener(on_state)
            client.stop()
            client.close()
            raise LockError(f"{self.path}: failed to connect to ZooKeeper within {s.connection_timeout_ms} ms") from exc
        self._listeners[id(client)] = on_state
        try:
            self._create_path_if_not_exists(client)
        except Exception:
            self._disconnect(client)
            raise
        return client

    def _create_path_if_not_exists(self, client: Any) -> None:
        """`createPathIfNotExists`: persistent nodes for every part of `<base_path>/<lock_key>`."""
        from kazoo.exceptions import KazooException, NodeExistsError

        current = ""
        try:
            for part in self.settings.lock_path.split("/"):
                if not part:
                    continue
                current += f"/{part}"
                if client.retry(client.exists, current) is None:
                    try:
                        client.retry(client.create, current, b"")
                    except NodeExistsError:
                        pass
        except KazooException as exc:
            raise LockError(f"{self.path}: failed to initialize ZooKeeper path {current}: {exc!r}") from exc

    def _disconnect(self, client: Any) -> None:
        listener = self._listeners.pop(id(client), None)
        if listener is not None:
            client.remove_listener(listener)
        try:
            client.stop()
            client.close()
        except Exception as exc:  # noqa: BLE001 - closing is best effort; the session ends regardless
            log.warning("%s: closing the ZooKeeper client failed: %r", self.path, exc)

    def _on_state(self, client: Any, state: str) -> None:
        """kazoo connection listener (on kazoo's thread; must not block)."""
        from kazoo.protocol.states import KazooState

        if client is not self._client:
            return
        if state == KazooState.LOST:
            self._lost = "the ZooKeeper session ended (expired or closed), so its lock node is gone"
            log.error("%s: %s", self.path, self._lost)
        elif state == KazooState.SUSPENDED:
            self._suspended = True
            log.warning("%s: connection to ZooKeeper suspended; the lock cannot be confirmed until it is back",
                        self.path)
        else:
            self._suspended = False
        self._wake.set()

    # -- the mutex -------------------------------------------------------------------------

    def acquire(self, timeout: float | None = None) -> None:
        """`tryLock(long, TimeUnit)` -> `InterProcessMutex.acquire(time, unit)`: create our node,
        then wait until it is first in Curator's order, watching our predecessor. On timeout our
        node is deleted (LockInternals.internalLockLoop) and `LockUnavailable` names the node
        first in line and its data."""
        from kazoo.exceptions import KazooException, NoNodeError

        wait = self.wait_seconds if timeout is None else max(0.0, timeout)
        deadline = time.monotonic() + wait
        with self._state_lock:
            if self._node is not None:
                raise LockError(f"{self.path}: already acquired by this lock object")
            if self._client is None:
                self._client = self._connect()
            client = self._client
            self._session_id = client.client_id[0]
            self._lost = None
            self._suspended = False
        node: str | None = None
        try:
            node = self._create_lock_node(client)
            held = self._wait_until_first(client, node, deadline)
        except (KazooException, LockError) as exc:
            if node is not None:
                self._delete_quietly(client, node)
            self._close_client()
            if isinstance(exc, LockError):
                raise
            if isinstance(exc, NoNodeError):
                raise LockUnavailable(self.path, None, "the lock node vanished while waiting "
                                                       "(the ZooKeeper session was lost)") from exc
            raise LockError(f"{self.path}: FAILED_TO_ACQUIRE lock: {exc!r}") from exc
        if not held:
            holder = self._first_holder(client)
            self._delete_quietly(client, node)
            self._close_client()
            raise LockUnavailable(self.path, holder)
        with self._state_lock:
            self._node = node
        log.info("%s: lock acquired (%s)", self.path, node)

    def _create_lock_node(self, client: Any) -> str:
        """`StandardLockInternalsDriver.createsTheLock`: `create().withProtection()
        .withMode(EPHEMERAL_SEQUENTIAL)` of `<lock path>/lock-` with HoodieInterProcessMutex's
        data. Protection: the name starts with `_c_<uuid>-`, so after a connection loss the
        created node is found again instead of creating a second one."""
        protected_id = str(uuid.uuid4())
        name_prefix = f"{PROTECTED_PREFIX}{protected_id}{PROTECTED_SEPARATOR}"
        create_path = f"{self.lock_path}/{name_prefix}{LOCK_NAME}"
        data = self._owner.encode("utf-8")
        tried = False

        def create() -> str:
            nonlocal tried
            if tried:
                for child in client.get_children(self.lock_path):
                    if child.startswith(name_prefix):
                        return f"{self.lock_path}/{child}"
            tried = True
            return str(client.create(create_path, data, ephemeral=True, sequence=True))

        return str(client.retry(create))

    def _wait_until_first(self, client: Any, node: str, deadline: float) -> bool:
        """`LockInternals.internalLockLoop` with StandardLockInternalsDriver.getsTheLock."""
        from kazoo.exceptions import NoNodeError

        own_name = node[len(self.lock_path) + 1:]
        while True:
            if self._lost:
                raise LockError(f"{self.path}: {self._lost}")
            children = sorted_children(client.retry(client.get_children, self.lock_path))
            if own_name not in children:
                raise NoNodeError(f"Sequential path not found: {own_name}")
            index = children.index(own_name)
            if index == 0:
                return True
            predecessor = f"{self.lock_path}/{children[index - 1]}"
            gone = threading.Event()
            self._wake.clear()
            try:
                client.retry(client.get, predecessor, watch=lambda event, done=gone: done.set())
            except NoNodeError:
                continue  # released meanwhile: look again
            while not gone.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                gone.wait(min(remaining, 0.25))
                if self._wake.is_set() and self._lost:
                    raise LockError(f"{self.path}: {self._lost}")

    def _first_holder(self, client: Any) -> LockHolder | None:
        """The node first in Curator's order and its data: who holds the lock."""
        from kazoo.exceptions import KazooException, NoNodeError

        try:
            children = sorted_children(client.retry(client.get_children, self.lock_path))
        except NoNodeError:
            return None
        except KazooException as exc:
            log.warning("%s: listing the lock's contenders failed: %r", self.path, exc)
            return None
        for child in children:
            try:
                data, _ = client.retry(client.get, f"{self.lock_path}/{child}")
            except NoNodeError:
                continue
            text = data.decode("utf-8", errors="replace") if data else ""
            return LockHolder(text or child, None, f"lock node {self.lock_path}/{child}")
        return None

    def _delete_quietly(self, client: Any, node: str) -> None:
        from kazoo.exceptions import KazooException, NoNodeError

        try:
            client.retry(client.delete, node)
        except NoNodeError:
            pass
        except KazooException as exc:
            log.warning("%s: deleting lock node %s failed (it goes with the session): %r", self.path, node, exc)

    def _close_client(self) -> None:
        with self._state_lock:
            client, self._client = self._client, None
        if client is not None:
            self._disconnect(client)

    def release(self) -> None:
        """`unlock()` -> `InterProcessMutex.release()`: delete our node (only ours), then close
        the session as LockManager.unlock closes its provider. `LockNotHeld` when this object
        holds no lock; `LockLost` when the node was already gone (the session had ended: the
        lock was not ours for the whole time)."""
        from kazoo.exceptions import KazooException, NoNodeError, SessionExpiredError

        with self._state_lock:
            node, client, lost = self._node, self._client, self._lost
            if node is None or client is None:
                raise LockNotHeld(self.path)
            self._node = None
        failure: str | None = None
        try:
            client.retry(client.delete, node)
        except (NoNodeError, SessionExpiredError):
            lost = lost or "the lock node was already gone (the ZooKeeper session had ended)"
        except KazooException as exc:
            failure = f"{exc!r}; the node goes when the session closes"
        finally:
            self._close_client()
        if lost:
            raise LockLost(self.path, lost)
        if failure:
            raise LockError(f"{self.path}: FAILED_TO_RELEASE lock: {failure}")
        log.info("%s: lock released (%s)", self.path, node)

    def is_held(self) -> bool:
        with self._state_lock:
            return self._node is not None and self._lost is None and not self._suspended

    def check_held(self) -> None:
        """Before a publish: connected on the same session, and our node still first in
        Curator's order after a `sync` (so the read is not behind the leader)."""
        from kazoo.exceptions import KazooException
        from kazoo.protocol.states import KazooState

        with self._state_lock:
            node, client = self._node, self._client
            if node is None or client is None:
                raise LockNotHeld(self.path)
            if self._lost:
                raise LockLost(self.path, self._lost)
        if client.state != KazooState.CONNECTED or self._suspended:
            raise LockLost(self.path, "not connected to ZooKeeper, the lock cannot be confirmed")
        if client.client_id[0] != self._session_id:
            raise LockLost(self.path, "the ZooKeeper session changed, so the lock node is gone")
        try:
            client.sync(self.lock_path)
            children = sorted_children(client.get_children(self.lock_path))
        except KazooException as exc:
            raise LockLost(self.path, f"the lock cannot be confirmed: {exc!r}") from exc
        own_name = node[len(self.lock_path) + 1:]
        if own_name not in children:
            self._lost = "this lock node is gone"
            raise LockLost(self.path, self._lost)
        if children[0] != own_name:
            raise LockLost(self.path, f"{children[0]} is first in line, not this lock node {own_name}")

    def holder(self) -> LockHolder | None:
        """Who holds the lock now (the first node's data), through this object's session or a
        short-lived one."""
        with self._state_lock:
            client = self._client
        if client is not None:
            return self._first_holder(client)
        client = self._connect()
        try:
            return self._first_holder(client)
        finally:
            self._disconnect(client)

    def close(self) -> None:
        try:
            if self.node is not None:
                self.release()
        except LockError as exc:
            log.error("%s: releasing on close failed: %s", self.path, exc)
        finally:
            self._close_client()
