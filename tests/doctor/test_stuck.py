"""Stuck table services (timeline/doctor/stuck.py) on copies of real merge-on-read tables (v6,
v9, with and without a metadata table): a compaction or clustering left inflight by a job that
died (apache/hudi #19313), rolled back as Hudi's rollbackInflightTableService does."""

from __future__ import annotations

import os
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.doctor.helpers import OLD, TOKEN, age_tree, clustering_plan, reads, round_trip, stuck_compaction
from tests.helpers import Lake
from timeline import HudiTable, metadata
from timeline.doctor import DoctorSettings, RepairUnavailable, diagnose, plan_repair, run_repair
from timeline.doctor import stuck as stuck_module
from timeline.doctor.findings import Change, Finding, RepairInvalidated, Severity
from timeline.doctor.stale import StaleEvidence
from timeline.doctor.stuck import StuckEvidence, stuck
from timeline.doctor.survey import Survey
from timeline.instant import CLUSTERING, COMPACTION, LOG_COMPACTION, Instant, State
from timeline.storage import MemoryStorage
from timeline.transactions import Transactions

KIND = "stuck-table-service"
V9_MOR = "sample_table/mor/avro/v9_timebasedkeygen_nonhivestyle"  # log files, a metadata table
V9_NOMETA = "sample_table/mor/avro/v9_txns_simple_nometa"
V6_MOR = "sample_table/mor/parquet/v6_nonpartitioned"


def _files(path: Path) -> dict[str, int]:
    """Every data file of the table (outside .hoodie) -> its size."""
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*")
            if p.is_file() and ".hoodie" not in p.relative_to(path).parts}


@pytest.mark.parametrize("fixture", [V9_MOR, V9_NOMETA, V6_MOR])
def test_stuck_compaction_reverts_to_requested_deleting_only_its_base_files(table_copy, fixture: str) -> None:
    """The must-show: an inflight compaction with no heartbeat and a partial base file is found,
    its repair previews exactly that file with its bytes, and afterwards the compaction is
    requested again with its plan byte for byte, the partial file gone, every other file (every
    log file) kept, a completed rollback on the timeline, and hudi-rs reads the same rows."""
    path = table_copy(fixture)
    before = reads(path)
    kept = _files(path)
    requested, partial = stuck_compaction(path, OLD)
    plan_bytes = requested.read_bytes()
    size = partial[0].stat().st_size
    age_tree(path)
    named = [f.kind for f in diagnose(HudiTable.open(str(path))) if f.evidence.to_json().get("instant") == OLD]
    assert named == [KIND]  # reported once: stale-pending leaves it to this kind
    found, plan, result, after = round_trip(path, KIND, before=before)
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, StuckEvidence)
    assert (evidence.instant, evidence.action, evidence.heartbeat, evidence.markers) == (OLD, COMPACTION, "none", False)
    assert (evidence.files, evidence.bytes, evidence.keeps_plan) == (1, size, True)
    assert [(c.action, c.target, c.bytes) for c in plan.changes] == [("rollback", OLD, 0),
                                                                     ("delete", str(partial[0]), size)]
    assert result.ok and {c.key for c in result.done} == {c.key for c in plan.changes}
    assert not partial[0].exists() and _files(path) == kept  # only its base file went: every log file stays
    table = HudiTable.open(str(path))
    (left,) = [i for i in table.timeline if i.requested_time == OLD]
    assert (left.action, left.state) == (COMPACTION, State.REQUESTED) and requested.read_bytes() == plan_bytes
    (rollback,) = table.timeline.rollbacks().completed()
    assert rollback.requested_time > OLD
    assert [f.kind for f in after if f.kind in (KIND, "metadata-table-drift", "orphan-files")] == []
    # the compaction is requested now: stale-pending reports it for a writer to run, with no repair
    (waiting,) = [f for f in after if f.kind == "stale-pending"]
    assert isinstance(waiting.evidence, StaleEvidence) and waiting.evidence.role == "table service"
    assert not waiting.repairable


