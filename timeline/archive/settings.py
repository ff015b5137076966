"""Archival settings as Hudi's writers read them: `hoodie.keep.min.commits` and
`hoodie.keep.max.commits`, `hoodie.archive.beyond.savepoint`, `hoodie.archive.automatic`, the
MOR compaction trigger archival keeps delta commits for, and the metaserver switch; Hudi's keys
and defaults, and `HoodieWriteConfig`'s check of them against the cleaner's settings."""

from __future__ import annotations

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
}


@dataclass(frozen=True, slots=True)
class ArchivalSettings:
    """What Hudi's archiver obeys, under Hudi's keys and defaults (`KEYS`): keep between
    `min_commits` and `max_commits` completed commits; stop at the first savepoint unless
    `beyond_savepoint`; `automatic` archival after every commit; on MOR tables keep the delta
    commits the next compaction needs (`compaction_trigger`, `compaction_max_delta_commits`);
    with `metaserver` on, Hudi's archiver archives nothing."""

    min_commits: int = 20
    max_commits: int = 30
    beyond_savepoint: bool = False
    automatic: bool = True
    compaction_trigger: CompactionTrigger = CompactionTrigger.NUM_COMMITS
    compaction_max_delta_commits: int = 5
    metaserver: bool = False

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
    if number < 0 or (number == 0 and name == "compaction_max_delta_commits"):
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


__all__ = ["KEYS", "ArchivalConfigError", "ArchivalSettings", "CompactionTrigger", "check_settings"]
