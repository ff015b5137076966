"""Instants and instant file names, for timeline layout 1 (`.hoodie/`) and layout 2
(`.hoodie/timeline/`, completed files `<requested>_<completed>.<action>`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from enum import IntEnum
from functools import lru_cache

from timeline.exceptions import InvalidInstantError


class State(IntEnum):
    """Instant states in Hudi's order: requested < inflight < completed."""

    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2


COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
CLUSTERING = "clustering"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
INDEXING = "indexing"
SCHEMA_COMMIT = "schemacommit"

ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLUSTERING, COMPACTION, LOG_COMPACTION,
                     CLEAN, ROLLBACK, SAVEPOINT, RESTORE, INDEXING, SCHEMA_COMMIT})

# Pending table services complete as a write action of another name.
COMPLETED_ACTION = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}

_PENDING_ONLY = frozenset(COMPLETED_ACTION)
_NO_REQUESTED = frozenset({SAVEPOINT})
# Actions that exist only in timeline layout 2.
_LAYOUT2_ONLY = frozenset({CLUSTERING})

_V1_NAME = re.compile(r"^(\d+)(\.\w+)(\.\D+)?$", re.ASCII)
_V2_NAME = re.compile(r"^(\d+)(?:_(\d+))?(\.\w+)(\.\D+)?$", re.ASCII)
_STATE_SUFFIX = {".requested": State.REQUESTED, ".inflight": State.INFLIGHT}

INSTANT_TIME_FORMAT = "%Y%m%d%H%M%S"


def comparable_action(action: str) -> str:
    """The action an instant is grouped and ordered under (compaction sorts as commit)."""
    return COMPLETED_ACTION.get(action, action)


@dataclass(frozen=True, slots=True)
class Instant:
    """One action on the timeline at its highest state present."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None

    @property
    def sort_key(self) -> tuple[str, str, int]:
        """Hudi's instant order: requested time, then comparable action, then state."""
        return (self.requested_time, comparable_action(self.action), int(self.state))

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    @property
    def is_pending(self) -> bool:
        return self.state is not State.COMPLETED

    @property
    def is_requested(self) -> bool:
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        return self.state is State.INFLIGHT

    def file_name(self, layout: int) -> str:
        """The name of this instant's state file in the given timeline layout."""
        return format_file_name(self, layout)

    def at(self, state: State, completion_time: str | None = None) -> Instant:
        """The same action in another state; completing a compaction yields a commit."""
        action = COMPLETED_ACTION.get(self.action, self.action) if state is State.COMPLETED else self.action
        return Instant(self.requested_time, action, state, completion_time)

    def __str__(self) -> str:
        done = f"->{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action}__{self.state.name}]"


def _valid(action: str, state: State, layout: int) -> bool:
    if action not in ACTIONS or (action in _LAYOUT2_ONLY and layout < 2):
        return False
    if state is State.COMPLETED:
        return action not in _PENDING_ONLY
    if state is State.REQUESTED:
        return action not in _NO_REQUESTED
    return True


def _suffix(action: str, state: State) -> str:
    if state is State.COMPLETED:
        return action
    if state is State.INFLIGHT:
        return "inflight" if action == COMMIT else f"{action}.inflight"
    return f"{action}.requested"


# Every valid name after the first dot -> (action, state), per layout: the fast path of a
# timeline load, equivalent to Hudi's name pattern plus its list of valid extensions.
_SUFFIXES = {
    layout: {_suffix(a, s): (a, s) for a in ACTIONS for s in State if _valid(a, s, layout)}
    for layout in (1, 2)
}


def _is_time(text: str) -> bool:
    return text.isdigit() and text.isascii()


def split_file_name(name: str, layout: int) -> tuple[str, str, State, str | None]:
    """(requested time, action, state, completion time) of an instant file name; raises
    InvalidInstantError for anything that is not one. See `parse_file_name`."""
    times, _, suffix = name.partition(".")
    known = _SUFFIXES[2 if layout >= 2 else 1].get(suffix)
    if known is not None:
        requested, underscore, completed = times.partition("_")
        if _is_time(requested):
            if not underscore:
                return requested, known[0], known[1], None
            if layout >= 2 and known[1] is State.COMPLETED and _is_time(completed):
                return requested, known[0], known[1], completed
    instant = _parse_by_pattern(name, layout)
    return instant.requested_time, instant.action, instant.state, instant.completion_time


def parse_file_name(name: str, layout: int) -> Instant:
    """Parse an instant file name. Raises InvalidInstantError for anything that is not one.

    The completion time of a layout-2 completed file comes from its name; layout-1 files (and
    layout-2 "legacy" completed files) carry none, and the timeline fills it from the file's
    modification time as Hudi does.
    """
    return Instant(*split_file_name(name, layout))