def test_stuck_compaction_keeps_a_log_file_of_its_time(table_copy) -> None:
    """ListingBasedRollbackStrategy.listBaseFilesToBeDeleted: without markers, a compaction's
    rollback lists its base files only, never a log file, even one carrying its time (a write's
    listing-based rollback on table version 8 takes those)."""
    path = table_copy(V9_MOR)
    before = reads(path)
    _, partial = stuck_compaction(path, OLD)
    log = partial[0].with_name(f".{partial[0].name.split('_')[0]}_{OLD}.log.1_{TOKEN}")
    log.write_bytes(b"")  # a log file carrying the compaction's time (as a v6 slice's log names its base)
    age_tree(path)
    _, plan, result, _ = round_trip(path, KIND, before=before)
    (finding,) = plan.findings
    assert isinstance(finding.evidence, StuckEvidence) and not finding.evidence.markers
    assert [c.target for c in plan.changes if c.action == "delete"] == [str(partial[0])]
    assert result.ok and not partial[0].exists() and log.exists()


def test_stuck_compaction_with_a_live_heartbeat_is_left_alone(table_copy) -> None:
    path = table_copy(V9_MOR)
    _, partial = stuck_compaction(path, OLD)
    age_tree(path)
    heartbeat = path / ".hoodie" / ".heartbeat" / OLD
    heartbeat.parent.mkdir(parents=True, exist_ok=True)
    heartbeat.write_bytes(b"")  # touched now: its job is running
    table = HudiTable.open(str(path))
    assert [f for f in diagnose(table) if f.evidence.to_json().get("instant") == OLD] == []  # neither kind
    with pytest.raises(RepairUnavailable):
        plan_repair(table, KIND)
    gone = time.time() - 600
    os.utime(heartbeat, (gone, gone))  # expired (60 s x 2)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    assert isinstance(finding.evidence, StuckEvidence) and finding.evidence.heartbeat.startswith("expired")
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    os.utime(heartbeat)  # its job came back between the preview and the run
    refused = run_repair(HudiTable.open(str(path)), plan, dry_run=False)  # the live-writer rule: no lock known
    assert not refused.done and len(refused.failed) == len(plan.changes) and "writer" in refused.failed[0][1]
    table = HudiTable.open(str(path))
    result = run_repair(table, plan, transactions=Transactions(table, writers_stopped=True), dry_run=False)
    assert not result.done and len(result.skipped) == len(plan.changes) and partial[0].exists()  # re-diagnosed
    assert HudiTable.open(str(path)).timeline.find(OLD) is not None


def test_stuck_only_inflight_and_older_than_the_threshold(table_copy) -> None:
    """A requested compaction wrote nothing: not stuck (a writer runs it). An inflight one
    younger than the stale threshold is not stuck either."""
    path = table_copy(V9_MOR)
    requested, _ = stuck_compaction(path, OLD)
    (requested.parent / Instant(OLD, COMPACTION, State.INFLIGHT).file_name(2)).unlink()
    age_tree(path)
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []
    (requested.parent / Instant(OLD, COMPACTION, State.INFLIGHT).file_name(2)).write_bytes(b"")
    assert len(diagnose(HudiTable.open(str(path)), kinds=[KIND])) == 1
    young = DoctorSettings(stale_after=timedelta(days=10_000))
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND], settings=young) == []


def test_stuck_clustering_reverts_to_requested_with_its_plan(table_copy) -> None:
    """HoodieTable.rollbackInflightClustering (deleteInstants=false, Hudi's default): the files it
    wrote go, the clustering is requested again with its plan kept for a writer to re-run."""
    path = table_copy(V9_MOR)
    before = reads(path)
    table = HudiTable.open(str(path))
    piece = table.file_system_view().latest_slices()[0]
    assert piece.base_file is not None
    plan = clustering_plan(piece)
    folder = Path(table.timeline.folder)
    requested = folder / Instant(OLD, CLUSTERING, State.REQUESTED).file_name(2)
    requested.write_bytes(metadata.encode(plan, action=CLUSTERING, state=State.REQUESTED, layout=2))
    plan_bytes = requested.read_bytes()
    (folder / Instant(OLD, CLUSTERING, State.INFLIGHT).file_name(2)).write_bytes(b"")
    partition = path / piece.partition if piece.partition else path
    written = partition / f"c0ffee00-0000-0000-0000-000000000000-0_{TOKEN}_{OLD}.parquet"
    shutil.copy(partition / piece.base_file.name, written)
    age_tree(path)
    found, repair, result, after = round_trip(path, KIND, before=before)
    assert [(f.evidence.instant, f.evidence.action) for f in found] == [(OLD, CLUSTERING)]  # type: ignore[attr-defined]
    assert [c.key for c in repair.changes] == [("rollback", OLD), ("delete", str(written))]
    assert result.ok and not written.exists()
    (left,) = [i for i in HudiTable.open(str(path)).timeline if i.requested_time == OLD]
    assert (left.action, left.state) == (CLUSTERING, State.REQUESTED) and requested.read_bytes() == plan_bytes
    assert [f for f in after if f.kind == KIND] == []


