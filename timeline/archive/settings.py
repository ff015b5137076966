"""Archival settings as Hudi's writers read them: `hoodie.keep.min.commits` and
`hoodie.keep.max.commits`, `hoodie.archive.beyond.savepoint`, `hoodie.archive.automatic`, the
MOR compaction trigger archival keeps delta commits for, the metaserver switch, and how the
archived timeline is written (entries per v6 archive block, LSM files merged at once); Hudi's
keys and defaults, `HoodieWriteConfig`'s check of them against the cleaner's settings, and the
settings Hudi derives from them for the metadata table's own archival
(`HoodieMetadataWriteUtils.createMetadataWriteConfig`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from timeline.clean.config import CleanConfig, CleanPolicy
from timeline.exceptions import CleanlineError


class ArchivalConfigError(CleanlineError, ValueError):
    """An archival setting has a value Hudi would refuse (or fail on); names the keys."""


class CompactionTrigger(str, Enum):
    """`CompactionTriggerStrategy`: when a MOR table's writer schedules a compaction."""

    NUM_COMMITS = "NUM_COMMITS"
    NUM_COMMITS_AFTER_LAST_REQUEST = "NUM_COMMITS_AFTER_LAST_REQUEST"
    TIME_ELAPSED = "TIME_ELAPSED"
    NUM_AND_TIME = "NUM_AND_TIME"
    NUM_OR_TIME = "NUM_OR_TIME"


# field -> (Hudi's key, Hudi's default): HoodieArchivalConfig, HoodieCompactionConfig and
# HoodieMetaserverConfig. None of these keys has an older alternative name.
KEYS: Mapping[str, tuple[str, str]] = {
    "min_commits": ("hoodie.keep.min.commits", "20"),
    "max_commits": ("hoodie.keep.max.commits", "30"),
    "beyond_savepoint": ("hoodie.archive.beyond.savepoint", "false"),
    "automatic": ("hoodie.archive.automatic", "true"),
    "compaction_trigger": ("hoodie.compact.inline.trigger.strategy", "NUM_COMMITS"),
    "compaction_max_delta_commits": ("hoodie.compact.inline.max.delta.commits", "5"),
    "metaserver": ("hoodie.metaserver.enabled", "false"),
    "archival_batch": ("hoodie.commits.archival.batch", "10"),
    "compaction_batch": ("hoodie.timeline.compaction.batch.size", "10"),
}
# Fields that must be at least 1 (a count of things done at once, or of delta commits).
_POSITIVE = frozenset({"compaction_max_delta_commits", "archival_batch", "compaction_batch"})
# HoodieMetadataConfig: `hoodie.metadata.compact.max.delta.commits` (the metadata table's
# compaction trigger) and DEFAULT_METADATA_CLEANER_COMMITS_RETAINED.
METADATA_COMPACT_MAX_DELTA_COMMITS = ("hoodie.metadata.compact.max.delta.commits", "10")
METADATA_CLEANER_COMMITS_RETAINED = 20


@dataclass(frozen=True, slots=True)
class ArchivalSettings:
    """What Hudi's archiver obeys, under Hudi's keys and defaults (`KEYS`): keep between
    `min_commits` and `max_commits` completed commits; stop at the first savepoint unless
    `beyond_savepoint`; `automatic` archival after every commit; on MOR tables keep the delta
    commits the next compaction needs (`compaction_trigger`, `compaction_max_delta_commits`);
    with `metaserver` on, Hudi's archiver archives nothing. Writing: `archival_batch` entries
    per Avro block of a v6 archive file, `compaction_batch` LSM files of one layer merged at
    once (`HoodieArchivalConfig`)."""

    min_commits: int = 20
    max_commits: int = 30
    beyond_savepoint: bool = False
    automatic: bool = True
    compaction_trigger: CompactionTrigger = CompactionTrigger.NUM_COMMITS
    compaction_max_delta_commits: int = 5
    metaserver: bool = False
    archival_batch: int = 10
    compaction_batch: int = 10

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: Any) -> ArchivalSettings:
        """Every setting from `props` (Hudi's default where a key is absent), then `overrides`
        (field names; None means "not given"). Raises ArchivalConfigError naming the key."""
        values = {name: _convert(name, props.get(key, default), key) for name, (key, default) in KEYS.items()}
        settings = cls(**values)
        given = {k: v for k, v in overrides.items() if v is not None}
        return settings.with_overrides(**given) if given else settings

    def with_overrides(self, **overrides: Any) -> ArchivalSettings:
        unknown = set(overrides) - set(KEYS)
        if unknown:
            raise ArchivalConfigError(f"unknown archival settings: {', '.join(sorted(unknown))}")
        return replace(self, **{k: _convert(k, _text(v), KEYS[k][0]) for k, v in overrides.items()})

    def as_properties(self) -> dict[str, str]:
        """The settings under Hudi's keys."""
        return {key: _text(getattr(self, name)) for name, (key, _) in KEYS.items()}


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value.value if isinstance(value, Enum) else value)


