"""Table version changes. The change itself (`change_version`, `timeline.versions.change`; what
each step rewrites: `timeline.versions.layout`) and its rehearsal on a linked copy (`rehearse`,
`timeline.versions.rehearse`), both reached through `HudiTable.maintenance`. The preflight
(`version_check`): every blocker that Hudi's
`UpgradeDowngrade` handlers would hit on the way from the table's version to a target (6, 8 or
9), or that would leave the table unreadable, step by step (6 -> 8 -> 9, 9 -> 8 -> 6), each a
typed value (`timeline.versions.rules.Blocker`) naming its instant or setting, what clears it and
the Hudi rule; it reads only (`HudiTable.inspect.version_check` is the way in)."""

from __future__ import annotations

from timeline.versions.change import (
    StepPlan,
    VersionChangePlan,
    VersionChangeRefused,
    change_version,
)
from timeline.versions.check import StepCheck, VersionCheck, version_check
from timeline.versions.rehearse import Rehearsal, RehearsalUnsupported, rehearse
from timeline.versions.rules import (
    READERS,
    VERSIONS,
    Blocker,
    BlockerKind,
    Step,
    VersionChangeUnsupported,
)

__all__ = ["READERS", "VERSIONS", "Blocker", "BlockerKind", "Rehearsal", "RehearsalUnsupported", "Step", "StepCheck",
           "StepPlan", "VersionChangePlan", "VersionChangeRefused", "VersionChangeUnsupported", "VersionCheck",
           "change_version", "rehearse", "version_check"]
