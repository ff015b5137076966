"""The archived timeline's broken pieces: on table versions 8 and 9 the LSM timeline in
`.hoodie/timeline/history` (`LSMTimeline`, `LSMTimelineWriter`), on version 6 the archive log
files.

- A leftover manifest: `manifest_N` above the version `_version_` holds, left when an archiver
  wrote the manifest but crashed before the version file (`LSMTimelineWriter.createManifestFile`
  deletes it before writing that version again); and Parquet files no manifest lists, left by
  a crash before the manifest (`LSMTimelineWriter.write` deletes such a file before rewriting
  it, `LSMTimelineWriter.clean` deletes files of no kept snapshot). Readers ignore both. Repair:
  delete them, once they are older than the stale threshold (an archiver may be running).
- A missing or unreadable manifest: `_version_` names a manifest that is not there (readers fail:
  `LSMTimeline.latestSnapshotManifest`), or `_version_` itself does not parse (readers fall back
  to the highest manifest, `latestSnapshotVersion`). Repair, when the highest manifest below is
  whole (it parses and every file it lists is there): delete `_version_`, so that readers take
  that manifest, Hudi's own fallback; the next archiver writes a new version file.
- Anything else that makes the archived timeline unreadable (a manifest that does not parse, a
  file it lists missing or corrupt, a v6 archive file that does not decode): no repair; a Hudi
  writer cannot read the archive either."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.archived_timeline import MANIFEST_PREFIX, VERSION_FILE, LsmState, lsm_state, snapshot_files
from timeline.doctor.check import Check, Session, repairable_plan, resolve_meta, run_deletes
from timeline.doctor.findings import NO_REPAIR, Change, Evidence, Finding, RepairPlan, RepairResult, Severity
from timeline.doctor.survey import Survey
from timeline.exceptions import CorruptInstantError
from timeline.storage import Storage

KIND = "archived-timeline"


def manifest_file_names(storage: Storage, folder: str, version: int) -> list[str]:
    """The Parquet files snapshot `version` lists (`LSMTimeline.latestSnapshotManifest`, read by
    `timeline.archived_timeline`); CorruptInstantError when the manifest is missing or does not
    parse (Hudi fails to read the archive then too)."""
    return [entry.name for entry in snapshot_files(storage, folder, version)]


@dataclass(frozen=True, slots=True)
class ArchivedEvidence(Evidence):
    folder: str
    problem: str                       # "leftover", "missing manifest", "unreadable version file", "unreadable"
    version: int | None                # the number `_version_` holds
    manifests: tuple[int, ...]         # every manifest on storage
    leftover_manifests: tuple[str, ...]
    leftover_files: tuple[str, ...]
    fallback_manifest: int | None      # the manifest readers would take once `_version_` is gone
    bytes: int
    detail: str


def _whole(survey: Survey, state: LsmState, version: int) -> bool:
    """Whether manifest `version` parses and every file it lists is there."""
    try:
        return all(name in state.data_files for name in manifest_file_names(survey.storage, state.folder, version))
    except CorruptInstantError:
        return False


def _lsm(survey: Survey) -> list[Finding]:
    storage = survey.storage
    folder = survey.table.path(survey.table.config.archive_folder)
    state = lsm_state(storage, folder)
    versions = tuple(sorted(state.manifests))
    uri = storage.uri
    threshold_ms = survey.now_ms - int(survey.settings.stale_after.total_seconds() * 1000)
    findings: list[Finding] = []
    if state.version_status is not None and (state.version is None or state.version not in state.manifests):
        below = [v for v in versions if state.version is None or v < state.version]
        fallback = max(below) if below else None
        whole = fallback is not None and _whole(survey, state, fallback)
        problem = "unreadable version file" if state.version is None else "missing manifest"
        detail = (f"{VERSION_FILE} does not hold a number" if state.version is None
                  else f"{VERSION_FILE} names {MANIFEST_PREFIX}{state.version}, which is not there")
        evidence = ArchivedEvidence(uri(folder), problem, state.version, versions, (), (), fallback,
                                    max(state.version_status.size, 0), detail)
        repair = (f"delete {VERSION_FILE}, so that readers take {MANIFEST_PREFIX}{fallback} (LSMTimeline."
                  "latestSnapshotVersion's fallback to the highest manifest)" if whole
                  else f"{NO_REPAIR}no whole manifest to fall back to; a Hudi writer must rewrite the archive")
        severity = Severity.ERROR if state.version is not None else Severity.WARNING
        findings.append(Finding(KIND, severity, f"the archived timeline's {detail}", evidence,
                                "Readers of the archived timeline (time travel, incremental queries, archival itself) "
                                "fail or read an older snapshot.", repair))
        return findings
    latest = state.latest
    if latest is None:
        return findings
    try:
        current = manifest_file_names(storage, folder, latest)
    except CorruptInstantError as exc:
        return [_unreadable(survey, uri(folder), str(exc))]
    listed: set[str] | None = set(current)  # files of the snapshots readers may take; None: cannot tell
    for version in versions:  # a manifest above the version file's is a leftover (maybe corrupt): not read
        if version < latest and listed is not None:
            try:
                listed.update(manifest_file_names(storage, folder, version))
            except CorruptInstantError:
                listed = None  # an older snapshot does not parse: no file is proved unlisted
    missing = [name for name in current if name not in state.data_files]
    if missing:
        return [_unreadable(survey, uri(folder), f"{MANIFEST_PREFIX}{latest} lists {missing[0]}, which is not there")]
    leftover_manifests = [s for v, s in sorted(state.manifests.items())
                          if state.version is not None and v > state.version and 0 < s.mtime_ms <= threshold_ms]
    leftover_files = [s for name, s in sorted(state.data_files.items())
                      if listed is not None and name not in listed and 0 < s.mtime_ms <= threshold_ms]
    if leftover_manifests or leftover_files:
        size = sum(max(s.size, 0) for s in (*leftover_manifests, *leftover_files))
        evidence = ArchivedEvidence(uri(folder), "leftover", state.version, versions,
                                    tuple(s.name for s in leftover_manifests), tuple(s.name for s in leftover_files),
                                    None, size, f"readers use {MANIFEST_PREFIX}{latest}")
        findings.append(Finding(
            KIND, Severity.INFO,
            f"{len(leftover_manifests)} leftover manifest(s) and {len(leftover_files)} unlisted file(s) in the "
            "archived timeline",
            evidence,
            "An archiver crashed midway; should the version file ever be lost, readers would take the leftover "
            "manifest, which may name files that are not whole.",
            "delete them, as LSMTimelineWriter does before it writes that version or file again"))
    return findings


def _unreadable(survey: Survey, folder: str, detail: str) -> Finding:
    return Finding(KIND, Severity.ERROR, "the archived timeline cannot be read",
                   ArchivedEvidence(folder, "unreadable", None, (), (), (), None, 0, detail),
                   "Readers of the archived timeline fail, and nothing it names can be proved referenced.",
                   f"{NO_REPAIR}a Hudi writer cannot read it either; restore the archive from a backup")


def diagnose(survey: Survey) -> list[Finding]:
    if survey.table.config.layout_version >= 2:
        found = _lsm(survey)
        if found:
            return found
    error = survey.archive.error
    if error is not None:
        return [_unreadable(survey, survey.storage.uri(survey.table.path(survey.table.config.archive_folder)), error)]
    return []


def plan(survey: Survey) -> RepairPlan:
    findings = diagnose(survey)
    changes: list[Change] = []
    for finding in findings:
        evidence = finding.evidence
        if not finding.repairable or not isinstance(evidence, ArchivedEvidence):
            continue
        folder = survey.storage.path_of(evidence.folder)
        if evidence.problem == "leftover":
            names = (*evidence.leftover_manifests, *evidence.leftover_files)
            sizes = {s.name: max(s.size, 0) for s in survey.storage.list(folder)}
            changes += [Change("delete", evidence.folder + "/" + name, sizes.get(name, 0), "leftover of a crashed "
                               "archiver") for name in names]
        else:
            changes.append(Change("delete", survey.storage.uri(Storage.join(folder, VERSION_FILE)), evidence.bytes,
                                  f"readers then take {MANIFEST_PREFIX}{evidence.fallback_manifest}"))
    return repairable_plan(survey, KIND, findings, changes)


def run(session: Session, approved: RepairPlan) -> RepairResult:
    return run_deletes(session, approved, plan, resolve_meta)


CHECK = Check(KIND, diagnose, plan, run)
