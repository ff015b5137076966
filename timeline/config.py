"""`hoodie.properties`: read, typed accessors, and the safe update protocol of
`HoodieTableConfig.modify` (backup, delete, write with checksum, verify, drop backup)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum

from timeline import properties
from timeline.exceptions import FileNotFound, NotAHudiTableError, StorageError, TableConfigError
from timeline.storage import Storage

PROPERTIES_FILE = "hoodie.properties"
BACKUP_FILE = "hoodie.properties.backup"
META_FOLDER = ".hoodie"
SUPPORTED_VERSIONS = frozenset({6, 8, 9})

NAME = "hoodie.table.name"
DATABASE = "hoodie.database.name"
TYPE = "hoodie.table.type"
VERSION = "hoodie.table.version"
LAYOUT = "hoodie.timeline.layout.version"
TIMELINE_PATH = "hoodie.timeline.path"
HISTORY_PATH = "hoodie.timeline.history.path"
ARCHIVE_FOLDER = "hoodie.archivelog.folder"
PARTITION_FIELDS = "hoodie.table.partition.fields"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
BASE_FORMAT = "hoodie.table.base.file.format"
TIMEZONE = "hoodie.table.timeline.timezone"
MDT_PARTITIONS = "hoodie.table.metadata.partitions"
MDT_PARTITIONS_INFLIGHT = "hoodie.table.metadata.partitions.inflight"
CHECKSUM = "hoodie.table.checksum"
BOOTSTRAP_BASE_PATH = "hoodie.bootstrap.base.path"


class TableType(str, Enum):
    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"


def checksum(props: Mapping[str, str]) -> int:
    """Hudi's table checksum: CRC32 of `<database>.<table name>` as an unsigned number."""
    text = f"{props.get(DATABASE, '')}.{props.get(NAME, '')}"
    return zlib.crc32(text.encode("utf-8")) & 0xFFFFFFFF


def _flag(value: str | None, default: bool = False) -> bool:
    return default if value is None else value.strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class TableConfig:
    """The parsed `hoodie.properties` of a table. `path` is the file it came from."""

    props: Mapping[str, str] = field(repr=False)
    path: str = ""

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    @property
    def name(self) -> str:
        return self.props.get(NAME, "")

    @property
    def database(self) -> str:
        return self.props.get(DATABASE, "")

    @property
    def table_type(self) -> TableType:
        raw = self.props.get(TYPE, TableType.COPY_ON_WRITE.value).strip().upper()
        try:
            return TableType(raw)
        except ValueError:
            raise TableConfigError(self.path, f"unknown table type {raw!r}") from None

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @property
    def version(self) -> int:
        raw = self.props.get(VERSION, "0")
        try:
            return int(raw)
        except ValueError:
            raise TableConfigError(self.path, f"table version {raw!r} is not a number") from None

    @property
    def layout_version(self) -> int:
        raw = self.props.get(LAYOUT)
        if raw is None:
            return 2 if self.version >= 8 else 1
        try:
            return int(raw)
        except ValueError:
            raise TableConfigError(self.path, f"timeline layout {raw!r} is not a number") from None

    @property
    def timeline_folder(self) -> str:
        """Path of the active timeline, relative to the table's base path."""
        if self.layout_version >= 2:
            return f"{META_FOLDER}/{self.props.get(TIMELINE_PATH, 'timeline')}"
        return META_FOLDER

    @property
    def archive_folder(self) -> str:
        """Path of the archived timeline relative to the base path (v6 archive, v8 LSM history)."""
        if self.layout_version >= 2:
            return f"{self.timeline_folder}/{self.props.get(HISTORY_PATH, 'history')}"
        return f"{META_FOLDER}/{self.props.get(ARCHIVE_FOLDER, 'archived') or 'archived'}"

    @property
    def partition_fields(self) -> tuple[str, ...]:
        raw = self.props.get(PARTITION_FIELDS, "")
        return tuple(part.split(":")[0].strip() for part in raw.split(",") if part.strip())

    @property
    def is_partitioned(self) -> bool:
        return bool(self.partition_fields)

    @property
    def hive_style(self) -> bool:
        return _flag(self.props.get(HIVE_STYLE))

    @property
    def url_encoded(self) -> bool:
        return _flag(self.props.get(URL_ENCODE))

    @property
    def base_file_format(self) -> str:
        return self.props.get(BASE_FORMAT, "PARQUET").upper()

    @property
    def base_file_extensions(self) -> frozenset[str]:
        """Extensions Hudi counts as base files (AbstractTableFileSystemView
        .convertFileStatusesToBaseFiles): the table's base file format, or every supported one
        when `hoodie.table.multiple.base.file.formats.enable` is on. Other files are not in
        any file slice, so no clean deletes them."""
        if _flag(self.props.get("hoodie.table.multiple.base.file.formats.enable")):
            return frozenset({".parquet", ".orc", ".hfile"})
        return frozenset({"." + self.base_file_format.lower()})

    @property
    def timezone(self) -> str:
        """`LOCAL` (the default) or `UTC`: the zone instant times are written in."""
        return self.props.get(TIMEZONE, "LOCAL").upper()

    @property
    def metadata_partitions(self) -> tuple[str, ...]:
        raw = self.props.get(MDT_PARTITIONS, "")
        return tuple(p.strip() for p in raw.split(",") if p.strip())

    @property
    def metadata_partitions_inflight(self) -> tuple[str, ...]:
        raw = self.props.get(MDT_PARTITIONS_INFLIGHT, "")
        return tuple(p.strip() for p in raw.split(",") if p.strip())

    @property
    def metadata_table_enabled(self) -> bool:
        """Whether Hudi readers and writers use the metadata table (its `files` partition is
        complete), so that a mutation here would leave it stale."""
        return "files" in self.metadata_partitions

    @property
    def bootstrap_base_path(self) -> str | None:
        return self.props.get(BOOTSTRAP_BASE_PATH) or None

    @property
    def stored_checksum(self) -> int | None:
        raw = self.props.get(CHECKSUM)
        return int(raw) if raw and raw.isdigit() else None

    def with_updates(self, updates: Mapping[str, str | None]) -> TableConfig:
        """A copy with keys set (None removes a key) and the checksum recomputed."""
        props = dict(self.props)
        for key, value in updates.items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        props[CHECKSUM] = str(checksum(props))
        return TableConfig(props, self.path)


