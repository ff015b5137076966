"""The seam between the doctor's entry points (`timeline/doctor/__init__.py`) and its finding
modules: each module defines one `Check` (its kind, how it diagnoses, how it plans its repair,
how it runs a planned repair), and the machinery shared by the repairs that delete files under
the table's lock."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import compress
from operator import not_

from timeline import transition
from timeline.config import META_FOLDER
from timeline.doctor.findings import (
    NO_REPAIR,
    Change,
    Finding,
    RepairPlan,
    RepairResult,
    RepairUnavailable,
)
from timeline.doctor.survey import DoctorSettings, Survey
from timeline.exceptions import CleanlineError
from timeline.perf import paused_gc
from timeline.storage import OutsideTableError, Storage, TableMovedError
from timeline.table import Table
from timeline.transactions import Transactions


@dataclass(frozen=True, slots=True)
class Session:
    """What running a repair needs: the table (the same object the lock's publish check is set
    on), its `Transactions` (the lock Hudi's writers share, the live-writer rule), and the
    settings and moment the plan was diagnosed with."""

    table: Table
    transactions: Transactions
    settings: DoctorSettings
    now: datetime | None = None

    def survey(self, *, only: Collection[str] | None = None) -> Survey:
        """A fresh look at the table (the re-validation before a repair's first change); `only`:
        a listing of those files alone (`Survey`)."""
        now = None if self.now is None else min(self.now, datetime.now(self.now.tzinfo))
        return Survey(self.table, now=now, settings=self.settings, only=only)


@dataclass(frozen=True, slots=True)
class Check:
    """One finding kind: `diagnose` only reads; `plan` is pure (RepairUnavailable when the
    kind offers no repair or finds nothing); `run` re-diagnoses under the table's lock and
    changes only what the approved plan previewed."""

    kind: str
    diagnose: Callable[[Survey], list[Finding]]
    plan: Callable[[Survey], RepairPlan]
    run: Callable[[Session, RepairPlan], RepairResult]


def no_repair(kind: str, findings: Sequence[Finding], table: str) -> RepairUnavailable:
    """Why a kind's findings cannot be repaired by Cleanline (or that there is nothing)."""
    if not findings:
        return RepairUnavailable(f"{table}: no {kind} finding to repair")
    reasons = sorted({f.repair.removeprefix(NO_REPAIR) for f in findings if not f.repairable})
    return RepairUnavailable(f"{table}: {kind}: no repair Cleanline runs: {'; '.join(reasons)}")


def repairable_plan(survey: Survey, kind: str, findings: list[Finding], changes: Sequence[Change],
                    notes: Sequence[str] = ()) -> RepairPlan:
    """The plan of the repairable findings, or RepairUnavailable when none is."""
    fixed = [f for f in findings if f.repairable]
    if not fixed:
        raise no_repair(kind, findings, survey.table.uri)
    return RepairPlan(survey.table.uri, kind, tuple(fixed), tuple(changes), tuple(notes))


def fresh_changes(session: Session, plan_of: Callable[[Survey], RepairPlan]) -> tuple[Change, ...]:
    """The changes a repair's kind asks for now (none when nothing is found any more)."""
    try:
        return plan_of(session.survey()).changes
    except RepairUnavailable:
        return ()


def run_deletes(session: Session, plan: RepairPlan, plan_of: Callable[[Survey], RepairPlan],
                resolve: Callable[[Table, Change], str], *, folders: bool = False,
                current: Callable[[Survey], Iterable[tuple[str, str]]] | None = None,
                resolve_all: Callable[[Table, Sequence[Change]], list[str]] | None = None,
                held: Callable[[Session, Sequence[Change]], Held | None] | None = None,
                ) -> RepairResult:
    """A repair that deletes files (or folders): under the table's lock, the kind is diagnosed
    again and only the planned deletes it still asks for go; every path is first resolved
    through the table's containment (all of them, before the first delete: one outside refuses
    the whole repair), and each delete (files: each batch of the storage's batch delete) follows the
    check that the lock is still held. A file already gone counts as skipped, so a re-run after a
    crash finishes the rest. A table folder swapped during the run stops it (TableMovedError).

    `current`, for a kind whose every change is the delete of one listed file: the keys of the
    changes the kind asks for now, from a survey whose listing holds the planned files alone
    (each folder they are in listed once, `Survey(only=...)`), without the findings built: the
    re-check costs the planned files, not the table. `resolve_all`: `resolve` of all the deletes
    in one call (one containment for the run, not one per file). `held`, for such a kind on a
    table folder the run holds: the re-check and the paths at once (`Held`), what `current` and
    `resolve_all` would answer, from a status of each planned file alone; None, before anything
    changed, when they must answer. Its deletes then go by name, a batch in one folder each
    (`Storage.delete_names`)."""
    table, storage = session.table, session.table.storage
    with session.transactions.state_change():
        with paused_gc():  # a few objects per planned file, none cyclic (timeline/perf.py)
            checked = None if held is None or folders else held(session, plan.changes)
        if checked is not None:
            wanted = checked.wanted
        else:
            if current is None:
                found = {c.key for c in fresh_changes(session, plan_of)}
            else:
                with paused_gc():
                    found = set(current(session.survey(only=[storage.path_of(c.target) for c in plan.changes])))
            wanted = [c.key in found for c in plan.changes]
        todo = list(compress(plan.changes, wanted))
        skipped = [(c, "no longer found when diagnosed again under the table's lock")
                   for c in compress(plan.changes, map(not_, wanted))]
        if checked is None:
            with paused_gc():
                paths = [resolve(table, c) for c in todo] if resolve_all is None else resolve_all(table, todo)
        else:
            paths = []
        done: list[Change] = []
        failed: list[tuple[Change, str]] = []
        if folders:
            for change, path in zip(todo, paths):
                transition.fence(table)
                try:
                    existed = storage.delete_dir(path)
                except TableMovedError:
                    raise  # the table's folder was swapped during the run: stop here
                except CleanlineError as exc:
                    failed.append((change, str(exc)))
                    continue
                if existed:
                    done.append(change)
                else:
                    skipped.append((change, "already gone"))
        elif checked is not None:  # files by name, a batch in one folder, each right after the held-lock check
            _delete_by_name(table, todo, checked, done, skipped, failed)
        else:  # files: the storage's batch delete, each batch right after the held-lock check
            size = max(1, storage.delete_batch_size or 1000)
            for start in range(0, len(todo), size):
                transition.fence(table)
                batch = paths[start:start + size]
                answers = storage.delete_many(batch)  # TableMovedError (a swapped folder) stops the run
                for change, path in zip(todo[start:start + size], batch):
                    answer = answers.get(path, "failed: no answer from the store")
                    if answer == "deleted":
                        done.append(change)
                    else:
                        _not_deleted(change, path, answer, skipped, failed)
    table.reload()
    return RepairResult(table.uri, plan.kind, tuple(done), tuple(skipped), tuple(failed))


@dataclass(frozen=True, slots=True)
class Held:
    """A re-check's answer on a folder the run holds (`run_deletes`' `held`): for each planned
    change whether the kind still asks for it, and the files it deletes as (folder's backend
    path, file names) runs, in the changes' order."""

    wanted: list[bool]
    folders: list[tuple[str, list[str]]]


def _delete_by_name(table: Table, todo: list[Change], checked: Held, done: list[Change],
                    skipped: list[tuple[Change, str]], failed: list[tuple[Change, str]]) -> None:
    """`run_deletes`' deletes of `held` files, in the changes' order: a batch of names in one
    folder at a time (`Storage.delete_names`), each right after the held-lock check. A swapped
    folder (TableMovedError) stops the run."""
    storage = table.storage
    size = max(1, storage.delete_batch_size or 1000)
    position = 0
    for folder, names in checked.folders:
        for start in range(0, len(names), size):
            transition.fence(table)
            batch = names[start:start + size]
            in_order = storage.delete_names(folder, batch)
            for change, name, answer in zip(todo[position:position + len(batch)], batch, in_order):
                if answer == "deleted":
                    done.append(change)
                else:
                    _not_deleted(change, Storage.join(folder, name), answer, skipped, failed)
            position += len(batch)


def _not_deleted(change: Change, path: str, answer: str, skipped: list[tuple[Change, str]],
                 failed: list[tuple[Change, str]]) -> None:
    """A delete's answer other than "deleted": "gone" is skipped, anything else failed."""
    if answer == "gone":
        skipped.append((change, "already gone"))
    else:
        failed.append((change, f"{path}: {answer.removeprefix('failed: ')}"))


def resolve_meta(table: Table, change: Change) -> str:
    """The backend path of a file or folder inside `.hoodie/` that a repair deletes (a state
    file, a marker folder, a heartbeat, an LSM timeline file, the properties backup), through
    the table's containment: refused if it resolves anywhere else."""
    path = table.storage.path_of(change.target)
    for prefix in (table.path(META_FOLDER), table.containment.meta):
        if path.startswith(prefix + "/"):
            return table.containment.meta_path(*path[len(prefix) + 1:].split("/"))
    raise OutsideTableError(table.uri, change.target, "lies outside .hoodie/, where this repair deletes")
