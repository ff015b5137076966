"""What the doctor reports and proposes, as typed, frozen, JSON-able records: a `Finding` (kind,
severity, its evidence, why it matters, the repair it offers), a `RepairPlan` (exactly the
files and instants a repair changes, with their bytes) and a `RepairResult` (what it did).

Each finding kind keeps its evidence in its own frozen dataclass (`Evidence`), whose fields are
strings, numbers, booleans, None, tuples of those or nested evidence: `to_json` turns any of
them into camelCase JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from timeline.exceptions import CleanlineError

# The repair text of a finding no Cleanline repair fixes starts with this.
NO_REPAIR = "none: "


def camel(name: str) -> str:
    """`files_to_list` -> `filesToList` (the CLI's JSON keys)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class Severity(str, Enum):
    """How bad a finding is: worth knowing, worth fixing soon, or hurting readers or writers now."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return {"info": 0, "warning": 1, "error": 2}[self.value]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Base of every finding kind's evidence (a frozen dataclass of JSON-able fields)."""

    def to_json(self) -> dict[str, Any]:
        return {camel(f.name): to_json(getattr(self, f.name)) for f in dataclasses.fields(self)}


def to_json(value: Any) -> Any:
    """A value of an evidence field as JSON: evidence objects as camelCase objects, tuples as
    lists, enums by value."""
    if isinstance(value, Evidence):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    return value


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong with a table: its `kind` (the module that found it, e.g.
    "orphan-files"), `severity`, a one-line `summary`, the `evidence` (instants, paths, counts,
    sizes), `why` it matters (one sentence) and the `repair` offered, or "none: ..." saying
    who must act."""

    kind: str
    severity: Severity
    summary: str
    evidence: Evidence
    why: str
    repair: str

    @property
    def repairable(self) -> bool:
        return not self.repair.startswith(NO_REPAIR)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity.value, "summary": self.summary,
                "evidence": self.evidence.to_json(), "why": self.why, "repair": self.repair,
                "repairable": self.repairable}


@dataclass(frozen=True, slots=True)
class Change:
    """One change a repair makes: `action` (e.g. "delete", "rollback", "write"), its `target`
    (a path, or an instant time for actions on the timeline), the bytes it frees or writes, and
    what it is. An action on the timeline (a rollback, a clean) counts no bytes itself: the
    files it deletes follow it as changes of their own."""

    action: str
    target: str
    bytes: int = 0
    detail: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.action, self.target)

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "target": self.target, "bytes": self.bytes, "detail": self.detail}


def changes_under(changes: Iterable[Change], head: Change, heads: Collection[str]) -> list[Change]:
    """A repair's changes for one of its steps: the `head` change (its action one of `heads`: a
    rollback, a clean run, ...) and the changes listed after it, up to the next head."""
    found: list[Change] = []
    for change in changes:
        if change.action in heads:
            if found:
                break
            if change.key == head.key:
                found.append(change)
        elif found:
            found.append(change)
    return found


@dataclass(frozen=True, slots=True)
class RepairPlan:
    """A repair before anything is changed (pure, previewable): the findings it fixes and
    exactly the changes it makes. Running it (`timeline.doctor.run_repair`) re-diagnoses its
    kind under the table's lock first and changes only what is both planned and still found."""

    table: str
    kind: str
    findings: tuple[Finding, ...]
    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.changes)

    @property
    def is_empty(self) -> bool:
        return not self.changes

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "kind": self.kind, "findings": [f.to_json() for f in self.findings],
                "changes": [c.to_json() for c in self.changes], "bytes": self.bytes, "notes": list(self.notes)}


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What a repair did: the changes made, those skipped because the table no longer shows
    them (already done, or no longer a finding when re-diagnosed under the lock), and those that
    failed, each with why."""

    table: str
    kind: str
    done: tuple[Change, ...] = ()
    skipped: tuple[tuple[Change, str], ...] = ()
    failed: tuple[tuple[Change, str], ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, "kind": self.kind, "done": [c.to_json() for c in self.done],
                "skipped": [c.to_json() | {"why": why} for c, why in self.skipped],
                "failed": [c.to_json() | {"why": why} for c, why in self.failed], "notes": list(self.notes)}


class RepairUnavailable(CleanlineError):
    """The finding kind offers no repair Cleanline runs (the message says who must act), or the
    table shows nothing of that kind to repair."""


class RepairInvalidated(CleanlineError):
    """Re-diagnosed under the table's lock, the table asks for changes the approved plan did not
    preview; nothing of it was changed. Plan the repair again and review it."""