def _convert(name: str, raw: str, key: str) -> Any:
    text = raw.strip()
    kind = ArchivalSettings.__dataclass_fields__[name].type
    try:
        if kind == "bool":
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if kind == "CompactionTrigger":
            return CompactionTrigger(text.upper())
        number = int(text)
    except ValueError:
        raise ArchivalConfigError(f"{key}={raw!r} is not a valid value") from None
    if number < 0 or (number == 0 and name in _POSITIVE):
        raise ArchivalConfigError(f"{key}={raw!r} must be {'at least 1' if number == 0 else 'at least 0'}")
    return number


def check_settings(settings: ArchivalSettings, clean: CleanConfig, *, where: str = "") -> list[str]:
    """`HoodieWriteConfig.Builder.validate`: with the KEEP_LATEST_COMMITS cleaner,
    `hoodie.keep.max.commits` must be greater than `hoodie.keep.min.commits` (refused,
    ArchivalConfigError), and a `hoodie.keep.min.commits` at or below
    `hoodie.clean.commits.retained` is only a warning, since the archiver raises it anyway
    (`ArchivalUtils.getMinAndMaxInstantsToKeep`). Returns the warnings."""
    prefix = f"{where}: " if where else ""
    min_key, max_key = KEYS["min_commits"][0], KEYS["max_commits"][0]
    warnings = []
    if clean.policy is CleanPolicy.KEEP_LATEST_COMMITS:
        if settings.max_commits <= settings.min_commits:
            raise ArchivalConfigError(f"{prefix}Increase {max_key}={settings.max_commits} to be greater than "
                                      f"{min_key}={settings.min_commits}.")
        if settings.min_commits <= clean.commits_retained:
            warnings.append(f"{min_key}={settings.min_commits} is not greater than hoodie.clean.commits.retained="
                            f"{clean.commits_retained}: Hudi's archiver raises it to keep the cleaner's window")
    return warnings


def metadata_table_settings(data: ArchivalSettings, props: Mapping[str, str]) -> ArchivalSettings:
    """The archival settings of a data table's metadata table, as
    `HoodieMetadataWriteUtils.createMetadataWriteConfig` builds them from the data table's
    writer config (`data`, read from `props`): keep one more commit than the data table at
    least and at most (`archiveCommitsWith(min + 1, max + 1)`); archival run by the data
    table's writer after every metadata-table write whatever `hoodie.archive.automatic` says
    (`performTableServices` calls `archive()`); nothing else borrowed, so Hudi's defaults for
    archiving beyond savepoints (off), the metaserver (off), the batches and the compaction
    trigger (NUM_COMMITS), with `hoodie.metadata.compact.max.delta.commits` as its number."""
    key, default = METADATA_COMPACT_MAX_DELTA_COMMITS
    return ArchivalSettings(min_commits=data.min_commits + 1, max_commits=data.max_commits + 1,
                            compaction_max_delta_commits=_convert("compaction_max_delta_commits",
                                                                  props.get(key, default), key))


def metadata_table_clean(data: CleanConfig, *, table_version: int) -> CleanConfig:
    """The cleaner settings of a data table's metadata table (archival raises its keep counts
    from them, `ArchivalUtils.getMinAndMaxInstantsToKeep`). Hudi 1.x (table versions 8 and 9,
    `createMetadataWriteConfig`): the data table's policy, retaining
    max(DEFAULT_METADATA_CLEANER_COMMITS_RETAINED, 1.2 x its commits) commits, or 1.2 x its
    file versions or hours, rounded up. Hudi 0.14/0.15 (table version 6): KEEP_LATEST_COMMITS,
    DEFAULT_METADATA_CLEANER_COMMITS_RETAINED commits."""
    if table_version < 8:
        return CleanConfig(policy=CleanPolicy.KEEP_LATEST_COMMITS, commits_retained=METADATA_CLEANER_COMMITS_RETAINED)
    if data.policy is CleanPolicy.KEEP_LATEST_COMMITS:
        return CleanConfig(policy=data.policy,
                           commits_retained=max(METADATA_CLEANER_COMMITS_RETAINED, int(data.commits_retained * 1.2)))
    if data.policy is CleanPolicy.KEEP_LATEST_FILE_VERSIONS:
        return CleanConfig(policy=data.policy, file_versions_retained=math.ceil(data.file_versions_retained * 1.2))
    return CleanConfig(policy=data.policy, hours_retained=math.ceil(data.hours_retained * 1.2))


__all__ = ["KEYS", "METADATA_CLEANER_COMMITS_RETAINED", "METADATA_COMPACT_MAX_DELTA_COMMITS", "ArchivalConfigError",
           "ArchivalSettings", "CompactionTrigger", "check_settings", "metadata_table_clean", "metadata_table_settings"]
