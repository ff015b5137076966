"""Archival: what the library's archival plan says (as the JSON the sync and the archival rows
keep), the preview read from the lake, a table's archivals, and what deleting a savepoint frees.
No Hudi rule is decided here: the plan is the library's (`inspect.archival`, Hudi's archiver of
the table's version), with the table's writer options (its settings over the root's
CLEANLINE_HUDI_OPTIONS and hoodie.properties)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from django.db.models import QuerySet

from console.lake import open_table
from console.models import OPEN_ARCHIVAL, Archival, Table
from timeline import CleanConfig, CleanlineError, HudiTable
from timeline import Instant as LakeInstant
from timeline.archive.plan import ArchivalPlan, archival_properties, read_inputs
from timeline.archive.rules import Blocker, BlockerKind, select
from timeline.archive.settings import ArchivalSettings


def instant_row(instant: LakeInstant) -> dict[str, str]:
    return {"requested_time": instant.requested_time, "action": instant.action,
            "completion_time": instant.completion_time or ""}


def blocker_row(blocker: Blocker) -> dict[str, Any]:
    """A blocker as the pages, the API and the stored summaries show it: its kind (Hudi's
    words, `BlockerKind`), the instant that causes it, since when and why."""
    return {"kind": blocker.kind.value, "instant": blocker.instant.requested_time if blocker.instant else None,
            "action": blocker.instant.action if blocker.instant else None, "since": blocker.since,
            "why": blocker.why}


def plan_summary(plan: ArchivalPlan) -> dict[str, Any]:
    """The plan's figures and blockers as JSON (without its instants): the active timeline's
    length before and after, how many instants archival moves now, whether a blocker stops
    every run, the archiver, the keep counts and the warnings; with a metadata table, the same
    of its own archival, which runs right after (`metadata_table`, else None)."""
    keep = plan.keep
    mdt = plan.metadata_table
    return {"active": plan.active_before, "active_after": plan.active_before - plan.archivable,
            "archivable": plan.archivable, "runnable": plan.runnable, "archiver": plan.archiver,
            "keep": {"min": keep.min_instants, "max": keep.max_instants, "configured_min": keep.configured_min,
                     "configured_max": keep.configured_max, "raised": keep.raised},
            "blockers": [blocker_row(b) for b in plan.blockers], "warnings": list(plan.warnings),
            "metadata_table": None if mdt is None else plan_summary(mdt)}


def archival_plan(table: Table, lake: HudiTable | None = None) -> ArchivalPlan:
    """What archival would move now and what blocks the rest, read from the lake with the
    table's writer options. Raises the library's errors (settings Hudi refuses, a table it
    cannot read)."""
    return (lake or open_table(table.path)).inspect.archival(table.write_options)


@dataclass(frozen=True, slots=True)
class ArchivalPreview:
    """The preview: the plan now as `plan_summary` gives it and its instants (oldest first),
    or `error`, why the library could not plan."""

    summary: dict[str, Any]
    instants: list[dict[str, str]]
    error: str = ""


def archival_preview(table: Table) -> ArchivalPreview:
    try:
        plan = archival_plan(table)
    except CleanlineError as exc:
        return ArchivalPreview({}, [], str(exc))
    return ArchivalPreview(plan_summary(plan), [instant_row(i) for i in plan.instants] if plan.runnable else [])


def archivals_of(table: Table) -> QuerySet[Archival]:
    return table.archivals.select_related("requested_by", "decided_by").order_by("-requested_at", "-pk")


def open_archival(table: Table) -> Archival | None:
    return archivals_of(table).filter(status__in=OPEN_ARCHIVAL).first()


@dataclass(frozen=True, slots=True)
class SavepointRelease:
    """What deleting one savepoint frees for archival: the plan now and the plan of the same
    timeline without that savepoint (the library's archiver rules run over it: `select`, with
    the settings and inputs `inspect.archival` reads). `blocks`: the savepoint is a blocker now;
    `freed`: the instants archival would move once it is deleted that it does not move now;
    `active_after`: the active timeline's length after deleting it and archiving (the savepoint's
    own instant goes with its deletion); `blockers_after`: what would still hold instants back."""

    savepoint: str
    blocks: bool
    archivable_now: int
    active_now: int
    active_after_now: int
    archivable_after: int
    active_after: int
    freed: list[dict[str, str]]
    blockers_after: list[dict[str, Any]]
    runnable: bool


def savepoint_release(table: Table, savepoint: str) -> SavepointRelease:
    """What archival deleting `savepoint` frees (read-only). Raises the library's errors, and
    LookupError when the table has no such completed savepoint."""
    lake = open_table(table.path)
    now = archival_plan(table, lake)
    inputs = read_inputs(lake)
    found = next((i for i in inputs.timeline.savepoints() if i.requested_time == savepoint), None)
    if found is None:
        raise LookupError(f"{table.name} has no savepoint {savepoint}.")
    without = inputs.timeline.filter(lambda i: i != found)
    props = archival_properties(lake, table.write_options)
    chosen = select(replace(inputs, timeline=without), ArchivalSettings.from_properties(props),
                    CleanConfig.from_properties(props))
    moved = {i.requested_time for i in now.instants} if now.runnable else set()
    after = list(chosen.instants) if now.runnable else []
    blocks = any(b.kind is BlockerKind.SAVEPOINT and b.instant is not None and b.instant.requested_time == savepoint
                 for b in now.blockers)
    stopping = [b for b in now.blockers if b.kind is BlockerKind.LSM_MANIFEST]
    return SavepointRelease(
        savepoint, blocks, now.archivable, now.active_before, now.active_before - now.archivable, len(after),
        len(without) - len(after), [instant_row(i) for i in after if i.requested_time not in moved],
        [blocker_row(b) for b in (*stopping, *chosen.blockers)], now.runnable)
