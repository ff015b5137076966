"""When Cleanline takes the table's Hudi lock: Hudi's `TransactionManager`
(`beginStateChange` / `endStateChange`) around the state changes of its table services.

A table whose writers run with optimistic or non-blocking concurrency control shares one lock
(`hoodie.write.lock.provider`, `timeline/locks/`), found from the lake before every change
(`timeline/locks/discovery.py`: the call's options, the root's settings, `hoodie.properties`,
a lock file on storage). Cleanline takes it at the moments Hudi's table services do:

- scheduling a clean (`BaseHoodieTableServiceClient.scheduleTableServiceInternal`): the
  timeline is re-read under the lock and a plan it invalidates is not published;
- running a clean (`CleanActionExecutor.runPendingClean`): moving it to inflight after the
  re-validation, and completing it (the deletes in between run without the lock, as Hudi's do);
- rollback, restore, savepoint and dropping the metadata table: the whole action.

While the lock is held, `transition` checks it is still held (with a margin) right before each
state file and log file it publishes on the table and on its metadata table
(`HudiTable.publish_check`), so a lease lost mid-action publishes nothing more; new instant
times wait out the clock skew (`HudiTable.clock_skew_ms`, `SkewAdjustingTimeGenerator`). A
provider Cleanline cannot take refuses the mutation by name; reading never locks. With no lock
known (or one inside a writer's process) and a writer live, every change is refused
(`LiveWriterUnlocked`) unless the caller says the writers are stopped."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from timeline.locks import LockError, lock_for_table
from timeline.locks.config import max_expected_clock_skew_ms, wait_seconds
from timeline.locks.discovery import LockDiscovery, discover_lock
from timeline.locks.live import LiveWriterUnlocked, LockDecision, live_writers

if TYPE_CHECKING:
    from timeline.table import Table

log = logging.getLogger(__name__)
# One record per lock held: `table`, `holder`, `requested` (when it began waiting), `acquired`
# and `released` (epoch seconds) as attributes of the record, for audits and for tests that
# check two parties never overlapped and that one waited for the other.
intervals = logging.getLogger("timeline.transactions.intervals")


class Transactions:
    """How the table's writers lock (`discover_lock`: the call's `options`, the root's
    settings, `hoodie.properties`, a lock file on storage) and the live-writer rule
    (`timeline/locks/live.py`). `writers_stopped` is the caller's explicit, audited word that
    no writer runs: a change then goes on without a lock beside what looks like a live writer.
    `live_writer_rule=False` is for a writer itself (the project's Spark writer), which takes
    the lock when there is one and never refuses on account of other writers, as Hudi's do.
    Each state change appends its `LockDecision` to `decisions`."""

    def __init__(self, table: Table, options: Mapping[str, str] | None = None, *,
                 application_id: str | None = None, writers_stopped: bool = False,
                 live_writer_rule: bool = True) -> None:
        self.table = table
        self.options = dict(options or {})
        self.application_id = application_id or f"cleanline-{os.getpid()}"
        self.writers_stopped = writers_stopped
        self.live_writer_rule = live_writer_rule
        self.decisions: list[LockDecision] = []
        # Pending instants this caller is itself running (a compaction it runs from its plan):
        # not counted as other live writers by the live-writer rule
        self.own_instants: set[str] = set()

    def discover(self) -> LockDiscovery:
        """The lock the table's writers use, found now (`timeline.locks.discovery`)."""
        return discover_lock(self.table, self.options)

    @property
    def properties(self) -> dict[str, str]:
        return dict(self.discover().properties)

    @property
    def required(self) -> bool:
        """Whether the table's writers take a lock Cleanline can take (OCC or NBCC with a
        provider other processes see, or a lock file found on storage)."""
        return self.discover().shared

    def check(self) -> None:
        """Refuse (UnsupportedLockProvider, LockConfigError) settings whose lock Cleanline
        could not take, without taking it."""
        found = self.discover()
        if found.shared:
            lock_for_table(self.table.uri, found.properties, storage=self.table.storage,
                           application_id=self.application_id).close()

    def decide(self) -> LockDecision:
        """Whether the next state change may go on, and how: under the writers' lock, or
        without one when no writer is live (or the caller said the writers are stopped).
        Raises LiveWriterUnlocked otherwise. Reads the timeline and the heartbeats."""
        found = self.discover()
        if found.shared:
            return LockDecision(found, (), self.writers_stopped, True)
        live = tuple(w for w in live_writers(self.table, found.properties)
                     if w.requested_time not in self.own_instants) if self.live_writer_rule else ()
        if live and not self.writers_stopped:
            raise LiveWriterUnlocked(self.table.uri, list(live), found)
        return LockDecision(found, live, self.writers_stopped, False)

    @contextmanager
    def state_change(self) -> Iterator[None]:
        """Hold the table's lock (when its writers lock) for one state change: acquired with
        Hudi's wait (`hoodie.write.lock.wait_time_ms`), the timeline re-read once it is held,
        every publish inside checked against it, released at the end. LockUnavailable names
        the holder; UnsupportedLockProvider names a provider Cleanline cannot take.

        Every run enters here before its first change, so this is where a run on local storage
        begins to hold the table's folder (`Table.hold_folder`): its changes go through the
        folder's handle from then on, whoever runs it (the console, the CLI, a library call)."""
        self.table.hold_folder()
        decision = self.decide()
        self.decisions.append(decision)
        if not decision.locked:
            if decision.overridden:
                log.warning("%s: %s", self.table.uri, decision.describe())
            yield
            return
        props = dict(decision.discovery.properties)
        lock = lock_for_table(self.table.uri, props, storage=self.table.storage, application_id=self.application_id)
        requested = time.time()
        lock.acquire(wait_seconds(props))
        acquired = time.time()
        previous, previous_skew = self.table.publish_check, self.table.clock_skew_ms
        self.table.publish_check = lock.check_held
        self.table.clock_skew_ms = max_expected_clock_skew_ms(props)
        try:
            self.table.reload()
            yield
        finally:
            self.table.publish_check, self.table.clock_skew_ms = previous, previous_skew
            released = time.time()
            try:
                lock.release()
            except LockError as exc:  # what was published was checked under the lock first
                log.warning("%s: releasing the table lock: %s", self.table.uri, exc)
            finally:
                lock.close()
            intervals.info("%s held the lock of %s from %.6f to %.6f", self.application_id, self.table.uri,
                           acquired, released, extra={"table": self.table.uri, "holder": self.application_id,
                                                      "requested": requested, "acquired": acquired,
                                                      "released": released})
