"""The records of a write: their Arrow and Avro schemas, as Hudi's Spark-to-Avro conversion makes
them, and the key columns Spark adds before the records are routed (lazy, on Spark)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from timeline.spark.writer.create import CREATE_SCHEMA, TableSpec
from timeline.spark.writer.model import META_FIELDS, PARTITION_PATH, RECORD_KEY, WriteError
from timeline.table import Table

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_SIMPLE_TYPES: tuple[tuple[type[T.DataType], pa.DataType, Any], ...] = (
    (T.StringType, pa.string(), "string"),
    (T.BooleanType, pa.bool_(), "boolean"),
    (T.ByteType, pa.int32(), "int"),
    (T.ShortType, pa.int32(), "int"),
    (T.IntegerType, pa.int32(), "int"),
    (T.LongType, pa.int64(), "long"),
    (T.FloatType, pa.float32(), "float"),
    (T.DoubleType, pa.float64(), "double"),
    (T.BinaryType, pa.binary(), "bytes"),
    (T.DateType, pa.date32(), {"type": "int", "logicalType": "date"}),
    (T.TimestampType, pa.timestamp("us", tz="UTC"), {"type": "long", "logicalType": "timestamp-micros"}),
)


def _decimal_bytes(precision: int) -> int:
    """Spark's `minBytesForPrecision`: the Avro fixed size of a decimal."""
    size = 1
    while 2 ** (8 * size - 1) < 10 ** precision:
        size += 1
    return size


def _column_types(data_type: T.DataType, column: str, record: str) -> tuple[pa.DataType, Any]:
    """Arrow and Avro types of a Spark column, as Hudi's Spark-to-Avro conversion makes them."""
    if isinstance(data_type, T.DecimalType):
        avro = {"type": "fixed", "name": "fixed", "namespace": f"{record}.{column}",
                "size": _decimal_bytes(data_type.precision), "logicalType": "decimal",
                "precision": data_type.precision, "scale": data_type.scale}
        return pa.decimal128(data_type.precision, data_type.scale), avro
    for spark_type, arrow, avro in _SIMPLE_TYPES:
        if isinstance(data_type, spark_type):
            return arrow, avro
    raise WriteError(f"column {column!r}: Spark type {data_type.simpleString()} is not supported by the writer")


def _avro_name(name: str, what: str) -> str:
    if not _AVRO_NAME.match(name):
        raise WriteError(f"{what} {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*)")
    return name


@dataclass(frozen=True, slots=True)
class RecordSchema:
    """The records of a write as Parquet (Arrow) and Avro see them, meta fields first."""

    columns: tuple[str, ...]
    arrow: pa.Schema
    avro: str  # with the meta fields: log block SCHEMA headers, Parquet footers
    data_avro: str  # without them: commit metadata `schema`, hoodie.table.create.schema
    micros: frozenset[str]  # timestamp columns, shipped from Spark as epoch microseconds

    def record(self, values: Sequence[Any]) -> dict[str, Any]:
        """A record shipped from Spark (data columns, record key, partition path) as Python values."""
        record = dict(zip((*self.columns, RECORD_KEY, PARTITION_PATH), values, strict=True))
        for column in self.micros:
            if record[column] is not None:
                record[column] = _EPOCH + timedelta(microseconds=record[column])
        return record


def record_schema(struct: T.StructType, table_name: str) -> RecordSchema:
    """The schema of records with `struct`'s columns in a table named `table_name`."""
    name = _avro_name(table_name, "table name")
    namespace, record = f"hoodie.{name}", f"{name}_record"
    meta = [{"name": field, "type": ["null", "string"], "doc": "", "default": None} for field in META_FIELDS]
    arrow_fields = [pa.field(field, pa.string()) for field in META_FIELDS]
    data = []
    for column in struct.fields:
        arrow, avro = _column_types(column.dataType, _avro_name(column.name, "column"), f"{namespace}.{record}")
        arrow_fields.append(pa.field(column.name, arrow))
        data.append({"name": column.name, "type": ["null", avro], "default": None})

    def avro_json(fields: list[dict[str, Any]]) -> str:
        return json.dumps({"type": "record", "name": record, "namespace": namespace, "fields": fields},
                          separators=(",", ":"))

    micros = frozenset(c.name for c in struct.fields if isinstance(c.dataType, T.TimestampType))
    return RecordSchema(tuple(struct.names), pa.schema(arrow_fields), avro_json(meta + data), avro_json(data), micros)


def aligned(data: DataFrame, table: Table) -> DataFrame:
    """The records with the table's columns in the table's order (schema evolution is not
    supported: other column sets are refused)."""
    raw = table.config.get(CREATE_SCHEMA)
    if not raw:
        return data
    columns = [field["name"] for field in json.loads(raw)["fields"]]
    if sorted(columns) != sorted(data.columns):
        raise WriteError(f"{table.uri}: the records' columns {sorted(data.columns)} differ from the table's "
                         f"{sorted(columns)}")
    return data.select(*columns)


def _partition_path(spec: TableSpec) -> Any:
    """Hudi's SimpleKeyGenerator partition path: the value as a string, the Hive default for a
    null or empty one, `field=value` when hive-style."""
    if spec.partition_field is None:
        return F.lit("")
    value = F.col(spec.partition_field).cast("string")
    path = F.when(value.isNull() | (value == ""), F.lit(HIVE_DEFAULT_PARTITION)).otherwise(value)
    return F.concat(F.lit(f"{spec.partition_field}="), path) if spec.hive_style else path


def keyed_records(data: DataFrame, spec: TableSpec, schema: RecordSchema) -> DataFrame:
    """Data columns (timestamps as epoch microseconds) with the record key and partition path."""
    columns = [F.unix_micros(F.col(c)).alias(c) if c in schema.micros else F.col(c) for c in schema.columns]
    return data.select(*columns, F.col(spec.record_key).cast("string").alias(RECORD_KEY),
                       _partition_path(spec).alias(PARTITION_PATH))
