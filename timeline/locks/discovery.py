"""Which lock a table's Hudi writers use, found from the lake before any change.

Hudi writers keep `hoodie.write.concurrency.mode` and `hoodie.write.lock.*` in their own write
config (Spark options, a DeltaStreamer properties file, a Flink job); those keys are almost never
in `hoodie.properties`. Cleanline therefore reads a table's lock settings from, highest first:

1. the call's options (`--hoodie-conf`, or the console's per-table writer options, which the
   console passes as the call's options): `LockSource.OPTION`;
2. the lake-wide settings of the root the table lies under (`LakeRoots.hudi`, given to
   `HudiTable.open(uri, roots=...)`; the CLI and the console read them from
   `CLEANLINE_HUDI_OPTIONS`, shaped like `CLEANLINE_S3_ROOTS`): `LockSource.ROOT_SETTING`;
3. `hoodie.properties`: `LockSource.TABLE_PROPERTIES`;
4. evidence on storage: a `.hoodie/.locks/table_lock.json` (the lock file of
   `StorageBasedLockProvider`, `HoodieTableMetaClient.LOCKS_FOLDER_NAME`) means the table's
   writers use that provider even when no option says so: `LockSource.STORAGE`.

The effective properties are those layers merged (`hoodie.properties` < root < options), as a
Hudi writer merges its options over the table's config. The source named is the highest layer
that sets the concurrency mode or the lock provider; when no layer makes the writers lock
(`lock_required` is false) the storage evidence decides, else `LockSource.NONE`.

A provider no other process can see (`InProcessLockProvider`, `LocalProcessLockProvider`,
`NoopLockProvider`) counts as no lock: `LockDiscovery.shared` is false, and the live-writer rule
(`timeline/locks/live.py`) decides whether a change may go on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from timeline.exceptions import CleanlineError
from timeline.locks.config import (
    LOCK_PROVIDER,
    PACKAGE,
    STORAGE_BASED_LOCK_PROVIDER,
    WRITE_CONCURRENCY_MODE,
    WriteConcurrencyMode,
    lock_required,
    provider_class,
)
from timeline.storage.containment import UnsupportedLocationError, _is_inside, parse_location

if TYPE_CHECKING:
    from timeline.table import Table

# StorageBasedLockProvider's lock file, relative to the base path (HoodieTableMetaClient.LOCKS_FOLDER_NAME
# + StorageBasedLockProvider.DEFAULT_TABLE_LOCK_FILE_NAME).
STORAGE_LOCK_FILE = ".hoodie/.locks/table_lock.json"

# Providers that exclude only threads of one writer's JVM (or nothing): no other process sees them.
IN_PROCESS_PROVIDERS = frozenset({PACKAGE + "InProcessLockProvider", PACKAGE + "LocalProcessLockProvider",
                                  PACKAGE + "NoopLockProvider"})
IN_PROCESS_NOTE = ": a lock inside one writer's process, which no other process sees"


class HudiOptionsError(CleanlineError):
    """`CLEANLINE_HUDI_OPTIONS` (per-root Hudi writer options) is not what it must be; names the
    root and the key."""


class LockSource(str, Enum):
    """Where the lock setting of a table came from."""

    OPTION = "option"                      # the call's options (CLI --hoodie-conf, the console's table settings)
    ROOT_SETTING = "root setting"          # CLEANLINE_HUDI_OPTIONS for the root the table lies under
    TABLE_PROPERTIES = "table properties"  # hoodie.properties
    STORAGE = "found on storage"           # .hoodie/.locks/table_lock.json
    NONE = "none"


@dataclass(frozen=True, slots=True)
class LockDiscovery:
    """The lock a table's writers use, as far as Cleanline can tell, and why.

    `properties` are the effective Hudi settings every change is taken with (`hoodie.properties`,
    the root's options and the call's options merged, plus the provider found on storage).
    `provider` is the lock provider class the writers use, None when they lock nowhere another
    process sees. `source` says where that came from; `root` is the root whose settings applied
    (None when none did); `detail` is a sentence for people (the console and the CLI show it)."""

    properties: Mapping[str, str] = field(default_factory=dict)
    provider: str | None = None
    source: LockSource = LockSource.NONE
    root: str | None = None
    detail: str = ""

    @property
    def shared(self) -> bool:
        """Whether the writers take a lock other processes (Cleanline) can take and see."""
        return self.provider is not None and self.provider not in IN_PROCESS_PROVIDERS

    @property
    def provider_name(self) -> str:
        """The provider's short class name, or "none"."""
        return self.provider.rpartition(".")[2] if self.provider else "none"


def _root_key(root: str) -> tuple[str, str]:
    try:
        return parse_location(root)
    except UnsupportedLocationError as exc:
        raise HudiOptionsError(f"Hudi options root {root!r}: {exc}") from exc


def keyed_hudi_roots(roots: Mapping[str, Mapping[str, str]]) -> dict[tuple[str, str], tuple[str, dict[str, str]]]:
    """Per-root Hudi writer options keyed by (scheme, path), each root and option checked
    (HudiOptionsError naming the root and the key)."""
    keyed: dict[tuple[str, str], tuple[str, dict[str, str]]] = {}
    for root, options in roots.items():
        key = _root_key(root)
        if key in keyed:
            raise HudiOptionsError(f"Hudi options root {root!r} is given twice")
        if not isinstance(options, Mapping):
            raise HudiOptionsError(f"Hudi options root {root!r}: give an object of Hudi options")
        for name, value in options.items():
            if not isinstance(name, str) or not name.startswith("hoodie."):
                raise HudiOptionsError(f"Hudi options root {root!r}: {name!r} is not a Hudi option (hoodie.*)")
            if not isinstance(value, str):
                raise HudiOptionsError(f"Hudi options root {root!r}: {name} must be a string, not {value!r}")
        keyed[key] = (root, {k: v.strip() for k, v in options.items()})
    return keyed