def test_stuck_log_compaction_goes_with_its_instant_files(table_copy) -> None:
    """HoodieTable.rollbackInflightLogCompaction: its rollback deletes the log file it wrote and
    its instant files (deleteInstants=true: log compaction plans are mutable, a writer schedules
    another)."""
    path = table_copy(V9_MOR)
    before = reads(path)
    kept = _files(path)
    requested, partial = stuck_compaction(path, OLD, action=LOG_COMPACTION, markers=True)
    age_tree(path)
    found, plan, result, after = round_trip(path, KIND, before=before)
    (finding,) = found
    assert isinstance(finding.evidence, StuckEvidence) and not finding.evidence.keeps_plan
    assert [c.key for c in plan.changes] == [("rollback", OLD), ("delete", str(partial[0]))]
    assert result.ok and _files(path) == kept and not requested.exists()
    assert not (path / ".hoodie" / ".temp" / OLD).exists()  # its markers went with it
    assert HudiTable.open(str(path)).timeline.find(OLD) is None
    assert after == []


def test_stuck_v6_clustering_replacecommit_reverts_to_requested() -> None:
    """Table version 6 on a hand-made timeline: an inflight replacecommit whose requested plan is
    a clustering (ClusteringUtils.isClusteringInstant) is a stuck table service, not a write: its
    base file goes and it reverts to requested with its plan (rollbackInflightClustering)."""
    lake = Lake(MemoryStorage(), "/t", version=6)
    first, clustering = "20261101000000000", "20261101000100000"
    lake.commit(first, {"p": [lake.base_file("p", "g", first)]})
    cluster = {"operationType": "cluster", "version": 1, "extraMetadata": {}, "clusteringPlan": {
        "inputGroups": [{"slices": [{"dataFilePath": f"g_0-1-0_{first}.parquet", "fileId": "g", "partitionPath": "p",
                                     "deltaFilePaths": [], "version": 1}], "metrics": {}, "numOutputFileGroups": 1,
                         "version": 1}], "version": 1, "extraMetadata": {}, "preserveHoodieMetadata": True,
        "strategy": {"strategyClassName": "x", "strategyParams": {}, "version": 1}}}
    lake.instant_file(Instant(clustering, "replacecommit", State.REQUESTED), cluster)
    lake.instant_file(Instant(clustering, "replacecommit", State.INFLIGHT))
    written = lake.base_file("p", "c", clustering)
    table = HudiTable.load(lake.storage, "/t")
    requested = table.timeline.path_of(Instant(clustering, "replacecommit", State.REQUESTED), State.REQUESTED)
    plan_bytes = lake.storage.read(requested)
    settings = DoctorSettings(stale_after=timedelta(0))
    (finding,) = diagnose(table, settings=settings)
    assert finding.kind == KIND and isinstance(finding.evidence, StuckEvidence) and finding.evidence.keeps_plan
    plan = plan_repair(table, KIND, settings=settings)
    assert [c.key for c in plan.changes] == [("rollback", clustering), ("delete", f"/t/p/{written}")]
    result = run_repair(HudiTable.load(lake.storage, "/t"), plan, settings=settings, dry_run=False)
    assert result.ok and not lake.storage.exists(f"/t/p/{written}")
    assert lake.storage.exists(f"/t/p/g_0-1-0_{first}.parquet")
    table = HudiTable.load(lake.storage, "/t")
    (left,) = [i for i in table.timeline if i.requested_time == clustering]
    assert left.state is State.REQUESTED and lake.storage.read(requested) == plan_bytes
    assert [f.kind for f in diagnose(table, kinds=[KIND], settings=settings)] == []


def test_stuck_repair_skips_a_service_no_longer_inflight(table_copy) -> None:
    """Re-validated under the table's lock: a compaction a writer rolled back itself between the
    preview and the run (requested again) is skipped, nothing changed."""
    path = table_copy(V9_NOMETA)
    requested, partial = stuck_compaction(path, OLD)
    age_tree(path)
    plan = plan_repair(HudiTable.open(str(path)), KIND)
    (requested.parent / Instant(OLD, COMPACTION, State.INFLIGHT).file_name(2)).unlink()
    result = run_repair(HudiTable.open(str(path)), plan, dry_run=False)
    assert (result.done, result.failed) == ((), ()) and len(result.skipped) == len(plan.changes)
    assert partial[0].exists() and not HudiTable.open(str(path)).timeline.rollbacks()


