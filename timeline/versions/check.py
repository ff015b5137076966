"""The preflight of a table version change (`version_check`); see `timeline.versions`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from timeline.locks.discovery import writer_properties
from timeline.table import Table
from timeline.versions.rules import (
    Blocker,
    Step,
    index_partitions,
    indexing_on_timeline,
    log_files,
    metadata_table_behind,
    metadata_table_version,
    non_blocking_concurrency,
    pending_rollbacks,
    pending_table_services,
    pending_writes,
    readers,
    record_index_upgrade,
    settings,
    steps_between,
)


@dataclass(frozen=True, slots=True)
class StepCheck:
    """One step of the change with what it meets."""

    step: Step
    blockers: tuple[Blocker, ...]

    @property
    def blocked(self) -> bool:
        return any(b.blocking for b in self.blockers)


@dataclass(frozen=True, slots=True)
class VersionCheck:
    """The preflight of moving `table_uri` from `current` to `target`: each step with its
    blockers (none when the versions are equal: nothing to do)."""

    table_uri: str
    current: int
    target: int
    steps: tuple[StepCheck, ...]

    @property
    def blockers(self) -> tuple[Blocker, ...]:
        return tuple(b for s in self.steps for b in s.blockers if b.blocking)

    @property
    def notes(self) -> tuple[Blocker, ...]:
        return tuple(b for s in self.steps for b in s.blockers if not b.blocking)

    @property
    def ready(self) -> bool:
        return not self.blockers


def version_check(table: Table, target: int, *, options: Mapping[str, str] | None = None) -> VersionCheck:
    """The preflight of a change of `table` to table version `target`: each of Hudi's steps
    checked against the table as it is (a blocker stops the change until cleared; a step's
    settings are read from `hoodie.properties` under the writers' `options`, over the root's).
    Raises VersionChangeUnsupported for a version other than 6, 8 and 9."""
    props = writer_properties(table, options)
    checks = []
    for step in steps_between(table, table.version, target):
        found = [*metadata_table_version(table, step), *pending_writes(table, step, props),
                 *pending_table_services(table, step), *pending_rollbacks(table, step),
                 *non_blocking_concurrency(table, step, props), *indexing_on_timeline(table, step),
                 *log_files(table, step), *metadata_table_behind(table, step, props),
                 *record_index_upgrade(table, step, table.version),
                 *index_partitions(table, step), *settings(table, step, props), *readers(table, step)]
        checks.append(StepCheck(step, tuple(found)))
    return VersionCheck(table.uri, table.version, target, tuple(checks))


__all__ = ["StepCheck", "VersionCheck", "version_check"]
