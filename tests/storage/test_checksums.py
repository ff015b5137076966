"""Hadoop's checksum files (`.<name>.crc`) go with the files Cleanline changes
(timeline/storage/anchor.py): a file deleted takes its checksum file with it; a file written,
overwritten or renamed into place leaves no stale checksum file beside it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from tests.storage.helpers import add_side_files, checksum_problems, hadoop_checksum
from timeline import HudiTable
from timeline.clean.config import CleanConfig
from timeline.config import update_config
from timeline.exceptions import FileExists
from timeline.storage.arrow import LocalStorage


def checked_files(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(name.encode())
        (folder / f".{name}.crc").write_bytes(hadoop_checksum(name.encode()))


def test_checksums_go_with_each_change_through_the_folder_held(tmp_path: Path) -> None:
    folder = tmp_path / "t" / "p"
    names = ["a.parquet", "b.parquet", "c.parquet", "d.parquet", "e.arrow", "f", "kept.parquet"]
    checked_files(folder, names)
    (folder / ".g.crc").write_bytes(b"crc\0left from a file of the name deleted without it")
    storage = LocalStorage()
    storage.anchor(str(tmp_path / "t"), "file:t")

    assert storage.delete(f"{folder}/a.parquet")
    assert storage.delete_many([f"{folder}/b.parquet", f"{folder}/c.parquet"]) == {
        f"{folder}/b.parquet": "deleted", f"{folder}/c.parquet": "deleted"}
    storage.write(f"{folder}/d.parquet", b"new", overwrite=True)
    storage.write_arrow(f"{folder}/e.arrow", pa.table({"a": [1]}))
    with pytest.raises(FileExists):
        storage.write(f"{folder}/f", b"refused")  # not written: its checksum still holds
    storage.write(f"{folder}/g", b"created")

    assert checksum_problems(tmp_path) == []
    left = sorted(p.name for p in folder.iterdir() if p.name.endswith(".crc"))
    assert left == [".f.crc", ".kept.parquet.crc"]
    storage.release()


def test_checksums_a_clean_leaves_none_stale_or_alone(table_copy) -> None:
    path = table_copy("quickstart_trips_table/mor/avro/v8_trips_8i3u1d")  # its metadata table is updated too
    assert add_side_files(path) > 0
    table = HudiTable.open(str(path))
    plan = table.maintenance(writers_stopped=True).clean(CleanConfig(commits_retained=1), dry_run=False,
                                                         enforce_retention=False)
    assert plan.files_to_delete
    assert checksum_problems(path) == []
    update_config(table.storage, table.base, {})  # hoodie.properties rewritten (Hudi's backup protocol) in the run
    assert checksum_problems(path) == []
    assert not (path / ".hoodie" / ".hoodie.properties.crc").exists()
