"""Orphan files: base and log files in the table's partitions that nothing on the timeline names,
older than a safety horizon; never anything inside `.hoodie`.

Hudi's rule (`RepairUtils.findInstantFilesToRemove`, behind `HoodieRepairTool` and
`RepairOrphanFilesProcedure`): files are grouped by the instant time their name carries
(`tagInstantsOfBaseAndLogFiles`); the files of an instant pending on the active timeline are
kept; those of a completed instant (active or archived) are orphans unless its write stats name
them, and all are kept when it has no write stats ("no instant details"); those of an instant on
no timeline at all are orphans. `RepairOrphanFilesProcedure` then keeps every file the metadata
table still lists (`SKIPPED_PRESENT_IN_MDT`).

Cleanline is stricter wherever it can prove a file referenced; when in doubt a file is not an
orphan. A file is kept when:
- any state file of any instant, active or archived, names it: write stats of every state (not
  only the completed commit of its own instant: a table-version-6 log file carries its slice's
  base instant, and the delta commits that appended to it name it), clean plans and metadata,
  rollback plans and metadata, restore metadata, compaction and clustering plans, savepoints;
- its instant is pending, has a live heartbeat, or has a marker folder;
- its instant is completed (active or archived) without write details, or its state file (or
  the archive) cannot be read: then nothing is proved and the whole diagnosis finds no orphan;
- it is committed (`timeline/committed.py`, the definition the metadata-table drift check shares,
  so that no file is both a drift and an orphan): a write stat names it (above), or its instant is
  older than every instant the timelines know (archived history may be gone);
- its instant is a bootstrap instant;
- it is a log file of a file group some payload names, written at an instant the timelines know;
- the metadata table lists it;
- it or its instant is younger than the horizon: the default minimum age, the oldest pending
  instant, the oldest marker folder of an unfinished instant, and the heartbeat window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import compress, repeat
from operator import attrgetter
from stat import S_ISDIR, S_ISREG

from timeline.committed import CommittedFiles
from timeline.doctor.check import Check, Held, Session, repairable_plan, run_deletes
from timeline.doctor.findings import Change, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import DataFile, Survey, duration, parse_data_name
from timeline.exceptions import CleanlineError
from timeline.files import PARTITION_METADATA_FILES
from timeline.fsview import walked_folder
from timeline.mdt.reader import metadata_table
from timeline.metadata.references import References
from timeline.storage.base import SIDE_FILE_ENDINGS
from timeline.table import Table

KIND = "orphan-files"
# HoodieTimeline.INIT_INSTANT_TS, METADATA_BOOTSTRAP_INSTANT_TS, FULL_BOOTSTRAP_INSTANT_TS
BOOTSTRAP_INSTANTS = frozenset({"00000000000000", "00000000000001", "00000000000002"})
_MARKERS = sorted(PARTITION_METADATA_FILES)
_TARGET = attrgetter("target")
_new = tuple.__new__  # a DataFile without its Python-level __new__: this runs once per orphan
SHOWN = 20  # orphan files named in the summary's evidence is every one; the text view shows this many


@dataclass(frozen=True, slots=True)
class OrphanFile(Evidence):
    partition: str
    name: str
    path: str
    bytes: int
    modified_at: str   # ISO 8601
    instant: str
    reason: str


@dataclass(frozen=True, slots=True)
class OrphanEvidence(Evidence):
    """The orphan files with why each is one, their total, and the horizon they are older than
    (an instant time in the table's zone) with what set it."""

    files: tuple[OrphanFile, ...]
    count: int
    bytes: int
    horizon: str
    horizon_reason: str


@dataclass(slots=True)
class Referenced:
    """What the timelines name and know, gathered once; `doubt` says why nothing can be proved."""

    names: set[str]
    file_ids: set[str]
    known: set[str]            # every instant time on a timeline (any state) or named as rolled back
    pending: set[str]          # pending, live heartbeat, or marker folder of an unfinished instant
    without_details: set[str]  # completed writes whose payload holds no write stats
    completed: set[str]        # completed (active or archived)
    rolled_back: dict[str, str]
    doubt: str | None = None


def referenced(survey: Survey) -> Referenced:
    """Everything the active and archived timelines name, and the metadata table's listing."""
    table, timeline = survey.table, survey.timeline
    states = survey.state_files
    named = References()
    named.update(states.references)
    doubt = None
    if states.errors:
        path, why = next(iter(states.errors.items()))
        doubt = f"cannot read {path}: {why}"
    without = set(states.without_details)
    archive = survey.archive
    if archive.error is not None:
        doubt = doubt or f"cannot read the archived timeline: {archive.error}"
    named.update(archive.references)
    archived_completed = set(archive.instants)
    without |= {t for t in archived_completed if t not in archive.detailed}
    pending = {i.requested_time for i in timeline.pending()}
    pending |= {t for t in survey.heartbeats if survey.heartbeat_alive(t)} | survey.live
    pending |= {t for t in survey.marker_folders if t not in survey.finished}
    known = set(survey.known_instants)
    if table.config.metadata_table_enabled:
        try:
            mdt = metadata_table(table)
            if mdt is not None:
                named.names.update(n for files in mdt.files().values() for n in files)
        except CleanlineError as exc:
            doubt = doubt or f"cannot read the metadata table's file listing: {exc}"
    completed = {i.requested_time for i in timeline.completed()} | archived_completed
    return Referenced(named.names, named.file_ids, known, pending, without, completed, survey.rolled_back, doubt)


def horizon(survey: Survey) -> tuple[int, str]:
    """The moment (epoch ms) an orphan must be older than, and what set it: the minimum age,
    the heartbeat window, the oldest pending instant, the oldest marker folder of an
    unfinished instant, each as of `now`."""
    candidates = [(survey.now_ms - int(survey.settings.orphan_min_age.total_seconds() * 1000),
                   f"the minimum age ({duration(survey.settings.orphan_min_age)})"),
                  (survey.now_ms - survey.heartbeat_window_ms, "the writers' heartbeat window")]
    for instant in survey.timeline.pending():
        moment = survey.moment_ms(instant.requested_time)
        if moment is not None:
            candidates.append((moment, f"the oldest pending instant, {instant.action} {instant.requested_time}"))
            break  # the timeline is sorted: the first pending instant is the oldest
    for time_, folder in sorted(survey.marker_folders.items()):
        if time_ not in survey.finished:
            moment = survey.moment_ms(time_)
            if moment is not None:
                candidates.append((min(moment, folder.mtime_ms if folder.mtime_ms > 0 else moment),
                                   f"the marker folder of unfinished instant {time_}"))
    return min(candidates)


@dataclass(frozen=True, slots=True)
class _Instant:
    """What the rule knows of the files one instant time wrote, decided once per instant (a
    repair's re-check looks at tens of thousands of files of a few instants): whether one no
    write stat names is committed by its age (`CommittedFiles.before_history`), whether the
    timelines know the instant (a log file of a known file group is kept), and why a file of it
    is an orphan."""

    before_history: bool
    known: bool
    why: str


def _instant(instant: str, refs: Referenced, committed: CommittedFiles, limit_instant: str) -> _Instant | None:
    """What the rule makes of a file of `instant`; None when every file of it is kept: a
    pending (or live, or marked) instant, a completed one without write details, a bootstrap
    instant, or one too young for the horizon."""
    if instant in refs.pending or instant in refs.without_details or instant in BOOTSTRAP_INSTANTS:
        return None
    if instant[:17] >= limit_instant:
        return None  # written at an instant too young for the horizon
    if instant in refs.completed:
        why = f"{instant} completed and no write stat names it"
    elif instant in refs.rolled_back:
        why = f"{instant} was rolled back ({refs.rolled_back[instant]}) and no rollback names it"
    else:
        why = f"no instant {instant} on the active or archived timeline"
    return _Instant(committed.before_history(instant), instant in refs.known, why)


@dataclass(slots=True)
class _Rule:
    """The rule over what the timelines name, read once per diagnosis: what a file of each
    instant is, decided once per instant (`_instant`), then per file its name and its
    modification time. The diagnosis and a repair's re-check under the lock both decide here."""

    refs: Referenced
    committed: CommittedFiles
    limit: int            # the horizon (epoch ms)
    limit_instant: str    # the horizon as an instant time
    decided: dict[str, _Instant | None]

    def verdict(self, name: str) -> tuple[tuple[str, str, bool], _Instant] | None:
        """What a file no payload names (the caller looked in `refs.names` first, the cheap test
        most files stop at) is by its name: None when it is kept whatever its age (no base or
        log file, every file of its instant kept, committed by its instant's age, a log file of
        a known file group); else its name parsed (`parse_data_name`) and its instant's verdict:
        an orphan once its modification time is `old_enough`."""
        parsed = parse_data_name(name)
        if parsed is None:
            return None  # not a base or log file
        file_id, instant, is_log = parsed
        decided = self.decided
        if instant in decided:
            verdict = decided[instant]
        else:
            verdict = decided[instant] = _instant(instant, self.refs, self.committed, self.limit_instant)
        if verdict is None:
            return None  # every file of its instant is kept
        if verdict.before_history and name not in self.committed.named:
            return None  # older than anything the timelines know: committed (timeline/committed.py)
        if is_log and verdict.known and file_id in self.refs.file_ids:
            return None  # a log file of a known file group and instant
        return parsed, verdict

    def old_enough(self, mtime_ms: int) -> bool:
        """Whether a file's modification time is before the horizon (and known: a time of 0
        or less is a file gone or a time not read): a younger file may be a writer's that it
        has not published yet."""
        return 0 < mtime_ms < self.limit


def _rule(survey: Survey) -> tuple[_Rule | None, int, str]:
    """The rule as of the survey, the horizon and what set it; no rule (every file kept) when
    nothing can be proved (`Referenced.doubt`) or the timelines know no instant (every file is
    older than them: committed)."""
    refs = referenced(survey)
    limit, why_limit = horizon(survey)
    if refs.doubt is not None:
        return None, limit, why_limit
    committed = survey.committed
    if committed.earliest is None:
        return None, limit, why_limit
    return _Rule(refs, committed, limit, survey.instant_at(limit), {}), limit, why_limit


def orphans(survey: Survey) -> tuple[list[tuple[DataFile, str]], int, str]:
    """The orphan files (with why each is one), the horizon and what set it. A file's own work
    is a few lookups (`_Rule`): its name in what the timelines name, its name parsed, what its
    instant decides (once per instant), its modification time against the horizon."""
    rule, limit, why_limit = _rule(survey)
    if rule is None:
        return [], limit, why_limit
    names = rule.refs.names
    found: list[tuple[DataFile, str]] = []
    for partition, files in survey.listing.partitions.items():
        for status in files:
            name = status.name
            if name in names:
                continue  # a payload names it (most files: nothing more to look at)
            decided = rule.verdict(name)
            if decided is None:
                continue
            status = survey.sized(status)  # the listing's own status when it has the size and time
            if not rule.old_enough(status.mtime_ms):
                continue  # too young (or gone): a writer may not have published it yet
            parsed, verdict = decided
            found.append((_new(DataFile, (partition, status, *parsed)), verdict.why))
    return found, limit, why_limit


def _file(survey: Survey, data: DataFile, why: str) -> OrphanFile:
    status = data.status
    return OrphanFile(data.partition, status.name, survey.storage.uri(status.path), max(status.size, 0),
                      datetime.fromtimestamp(status.mtime_ms / 1000, UTC).isoformat(), data.instant, why)


def diagnose(survey: Survey) -> list[Finding]:
    found, limit, why_limit = orphans(survey)
    if not found:
        return []
    files = tuple(_file(survey, data, why) for data, why in sorted(found, key=lambda f: f[0].status.path))
    size = sum(f.bytes for f in files)
    evidence = OrphanEvidence(files, len(files), size, survey.instant_at(limit), why_limit)
    return [Finding(
        KIND, Severity.WARNING, f"{len(files)} orphan file(s), {size:,} bytes, that no instant names",
        evidence,
        "Files no instant wrote (failed writes without markers, crashed rollbacks) cost storage forever: no clean "
        "ever selects them, and a reader listing storage may pick one up.",
        "delete them (RepairUtils.findInstantFilesToRemove's rule, kept stricter), each path checked inside the "
        "table")]


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes = []
    for finding in findings:
        evidence = finding.evidence
        assert isinstance(evidence, OrphanEvidence)
        changes += [Change("delete", f.path, f.bytes, f.reason) for f in evidence.files]
    return repairable_plan(survey, KIND, findings, changes,
                           [f"only files older than {e.horizon} ({e.horizon_reason})" for f in findings
                            if isinstance(e := f.evidence, OrphanEvidence)])


def _resolve(table: Table, change: Change) -> str:
    return table.containment.data_path(change.target)


def _resolve_all(table: Table, changes: Sequence[Change]) -> list[str]:
    """`_resolve` of every planned delete, through the table's containment at once."""
    return table.containment.data_paths([c.target for c in changes])


def _deletes(survey: Survey) -> list[tuple[str, str]]:
    """The keys of the changes `plan` makes now (a delete of each orphan), without the finding."""
    uri = survey.storage.uri
    return [("delete", uri(data.status.path)) for data, _ in orphans(survey)[0]]


def _held(session: Session, changes: Sequence[Change]) -> Held | None:
    """The re-check under the lock of a repair on a local table whose folder the run holds, and
    the files it still deletes by folder, without a listing: per folder, a status of each
    planned file relative to the folder's handle (`Storage.stat_names`, an lstat: what a delete
    through that handle then removes), each decided again by the rule (`_Rule`) from its name
    and modification time; a folder's place checked once (`Containment.plain_folders`: spelled
    as the table writes it, no symbolic link on its way; `walked_folder` and its partition
    metadata file: a partition the listing finds). What the general re-check (`_deletes` over
    `Survey(only=...)`, then `_resolve_all`) answers, or None before anything changed when it
    must answer itself: a storage holding no folder, a plan naming a file twice or spelled
    otherwise, a folder no listing finds, a planned side file (a checksum), or a planned name
    that is a symbolic link, a folder or any other file that is no regular file."""
    table = session.table
    storage = table.storage
    targets = list(map(_TARGET, changes))
    if len(set(targets)) != len(targets):
        return None
    runs = table.containment.plain_folders(targets)
    if runs is None:
        return None
    rule, _, _ = _rule(session.survey())  # its listing is never read
    named = frozenset() if rule is None else rule.refs.names
    found: list[bool] = []
    add = found.append
    folders: list[tuple[str, list[str]]] = []
    for _, folder, names in runs:
        if walked_folder(storage, table.base, folder) is None:
            return None
        if any(map(str.endswith, names, repeat(SIDE_FILE_ENDINGS))):
            return None
        stats = storage.stat_names(folder, [*names, *_MARKERS])
        if stats is None:
            return None
        if not any(st is not None and not S_ISDIR(st.st_mode) for st in stats[len(names):]):
            return None  # no partition metadata file: not a partition
        first = len(found)
        for name, st in zip(names, stats):
            if st is not None and not S_ISREG(st.st_mode):
                return None  # a symbolic link (the containment resolves it), a folder, ...
            add(st is not None and rule is not None and name not in named  # there, and no payload names it
                and rule.verdict(name) is not None and rule.old_enough(st.st_mtime_ns // 1_000_000))
        folders.append((folder, list(compress(names, found[first:]))))
    return Held(found, folders)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    return run_deletes(session, approved, plan, _resolve, current=_deletes, resolve_all=_resolve_all, held=_held)


CHECK = Check(KIND, diagnose, plan, run)
