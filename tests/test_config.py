"""hoodie.properties: Java properties escaping, the checksum rule, the backup protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import FIXTURE_IDS, fixture_readme
from timeline import properties
from timeline.config import TableConfig, TableType, checksum, read_config, update_config
from timeline.exceptions import NotAHudiTableError, TableConfigError
from timeline.storage import MemoryStorage


def test_config_properties_load_follows_java_rules() -> None:
    text = (
        "# comment\n! also a comment\n"
        "a=1\n b : 2\nc 3\nd\\:e=f\\=g\n"
        "long=first \\\n    second\n"
        "uni=caf\\u00e9\n"
        "empty=\n"
        "tab\\tkey=x\n"
    )
    assert properties.loads(text) == {
        "a": "1", "b": "2", "c": "3", "d:e": "f=g", "long": "first second", "uni": "café", "empty": "",
        "tab\tkey": "x",
    }


def test_config_properties_store_escapes_like_java_and_round_trips() -> None:
    props = {"hoodie.table.create.schema": '{"type":"record","a":[1,2]}', "k ey": " lead", "u": "é€#!"}
    text = properties.dumps(props, comments=["c1"])
    assert '{"type"\\:"record","a"\\:[1,2]}' in text
    assert "k\\ ey=\\ lead" in text
    assert "u=\\u00E9\\u20AC\\#\\!" in text
    assert properties.loads(text) == props


def test_config_checksum_matches_hudi_samples() -> None:
    assert checksum({"hoodie.database.name": "default",
                     "hoodie.table.name": "v6_simplekeygen_nonhivestyle"}) == 616688896
    assert checksum({"hoodie.table.name": "v8_trips_8i3u1d_metadata"}) == 380169000


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_config_reads_every_fixture_and_its_checksum_holds(fixture_lake: dict[str, Path], table_id: str) -> None:
    path = fixture_lake[table_id]
    storage, base = MemoryStorage(), "/t"
    storage.write("/t/.hoodie/hoodie.properties", (path / ".hoodie/hoodie.properties").read_bytes())
    config = read_config(storage, base)
    assert config.name and config.version in (6, 8, 9)
    assert config.stored_checksum == checksum(config.props)
    assert config.table_type in (TableType.COPY_ON_WRITE, TableType.MERGE_ON_READ)
    assert config.layout_version == (2 if config.version >= 8 else 1)
    described = fixture_readme()[table_id]
    assert f"v{config.version}" == described["ver"]
    assert config.table_type.value == {"COW": "COPY_ON_WRITE", "MOR": "MERGE_ON_READ"}[described["type"]]
    assert config.metadata_table_enabled == (described["MDT files"] == "yes")


def _write(storage: MemoryStorage, text: str) -> None:
    storage.write("/t/.hoodie/hoodie.properties", text.encode(), overwrite=True)


def test_config_typed_accessors() -> None:
    config = TableConfig({
        "hoodie.table.name": "t", "hoodie.table.version": "6",
        "hoodie.table.partition.fields": "region:SIMPLE, ts:TIMESTAMP",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.table.metadata.partitions": "column_stats,files",
        "hoodie.table.timeline.timezone": "utc",
    })
    assert config.partition_fields == ("region", "ts") and config.hive_style and not config.url_encoded
    assert config.metadata_table_enabled and config.timezone == "UTC"
    assert config.timeline_folder == ".hoodie" and config.archive_folder == ".hoodie/archived"
    v8 = TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "8"})
    assert v8.timeline_folder == ".hoodie/timeline" and v8.archive_folder == ".hoodie/timeline/history"


def test_config_update_keeps_checksum_and_removes_backup() -> None:
    storage = MemoryStorage()
    _write(storage, "hoodie.table.name=t\nhoodie.database.name=db\nhoodie.table.version=6\n"
                    "hoodie.table.metadata.partitions=files\n")
    written = update_config(storage, "/t", {"hoodie.table.metadata.partitions": "",
                                            "hoodie.table.metadata.partitions.inflight": None})
    again = read_config(storage, "/t")
    assert again.props == written.props
    assert again.metadata_partitions == () and not again.metadata_table_enabled
    assert again.stored_checksum == checksum({"hoodie.database.name": "db", "hoodie.table.name": "t"})
    assert not storage.exists("/t/.hoodie/hoodie.properties.backup")


def test_config_reader_falls_back_to_backup_after_a_crash_mid_update() -> None:
    storage = MemoryStorage()
    storage.write("/t/.hoodie/hoodie.properties.backup", b"hoodie.table.name=t\nhoodie.table.version=8\n")
    assert read_config(storage, "/t").version == 8
    update_config(storage, "/t", {"hoodie.table.timeline.timezone": "UTC"})
    assert read_config(storage, "/t").timezone == "UTC"
    assert storage.exists("/t/.hoodie/hoodie.properties")
    assert not storage.exists("/t/.hoodie/hoodie.properties.backup")


@pytest.mark.parametrize(("setup", "error", "message"), [
    (lambda s: None, NotAHudiTableError, "does not exist"),
    (lambda s: s.makedirs("/t/data"), NotAHudiTableError, "no .hoodie folder"),
    (lambda s: s.makedirs("/t/.hoodie"), NotAHudiTableError, "no .hoodie/hoodie.properties"),
    (lambda s: _write(s, "hoodie.table.name=t\nhoodie.table.version=5\n"), TableConfigError,
     "version 5 is not supported"),
    (lambda s: _write(s, "hoodie.table.name=t\nhoodie.table.version=x\n"), TableConfigError, "not a number"),
    (lambda s: _write(s, "hoodie.table.version=6\n"), TableConfigError, "hoodie.table.name is missing"),
    (lambda s: _write(s, "hoodie.table.name=t\nhoodie.table.version=6\nhoodie.table.type=WEIRD\n"),
     TableConfigError, "unknown table type"),
    (lambda s: _write(s, "hoodie.table.name=\\uZZZZ\n"), TableConfigError, "unreadable properties"),
])
def test_config_bad_tables_raise_errors_naming_the_path(setup, error: type, message: str) -> None:
    storage = MemoryStorage()
    setup(storage)
    with pytest.raises(error) as raised:
        read_config(storage, "/t")
    assert message in str(raised.value) and "/t" in str(raised.value)