def hudi_options_for(uri: str, roots: Mapping[str, Mapping[str, str]] | None = None
                     ) -> tuple[str | None, dict[str, str]]:
    """(root, options) of the longest of `roots` the table at `uri` lies in (roots are URIs or
    paths, `s3://bucket/lake`, `/data/lake`); (None, {}) when none holds it."""
    if not roots:
        return None, {}
    try:
        scheme, path = parse_location(uri)
    except UnsupportedLocationError:
        return None, {}
    inside = [(len(root_path), given, options)
              for (root_scheme, root_path), (given, options) in keyed_hudi_roots(roots).items()
              if root_scheme == scheme and _is_inside(path, root_path)]
    if not inside:
        return None, {}
    _, given, options = max(inside, key=lambda found: found[0])
    return given, dict(options)


def parse_hudi_options(text: str) -> dict[str, dict[str, str]]:
    """Per-root Hudi writer options from JSON, `{"s3://lake": {"hoodie.write.concurrency.mode":
    "optimistic_concurrency_control", "hoodie.write.lock.provider": "...", ...}}`; every value a
    string. Empty text: no roots. Raises HudiOptionsError naming the root and key."""
    if not text.strip():
        return {}
    try:
        spec = json.loads(text)
    except ValueError as exc:
        raise HudiOptionsError(f"not valid JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise HudiOptionsError('give a JSON object: {"s3://bucket/lake": {"hoodie.write.lock.provider": ...}}')
    keyed_hudi_roots(spec)
    return {root: dict(options) for root, options in spec.items()}


def _sets_lock(options: Mapping[str, str]) -> bool:
    return bool((options.get(WRITE_CONCURRENCY_MODE) or "").strip() or (options.get(LOCK_PROVIDER) or "").strip())


def call_options(table: Table, options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The call's layer of writer options: those the table was opened with
    (`HudiTable.open(uri, hudi_options=...)`), the call's `options` over them."""
    return {**table.hudi_options, **{k: str(v) for k, v in (options or {}).items()}}


def root_options(table: Table) -> tuple[str | None, dict[str, str]]:
    """(root, options) of the lake-wide writer options the table was opened with
    (`HudiTable.open(uri, roots=...)`) for the root it lies in; (None, {}) when none holds it."""
    return hudi_options_for(table.uri, table.roots.hudi if table.roots is not None else None)


def writer_properties(table: Table, options: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Hudi settings a writer of `table` runs with, layered as `discover_lock` layers them
    (a Hudi writer's `HoodieWriteConfig` is its options over the table's config):
    `hoodie.properties`, then the root's options (`root_options`), then the call's
    (`call_options`). The rules that follow writer settings (the lock, the failed-writes
    policy) read these."""
    return {**table.config.props, **root_options(table)[1], **call_options(table, options)}


def discover_lock(table: Table, options: Mapping[str, str] | None = None) -> LockDiscovery:
    """The lock the writers of `table` use (see the module's docstring for the order).
    `options` are the call's Hudi writer options (over those the table was opened with).
    Raises LockConfigError for a concurrency mode Hudi would not parse."""
    call = call_options(table, options)
    root, given = root_options(table)
    props = dict(table.config.props)
    merged = {**props, **given, **call}
    layers = ((LockSource.OPTION, call), (LockSource.ROOT_SETTING, given),
              (LockSource.TABLE_PROPERTIES, props))
    if lock_required(merged):
        provider = provider_class(merged)
        source = next((s for s, layer in layers if _sets_lock(layer)), LockSource.TABLE_PROPERTIES)
        where = f" ({root})" if source is LockSource.ROOT_SETTING else ""
        return LockDiscovery(merged, provider, source, root if given else None,
                             f"{provider.rpartition('.')[2]} from the {source.value}{where}"
                             + (IN_PROCESS_NOTE if provider in IN_PROCESS_PROVIDERS else ""))
    if table.storage.exists(table.path(STORAGE_LOCK_FILE)):
        found = {**merged, WRITE_CONCURRENCY_MODE: WriteConcurrencyMode.OPTIMISTIC_CONCURRENCY_CONTROL.value,
                 LOCK_PROVIDER: STORAGE_BASED_LOCK_PROVIDER}
        return LockDiscovery(found, STORAGE_BASED_LOCK_PROVIDER, LockSource.STORAGE, root if given else None,
                             f"StorageBasedLockProvider: {STORAGE_LOCK_FILE} found on storage")
    named = (merged.get(LOCK_PROVIDER) or "").strip()
    source = next((s for s, layer in layers if _sets_lock(layer)), LockSource.NONE)
    if named in IN_PROCESS_PROVIDERS:
        return LockDiscovery(merged, named, source, root if given else None,
                             f"{named.rpartition('.')[2]} from the {source.value}{IN_PROCESS_NOTE}")
    return LockDiscovery(merged, None, LockSource.NONE, root if given else None,
                         "no lock: the writers run as a single writer (no hoodie.write.concurrency.mode allowing "
                         "several writers in the call's options, the root's settings or hoodie.properties, and no "
                         "lock file on storage)")


__all__ = [
    "IN_PROCESS_NOTE", "IN_PROCESS_PROVIDERS", "STORAGE_LOCK_FILE", "HudiOptionsError", "LockDiscovery", "LockSource",
    "call_options", "discover_lock", "hudi_options_for", "keyed_hudi_roots", "parse_hudi_options", "root_options",
    "writer_properties"
]
