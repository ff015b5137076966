"""Data file names: base and log files as FSUtils parses them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline.exceptions import InvalidFileNameError
from timeline.files import _LOG_FILE, LogFile, parse_base_file, parse_log_file


def test_files_base_file_fields() -> None:
    base = parse_base_file("6653c109-b3c0-470e-8ad4-f45947474a34-0_1-136-194_20250713011316909.parquet", 7)
    assert (base.file_id, base.write_token, base.instant_time, base.size) == (
        "6653c109-b3c0-470e-8ad4-f45947474a34-0", "1-136-194", "20250713011316909", 7)
    for bad in ("x.parquet", ".hoodie_partition_metadata.parquet", "a_b_c.json", "a_b_.parquet"):
        with pytest.raises(InvalidFileNameError):
            parse_base_file(bad)


def test_files_log_file_fields_v6_v8_and_cdc() -> None:
    log = parse_log_file(".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85")
    assert (log.file_id, log.instant_time, log.version, log.write_token, log.suffix) == (
        "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0", "20250331030642808", 1, "0-26-85", "")
    cdc = parse_log_file(".f1_20260101000000000.log.2_0-1-0.cdc")
    assert (cdc.version, cdc.write_token, cdc.suffix) == (2, "0-1-0", ".cdc")
    assert parse_log_file(".f1_1.log.3").write_token == ""
    for bad in ("f1_1.log.1_0-1-0", ".commits_.archive.1_1-0-1", ".f1_1.log.x_0-1-0", ".f1_1.log.²_0-1-0"):
        with pytest.raises(InvalidFileNameError):
            parse_log_file(bad)


def _by_pattern(name: str) -> LogFile | None:
    match = _LOG_FILE.match(name)
    if not match or match.group(3) != "log":
        return None
    return LogFile(name, match.group(1), match.group(2), int(match.group(4)), match.group(6) or "",
                   match.group(10) or "")


pieces = st.sampled_from(["f1", "a-b-0", "_", ".", "log", ".log.", "1", "0-1-2", "-", "x", ".cdc", "²", "12"])


@given(st.lists(pieces, max_size=10).map("".join).map(lambda s: "." + s))
def test_files_log_fast_path_agrees_with_hudis_pattern(name: str) -> None:
    expected = _by_pattern(name)
    try:
        assert parse_log_file(name) == expected
    except InvalidFileNameError:
        assert expected is None
