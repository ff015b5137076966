"""Instant file names for both layouts: every action and state, ordering, and junk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timeline.exceptions import InvalidInstantError
from timeline.instant import (
    ACTIONS,
    Instant,
    State,
    format_file_name,
    parse_file_name,
    parse_instant_time,
)

T = "20261101093000123"
CT = "20261101093005456"

LAYOUT1_NAMES = {
    f"{T}.commit.requested": ("commit", State.REQUESTED),
    f"{T}.inflight": ("commit", State.INFLIGHT),
    f"{T}.commit": ("commit", State.COMPLETED),
    f"{T}.deltacommit.requested": ("deltacommit", State.REQUESTED),
    f"{T}.deltacommit.inflight": ("deltacommit", State.INFLIGHT),
    f"{T}.deltacommit": ("deltacommit", State.COMPLETED),
    f"{T}.replacecommit.requested": ("replacecommit", State.REQUESTED),
    f"{T}.replacecommit.inflight": ("replacecommit", State.INFLIGHT),
    f"{T}.replacecommit": ("replacecommit", State.COMPLETED),
    f"{T}.compaction.requested": ("compaction", State.REQUESTED),
    f"{T}.compaction.inflight": ("compaction", State.INFLIGHT),
    f"{T}.logcompaction.requested": ("logcompaction", State.REQUESTED),
    f"{T}.logcompaction.inflight": ("logcompaction", State.INFLIGHT),
    f"{T}.clean.requested": ("clean", State.REQUESTED),
    f"{T}.clean.inflight": ("clean", State.INFLIGHT),
    f"{T}.clean": ("clean", State.COMPLETED),
    f"{T}.rollback.requested": ("rollback", State.REQUESTED),
    f"{T}.rollback.inflight": ("rollback", State.INFLIGHT),
    f"{T}.rollback": ("rollback", State.COMPLETED),
    f"{T}.savepoint.inflight": ("savepoint", State.INFLIGHT),
    f"{T}.savepoint": ("savepoint", State.COMPLETED),
    f"{T}.restore.requested": ("restore", State.REQUESTED),
    f"{T}.restore.inflight": ("restore", State.INFLIGHT),
    f"{T}.restore": ("restore", State.COMPLETED),
    f"{T}.indexing.requested": ("indexing", State.REQUESTED),
    f"{T}.indexing.inflight": ("indexing", State.INFLIGHT),
    f"{T}.indexing": ("indexing", State.COMPLETED),
    f"{T}.schemacommit.requested": ("schemacommit", State.REQUESTED),
    f"{T}.schemacommit.inflight": ("schemacommit", State.INFLIGHT),
    f"{T}.schemacommit": ("schemacommit", State.COMPLETED),
}


@pytest.mark.parametrize("name", sorted(LAYOUT1_NAMES))
def test_instant_layout1_names_parse_and_format(name: str) -> None:
    instant = parse_file_name(name, 1)
    assert (instant.action, instant.state) == LAYOUT1_NAMES[name]
    assert instant.requested_time == T and instant.completion_time is None
    assert format_file_name(instant, 1) == name


@pytest.mark.parametrize("name", sorted(LAYOUT1_NAMES))
def test_instant_layout2_pending_names_equal_layout1_and_completed_carry_completion(name: str) -> None:
    instant = parse_file_name(name, 2)
    if instant.is_completed:
        completed_name = f"{T}_{CT}.{instant.action}"
        done = parse_file_name(completed_name, 2)
        assert (done.requested_time, done.completion_time, done.action) == (T, CT, instant.action)
        assert format_file_name(done, 2) == completed_name
    else:
        assert format_file_name(instant, 2) == name


def test_instant_layout2_clustering_exists_only_in_layout2() -> None:
    assert parse_file_name(f"{T}.clustering.requested", 2).action == "clustering"
    assert parse_file_name(f"{T}.clustering.inflight", 2).state is State.INFLIGHT
    with pytest.raises(InvalidInstantError):
        parse_file_name(f"{T}.clustering.requested", 1)


@pytest.mark.parametrize("name", [
    f"{T}.compaction", f"{T}.logcompaction", f"{T}_{CT}.clustering",  # pending-only actions
    f"{T}.commit.inflight", f"{T}.savepoint.requested", f"{T}.unknown", f"{T}.commit.done",
    f"{T}_{CT}.commit.requested", "hoodie.properties", f"x{T}.commit", f"{T}.commit.requested.crc",
])
def test_instant_invalid_names_raise_library_error(name: str) -> None:
    with pytest.raises(InvalidInstantError):
        parse_file_name(name, 2)


def test_instant_completion_time_rejected_in_layout1() -> None:
    with pytest.raises(InvalidInstantError):
        parse_file_name(f"{T}_{CT}.commit", 1)


def test_instant_order_is_time_then_comparable_action_then_state() -> None:
    compaction = Instant(T, "compaction", State.REQUESTED)
    clean = Instant(T, "clean", State.COMPLETED)
    deltacommit = Instant(T, "deltacommit", State.COMPLETED)
    commit_done = Instant(T, "commit", State.COMPLETED)
    older = Instant("20261101093000122", "rollback", State.COMPLETED)
    legacy = Instant("20261101093000", "commit", State.COMPLETED)  # 14 digits sort first
    ordered = sorted([commit_done, deltacommit, clean, compaction, older, legacy], key=lambda i: i.sort_key)
    assert ordered == [legacy, older, clean, compaction, commit_done, deltacommit]


def test_instant_completing_a_compaction_gives_a_commit() -> None:
    done = Instant(T, "compaction", State.INFLIGHT).at(State.COMPLETED, CT)
    assert (done.action, done.completion_time) == ("commit", CT)
    assert done.file_name(2) == f"{T}_{CT}.commit"
    assert Instant(T, "clustering", State.REQUESTED).at(State.COMPLETED).action == "replacecommit"


def test_instant_time_parsing_14_17_and_longer_digits() -> None:
    assert parse_instant_time("20261101093000").microsecond == 999_000
    assert parse_instant_time(T).microsecond == 123_000
    assert parse_instant_time("20261101093000123001") == parse_instant_time(T)
    for bad in ("2026110109300", "2026130109300012", "abc", "٢٠٢٦١١٠١٠٩٣٠٠٠"):
        with pytest.raises(InvalidInstantError):
            parse_instant_time(bad)


times = st.from_regex(r"\A[0-9]{14}([0-9]{3})?\Z")
instants = st.builds(
    lambda t, c, action, state: (t, c, action, state),
    times, times, st.sampled_from(sorted(ACTIONS)), st.sampled_from(list(State)),
)


@given(instants, st.sampled_from([1, 2]))
def test_instant_name_round_trip(spec: tuple[str, str, str, State], layout: int) -> None:
    t, c, action, state = spec
    instant = Instant(t, action, state, c if (state is State.COMPLETED and layout == 2) else None)
    if (action, state) in NO_SUCH_FILE or (layout == 1 and action == "clustering"):
        with pytest.raises(InvalidInstantError):
            parse_file_name(format_file_name(instant, layout), layout)
        return
    assert parse_file_name(format_file_name(instant, layout), layout) == instant


# Instants Hudi never writes a file for: a completed compaction, log compaction or clustering
# is a commit or replacecommit, a savepoint has no requested file, and layout 1 has no
# clustering action (a pending replacecommit holds the plan).
NO_SUCH_FILE = {("compaction", State.COMPLETED), ("logcompaction", State.COMPLETED),
                ("clustering", State.COMPLETED), ("savepoint", State.REQUESTED)}


@given(st.text(), st.sampled_from([1, 2]))
def test_instant_parser_junk_never_raises_anything_else(name: str, layout: int) -> None:
    try:
        parse_file_name(name, layout)
    except InvalidInstantError:
        pass


@given(st.text())
def test_instant_time_parser_junk_never_raises_anything_else(value: str) -> None:
    try:
        parse_instant_time(value)
    except InvalidInstantError:
        pass


def test_instant_time_of_is_the_inverse_of_moment_of_in_the_tables_zone() -> None:
    from datetime import datetime, timedelta, timezone

    from timeline.instant import instant_time_of, moment_of

    for zone in ("UTC", "LOCAL"):
        assert instant_time_of(moment_of("20240105235959999", zone), zone) == "20240105235959999"
    kolkata = datetime(2024, 1, 6, 5, 0, 0, 123000, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert instant_time_of(kolkata, "UTC") == "20240105233000123"
