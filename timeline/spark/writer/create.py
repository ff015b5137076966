"""Creating a table, and the table a write asks for. No PySpark here: `create_table` is a plain
function over `Storage`, for the writer, tests and benchmarks alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from timeline import properties
from timeline.config import (
    HIVE_STYLE,
    LAYOUT,
    META_FOLDER,
    NAME,
    PARTITION_FIELDS,
    PROPERTIES_FILE,
    TYPE,
    VERSION,
    TableConfig,
    TableType,
)
from timeline.spark.writer.model import WriteError
from timeline.storage import Storage, storage_for
from timeline.table import Table

PAYLOAD_CLASS = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
EVENT_TIME_MERGE_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
CREATE_SCHEMA = "hoodie.table.create.schema"
WRITABLE_VERSIONS = (6, 8)

# The folders HoodieTableMetaClient creates under `.hoodie` with every table, before the
# archive folder of its timeline layout.
_META_FOLDERS = (".schema", ".temp", ".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids")


def java_date(moment: datetime) -> str:
    """`java.util.Date.toString()` of a UTC moment."""
    return moment.strftime("%a %b %d %H:%M:%S UTC %Y")


def create_table(storage: Storage, base: str, props: Mapping[str, str], *,
                 comments: Sequence[str] | None = None) -> TableConfig:
    """Initialise the table at `base` as HoodieTableMetaClient does: the `.hoodie` folders (the
    archive folder of the timeline layout `props` give), then `hoodie.properties` holding
    `props` and their checksum, under `comments` (default: Hudi's "Properties saved on" time
    stamps). An existing `hoodie.properties` is never overwritten: FileExists. Returns the
    config written."""
    config = TableConfig(props).with_updates({})
    meta = Storage.join(base, META_FOLDER)
    for folder in _META_FOLDERS:
        storage.makedirs(Storage.join(meta, folder))
    storage.makedirs(Storage.join(base, config.archive_folder))
    if comments is None:
        now = datetime.now(UTC)
        comments = [f"Properties saved on {now.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}", java_date(now)]
    path = Storage.join(meta, PROPERTIES_FILE)
    storage.write(path, properties.dumps(config.props, comments=list(comments)).encode("latin-1"))
    return TableConfig(config.props, path)


@dataclass(frozen=True, slots=True)
class TableSpec:
    """The table a write asks for: created as such, or checked against an existing table."""

    name: str
    table_type: TableType
    version: int
    record_key: str
    precombine_field: str
    partition_field: str | None
    hive_style: bool

    @property
    def layout(self) -> int:
        return 2 if self.version >= 8 else 1

    def settings(self) -> dict[str, object]:
        """What must agree with an existing table, by readable name."""
        return {"table type": self.table_type.value, "table version": self.version,
                "record key": self.record_key, "precombine field": self.precombine_field,
                "partition field": self.partition_field, "hive-style partitioning": self.hive_style}

    def properties(self, create_schema: str) -> dict[str, str]:
        """`hoodie.properties` of a new table, as Hudi writes it for the version."""
        props = {
            NAME: self.name, TYPE: self.table_type.value, VERSION: str(self.version), LAYOUT: str(self.layout),
            RECORD_KEY_FIELDS: self.record_key, PRECOMBINE_FIELD: self.precombine_field,
            "hoodie.table.base.file.format": "PARQUET", "hoodie.archivelog.folder": "archived",
            HIVE_STYLE: str(self.hive_style).lower(), "hoodie.datasource.write.partitionpath.urlencode": "false",
            "hoodie.datasource.write.drop.partition.columns": "false",
            "hoodie.compaction.payload.class": PAYLOAD_CLASS, CREATE_SCHEMA: create_schema,
        }
        if self.partition_field:
            props[PARTITION_FIELDS] = self.partition_field
        if self.version >= 8:
            props |= {"hoodie.table.initial.version": str(self.version), "hoodie.timeline.path": "timeline",
                      "hoodie.timeline.history.path": "history",
                      "hoodie.table.keygenerator.type": "SIMPLE" if self.partition_field else "NON_PARTITION",
                      "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
                      "hoodie.record.merge.strategy.id": EVENT_TIME_MERGE_STRATEGY}
        else:
            generator = "SimpleKeyGenerator" if self.partition_field else "NonpartitionedKeyGenerator"
            props["hoodie.table.keygenerator.class"] = f"org.apache.hudi.keygen.{generator}"
        return dict(TableConfig(props).with_updates({}).props)


def table_spec(table_name: str, table_type: str | TableType, version: int, record_key: str, precombine_field: str,
               partition_by: str | None, hive_style: bool) -> TableSpec:
    """The spec of a write's arguments; WriteError on a version or table type it cannot write."""
    if version not in WRITABLE_VERSIONS:
        raise WriteError(f"table version {version} cannot be written (writable: 6, 8)")
    aliases = {"COW": TableType.COPY_ON_WRITE, "MOR": TableType.MERGE_ON_READ}
    try:
        kind = aliases.get(table_type.upper()) or TableType(table_type.upper())
    except ValueError:
        raise WriteError(f"unknown table type {table_type!r} (COPY_ON_WRITE or MERGE_ON_READ)") from None
    return TableSpec(table_name, kind, version, record_key, precombine_field, partition_by or None, hive_style)


def existing_table(uri: str) -> Table | None:
    """The table at `uri`, or None where there is no `.hoodie` folder yet. A `.hoodie` folder
    without a readable `hoodie.properties` is an error, never overwritten."""
    storage, base = storage_for(uri)
    if not storage.exists(Storage.join(base, META_FOLDER)):
        return None
    return Table.load(storage, base)


def check_table(table: Table, spec: TableSpec) -> None:
    """WriteError unless the existing table agrees with the spec (its metadata table is checked by
    `metadata_table.check_keepable`)."""
    config = table.config
    found = {"table type": config.table_type.value, "table version": config.version,
             "record key": config.get(RECORD_KEY_FIELDS), "precombine field": config.get(PRECOMBINE_FIELD),
             "partition field": ",".join(config.partition_fields) or None,
             "hive-style partitioning": config.hive_style}
    wrong = [f"{name} is {found[name]!r}, not {value!r}" for name, value in spec.settings().items()
             if found[name] != value]
    if wrong:
        raise WriteError(f"{table.uri}: the table differs from the write: {'; '.join(wrong)}")
