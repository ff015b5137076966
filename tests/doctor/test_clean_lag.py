"""Clean lag (timeline/doctor/clean_lag.py) on a copy of a real table grown by 1,000 commits that
no clean followed (apache/hudi #17844, PR #18322): the finding says how far behind the cleaner
is and that the next plan lists every partition; the repair cleans in capped steps
(`hoodie.clean.max.commits.to.clean`), deleting exactly the files the table's own clean would,
and the table reads the same for every retained instant."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.doctor.helpers import age_tree, grow_history, reads, round_trip
from tests.helpers import rows
from timeline import CleanConfig, HudiTable
from timeline.clean.executor import run_pending_cleans, schedule_clean
from timeline.clean.planner import plan_clean
from timeline.config import update_config
from timeline.doctor import diagnose
from timeline.doctor.clean_lag import CleanLagEvidence
from timeline.metadata.records import CleanMetadata

V6_COW = "sample_table/cow/v6_nonpartitioned"
KIND = "clean-lag"


def test_clean_lag_1000_commits_cleaned_in_capped_steps(table_copy) -> None:
    path = table_copy(V6_COW)
    times = grow_history(path, 1000)
    age_tree(path)
    table = HudiTable.open(str(path))
    commits = [i.requested_time for i in table.timeline.commits().completed()]
    retained = commits[-10:]
    before = {t: rows(path, t) for t in retained} | {"now": rows(path)}
    full = plan_clean(table, CleanConfig.from_properties(table.config.props))
    found, plan, result, after = round_trip(path, KIND, before=reads(path, since=retained[0]))
    (finding,) = found
    evidence = finding.evidence
    assert isinstance(evidence, CleanLagEvidence)
    assert (evidence.last_clean, evidence.commits_since_last_clean, evidence.commits_to_clean) == (None, 1002, 992)
    assert evidence.next_earliest_commit_to_retain == commits[992] == retained[0]
    assert evidence.full_scan and "every partition is listed" in evidence.listing
    assert (evidence.partitions_to_list, evidence.files_to_list) == (1, 1003)
    assert (evidence.max_commits_to_clean, evidence.steps) == (100, (*commits[100:1000:100], commits[992]))
    # the preview: ten cleans, together deleting exactly what the table's own clean deletes
    assert [c.target for c in plan.changes if c.action == "clean step"] == list(evidence.steps)
    deletes = [c for c in plan.changes if c.action == "delete"]
    assert {c.target for c in deletes} == {d.path for d in full.files_to_delete} and len(deletes) == 991
    assert plan.bytes == full.bytes_to_delete
    assert result.ok and not result.skipped and len(result.done) == len(plan.changes)
    table = HudiTable.open(str(path))
    cleans = list(table.timeline.cleans().completed())
    assert len(cleans) == 10
    assert [table.read(c, CleanMetadata).earliest_commit_to_retain for c in cleans] == list(evidence.steps)
    assert after == []
    assert {t: rows(path, t) for t in retained} | {"now": rows(path)} == before
    assert times[-1] == commits[-1]


def test_clean_lag_the_tables_cap_and_threshold(table_copy) -> None:
    path = table_copy(V6_COW)
    grow_history(path, 60)
    age_tree(path)
    assert diagnose(HudiTable.open(str(path)), kinds=[KIND]) == []  # 52 commits to clean: under the threshold
    grow_history(path, 300, start="20261102000000000")
    update_config(HudiTable.open(str(path)).storage, str(path), {"hoodie.clean.max.commits.to.clean": "150"})
    age_tree(path)
    (finding,) = diagnose(HudiTable.open(str(path)), kinds=[KIND])
    evidence = finding.evidence
    assert isinstance(evidence, CleanLagEvidence)
    assert evidence.commits_to_clean == 352 and evidence.max_commits_to_clean == 150
    assert evidence.cap_source == "hoodie.clean.max.commits.to.clean" and len(evidence.steps) == 3


def test_clean_lag_after_a_real_clean_steps_from_its_earliest_retained_commit(table_copy) -> None:
    path = table_copy(V6_COW)
    grow_history(path, 20)
    table = HudiTable.open(str(path))
    config = CleanConfig.from_properties(table.config.props)  # the table's own: the latest 10 commits retained
    clean = schedule_clean(table, plan_clean(table, config), config, force=True)
    assert clean is not None
    run_pending_cleans(table, instant=clean.requested_time)
    table = HudiTable.open(str(path))
    (cleaned,) = table.timeline.cleans().completed()
    previous = table.read(cleaned, CleanMetadata).earliest_commit_to_retain
    after_clean = datetime.strptime(clean.requested_time[:14], "%Y%m%d%H%M%S") + timedelta(seconds=1)
    grown = grow_history(path, 1000, start=after_clean.strftime("%Y%m%d%H%M%S000"))  # then the cleaner was off
    age_tree(path)
    table = HudiTable.open(str(path))
    commits = [i.requested_time for i in table.timeline.commits().completed()]
    base = commits.index(previous)
    assert (len(commits), base) == (1022, 12)
    full = plan_clean(table, CleanConfig.from_properties(table.config.props))
    (finding,) = diagnose(table, kinds=[KIND])
    evidence = finding.evidence
    assert isinstance(evidence, CleanLagEvidence)
    assert (evidence.last_clean, evidence.commits_since_last_clean) == (clean.requested_time, 1000)
    assert evidence.previous_earliest_commit_to_retain == previous == commits[12]
    assert evidence.next_earliest_commit_to_retain == commits[1012] and evidence.commits_to_clean == 1000
    # Hudi's incremental path: only the partitions written since the previous clean's earliest retained commit
    assert evidence.full_scan is False and "every partition" not in evidence.listing
    stored = [f for f in path.iterdir() if f.is_file()]  # the partition (the base path) listed, .hoodie aside
    assert (evidence.partitions_to_list, evidence.files_to_list) == (1, len(stored))
    # the first capped step moves the earliest retained commit 100 commits past the previous clean's
    assert evidence.steps == (*commits[112:1012:100], commits[1012]) and evidence.steps[0] == commits[base + 100]
    found, plan, result, after = round_trip(path, KIND, before=reads(path, since=commits[1012]))
    assert found == [finding]
    deletes = [c for c in plan.changes if c.action == "delete"]
    assert {c.target for c in deletes} == {d.path for d in full.files_to_delete} and len(deletes) >= 1000
    assert result.ok and after == []
    table = HudiTable.open(str(path))
    cleans = [c for c in table.timeline.cleans().completed() if c.requested_time != clean.requested_time]
    assert [table.read(c, CleanMetadata).earliest_commit_to_retain for c in cleans] == list(evidence.steps)
    assert grown[-1] == commits[-1]
