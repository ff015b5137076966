"""When Cleanline takes the table's Hudi lock: Hudi's `TransactionManager`
(`beginStateChange` / `endStateChange`) around the state changes of its table services.

A table whose writers run with optimistic or non-blocking concurrency control
(`hoodie.write.concurrency.mode`, from `hoodie.properties` or the writer options the caller
gives) shares one lock (`hoodie.write.lock.provider`, `timeline/locks/`). Cleanline takes it
at the moments Hudi's table services do:

- scheduling a clean (`BaseHoodieTableServiceClient.scheduleTableServiceInternal`): the
  timeline is re-read under the lock and a plan it invalidates is not published;
- running a clean (`CleanActionExecutor.runPendingClean`): moving it to inflight after the
  re-validation, and completing it (the deletes in between run without the lock, as Hudi's do);
- rollback, restore, savepoint and dropping the metadata table: the whole action.

While the lock is held, `transition` checks it is still held right before each state file it
publishes (`HudiTable.publish_check`), so a lease lost mid-action publishes nothing more. A
provider Cleanline cannot take refuses the mutation by name; reading never locks."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from timeline.locks import LockError, lock_for_table, lock_required
from timeline.locks.config import wait_seconds

if TYPE_CHECKING:
    from timeline.table import HudiTable

log = logging.getLogger(__name__)
# One record per lock held: `table`, `holder`, `acquired` and `released` (epoch seconds) as
# attributes of the record, for audits and for tests that check two parties never overlapped.
intervals = logging.getLogger("timeline.transactions.intervals")


class Transactions:
    """The table's lock settings: `hoodie.properties` with `options` (writer options: Hudi's
    `hoodie.write.*` keys, as a Hudi writer is given them) over them."""

    def __init__(self, table: HudiTable, options: Mapping[str, str] | None = None, *,
                 application_id: str | None = None) -> None:
        self.table = table
        self.options = dict(options or {})
        self.application_id = application_id or f"cleanline-{os.getpid()}"

    @property
    def properties(self) -> dict[str, str]:
        return {**self.table.config.props, **self.options}

    @property
    def required(self) -> bool:
        """Whether Hudi writers of this table lock at all (OCC or NBCC)."""
        return lock_required(self.properties)

    def check(self) -> None:
        """Refuse (UnsupportedLockProvider, LockConfigError) settings whose lock Cleanline
        could not take, without taking it."""
        if self.required:
            lock_for_table(self.table.uri, self.properties, storage=self.table.storage,
                           application_id=self.application_id).close()

    @contextmanager
    def state_change(self) -> Iterator[None]:
        """Hold the table's lock (when its writers lock) for one state change: acquired with
        Hudi's wait (`hoodie.write.lock.wait_time_ms`), the timeline re-read once it is held,
        every publish inside checked against it, released at the end. LockUnavailable names
        the holder; UnsupportedLockProvider names a provider Cleanline cannot take."""
        if not self.required:
            yield
            return
        props = self.properties
        lock = lock_for_table(self.table.uri, props, storage=self.table.storage, application_id=self.application_id)
        lock.acquire(wait_seconds(props))
        acquired = time.time()
        previous = self.table.publish_check
        self.table.publish_check = lock.check_held
        try:
            self.table.reload()
            yield
        finally:
            self.table.publish_check = previous
            released = time.time()
            try:
                lock.release()
            except LockError as exc:  # what was published was checked under the lock first
                log.warning("%s: releasing the table lock: %s", self.table.uri, exc)
            finally:
                lock.close()
            intervals.info("%s held the lock of %s from %.6f to %.6f", self.application_id, self.table.uri,
                           acquired, released, extra={"table": self.table.uri, "holder": self.application_id,
                                                      "acquired": acquired, "released": released})
