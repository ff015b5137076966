"""Instant contents: one registry says, for every action and state, which encodings Hudi
uses (v6 JSON, Avro records by name); `decode` and `encode` go through it."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from timeline.exceptions import CorruptInstantError
from timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    SCHEMA_COMMIT,
    State,
)
from timeline.metadata import avro, jsonmeta
from timeline.metadata.records import WRITE_STATS_FIELD, WriteStat

AVRO_MAGIC = b"Obj\x01"
_R, _I, _C = State.REQUESTED, State.INFLIGHT, State.COMPLETED


@dataclass(frozen=True, slots=True)
class Codec:
    """How one (action, state) is stored. `avro` names the record Hudi writes in layout 2
    (and in layout 1 unless `json_in_layout1`); `accepts` lists other records found there."""

    avro: str | None
    json_in_layout1: bool = False
    json_always: bool = False
    accepts: frozenset[str] = frozenset()


_COMMIT = Codec("HoodieCommitMetadata", json_in_layout1=True)
_REPLACE = Codec("HoodieReplaceCommitMetadata", json_in_layout1=True)
_REPLACE_INFLIGHT = Codec("HoodieCommitMetadata", json_in_layout1=True,
                          accepts=frozenset({"HoodieRequestedReplaceMetadata"}))
_REQUESTED_REPLACE = Codec("HoodieRequestedReplaceMetadata")
_COMPACTION_PLAN = Codec("HoodieCompactionPlan")
_CLEAN_PLAN = Codec("HoodieCleanerPlan")

CODECS: Mapping[tuple[str, State], Codec] = {
    (COMMIT, _R): _COMMIT, (COMMIT, _I): _COMMIT, (COMMIT, _C): _COMMIT,
    (DELTA_COMMIT, _R): _COMMIT, (DELTA_COMMIT, _I): _COMMIT, (DELTA_COMMIT, _C): _COMMIT,
    (REPLACE_COMMIT, _R): _REQUESTED_REPLACE, (REPLACE_COMMIT, _I): _REPLACE_INFLIGHT,
    (REPLACE_COMMIT, _C): _REPLACE,
    (CLUSTERING, _R): _REQUESTED_REPLACE, (CLUSTERING, _I): _REPLACE_INFLIGHT,
    (COMPACTION, _R): _COMPACTION_PLAN, (COMPACTION, _I): _COMPACTION_PLAN,
    (LOG_COMPACTION, _R): _COMPACTION_PLAN, (LOG_COMPACTION, _I): _COMPACTION_PLAN,
    (CLEAN, _R): _CLEAN_PLAN, (CLEAN, _I): _CLEAN_PLAN, (CLEAN, _C): Codec("HoodieCleanMetadata"),
    (ROLLBACK, _R): Codec("HoodieRollbackPlan"), (ROLLBACK, _I): Codec("HoodieRollbackPlan"),
    (ROLLBACK, _C): Codec("HoodieRollbackMetadata"),
    (RESTORE, _R): Codec("HoodieRestorePlan"), (RESTORE, _I): Codec("HoodieRestorePlan"),
    (RESTORE, _C): Codec("HoodieRestoreMetadata"),
    (SAVEPOINT, _I): Codec("HoodieSavepointMetadata"), (SAVEPOINT, _C): Codec("HoodieSavepointMetadata"),
    (INDEXING, _R): Codec("HoodieIndexPlan"), (INDEXING, _I): Codec("HoodieIndexPlan"),
    (INDEXING, _C): Codec("HoodieIndexCommitMetadata"),
    (SCHEMA_COMMIT, _R): Codec(None, json_always=True), (SCHEMA_COMMIT, _I): Codec(None, json_always=True),
    (SCHEMA_COMMIT, _C): Codec(None, json_always=True),
}


# The codecs of commit metadata, whose write stats `stream_write_stats` reads
_WRITES = frozenset({_COMMIT, _REPLACE, _REPLACE_INFLIGHT})


def _codec(action: str, state: State, path: str) -> Codec:
    codec = CODECS.get((action, state))
    if codec is None:
        raise CorruptInstantError(path, f"no known content for {action} in state {state.name}")
    return codec


def _expect_record(codec: Codec, full_name: str, path: str) -> None:
    """Refuse an Avro record other than the one the codec names (or accepts)."""
    name = full_name.rsplit(".", 1)[-1]
    if name.lower() not in {n.lower() for n in (codec.avro or "", *codec.accepts)}:
        raise CorruptInstantError(path, f"expected {codec.avro}, found an Avro {name}")


def _uses_json(codec: Codec, layout: int, legacy: bool) -> bool:
    return codec.json_always or (codec.json_in_layout1 and (layout < 2 or legacy))


def decode(data: bytes, *, path: str, action: str, state: State, layout: int,
           legacy: bool = False, fields: Collection[str] | None = None) -> dict[str, Any] | None:
    """The content of one instant state file as plain dicts, or None for an empty file.

    `legacy` marks a layout-2 completed file named without a completion time (an instant
    carried over from a v6 table), whose content is still v6 JSON. `fields` limits an Avro
    read to those top-level fields (JSON is always read whole)."""
    if not data:
        return None
    codec = _codec(action, state, path)
    if data.startswith(AVRO_MAGIC) and codec.avro is not None:
        _expect_record(codec, avro.record_name(data, path=path), path)
        return avro.decode(data, path=path, fields=fields)
    if codec.json_in_layout1 or codec.json_always:
        return jsonmeta.decode(data, path=path)
    raise CorruptInstantError(path, f"expected an Avro {codec.avro} (no Avro header found)")


# A JSON state file above this size is checked intact as a stream rather than decoded: below
# it, decoding whole is several times faster than iterating the stream's events (a commit of
# 5,000 files decodes in milliseconds), and what it holds is freed at once; above it, memory
# stays constant however many files a commit lists (a 200,000-file commit is about 100 MB).
STREAM_CHECK_BYTES = 16 << 20


def check(stream: BinaryIO, size: int, *, path: str, action: str, state: State, layout: int,
          legacy: bool = False, stream_above: int = STREAM_CHECK_BYTES) -> None:
    """Whether a state file (open as `stream`, `size` bytes) decodes: `decode`'s checks, raising
    CorruptInstantError, without keeping what it holds. JSON above `stream_above` bytes is
    parsed as a stream in constant memory (several times slower than simdjson, which holds the
    document and its parse), and so is Avro commit metadata (its write stats a record at a
    time); everything else is decoded whole."""
    codec = _codec(action, state, path)
    if size > stream_above and (codec.json_in_layout1 or codec.json_always):
        head = stream.read(len(AVRO_MAGIC))
        stream.seek(0)
        if head != AVRO_MAGIC:
            jsonmeta.check(stream, path=path)
            return
        if codec in _WRITES:  # v8+ commit metadata: its write stats a record at a time
            name = avro.check_map_of_arrays(stream, WRITE_STATS_FIELD, path=path)
            if name is not None:
                _expect_record(codec, name, path)
                return
            stream.seek(0)
    data = stream.read()
    if (codec.json_in_layout1 or codec.json_always) and not (data.startswith(AVRO_MAGIC) and codec.avro is not None):
        jsonmeta.validate(data, path=path)  # decode's JSON branch, without building what it holds
        return
    decode(data, path=path, action=action, state=state, layout=layout, legacy=legacy)


def streams_write_stats(head: bytes, *, action: str, state: State, layout: int, legacy: bool = False) -> bool:
    """Whether a state file whose first bytes are `head` holds commit metadata (v6 JSON or v8+
    Avro) whose write stats `stream_write_stats` reads in constant memory."""
    return CODECS.get((action, state)) in _WRITES and bool(head.strip())


def stream_write_stats(stream: BinaryIO, *, path: str) -> Iterator[tuple[str, WriteStat | None]] | None:
    """The write stats of commit metadata (`streams_write_stats`), one at a time as the file
    is read: `(partition, None)` as each partition begins, then `(partition, stat)` for each of
    its stats; memory stays that of one stat, and reading stops after the last. None when the
    metadata has no write stats (a workload profile). Raises CorruptInstantError."""
    head = stream.read(len(AVRO_MAGIC))
    stream.seek(0)
    reader = avro.map_of_arrays if head == AVRO_MAGIC else jsonmeta.map_of_arrays
    entries = reader(stream, WRITE_STATS_FIELD, path=path)
    if entries is None:
        return None
    return ((partition, None if raw is None else WriteStat.from_raw(partition, raw)) for partition, raw in entries)


def encode(record: Mapping[str, Any], *, action: str, state: State, layout: int) -> bytes:
    """Encode content for an instant state file the way Hudi writes it for the layout."""
    codec = _codec(action, state, f"<{action}.{state.name}>")
    if _uses_json(codec, layout, legacy=False) or codec.avro is None:
        return jsonmeta.encode(dict(record))
    return avro.encode(codec.avro, record)
