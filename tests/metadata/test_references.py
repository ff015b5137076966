"""What a payload names (timeline/metadata/references.py): the pattern that reads v6 commit
metadata's write stats names exactly what the full decode names on every fixture, and anything it
cannot read plainly goes through the full decode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import FIXTURE_IDS
from timeline import HudiTable, metadata
from timeline.exceptions import CorruptInstantError
from timeline.instant import State, split_file_name
from timeline.metadata.references import references_in, references_of


def _commit(stats: list[dict[str, object]]) -> bytes:
    return json.dumps({"partitionToWriteStats": {"p": stats}, "compacted": False, "extraMetadata": {},
                       "operationType": "UPSERT"}, indent=2).encode()


@pytest.mark.parametrize("table_id", FIXTURE_IDS)
def test_references_in_names_what_the_full_decode_names(fixture_lake: dict[str, Path], table_id: str) -> None:
    table = HudiTable.open(str(fixture_lake[table_id]))
    layout = table.config.layout_version
    for instant in table.timeline:
        for state, status in table.timeline.files_of(instant).items():
            data = table.storage.read(status.path)
            action = split_file_name(status.name, layout)[1]
            fast = references_in(data, path=status.path, action=action, state=state, layout=layout)
            raw = metadata.decode(data, path=status.path, action=action, state=state, layout=layout)
            full = references_of(raw, action=action, state=state)
            assert (fast.names, fast.file_ids, fast.instants, fast.details) == (
                full.names, full.file_ids, full.instants, full.details), status.path


def test_references_in_escapes_and_nulls_take_the_full_decode() -> None:
    plain = _commit([{"fileId": "f1-0", "path": "p/f1-0_0-1-0_1.parquet"}])
    found = references_in(plain, path="c", action="commit", state=State.COMPLETED, layout=1)
    assert (found.names, found.file_ids, found.details) == ({"f1-0_0-1-0_1.parquet"}, {"f1-0"}, True)
    escaped = plain.replace(b"p/f1-0", b"p\\/f1-0")  # JSON may escape a slash: still the same name
    assert references_in(escaped, path="c", action="commit", state=State.COMPLETED, layout=1).names == {
        "f1-0_0-1-0_1.parquet"}
    nulls = _commit([{"fileId": "f1-0", "path": None}, {"fileId": "f2-0", "path": "p/f2-0_0-1-0_1.parquet"}])
    found = references_in(nulls, path="c", action="commit", state=State.COMPLETED, layout=1)
    assert found.names == {"f2-0_0-1-0_1.parquet"} and found.file_ids == {"f1-0", "f2-0"}
    empty = _commit([])
    assert references_in(empty, path="c", action="commit", state=State.COMPLETED, layout=1).details is False
    with pytest.raises(CorruptInstantError):
        references_in(b'{"partitionToWriteStats": {"p": [{"path": "x"', path="c", action="commit",
                      state=State.COMPLETED, layout=1)