# The rule and the repair, in process on hand-made merge-on-read timelines (MemoryStorage).

FIRST = "20261031000000000"


def _lake() -> Lake:
    lake = Lake(MemoryStorage(), "/t", version=6, table_type="MERGE_ON_READ")
    lake.commit(FIRST, {"p": [lake.base_file("p", "g", FIRST)]}, action="deltacommit")
    return lake


def _compaction(lake: Lake, t: str, *, inflight: bool = True, file_id: str = "g") -> str:
    """A compaction of `file_id` at `t` (inflight by default) and the base file it wrote; its path."""
    lake.schedule_compaction(t, [("p", file_id, FIRST)], state=State.INFLIGHT if inflight else State.REQUESTED)
    return f"/t/p/{lake.base_file('p', file_id, t, size=123)}"


def _survey(lake: Lake, now_ms: int, *, stale_after: timedelta = timedelta(minutes=180),
            options: dict[str, str] | None = None) -> Survey:
    survey = Survey(HudiTable.load(lake.storage, "/t"), now=datetime(1970, 1, 1, tzinfo=UTC)
                    + timedelta(milliseconds=now_ms), settings=DoctorSettings(stale_after=stale_after,
                                                                             options=options or {}))
    assert survey.now_ms == now_ms
    return survey


def _ms(lake: Lake, t: str) -> int:
    moment = _survey(lake, 0).moment_ms(t)
    assert moment is not None
    return moment


def test_stuck_threshold_boundary_to_the_millisecond() -> None:
    """Stuck when requested at or before now - stale_after (inclusive), not a millisecond later."""
    lake = _lake()
    t = "20261101000000000"
    _compaction(lake, t)
    at = _ms(lake, t) + 180 * 60 * 1000
    assert [i.requested_time for i in stuck(_survey(lake, at))] == [t]
    assert stuck(_survey(lake, at - 1)) == []
    assert [i.requested_time for i in stuck(_survey(lake, at + 1))] == [t]


def test_stuck_a_just_requested_service_is_live_without_a_heartbeat() -> None:
    """survey.live alone keeps it (a pending instant requested within the liveness window),
    with no heartbeat at all."""
    lake = _lake()
    t = "20261101000000000"
    _compaction(lake, t)
    survey = _survey(lake, _ms(lake, t) + 60_000, stale_after=timedelta(0))
    assert t in survey.live and not survey.heartbeat_alive(t)
    assert stuck(survey) == []
    assert [i.requested_time for i in stuck(_survey(lake, _ms(lake, t) + 600_000, stale_after=timedelta(0)))] == [t]


def test_stuck_skips_each_kind_of_pending_instant_and_still_finds_a_later_one() -> None:
    """Oldest first, each skipped for its own reason, and the last one still found: a requested
    compaction, one with a fresh heartbeat, a write (deltacommit), one with a pending rollback,
    a v6 replacecommit whose plan does not decode, then the stuck one."""
    lake = _lake()
    requested, beating, write, rolling, garbled, found = (f"2026110100{m:02d}00000" for m in range(6))
    _compaction(lake, requested, inflight=False, file_id="a")
    _compaction(lake, beating, file_id="b")
    lake.commit(write, {"p": [lake.log_file("p", "g", FIRST)]}, action="deltacommit", state=State.INFLIGHT)
    _compaction(lake, rolling, file_id="c")
    lake.instant_file(Instant("20261101001000000", "rollback", State.REQUESTED), {
        "instantToRollback": {"commitTime": rolling, "action": COMPACTION}, "RollbackRequests": [], "version": 1})
    lake.storage.write(f"{lake.timeline_folder}/{Instant(garbled, 'replacecommit', State.REQUESTED).file_name(1)}",
                       b"not avro")
    lake.instant_file(Instant(garbled, "replacecommit", State.INFLIGHT))
    _compaction(lake, found, file_id="d")
    now_ms = _ms(lake, found) + 86_400_000
    heartbeat = "/t/.hoodie/.heartbeat/" + beating
    lake.storage.write(heartbeat, b"")
    lake.storage.set_mtime(heartbeat, now_ms - 1_000)  # type: ignore[attr-defined]
    survey = _survey(lake, now_ms)
    assert survey.heartbeat_alive(beating)
    assert [i.requested_time for i in stuck(survey)] == [found]


def _stopped(lake: Lake) -> tuple[HudiTable, Transactions]:
    table = HudiTable.load(lake.storage, "/t")
    return table, Transactions(table, writers_stopped=True)


