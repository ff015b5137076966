"""Index drift, the key-based rules (issue 45): the record index and secondary indexes checked
against the record keys (and indexed values) of the latest snapshot, and `diagnose`, which runs
every index-drift rule (the statistics and definition rules are `indexes.py`'s, its module
docstring says what each follows).

- record index (`record_index`): every record key of the latest base files maps to its file
  group, and no key maps to a group that does not hold it; on a table with more than
  `DoctorSettings.index_sample_keys` keys a seeded random sample of file groups, the finding
  stating its size and confidence (the rule of three), unless `index_full`.
- secondary indexes (`secondary_index_<name>`, identity functions of one column): each
  (value, record key) pair of the data is in the index and each pair of the index is backed by
  the data (`SecondaryIndexKeyUtils` keys: escaped value, `$`, escaped record key; null as NUL)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from timeline.doctor.findings import NO_REPAIR, Evidence, Finding, Severity
from timeline.doctor.index_logs import log_mismatches
from timeline.doctor.indexes import (
    COLUMN_STATS,
    CONFIDENCE,
    KIND,
    NULL_VALUE,
    PARTITION_STATS,
    RECORD_INDEX,
    RECORD_KEY_FIELD,
    SECONDARY_PREFIX,
    SHOWN,
    UNREADABLE,
    DefinitionEvidence,
    IndexDefinitionsUnreadable,
    StatsMismatch,
    _column_stats,
    _definitions,
    _latest_base_files,
    _partition_stats,
    committed_view,
    index_definitions,
    rebuild_repair,
)
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError
from timeline.fsview import FileSystemView
from timeline.mdt.reader import MetadataTable
from timeline.metadata.mdt_payload import record_location


@dataclass(frozen=True, slots=True)
class KeyMismatch(Evidence):
    key: str
    recorded: str   # partition/file id the record index maps the key to, or "none"
    actual: str     # partition/file id of the file group whose latest base file holds it, or "none"


@dataclass(frozen=True, slots=True)
class RecordIndexEvidence(Evidence):
    index: str
    keys_checked: int
    groups_skipped: int    # file groups whose latest slice has log files (not read here)
    mismatches: int
    shown: tuple[KeyMismatch, ...]
    sampled: bool = False  # a sample of file groups (see `sample_note`), not every key
    groups_checked: int = 0
    groups_total: int = 0
    confidence: float = 1.0
    undetected_fraction: float = 0.0  # at `confidence`, the fraction of keys a clean sample still allows wrong


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """The latest snapshot's keys (and the columns asked for), read from the latest base files of
    the file groups checked: `rows[(partition, file id)]` holds their columns as lists."""

    rows: dict[tuple[str, str], dict[str, list[Any]]]
    live: set[tuple[str, str]]
    skipped: int
    sampled: bool
    base_instant: dict[tuple[str, str], str]

    @property
    def held(self) -> dict[str, tuple[str, str]]:
        return {str(k): location for location, columns in self.rows.items() for k in columns[RECORD_KEY_FIELD]}


def _snapshot(survey: Survey, view: FileSystemView, columns: Iterable[str] = ()) -> _Snapshot:
    """`HoodieTableMetadataUtil.readRecordKeysFromBaseFiles` (what the record index and secondary
    indexes are initialised from, `HoodieBackedTableMetadataWriter.initializeRecordIndexPartition`,
    `SecondaryIndexRecordGenerationUtils.readSecondaryKeysFromFileSlices`): the record key (and
    `columns`) of every row of the latest base files. File groups whose latest slice has log files
    are skipped (updates and deletes not read here), and base files without the key column. On a
    table whose latest base files hold more than `SAMPLE_KEYS` rows (footers' row counts), unless
    `DoctorSettings.index_full`, a random sample of file groups holding about that many."""
    import random

    import pyarrow.parquet as pq  # here: only the index check reads Parquet files

    table = survey.table
    wanted = [RECORD_KEY_FIELD, *(c for c in columns if c != RECORD_KEY_FIELD)]
    live: set[tuple[str, str]] = set()
    readable = []
    skipped = 0
    base_instant: dict[tuple[str, str], str] = {}
    for group in view.file_groups():
        location = (group.partition, group.file_id)
        live.add(location)
        file_slice = group.latest_slice
        if file_slice is None or file_slice.base_file is None or file_slice.log_files:
            skipped += file_slice is not None and bool(file_slice.log_files)
            continue
        base_instant[location] = file_slice.base_instant_time
        readable.append((location, table.path(file_slice.partition, file_slice.base_file.name)))
    full = survey.settings.index_full
    limit = survey.settings.index_sample_keys
    sampled = False
    if not full and len(readable) > 1:
        counts: dict[tuple[str, str], int] = {}
        for location, path in readable:
            try:
                with survey.storage.reader(path) as stream:
                    counts[location] = pq.ParquetFile(stream).metadata.num_rows
            except UNREADABLE:
                counts[location] = 0
        if sum(counts.values()) > limit:
            random.Random(table.uri).shuffle(readable)  # seeded: the same sample for the same table
            chosen: list[tuple[tuple[str, str], str]] = []
            total = 0
            for location, path in readable:
                if total >= limit:
                    break
                chosen.append((location, path))
                total += counts[location]
            readable, sampled = chosen, True
    rows: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for location, path in readable:
        try:
            with survey.storage.reader(path) as stream:
                parquet = pq.ParquetFile(stream)
                names = parquet.schema_arrow.names
                if RECORD_KEY_FIELD not in names:
                    skipped += 1
                    continue
                data = parquet.read(columns=[c for c in wanted if c in names])
        except UNREADABLE:
            skipped += 1
            continue
        rows[location] = {name: _as_java_strings(data.column(name)) if name != RECORD_KEY_FIELD
                          else data.column(name).to_pylist() for name in data.column_names}
    return _Snapshot(rows, live, skipped, sampled, base_instant)


def _as_java_strings(column: Any) -> list[Any]:
    """A column's values as the strings Hudi keys a secondary index by (`Object.toString` of the
    engine's value, `SecondaryIndexRecordGenerationUtils`): dates as days since the epoch,
    timestamps as their long, booleans as true/false; None stays None."""
    import pyarrow as pa
    import pyarrow.types as types

    kind = column.type
    if types.is_date32(kind):
        column = column.cast(pa.int32())
    elif types.is_timestamp(kind) or types.is_date64(kind) or types.is_time(kind):
        column = column.cast(pa.int64())
    out: list[Any] = []
    for value in column.to_pylist():
        if value is None:
            out.append(None)
        elif isinstance(value, bool):
            out.append("true" if value else "false")
        else:
            out.append(str(value))
    return out


def sample_note(sample_keys: int) -> tuple[float, float]:
    """(confidence, the fraction of wrong keys a clean sample of `sample_keys` still allows at that
    confidence: the rule of three, 3/n at 95%)."""
    return CONFIDENCE, (min(1.0, 3.0 / sample_keys) if sample_keys else 1.0)


def _record_index(survey: Survey, mdt: MetadataTable, view: FileSystemView,
                  snapshot: _Snapshot | None = None) -> list[Finding]:
    """Every record key of the latest snapshot maps to the file group that holds it, and no key
    maps to a file group that does not (`HoodieTableMetadataUtil.readRecordKeysFromBaseFiles`, what
    the record index is initialised from, against `HoodieBackedTableMetadata.readRecordIndex`).
    File groups whose latest slice has log files are skipped both ways, and so are base files
    without the `_hoodie_record_key` column; on a large table a sample of file groups (`_snapshot`),
    its size and confidence stated in the finding (an INFO finding when the sample is clean)."""
    snapshot = snapshot or _snapshot(survey, view)
    held = snapshot.held
    checked = set(snapshot.rows)
    mismatches: list[KeyMismatch] = []
    recorded: set[str] = set()
    for key, record in mdt.records(RECORD_INDEX).items():
        entry = record.raw.get("recordIndexMetadata")
        if not isinstance(entry, Mapping):
            continue
        recorded.add(key)
        location = record_location(entry)
        actual = held.get(key)
        if actual == location:
            continue
        if actual is None and (location in snapshot.live and location not in checked):
            continue  # maps to a group not read here
        if actual is None and snapshot.sampled:
            continue  # maps to a group not sampled, or nowhere: only the full check tells
        mismatches.append(KeyMismatch(key, "/".join(location), "none" if actual is None else "/".join(actual)))
    for key in sorted(set(held) - recorded):
        mismatches.append(KeyMismatch(key, "none", "/".join(held[key])))
    confidence, fraction = sample_note(len(held)) if snapshot.sampled else (1.0, 0.0)
    evidence = RecordIndexEvidence(RECORD_INDEX, len(held), snapshot.skipped, len(mismatches),
                                   tuple(mismatches[:SHOWN]), snapshot.sampled, len(checked), len(snapshot.live),
                                   confidence, fraction)
    sample = (f" (a sample: {len(held)} key(s) of {len(checked)} of {len(snapshot.live)} file group(s); at "
              f"{confidence:.0%} confidence at most {fraction:.4%} of keys are wrong unnoticed; --full checks every "
              "key)") if snapshot.sampled else ""
    if not mismatches:
        if not snapshot.sampled:
            return []
        return [Finding(KIND, Severity.INFO, f"{RECORD_INDEX}: verified on a sample{sample}", evidence,
                        "A sample rules out widespread drift, not a few wrong keys.",
                        f"{NO_REPAIR}nothing found; verify with the full check (`cleanline index verify --full`, "
                        "DoctorSettings(index_full=True)) to rule out every wrong key")]
    return [Finding(
        KIND, Severity.ERROR,
        f"{RECORD_INDEX}: {len(mismatches)} record key(s) map to the wrong file group or to none{sample}",
        evidence,
        "Writers tag incoming records through the record index: a key mapped to the wrong file group is written as "
        "a new record beside the old one (a duplicate) or its update and delete are lost; readers looking a key up "
        "find nothing.",
        rebuild_repair(RECORD_INDEX))]


@dataclass(frozen=True, slots=True)
class SecondaryMismatch(Evidence):
    value: str       # the indexed value
    record_key: str
    problem: str     # "missing" (the data holds it, the index does not) or "stale" (the index holds it, the data not)


@dataclass(frozen=True, slots=True)
class SecondaryIndexEvidence(Evidence):
    index: str
    column: str
    entries_checked: int
    groups_skipped: int
    mismatches: int
    shown: tuple[SecondaryMismatch, ...]


def escape_key(text: str | None) -> str:
    """`SecondaryIndexKeyUtils.escapeSpecialChars`: backslash, `$` and NUL escaped with a
    backslash; null as a lone NUL."""
    if text is None:
        return NULL_VALUE
    return "".join("\\" + c if c in ("\\", "$", NULL_VALUE) else c for c in text)


def split_key(key: str) -> tuple[str, str] | None:
    """`SecondaryIndexKeyUtils.getSecondaryKeyFromSecondaryIndexKey` / `getRecordKeyFromSecondaryIndexKey`:
    (secondary value, record key) split at the first unescaped `$`, both unescaped."""
    escaped = False
    for position, char in enumerate(key):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "$":
            return _unescape(key[:position]), _unescape(key[position + 1:])
    return None


def _unescape(text: str) -> str:
    """`SecondaryIndexKeyUtils.unescapeSpecialChars` (a lone NUL, null, kept as NUL here)."""
    out, escaped = [], False
    for char in text:
        if escaped or char != "\\":
            out.append(char)
            escaped = False
        else:
            escaped = True
    return "".join(out)


def secondary_key(value: str | None, record_key: str) -> str:
    """`SecondaryIndexKeyUtils.constructSecondaryIndexKey`: escaped value, `$`, escaped record key."""
    return escape_key(value) + "$" + escape_key(record_key)


def secondary_indexes(survey: Survey) -> dict[str, str]:
    """The table's secondary index partitions listed complete, with the column each indexes
    (`.index_defs` `sourceFields`, one column, `HoodieIndexDefinition`)."""
    try:
        defs = index_definitions(survey)
    except IndexDefinitionsUnreadable:
        return {}
    out = {}
    for index in survey.table.config.metadata_partitions:
        fields = defs.get(index, {}).get("sourceFields") if index.startswith(SECONDARY_PREFIX) else None
        if fields and len(fields) == 1 and str(defs[index].get("indexFunction") or "identity") == "identity":
            out[index] = str(fields[0])
    return out


def expected_secondary(snapshot: _Snapshot, column: str) -> tuple[set[str], set[str]]:
    """(the secondary-index keys the snapshot's rows make, the record keys read): a null value as
    the NUL character (`SecondaryIndexKeyUtils`' null marker, as the fixtures Hudi 1.1 wrote hold it)."""
    expected: set[str] = set()
    keys: set[str] = set()
    for columns in snapshot.rows.values():
        record_keys = columns[RECORD_KEY_FIELD]
        keys.update(str(k) for k in record_keys)
        for key, value in zip(record_keys, columns.get(column, [None] * len(record_keys))):
            expected.add(secondary_key(value, str(key)))
    return expected, keys


def _secondary_index(survey: Survey, mdt: MetadataTable, index: str, column: str, snapshot: _Snapshot
                     ) -> list[Finding]:
    """Each indexed value maps to the record keys that hold it in the latest snapshot
    (`SecondaryIndexRecordGenerationUtils.readSecondaryKeysFromFileSlices`, what
    `HoodieBackedTableMetadataWriter.initializeSecondaryIndexPartition` builds), both ways: a
    (value, key) pair of the data the index lacks, and one the index holds for a key the data
    read here holds with another value (keys of groups not read here are not judged)."""
    expected, keys = expected_secondary(snapshot, column)
    recorded = {k for k, r in mdt.records(index).items()
                if not (isinstance(m := r.raw.get("SecondaryIndexMetadata"), Mapping) and m.get("isDeleted"))}
    mismatches: list[SecondaryMismatch] = []
    for key in sorted(expected - recorded):
        value, record_key = split_key(key) or (key, "")
        mismatches.append(SecondaryMismatch(value, record_key, "missing"))
    for key in sorted(recorded - expected):
        parts = split_key(key)
        if parts is None:
            mismatches.append(SecondaryMismatch(key, "", "stale"))
        elif parts[1] in keys or not snapshot.skipped and not snapshot.sampled:
            mismatches.append(SecondaryMismatch(parts[0], parts[1], "stale"))
    if not mismatches:
        return []
    return [Finding(
        KIND, Severity.ERROR,
        f"{index}: {len(mismatches)} (value, record key) pair(s) of column {column} differ from the data",
        SecondaryIndexEvidence(index, column, len(expected), snapshot.skipped, len(mismatches),
                               tuple(mismatches[:SHOWN])),
        "Queries filtering on this column look the matching record keys up in the secondary index: a missing pair "
        "drops a matching row from the answer, a stale one reads a row that no longer matches.",
        rebuild_repair(index))]


def diagnose(survey: Survey) -> list[Finding]:
    table = survey.table
    if not table.config.metadata_table_enabled:
        return []
    try:
        mdt = MetadataTable(table)
    except CleanlineError:
        return []  # an unreadable metadata table is metadata-table-drift's finding
    try:
        findings = _definitions(survey, mdt)
    except CleanlineError:
        return []  # a metadata-table file that does not read: metadata-table-drift's finding
    broken = {e.index for f in findings if isinstance(e := f.evidence, DefinitionEvidence)}
    secondary = {i: c for i, c in secondary_indexes(survey).items() if i not in broken}
    wanted = [p for p in (COLUMN_STATS, PARTITION_STATS, RECORD_INDEX)
              if p in table.config.metadata_partitions and p not in broken]
    if not wanted and not secondary:
        return findings
    view = committed_view(survey)
    files = _latest_base_files(survey, view) if COLUMN_STATS in wanted or PARTITION_STATS in wanted else []
    snapshot = (_snapshot(survey, view, set(secondary.values()))
                if RECORD_INDEX in wanted or secondary else None)
    def logs(recorded: Mapping[str, Mapping[str, Mapping[str, Any]]], indexed: set[str]
             ) -> tuple[int, list[StatsMismatch]]:
        return log_mismatches(survey.storage, view, table.path, recorded, indexed)

    rules: dict[str, Any] = {COLUMN_STATS: lambda: _column_stats(survey, mdt, files, logs),
                             PARTITION_STATS: lambda: _partition_stats(survey, mdt, files),
                             RECORD_INDEX: lambda: _record_index(survey, mdt, view, snapshot)}
    for index, column in secondary.items():
        assert snapshot is not None
        rules[index] = lambda i=index, c=column, s=snapshot: _secondary_index(survey, mdt, i, c, s)
    for index in [*wanted, *secondary]:
        try:
            findings += rules[index]()
        except CleanlineError:
            continue  # its metadata-table files do not read (metadata-table-drift's finding)
    return findings
