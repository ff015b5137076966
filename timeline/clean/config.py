"""Cleaner configuration: Hudi's keys (the `hoodie.clean.*` names and the older
`hoodie.cleaner.*` ones), Hudi's defaults, read from `hoodie.properties` and overridable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from timeline.exceptions import CleanlineError


class CleanPolicy(str, Enum):
    KEEP_LATEST_COMMITS = "KEEP_LATEST_COMMITS"
    KEEP_LATEST_FILE_VERSIONS = "KEEP_LATEST_FILE_VERSIONS"
    KEEP_LATEST_BY_HOURS = "KEEP_LATEST_BY_HOURS"


class FailedWritesPolicy(str, Enum):
    EAGER = "EAGER"
    LAZY = "LAZY"
    NEVER = "NEVER"


class CleanConfigError(CleanlineError, ValueError):
    """A cleaning setting has a value Hudi would refuse."""


# HoodieWriteConfig reads every number of HoodieCleanConfig with HoodieConfig.getInt
# (getCleanerCommitsRetained, getCleanerFileVersionsRetained, getCleanerHoursRetained, ...):
# Integer.parseInt, so a value above a Java int is one Hudi itself refuses.
JAVA_INT_MAX = 2**31 - 1
# A window of hours reaching back further than any instant time (a thousand years); Cleanline's
# bound, below Hudi's, so that `now - hours` stays a date (timeline/clean/retention.py).
HOURS_RETAINED_MAX = 24 * 365 * 1000
# The retention settings bounded by the table's instant count (`retention_bound_refusal`).
_COUNTED = {"commits_retained": "commits", "file_versions_retained": "file versions"}

# field -> (new key, old key, default), in HoodieCleanConfig's terms.
KEYS: Mapping[str, tuple[str, str | None, str]] = {
    "policy": ("hoodie.clean.policy", "hoodie.cleaner.policy", "KEEP_LATEST_COMMITS"),
    "commits_retained": ("hoodie.clean.commits.retained", "hoodie.cleaner.commits.retained", "10"),
    "file_versions_retained": ("hoodie.clean.fileversions.retained", "hoodie.cleaner.fileversions.retained", "3"),
    "hours_retained": ("hoodie.clean.hours.retained", "hoodie.cleaner.hours.retained", "24"),
    "incremental": ("hoodie.clean.incremental.enabled", "hoodie.cleaner.incremental.mode", "true"),
    "multiple_enabled": ("hoodie.clean.multiple.enabled", "hoodie.clean.allow.multiple", "false"),
    "failed_writes": ("hoodie.clean.failed.writes.policy", "hoodie.cleaner.policy.failed.writes", "EAGER"),
    "delete_bootstrap_base_file": ("hoodie.clean.delete.bootstrap.base.file",
                                   "hoodie.cleaner.delete.bootstrap.base.file", "false"),
    "trigger_max_commits": ("hoodie.clean.trigger.max.commits", "hoodie.clean.max.commits", "1"),
    "parallelism": ("hoodie.clean.parallelism", "hoodie.cleaner.parallelism", "200"),
}


@dataclass(frozen=True, slots=True)
class CleanConfig:
    """What the planner and executor obey. `multiple_enabled` defaults to false as in current
    Hudi (0.14 defaulted to true)."""

    policy: CleanPolicy = CleanPolicy.KEEP_LATEST_COMMITS
    commits_retained: int = 10
    file_versions_retained: int = 3
    hours_retained: int = 24
    incremental: bool = True
    multiple_enabled: bool = False
    failed_writes: FailedWritesPolicy = FailedWritesPolicy.EAGER
    delete_bootstrap_base_file: bool = False
    trigger_max_commits: int = 1
    parallelism: int = 200

    def __post_init__(self) -> None:
        # A policy given as its name ("KEEP_LATEST_FILE_VERSIONS") is that policy, as Hudi reads
        # `hoodie.clean.policy`; without this the planner's `is` checks took it for another one.
        for name in ("policy", "failed_writes"):
            value = getattr(self, name)
            if isinstance(value, str) and not isinstance(value, Enum):
                object.__setattr__(self, name, _convert(name, value, name))

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: Any) -> CleanConfig:
        """Read every setting from `props` (new key first, then the old one, then Hudi's
        default), then apply `overrides` (field names; None means "not given")."""
        values = {name: _value(props, name) for name in KEYS}
        config = cls(**values)
        given = {k: v for k, v in overrides.items() if v is not None}
        return config.with_overrides(**given) if given else config

    def with_overrides(self, **overrides: Any) -> CleanConfig:
        unknown = set(overrides) - set(KEYS)
        if unknown:
            raise CleanConfigError(f"unknown cleaning settings: {', '.join(sorted(unknown))}")
        return replace(self, **{k: _convert(k, str(v.value if isinstance(v, Enum) else v), k)
                                for k, v in overrides.items()})

    def as_properties(self) -> dict[str, str]:
        """The settings under Hudi's current key names."""
        out = {}
        for name, (key, _, _) in KEYS.items():
            value = getattr(self, name)
            out[key] = (value.value if isinstance(value, Enum)
                        else str(value).lower() if isinstance(value, bool) else str(value))
        return out