def test_stuck_repair_of_several_services_skips_two_and_runs_two() -> None:
    """One repair of four stuck compactions: the first two requested again by a writer between
    the preview and the run are skipped, each change with the reason word for word, and the
    next two still rolled back, every change of both done."""
    lake = _lake()
    times = [f"2026110100{m:02d}00000" for m in range(4)]
    written = [_compaction(lake, t, file_id=f) for t, f in zip(times, "abcd", strict=True)]
    plan = plan_repair(HudiTable.load(lake.storage, "/t"), KIND)
    assert [c.key for c in plan.changes] == [k for t, w in zip(times, written, strict=True)
                                             for k in (("rollback", t), ("delete", w))]
    for t in times[:2]:
        lake.storage.delete(f"{lake.timeline_folder}/{Instant(t, COMPACTION, State.INFLIGHT).file_name(1)}")
    table, transactions = _stopped(lake)
    result = run_repair(table, plan, transactions=transactions, dry_run=False)
    assert (result.table, result.kind) == (table.uri, KIND)
    reason = "no longer a stuck table service when diagnosed again under the table's lock"
    assert result.skipped == tuple((c, reason) for c in plan.changes[:4])
    assert result.done == plan.changes[4:] and result.failed == ()
    assert [lake.storage.exists(w) for w in written] == [True, True, False, False]


def test_stuck_repair_records_a_failed_rollback_and_goes_on() -> None:
    """The writers' options say two heartbeats expired (a 1 ms window) while the table's own
    settings (rollback_table_service's check) find them alive: both rollbacks fail, each change
    recorded with the error word for word, and the third service is still rolled back."""
    lake = _lake()
    times = [f"2026110100{m:02d}00000" for m in range(3)]
    written = [_compaction(lake, t, file_id=f) for t, f in zip(times, "abc", strict=True)]
    for t in times[:2]:
        heartbeat = "/t/.hoodie/.heartbeat/" + t
        lake.storage.write(heartbeat, b"")
        lake.storage.set_mtime(heartbeat, int(time.time() * 1000) - 30_000)  # type: ignore[attr-defined]
    settings = DoctorSettings(options={"hoodie.client.heartbeat.interval_in_ms": "1",
                                       "hoodie.client.heartbeat.tolerable.misses": "1"})
    plan = plan_repair(HudiTable.load(lake.storage, "/t"), KIND, settings=settings)
    assert [c.target for c in plan.changes if c.action == "rollback"] == times
    table, transactions = _stopped(lake)
    result = run_repair(table, plan, settings=settings, transactions=transactions, dry_run=False)
    assert result.failed == tuple(
        (c, f"{table.uri}: compaction {c.target if c.action == 'rollback' else times[i // 2]} is still being written "
            "(its heartbeat is alive); wait until its writer finishes or its heartbeat expires")
        for i, c in enumerate(plan.changes[:4]))
    assert result.done == plan.changes[4:] and result.skipped == ()
    assert [lake.storage.exists(w) for w in written] == [True, True, False]


def test_stuck_repair_invalidated_by_a_file_the_plan_did_not_preview() -> None:
    lake = _lake()
    t = "20261101000000000"
    written = _compaction(lake, t)
    plan = plan_repair(HudiTable.load(lake.storage, "/t"), KIND)
    late = f"/t/p/{lake.base_file('p', 'e', t)}"
    table, transactions = _stopped(lake)
    with pytest.raises(RepairInvalidated) as raised:
        run_repair(table, plan, transactions=transactions, dry_run=False)
    assert str(raised.value) == (f"{table.uri}: {t} would now also change {late} (1 change(s) the plan did not "
                                 "preview); nothing more was changed")
    assert lake.storage.exists(written) and lake.storage.exists(late)
    assert not HudiTable.load(lake.storage, "/t").timeline.rollbacks()  # nothing more was changed


WHY = ("A table service left inflight blocks the next one (Hudi schedules no compaction over file groups a pending "
       "plan holds, and a clustering's file groups take no updates), holds back cleaning and archival, and leaves "
       "its partial files on storage.")