def _meta(base: str) -> str:
    return Storage.join(base, META_FOLDER)


def read_config(storage: Storage, base: str) -> TableConfig:
    """Read `<base>/.hoodie/hoodie.properties`, falling back to the backup file as Hudi's
    HoodieTableConfig.fetchConfigs does: when the main file is missing, unreadable, or carries
    a `hoodie.table.checksum` that does not match its table name. If neither file is good,
    TableConfigError names both problems: the table is not used."""
    meta = _meta(base)
    problems: list[str] = []
    for name in (PROPERTIES_FILE, BACKUP_FILE):
        path = Storage.join(meta, name)
        try:
            data = storage.read(path)
        except FileNotFound:
            continue
        try:
            props = properties.loads(data.decode("latin-1"))
        except ValueError as exc:
            problems.append(f"{name}: unreadable properties: {exc}")
            continue
        stored = props.get(CHECKSUM)
        if stored is not None and NAME in props and stored.strip() != str(checksum(props)):
            problems.append(f"{name}: {CHECKSUM} {stored.strip()} does not match the table name "
                            f"(expected {checksum(props)})")
            continue
        return _parse(path, data)
    if problems:
        raise TableConfigError(meta, "no valid table config: " + "; ".join(problems))
    if not storage.exists(base):
        raise NotAHudiTableError(base, "the path does not exist")
    if not storage.exists(meta):
        raise NotAHudiTableError(base, "no .hoodie folder")
    raise NotAHudiTableError(base, f"no {META_FOLDER}/{PROPERTIES_FILE}")


def _parse(path: str, data: bytes) -> TableConfig:
    try:
        props = properties.loads(data.decode("latin-1"))
    except ValueError as exc:
        raise TableConfigError(path, f"unreadable properties: {exc}") from exc
    config = TableConfig(props, path)
    if NAME not in props:
        raise TableConfigError(path, f"{NAME} is missing")
    if config.version not in SUPPORTED_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_VERSIONS))
        raise TableConfigError(
            path, f"table version {config.version} is not supported (supported: {supported})"
        )
    config.table_type  # noqa: B018 - validates the type early, with the path in the error
    if config.layout_version not in (1, 2):
        raise TableConfigError(path, f"timeline layout version {config.layout_version} is not supported")
    return config


def _render(config: TableConfig, now: datetime) -> bytes:
    comments = [
        f"Updated at {now.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}",
        now.strftime("%a %b %d %H:%M:%S UTC %Y"),
    ]
    return properties.dumps(config.props, comments=comments).encode("latin-1", "backslashreplace")


def write_config(storage: Storage, base: str, config: TableConfig) -> TableConfig:
    """Replace `hoodie.properties` with `config` by Hudi's backup protocol; returns what was
    written (checksum recomputed). A crash at any step leaves a readable file or its backup."""
    meta = _meta(base)
    main = Storage.join(meta, PROPERTIES_FILE)
    backup = Storage.join(meta, BACKUP_FILE)
    if not storage.exists(main):
        storage.write(main, storage.read(backup))
    storage.write(backup, storage.read(main), overwrite=True)
    new = config.with_updates({})
    storage.delete(main)
    storage.write(main, _render(new, datetime.now(UTC)))
    written = read_config(storage, base)
    if written.stored_checksum != checksum(written.props):
        raise StorageError(main, "checksum mismatch after writing; the backup file was kept")
    storage.delete(backup)
    return written


def update_config(storage: Storage, base: str, updates: Mapping[str, str | None]) -> TableConfig:
    """Set or remove keys of `hoodie.properties` safely."""
    current = read_config(storage, base)
    return write_config(storage, base, current.with_updates(updates))
