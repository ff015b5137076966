"""The per-table lock: owned by one run (a token), kept alive by its heartbeat, taken over only
after it expired, released by its owner."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connections, transaction
from django.db.models import Q
from django.utils import timezone

from console.models import (
    Table,
    TableLock,
)
from console.services.audit import audit
from console.zones import readable

logger = logging.getLogger(__name__)


class TableBusy(ValidationError):
    """Another run holds the table's lock (and is alive: it heartbeats). `holder` says what."""

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class LockLost(Exception):
    """This run's table lock expired and another run took the table over: stop, write nothing."""


def _expired(now: datetime) -> Q:
    """Locks free to take over at `now` (a lock without expiry was left by an older version)."""
    return Q(expires_at__isnull=True) | Q(expires_at__lte=now)


def _expiry() -> timedelta:
    return timedelta(seconds=settings.CLEANLINE_LOCK_EXPIRY_SECONDS)


def _busy(table: Table, lock: TableLock) -> TableBusy:
    # Written in UTC, as every stored sentence is; pages and e-mails show it in the reader's
    # zone (console/zones.py: the `instants` filter, `text_in_zone`).
    beat = f", last heartbeat {readable(lock.heartbeat_at, zone=UTC)}" if lock.heartbeat_at else ""
    return TableBusy(f"{table.name} is busy: {lock.holder} has held it since {readable(lock.acquired_at, zone=UTC)}"
                     f"{beat}.", holder=lock.holder)


class Lease:
    """One run's hold on a table's lock: a random token, a heartbeat that pushes the expiry
    forward, and `lost` once another run took the table over after an expiry."""

    def __init__(self, table: Table, holder: str, token: str) -> None:
        self.table, self.holder, self.token = table, holder, token
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last = time.monotonic()

    @staticmethod
    def interval() -> float:
        """Seconds between heartbeats: a quarter of the expiry, at most 10."""
        return max(0.1, min(10.0, settings.CLEANLINE_LOCK_EXPIRY_SECONDS / 4))

    def owned(self) -> bool:
        """Beat: push the expiry forward if this run still owns the lock; False once it lost it."""
        now = timezone.now()
        self._last = time.monotonic()
        if not TableLock.objects.filter(table_id=self.table.pk, token=self.token).update(
                heartbeat_at=now, expires_at=now + _expiry()):
            self.lost.set()
        return not self.lost.is_set()

    def check(self, *, now: bool = False) -> None:
        """Raise LockLost if another run took the table; beats first when one is due (or `now`)."""
        if not self.lost.is_set() and (now or time.monotonic() - self._last >= self.interval()):
            self.owned()
        if self.lost.is_set():
            raise LockLost(f"{self.table.name}: the lock of {self.holder} (run {self.token[:8]}) expired and another "
                           "run took the table over; this run stopped")

    def start(self) -> None:
        """Beat on a thread of its own while the run works. Not inside a transaction: another
        connection would not see the lock row (and SQLite would wait for this one's writes)."""
        if not transaction.get_connection().in_atomic_block:
            self._thread = threading.Thread(target=self._beat, name=f"cleanline-lock-{self.table.pk}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval()):
                try:
                    if not self.owned():
                        logger.warning("%s: lost the lock of %s (run %s)", self.table.name, self.holder, self.token)
                        return
                except Exception:  # the database hiccupped: the next beat tries again
                    logger.exception("%s: heartbeat of %s failed", self.table.name, self.holder)
        finally:
            connections.close_all()  # this thread's connections only


_held = threading.local()


def _acquire(table: Table, holder: str) -> Lease:
    """Take the table's lock for a new run: insert it, or take over an expired one with one
    conditional update (of two takers exactly one wins). A live lock raises TableBusy."""
    token = secrets.token_hex(16)
    for _ in range(5):
        now = timezone.now()
        fields = {"holder": holder, "token": token, "acquired_at": now, "heartbeat_at": now,
                  "expires_at": now + _expiry()}
        current = TableLock.objects.filter(table=table).first()
        if current is None:
            try:
                with transaction.atomic():
                    TableLock.objects.create(table=table, **fields)
                return Lease(table, holder, token)
            except IntegrityError:
                continue  # another run inserted it first: look again
        if current.expires_at is not None and current.expires_at > now:
            raise _busy(table, current)
        if TableLock.objects.filter(pk=current.pk, token=current.token).filter(_expired(now)).update(**fields):
            logger.warning("%s: %s took over the expired lock of %s", table.name, holder, current.holder)
            audit(user=None, action="table.lock.taken-over", table=table,
                  parameters={"holder": holder, "token": token, "previous_holder": current.holder,
                              "previous_token": current.token,
                              "previous_heartbeat": current.heartbeat_at.isoformat() if current.heartbeat_at else None})
            return Lease(table, holder, token)
    lock = TableLock.objects.filter(table=table).first()
    raise _busy(table, lock) if lock is not None else TableBusy(f"{table.name} is busy: its lock keeps changing hands.")


@contextmanager
def table_lock(table: Table, holder: str) -> Iterator[Lease]:
    """Hold the table's lock for one run of `holder` (a random token per run, a heartbeat while
    it works, free for another run once it stops heartbeating for CLEANLINE_LOCK_EXPIRY_SECONDS).
    Re-entrant for the same holder on the same thread only: a re-delivered copy of a task is
    another run and gets TableBusy while the first is alive. Released by its owner only."""
    held: dict[int, Lease] = _held.__dict__.setdefault("leases", {})
    outer = held.get(table.pk)
    if outer is not None and outer.holder == holder:
        yield outer
        return
    lease = _acquire(table, holder)
    held[table.pk] = lease
    lease.start()
    try:
        yield lease
    finally:
        lease.stop()
        if outer is None:
            held.pop(table.pk, None)
        else:
            held[table.pk] = outer
        TableLock.objects.filter(table_id=table.pk, token=lease.token).delete()


def live_lock(table: Table) -> TableLock | None:
    """The table's lock if a run holds it and heartbeats; an expired one counts as free."""
    return TableLock.objects.filter(table=table).exclude(_expired(timezone.now())).first()


def check_table_free(table: Table) -> None:
    lock = live_lock(table)
    if lock is not None:
        raise _busy(table, lock)


def table_lock_break(*, table: Table, user: User | None, token: str) -> None:
    """Remove the table's lock with `token` once it has expired (its run stopped heartbeating);
    a live lock is refused. Audited with the holder, token and age."""
    now = timezone.now()
    lock = TableLock.objects.filter(table=table, token=token).first() if token else None
    if lock is None:
        raise ValidationError("That lock is no longer held; nothing to break.")
    if lock.expires_at is not None and lock.expires_at > now:
        last = readable(lock.heartbeat_at or lock.acquired_at, zone=UTC)  # shown in the reader's zone
        raise ValidationError(f"{lock.holder} still heartbeats (last {last}): only an "
                              "expired lock can be broken.")
    deleted, _ = TableLock.objects.filter(pk=lock.pk, token=token).filter(_expired(now)).delete()
    if not deleted:
        raise ValidationError("The lock changed meanwhile; look again.")
    audit(user=user, action="table.lock.broken", table=table,
          parameters={"holder": lock.holder, "token": lock.token, "acquired_at": lock.acquired_at.isoformat(),
                      "last_heartbeat": lock.heartbeat_at.isoformat() if lock.heartbeat_at else None,
                      "age_seconds": int((now - lock.acquired_at).total_seconds())})