def test_stuck_finding_and_changes_word_for_word() -> None:
    """A compaction: the finding's summary (hours to one decimal), evidence (requested_at in UTC,
    age, an expired heartbeat's age), why and repair, and its plan's changes, word for word."""
    lake = _lake()
    t = "20261101000000000"
    written = _compaction(lake, t)
    now_ms = _ms(lake, t) + 10 * 86_400_000 + 1_234
    heartbeat = "/t/.hoodie/.heartbeat/" + t
    lake.storage.write(heartbeat, b"")
    lake.storage.set_mtime(heartbeat, now_ms - 600_500)  # type: ignore[attr-defined]
    survey = _survey(lake, now_ms)
    (finding,) = stuck_module.diagnose(survey)
    assert finding == Finding(
        KIND, Severity.WARNING, f"compaction {t} has been inflight for 240.0 hours with no live heartbeat",
        StuckEvidence(t, COMPACTION, "2026-11-01T00:00:00+00:00", 864_001, "expired, touched 600 s ago", False, 1,
                      123, True),
        WHY,
        f"roll back compaction {t} as Hudi's rollbackInflightTableService does: the 1 files it wrote go, it "
        "reverts to requested with its plan kept, to be run again")
    (instant,) = stuck(survey)
    assert stuck_module._changes(survey, instant) == [
        Change("rollback", t, 0, f"roll back compaction {t}: 1 files (listed below), its inflight file and markers "
                                 "(it reverts to requested, its plan kept)"),
        Change("delete", written, 123, f"written by compaction {t}")]


@pytest.mark.parametrize("marker", ["APPEND", "CREATE"])
def test_stuck_v6_log_compaction_finding_and_changes_word_for_word(marker: str) -> None:
    """A table-version-6 log compaction with markers: the log file it appended to takes a rollback
    command block (APPEND), one it created goes (CREATE); its instant files and markers go."""
    lake = _lake()
    t = "20261101000000000"
    plan = {"operations": [{"baseInstantTime": FIRST, "fileId": "g", "partitionPath": "p", "deltaFilePaths": [],
                            "dataFilePath": None}], "version": 2}
    lake.instant_file(Instant(t, LOG_COMPACTION, State.REQUESTED), plan)
    lake.instant_file(Instant(t, LOG_COMPACTION, State.INFLIGHT))
    log = lake.log_file("p", "g", FIRST, version=2)
    lake.storage.write(f"/t/.hoodie/.temp/{t}/p/{log}.marker.{marker}", b"")
    survey = _survey(lake, _ms(lake, t) + 36 * 3_600_000)
    (finding,) = stuck_module.diagnose(survey)
    files = 1 if marker == "CREATE" else 0
    assert finding == Finding(
        KIND, Severity.WARNING, f"logcompaction {t} has been inflight for 36.0 hours with no live heartbeat",
        StuckEvidence(t, LOG_COMPACTION, "2026-11-01T00:00:00+00:00", 129_600, "none", True, files, 10 * files,
                      False),
        WHY,
        f"roll back logcompaction {t} as Hudi's rollbackInflightTableService does: the {files} files it wrote go, "
        "it goes with its instant files (a writer schedules another)")
    (instant,) = stuck(survey)
    head = Change("rollback", t, 0, f"roll back logcompaction {t}: {files} files (listed below), its instant files "
                                    "and markers")
    if marker == "CREATE":
        assert stuck_module._changes(survey, instant) == [
            head, Change("delete", f"/t/p/{log}", 10, f"written by logcompaction {t}")]
    else:
        assert stuck_module._changes(survey, instant) == [
            head, Change("rollback block", f"memory://t/p/{log}", 10,
                         f"a rollback command block for {t} after this log file")]


def test_stuck_changes_of_a_head_stop_at_the_next_head() -> None:
    changes = [Change("rollback", "1"), Change("delete", "a", 1), Change("rollback", "2"), Change("delete", "b", 2),
               Change("rollback block", "c", 3), Change("rollback", "3")]
    assert stuck_module._changes_of(changes, changes[0]) == changes[:2]
    assert stuck_module._changes_of(tuple(changes), changes[2]) == changes[2:5]
    assert stuck_module._changes_of(changes, changes[5]) == changes[5:]
    assert stuck_module._changes_of(changes, Change("rollback", "4")) == []


def test_stuck_evidence_of_a_service_requested_at_the_epoch() -> None:
    """An instant at the epoch (moment 0 ms) is dated there, not a millisecond later."""
    lake = _lake()
    t = "19700101000000000"
    _compaction(lake, t)
    (finding,) = stuck_module.diagnose(_survey(lake, 4 * 3_600_000))
    assert isinstance(finding.evidence, StuckEvidence)
    assert (finding.evidence.requested_at, finding.evidence.age_seconds) == ("1970-01-01T00:00:00+00:00", 14_400)
