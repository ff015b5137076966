"""The compaction settings of a table's writers, as Hudi's `HoodieWriteConfig` reads them:
the writers' options (given, over the root's and `hoodie.properties`:
`timeline.locks.discovery.writer_properties`) with `HoodieCompactionConfig`'s keys and
defaults, the concurrency mode and the failed-writes policy (`timeline.failed_writes`), and
the metadata table's own trigger (`HoodieMetadataConfig`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from timeline.archive.settings import CompactionTrigger
from timeline.exceptions import CleanlineError
from timeline.failed_writes import MULTI_WRITER_MODES, failed_writes_policy
from timeline.locks.discovery import writer_properties
from timeline.table import Table

# HoodieCompactionConfig: key -> default
INLINE = ("hoodie.compact.inline", "false")
SCHEDULE_INLINE = ("hoodie.compact.schedule.inline", "false")
TRIGGER = ("hoodie.compact.inline.trigger.strategy", "NUM_COMMITS")
MAX_DELTA_COMMITS = ("hoodie.compact.inline.max.delta.commits", "5")
MAX_DELTA_SECONDS = ("hoodie.compact.inline.max.delta.seconds", str(60 * 60))
# DataSourceWriteOptions.ASYNC_COMPACT_ENABLE (Spark's datasource writer, streaming writes)
ASYNC = ("hoodie.datasource.compaction.async.enable", "true")
# HoodieMetadataConfig: the metadata table's compaction trigger and its cap while data-table
# instants are pending (`checkNumDeltaCommits`)
METADATA_MAX_DELTA_COMMITS = ("hoodie.metadata.compact.max.delta.commits", "10")
METADATA_MAX_WHEN_PENDING = ("hoodie.metadata.max.deltacommits.when_pending", "1000")
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"


class CompactionSettingsError(CleanlineError, ValueError):
    """A compaction setting holds a value Hudi would refuse; names the key."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    """What decides whether a writer schedules a compaction. `inline` and `schedule_inline` are
    None when the writers' options given do not set them (HoodieWriteConfig's default is false;
    Spark's datasource and SQL writers turn inline compaction on for merge-on-read tables unless
    async compaction is on: `DataSourceUtils.createHoodieConfig`). `multi_writer` and
    `failed_writes_policy` decide whether an earlier pending write holds scheduling back."""

    inline: bool | None
    schedule_inline: bool | None
    async_enabled: bool | None
    trigger: CompactionTrigger
    max_delta_commits: int
    max_delta_seconds: int
    multi_writer: bool
    failed_writes_policy: str
    metadata_max_delta_commits: int
    metadata_max_when_pending: int

    def as_properties(self) -> dict[str, str]:
        """The settings under Hudi's keys (those not given left out)."""
        given = {INLINE[0]: self.inline, SCHEDULE_INLINE[0]: self.schedule_inline, ASYNC[0]: self.async_enabled}
        found = {k: str(v).lower() for k, v in given.items() if v is not None}
        return found | {TRIGGER[0]: self.trigger.value, MAX_DELTA_COMMITS[0]: str(self.max_delta_commits),
                        MAX_DELTA_SECONDS[0]: str(self.max_delta_seconds),
                        METADATA_MAX_DELTA_COMMITS[0]: str(self.metadata_max_delta_commits)}


def compaction_settings(table: Table, options: Mapping[str, str] | None = None) -> CompactionSettings:
    """The compaction settings of `table`'s writers (`options` over those it was opened with,
    its root's and `hoodie.properties`). Raises CompactionSettingsError naming a key Hudi
    would not parse."""
    props = writer_properties(table, options)
    raw_trigger = props.get(TRIGGER[0], TRIGGER[1]).strip().upper()
    try:
        trigger = CompactionTrigger(raw_trigger)
    except ValueError:
        raise CompactionSettingsError(f"{table.uri}: {TRIGGER[0]}={raw_trigger!r} is not a trigger strategy "
                                      f"({', '.join(t.value for t in CompactionTrigger)})") from None
    return CompactionSettings(
        inline=_flag(props, INLINE[0]), schedule_inline=_flag(props, SCHEDULE_INLINE[0]),
        async_enabled=_flag(props, ASYNC[0]), trigger=trigger,
        max_delta_commits=number_setting(table, props, MAX_DELTA_COMMITS),
        max_delta_seconds=number_setting(table, props, MAX_DELTA_SECONDS),
        multi_writer=(props.get(CONCURRENCY_MODE) or "").strip().upper() in MULTI_WRITER_MODES,
        failed_writes_policy=failed_writes_policy(table, options),
        metadata_max_delta_commits=number_setting(table, props, METADATA_MAX_DELTA_COMMITS),
        metadata_max_when_pending=number_setting(table, props, METADATA_MAX_WHEN_PENDING))


def _flag(props: Mapping[str, str], key: str) -> bool | None:
    value = props.get(key)
    return None if value is None or not value.strip() else value.strip().lower() == "true"


def number_setting(table: Table, props: Mapping[str, str], setting: tuple[str, str]) -> int:
    """The whole number a (key, default) setting holds; CompactionSettingsError naming the key otherwise."""
    key, default = setting
    raw = props.get(key, default)
    try:
        return int(raw.strip())
    except ValueError:
        raise CompactionSettingsError(f"{table.uri}: {key}={raw!r} is not a number") from None


__all__ = ["ASYNC", "INLINE", "MAX_DELTA_COMMITS", "MAX_DELTA_SECONDS", "METADATA_MAX_DELTA_COMMITS",
           "METADATA_MAX_WHEN_PENDING", "SCHEDULE_INLINE", "TRIGGER", "CompactionSettings", "CompactionSettingsError",
           "compaction_settings"]