def _value(props: Mapping[str, str], name: str) -> Any:
    key, old, default = KEYS[name]
    raw = props.get(key)
    source = key
    if raw is None and old is not None and old in props:
        raw, source = props[old], old
    return _convert(name, default if raw is None else raw, source)


def _convert(name: str, raw: str, source: str) -> Any:
    text = raw.strip()
    field_type = CleanConfig.__dataclass_fields__[name].type
    try:
        if field_type == "CleanPolicy":
            return CleanPolicy(text.upper())
        if field_type == "FailedWritesPolicy":
            return FailedWritesPolicy(text.upper())
        if field_type == "bool":
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        number = int(text)
    except ValueError:
        raise CleanConfigError(f"{source}={raw!r} is not a valid value") from None
    if number < 0 or (number == 0 and name in ("file_versions_retained", "parallelism")):
        raise CleanConfigError(f"{source}={raw!r} must be {'positive' if number == 0 else 'at least 0'}")
    if name == "hours_retained" and number > HOURS_RETAINED_MAX:
        raise CleanConfigError(f"{source}={text} is above {HOURS_RETAINED_MAX} hours (a thousand years), "
                               "further back than any instant time")
    if number > JAVA_INT_MAX:
        raise CleanConfigError(f"{source}={text} is above {JAVA_INT_MAX}, the largest value Hudi reads "
                               "(a Java int: HoodieConfig.getInt)")
    return number


def retention_bound_refusal(overrides: Mapping[str, Any], *, instants: int | None,
                            table_props: Mapping[str, str] | None = None) -> str | None:
    """Why a retention a person asks for (`overrides`: field names, None or "" for not given) is
    out of bounds, naming the bound, or None. Each value first as Hudi reads it (at most a
    Java int; hours at most HOURS_RETAINED_MAX), then commits and file versions retained at
    most `instants`, the table's instant count on its active and archived timelines (None:
    not known, no such bound), or the table's own setting (`table_props`) where that is
    higher. A table holds no more commits, and a file group no more versions, than it has
    instants, so a larger value keeps exactly what that count keeps: a value above it is a
    slip (10^30), not a wish. The table's own setting is never out of bounds (Hudi's default of
    10 commits on a table of 8 instants), lest a plan that keeps it could not be asked for."""
    own = CleanConfig.from_properties(table_props) if table_props is not None else None
    for name in ("commits_retained", "file_versions_retained", "hours_retained"):
        value = overrides.get(name)
        if value is None or value == "":
            continue
        try:
            number = int(str(value).strip())
        except ValueError:
            return f"{name}={value!r} is not a whole number"
        unit = _COUNTED.get(name)
        if unit is not None and instants is not None:
            configured = getattr(own, name) if own is not None else 0
            if number > max(instants, configured):
                if configured > instants:
                    return (f"{name}={number} is above {configured}, the table's own setting (above its "
                            f"{instants} instants, it already keeps every one)")
                return (f"{name}={number} is above {instants}, the table's instant count (active and archived "
                        f"timelines): no table keeps more {unit} than it has instants")
        try:
            _convert(name, str(number), name)
        except CleanConfigError as exc:
            return str(exc)
    return None


__all__ = [
    "HOURS_RETAINED_MAX", "JAVA_INT_MAX", "KEYS", "CleanConfig", "CleanConfigError", "CleanPolicy",
    "FailedWritesPolicy", "retention_bound_refusal"
]