def _parse_by_pattern(name: str, layout: int) -> Instant:
    """Hudi's instant-name patterns; reached only by names the fast path refuses, to say why."""
    if layout >= 2:
        match = _V2_NAME.match(name)
        if not match:
            raise InvalidInstantError(f"{name!r} is not an instant file name")
        requested, completed, action_ext, state_ext = match.groups()
    else:
        match = _V1_NAME.match(name)
        if not match:
            raise InvalidInstantError(f"{name!r} is not an instant file name")
        requested, action_ext, state_ext = match.groups()
        completed = None
    action = action_ext[1:]
    if action == "inflight" and state_ext is None:
        action, state = COMMIT, State.INFLIGHT
    elif state_ext is None:
        state = State.COMPLETED
    elif state_ext in _STATE_SUFFIX:
        state = _STATE_SUFFIX[state_ext]
    else:
        raise InvalidInstantError(f"{name!r}: unknown instant state {state_ext!r}")
    if action == COMMIT and state_ext == ".inflight":
        raise InvalidInstantError(f"{name!r}: an inflight commit is named <time>.inflight")
    if completed is not None and state is not State.COMPLETED:
        raise InvalidInstantError(f"{name!r}: only completed instants carry a completion time")
    if not _valid(action, state, layout):
        raise InvalidInstantError(f"{name!r}: {action!r} in state {state.name} is not a timeline instant")
    return Instant(requested, action, state, completed)


def format_file_name(instant: Instant, layout: int) -> str:
    """The state file name of an instant; inverse of `parse_file_name`."""
    t, action = instant.requested_time, instant.action
    if instant.state is State.COMPLETED:
        if layout >= 2 and instant.completion_time:
            return f"{t}_{instant.completion_time}.{action}"
        return f"{t}.{action}"
    if instant.state is State.INFLIGHT:
        return f"{t}.inflight" if action == COMMIT else f"{t}.{action}.inflight"
    return f"{t}.{action}.requested"


def parse_instant_time(value: str) -> datetime:
    """An instant time as a naive datetime (in the table's timeline zone). 14-digit times get
    999 ms as Hudi does; longer metadata-table times are cut to 17 digits."""
    if not (value.isascii() and value.isdigit()) or len(value) < 14:
        raise InvalidInstantError(f"{value!r} is not an instant time (yyyyMMddHHmmss[SSS])")
    millis = value[14:17] if len(value) >= 17 else "999"
    try:
        base = datetime.strptime(value[:14], INSTANT_TIME_FORMAT)
    except ValueError as exc:
        raise InvalidInstantError(f"{value!r} is not an instant time: {exc}") from None
    return base + timedelta(milliseconds=int(millis))


def moment_of(value: str, timeline_timezone: str) -> datetime:
    """A time typed by a person (yyyyMMddHHmmss[SSS]) as an aware datetime in the table's
    timeline zone; 14 digits mean that second exactly (.000), not Hudi's 999 filler."""
    moment = parse_instant_time(value if len(value) >= 17 else value + "000")
    return moment.replace(tzinfo=zone_of(timeline_timezone) or datetime.now().astimezone().tzinfo)


def instant_time_of(moment: datetime, timeline_timezone: str) -> str:
    """An aware datetime as a 17-digit instant time in the table's timeline zone (the inverse
    of `moment_of`): UTC, or this process's local zone for LOCAL tables."""
    return format_instant_time(moment.astimezone(zone_of(timeline_timezone)))


def format_instant_time(moment: datetime) -> str:
    """A datetime as a 17-digit instant time (`yyyyMMddHHmmssSSS`)."""
    return moment.strftime(INSTANT_TIME_FORMAT) + f"{moment.microsecond // 1000:03d}"


def instant_time_from_epoch_ms(epoch_ms: int, zone: tzinfo | None) -> str:
    """Format an epoch time in `zone` (None = this process's local zone)."""
    seconds, millis = divmod(epoch_ms, 1000)
    return _seconds_in_zone(seconds, zone) + f"{millis:03d}"


@lru_cache(maxsize=4096)
def _seconds_in_zone(epoch_seconds: int, zone: tzinfo | None) -> str:
    # Files of one timeline share few distinct seconds; the cache spares a datetime each.
    return datetime.fromtimestamp(epoch_seconds, tz=UTC).astimezone(zone).strftime(INSTANT_TIME_FORMAT)


def zone_of(timeline_timezone: str) -> tzinfo | None:
    """The zone instant times are written in: UTC, or None for the local zone."""
    return UTC if timeline_timezone.upper() == "UTC" else None


__all__ = [
    "ACTIONS", "CLEAN", "CLUSTERING", "COMMIT", "COMPACTION", "COMPLETED_ACTION", "DELTA_COMMIT", "INDEXING",
    "INSTANT_TIME_FORMAT", "LOG_COMPACTION", "REPLACE_COMMIT", "RESTORE", "ROLLBACK", "SAVEPOINT", "SCHEMA_COMMIT",
    "Instant", "State", "comparable_action", "format_file_name", "format_instant_time", "instant_time_from_epoch_ms",
    "instant_time_of", "moment_of", "parse_file_name", "parse_instant_time", "split_file_name", "zone_of"
]
