"""`hoodie.properties` that only its backup makes valid, and a leftover backup.

`HoodieTableConfig.modify` writes `hoodie.properties.backup`, deletes `hoodie.properties`, writes
the new one and deletes the backup; `fetchConfigs` reads the backup when the main file is
missing or invalid (`timeline/config.py` does the same). A crash in between leaves the table
readable only through the backup, and Hudi's own `recoverIfNeeded` (run at the start of the next
`modify`) copies the backup over only when `hoodie.properties` is *missing*; when it is present
but invalid it deletes the backup, the only valid copy. Cleanline's repair copies the backup
over `hoodie.properties` in both cases, reads it back valid, and only then deletes the backup.
A backup left beside a valid `hoodie.properties` is deleted, as `recoverIfNeeded` would.
Both are reported only once the backup is older than the stale threshold (an update in progress
leaves the same files for an instant)."""

from __future__ import annotations

from dataclasses import dataclass

from timeline import properties, transition
from timeline.config import BACKUP_FILE, CHECKSUM, META_FOLDER, NAME, PROPERTIES_FILE, checksum, read_config
from timeline.doctor.check import Check, Session, fresh_changes, repairable_plan, resolve_meta
from timeline.doctor.findings import (
    Change,
    Evidence,
    Finding,
    RepairInvalidated,
    RepairPlan,
    RepairResult,
    Severity,
)
from timeline.doctor.survey import Survey
from timeline.exceptions import CleanlineError, FileNotFound
from timeline.storage import FileStatus

KIND = "table-properties"


@dataclass(frozen=True, slots=True)
class PropertiesEvidence(Evidence):
    properties_file: str
    problem: str            # what is wrong with hoodie.properties ("" when it is valid)
    backup_file: str
    backup_bytes: int
    backup_age_seconds: int
    read_from_backup: bool


def _problem(survey: Survey, path: str) -> str:
    """Why `hoodie.properties` is not valid (for the evidence; `read_config` decided it)."""
    try:
        data = survey.storage.read(path)
    except FileNotFound:
        return "missing"
    try:
        props = properties.loads(data.decode("latin-1"))
    except ValueError as exc:
        return f"unreadable: {exc}"
    if NAME not in props:
        return f"{NAME} is missing"
    stored = (props.get(CHECKSUM) or "").strip()
    if stored and stored != str(checksum(props)):
        return f"{CHECKSUM} {stored} does not match the table name (expected {checksum(props)})"
    return "not usable"


def _backup(survey: Survey) -> FileStatus | None:
    try:
        return survey.storage.status(survey.table.path(META_FOLDER, BACKUP_FILE))
    except FileNotFound:
        return None


def diagnose(survey: Survey) -> list[Finding]:
    table = survey.table
    main = table.path(META_FOLDER, PROPERTIES_FILE)
    backup = _backup(survey)
    if backup is None:
        return []
    age = survey.age_seconds(backup.mtime_ms)
    if age * 1000 < survey.settings.stale_after.total_seconds() * 1000:
        return []  # an update may be in progress
    from_backup = table.config.path.endswith(BACKUP_FILE)
    uri = survey.storage.uri
    evidence = PropertiesEvidence(uri(main), _problem(survey, main) if from_backup else "", uri(backup.path),
                                  max(backup.size, 0), age, from_backup)
    if from_backup:
        return [Finding(
            KIND, Severity.ERROR, f"hoodie.properties is {evidence.problem}: the table reads only through its backup",
            evidence,
            "The next Hudi update of the table config deletes the backup when hoodie.properties is present but "
            "invalid (HoodieTableConfig.recoverIfNeeded), and with it the table's only valid config.",
            "copy the backup over hoodie.properties, read it back valid, then delete the backup")]
    return [Finding(
        KIND, Severity.INFO, "a leftover hoodie.properties.backup beside a valid hoodie.properties", evidence,
        "An interrupted config update left it; readers ignore it while hoodie.properties is valid.",
        "delete the backup, as HoodieTableConfig.recoverIfNeeded does at the next update")]


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes: list[Change] = []
    for finding in findings:
        evidence = finding.evidence
        assert isinstance(evidence, PropertiesEvidence)
        if evidence.read_from_backup:
            changes.append(Change("write", evidence.properties_file, evidence.backup_bytes,
                                  "hoodie.properties as its backup holds it"))
        changes.append(Change("delete", evidence.backup_file, evidence.backup_bytes, "hoodie.properties.backup"))
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    """Under the table's lock, diagnosed again; then hoodie.properties written from the backup
    (when planned), read back valid, and the backup deleted. A failure before the read-back
    leaves the backup in place, so a re-run starts over."""
    table, storage = session.table, session.table.storage
    with session.transactions.state_change():
        current = {c.key for c in fresh_changes(session, plan)}
        extra = current - {c.key for c in approved.changes}
        if extra:
            raise RepairInvalidated(f"{table.uri}: the table config now needs {sorted(extra)[0]}, which the plan did "
                                    "not preview; nothing was changed")
        todo = [c for c in approved.changes if c.key in current]
        skipped = [(c, "no longer found when diagnosed again under the table's lock") for c in approved.changes
                   if c.key not in current]
        paths = {c.key: resolve_meta(table, c) for c in todo}
        backup = next((paths[c.key] for c in todo if c.action == "delete"), None)
        done: list[Change] = []
        failed: list[tuple[Change, str]] = []
        for change in todo:  # the write (if any) comes first: the backup goes only after the read-back
            if failed:
                failed.append((change, "not attempted after the failure before it"))
                continue
            try:
                transition.fence(table)
                if change.action == "write":
                    assert backup is not None
                    storage.write(paths[change.key], storage.read(backup), overwrite=True)
                    if not read_config(storage, table.base).path.endswith(PROPERTIES_FILE):
                        raise CleanlineError(f"{paths[change.key]}: still invalid after the copy; the backup was kept")
                else:
                    storage.delete(paths[change.key])
            except CleanlineError as exc:
                failed.append((change, str(exc)))
                continue
            done.append(change)
    table.reload()
    return RepairResult(table.uri, KIND, tuple(done), tuple(skipped), tuple(failed))


CHECK = Check(KIND, diagnose, plan, run)
