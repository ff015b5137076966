"""Clean plans through every transition: planning, draft, stale, rejected, approved, running,
completed and failed, with the table lock and the audit entries each writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from console import services
from console.models import AuditEvent, CleanPlan, Table
from console.models_approvals import ApprovalStatus
from console.selectors import stored_plan
from tests.console.helpers import SHORT_RETENTION, person
from tests.helpers import rows
from timeline import HudiTable
from timeline.savepoint import create_savepoint

TABLE = "sample_table/mor/avro/v9_txns_simple_nometa"  # the `table` fixture (tests/console/conftest.py) registers it

pytestmark = pytest.mark.django_db


def drafted(table: Table, user: User, **overrides: object) -> CleanPlan:
    plan = services.plan_request(table=table, user=user, overrides={**SHORT_RETENTION, **overrides})
    assert plan.status == ApprovalStatus.PLANNING
    return services.plan_build(plan=plan)


def actions(table: Table) -> list[str]:
    return list(AuditEvent.objects.filter(table=table).order_by("pk").values_list("action", flat=True))


def test_plan_draft_stores_every_file_with_reasons_and_totals(table: Table) -> None:
    plan = drafted(table, person("op", "operator"))
    lake = HudiTable.open(table.path)
    assert plan.status == ApprovalStatus.DRAFT and plan.policy == "KEEP_LATEST_COMMITS"
    files = list(stored_plan(plan).iter_rows())  # type: ignore[union-attr]
    assert plan.files_to_delete == sum(1 for f in files if f.delete) > 0
    assert plan.files_kept == sum(1 for f in files if not f.delete) > 0
    assert plan.bytes_to_delete == sum(f.size for f in files if f.delete)
    assert all(f.reason for f in files)
    assert plan.store.startswith(services.plan_folder(plan))
    assert not lake.timeline.cleans()  # nothing touches the timeline before approval
    assert any("retention check off: retains 1 commits, fewer than the table's configured" in n for n in plan.notes)
    assert actions(table) == ["table.registered", "clean.plan.requested", "clean.plan.built"]


def test_plan_approve_run_complete_and_the_report(table: Table) -> None:
    plan = drafted(table, person("op", "operator"))
    path = Path(table.path.removeprefix("file:"))
    latest = rows(path)
    plan = services.plan_approve(plan=plan, user=person("boss", "admin"))
    assert plan.status == ApprovalStatus.APPROVED and plan.clean_instant
    lake = HudiTable.open(table.path)
    assert [i.requested_time for i in lake.timeline.cleans().pending()] == [plan.clean_instant]
    plan = services.plan_run(plan=plan, task_id="t-1")
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_done == plan.files_to_delete
    assert plan.progress_bytes == plan.bytes_to_delete
    files = list(stored_plan(plan).iter_rows())  # type: ignore[union-attr]
    assert {f.outcome for f in files if f.delete} == {"deleted"} and {f.outcome for f in files if not f.delete} == {""}
    assert sum(p["reclaimed"] for p in plan.partition_summary) == plan.bytes_to_delete
    assert rows(path) == latest
    assert actions(table)[-2:] == ["clean.plan.approved", "clean.run.completed"]


def test_plan_run_without_its_plan_store_still_runs_the_approved_clean(table: Table) -> None:
    """The clean is on the timeline once approved: a store removed by hand (or a plan made
    before stores) must not leave it pending; sizes come from listings, the report from the
    completed clean."""
    plan = drafted(table, person("op", "operator"))
    path = Path(table.path.removeprefix("file:"))
    latest = rows(path)
    plan = services.plan_approve(plan=plan, user=person("boss", "admin"))
    stored_plan(plan).delete()  # type: ignore[union-attr]
    plan = services.plan_run(plan=plan, task_id="t-1")
    assert plan.status == ApprovalStatus.COMPLETED and plan.progress_bytes == plan.bytes_to_delete
    lake = HudiTable.open(table.path)
    assert not lake.timeline.cleans().pending() and rows(path) == latest


def test_plan_approval_that_died_after_writing_its_clean_is_adopted_on_redelivery(table: Table) -> None:
    """The clean's time is on the row before its file is on the timeline: a redelivered
    approval finds the clean its first delivery wrote and approves the plan with it (no second
    clean, no return to DRAFT); a recorded time whose file was never written is planned again."""
    admin = person("boss", "admin")
    plan = services.plan_approve(plan=drafted(table, person("op", "operator")), user=admin)
    written = plan.clean_instant
    CleanPlan.objects.filter(pk=plan.pk).update(status=ApprovalStatus.APPROVING)  # died before saying APPROVED
    plan = services.plan_approve(plan=CleanPlan.objects.get(pk=plan.pk), user=admin)
    assert plan.status == ApprovalStatus.APPROVED and plan.clean_instant == written
    lake = HudiTable.open(table.path)
    assert [i.requested_time for i in lake.timeline.cleans()] == [written]
    assert AuditEvent.objects.filter(action="clean.plan.approved", parameters__adopted=True).count() == 1
    assert services.plan_run(plan=plan).status == ApprovalStatus.COMPLETED


def test_plan_approval_whose_recorded_clean_was_never_written_plans_again(table: Table) -> None:
    admin = person("boss", "admin")
    again = drafted(table, person("op", "operator"))
    never = "20990101000000000"  # recorded, then the approval died before writing the file
    CleanPlan.objects.filter(pk=again.pk).update(status=ApprovalStatus.APPROVING, clean_instant=never)
    again = services.plan_approve(plan=CleanPlan.objects.get(pk=again.pk), user=admin)
    assert again.status == ApprovalStatus.APPROVED and again.clean_instant not in ("", never)
    assert [i.requested_time for i in HudiTable.open(table.path).timeline.cleans().pending()] == [again.clean_instant]


def test_plan_goes_stale_when_a_new_savepoint_protects_a_file(table: Table) -> None:
    plan = drafted(table, person("op", "operator"), policy="KEEP_LATEST_FILE_VERSIONS", file_versions_retained=1)
    lake = HudiTable.open(table.path)
    doomed = next(f for f in stored_plan(plan).deletes() if not f.file_name.startswith("."))  # type: ignore[union-attr]
    assert doomed is not None
    target = next(i for i in lake.timeline.commits().completed() if i.requested_time == doomed.base_instant)
    create_savepoint(lake, target.requested_time)
    plan = services.plan_approve(plan=plan, user=person("boss", "admin"))
    assert plan.status == ApprovalStatus.STALE
    assert any(doomed.path in reason and "savepoint" in reason for reason in plan.stale_reasons)
    assert not HudiTable.open(table.path).timeline.cleans()
    assert actions(table)[-1] == "clean.plan.stale"


def test_plan_reject_and_rules_on_who_decides(table: Table) -> None:
    operator = person("op", "operator")
    plan = drafted(table, operator)
    with pytest.raises(ValidationError, match="approver must differ"):
        services.plan_approve(plan=plan, user=operator)
    plan = services.plan_reject(plan=plan, user=person("boss", "admin"), note="too aggressive")
    assert plan.status == ApprovalStatus.REJECTED and plan.decision_note == "too aggressive"
    with pytest.raises(ValidationError, match="Only a draft"):
        services.plan_approve(plan=plan, user=person("boss2", "admin"))
    assert actions(table)[-1] == "clean.plan.rejected"


def test_plan_lock_conflict_is_a_clear_message(table: Table) -> None:
    plan = drafted(table, person("op", "operator"))
    with services.table_lock(table, "restore:7"):
        with pytest.raises(services.TableBusy, match="busy: restore:7"):
            services.plan_approve(plan=plan, user=person("boss", "admin"))
        with services.table_lock(table, "restore:7"):  # the same holder may re-enter
            pass
    assert services.plan_approve(plan=plan, user=person("boss2", "admin")).status == ApprovalStatus.APPROVED


def test_plan_run_failure_is_truthful(table: Table) -> None:
    plan = services.plan_approve(plan=drafted(table, person("op", "operator")), user=person("boss", "admin"))
    lake = HudiTable.open(table.path)
    (pending,) = lake.timeline.cleans().pending()
    for status in lake.timeline.files_of(pending).values():
        Path(status.path).unlink()  # someone removed the requested clean
    plan = services.plan_run(plan=plan)
    assert plan.status == ApprovalStatus.FAILED and "no pending clean" in plan.error
    assert actions(table)[-1] == "clean.run.failed"


def test_plan_audit_is_append_only(table: Table) -> None:
    drafted(table, person("op", "operator"))
    event = AuditEvent.objects.filter(table=table).first()
    assert event is not None
    event.result = "changed"
    with pytest.raises(PermissionError):
        event.save()
    with pytest.raises(PermissionError):
        event.delete()


def test_plan_short_retention_is_refused_unless_allowed_and_then_recorded(table: Table) -> None:
    """The library's retention minimum, asked of the console: a plan keeping fewer commits than
    the table's configured 10 is refused with nothing stored; allowed explicitly, its settings
    and audit entry say so and the library plans it with the check off."""
    user = person("op", "operator")
    with pytest.raises(ValidationError) as refused:
        services.plan_request(table=table, user=user, overrides={"commits_retained": 1})
    assert "retains 1 commits, fewer than the table's configured 10" in refused.value.messages[0]
    assert not CleanPlan.objects.exists() and not AuditEvent.objects.exclude(action="table.registered").exists()
    plan = services.plan_request(table=table, user=user, overrides=SHORT_RETENTION)
    assert plan.settings["cleanline.clean.enforce.retention"] == "false"
    assert AuditEvent.objects.get(action="clean.plan.requested").parameters["cleanline.clean.enforce.retention"] \
        == "false"
    plan = services.plan_build(plan=plan)
    assert plan.status == ApprovalStatus.DRAFT and plan.files_to_delete > 0
    at_minimum = services.plan_build(plan=services.plan_request(table=table, user=user,
                                                                overrides={"commits_retained": 10}))
    assert at_minimum.status == ApprovalStatus.DRAFT and "cleanline.clean.enforce.retention" not in at_minimum.settings


def test_plan_approval_revalidates_on_the_engine_that_made_the_plan(table: Table, settings, spark) -> None:
    """The engine is recorded when the plan is made (`CleanPlan.engine`); its approval, a task,
    re-makes the plan there even if the table's size or the threshold changed meanwhile."""
    tracker = spark.sparkContext.statusTracker()
    jobs = lambda: len(tracker.getJobIdsForGroup(None))  # noqa: E731
    settings.CLEANLINE_SPARK_MIN_FILES = 1
    on_spark = drafted(table, person("op", "operator"))
    settings.CLEANLINE_SPARK_MIN_FILES = 0  # Spark off for new plans
    local = drafted(table, person("op2", "operator"))
    assert (on_spark.engine, local.engine) == ("spark", "local")
    before = jobs()
    approved = services.plan_approve(plan=on_spark, user=person("boss", "admin"))
    assert approved.status == ApprovalStatus.APPROVED and jobs() > before  # re-made on Spark (Spark is off now)
    settings.CLEANLINE_SPARK_MIN_FILES = 1  # Spark on for every table now; the local plan stays local
    assert services.plan_run(plan=approved).status == ApprovalStatus.COMPLETED
    before = jobs()
    stale = services.plan_approve(plan=local, user=person("boss2", "admin"))
    assert stale.status == ApprovalStatus.STALE and jobs() == before  # re-made in this process: its files are gone


def test_plan_approval_request_claims_the_draft_once_and_the_task_decides(table: Table) -> None:
    from console.tasks import approve_clean_plan

    plan = drafted(table, person("op", "operator"))
    boss = person("boss", "admin")
    asked = services.plan_approval_request(plan=plan, user=boss)
    assert asked.status == ApprovalStatus.APPROVING and asked.decided_by == boss
    with pytest.raises(ValidationError, match="already being approved"):
        services.plan_approval_request(plan=plan, user=person("boss2", "admin"))
    assert actions(table)[-1] == "clean.plan.approval.requested"
    assert approve_clean_plan.apply(args=(plan.pk,)).get() == ApprovalStatus.APPROVED
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.APPROVED and plan.clean_instant
    assert approve_clean_plan.apply(args=(plan.pk,)).get() == "nothing to approve"


def test_plan_approval_task_never_leaves_a_plan_approving(table: Table) -> None:
    """An approver deactivated (or no longer allowed) before the task runs, or the table
    breaking meanwhile, puts the claim back to DRAFT with the reason."""
    from console.tasks import approve_clean_plan

    plan = drafted(table, person("op", "operator"))
    boss = person("boss", "admin")
    services.plan_approval_request(plan=plan, user=boss)
    boss.is_active = False
    boss.save()
    assert approve_clean_plan.apply(args=(plan.pk,)).get() == "refused"
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and "may no longer approve" in plan.error and plan.decided_by is None
    other = person("boss2", "admin")
    services.plan_approval_request(plan=plan, user=other)
    Path(table.path.removeprefix("file:"), ".hoodie", "hoodie.properties").unlink()  # the table breaks
    (Path(table.path.removeprefix("file:")) / ".hoodie" / "hoodie.properties.backup").unlink(missing_ok=True)
    approve_clean_plan.apply(args=(plan.pk,))
    plan.refresh_from_db()
    assert plan.status == ApprovalStatus.DRAFT and plan.error


def test_plan_retention_above_the_table_instant_count_is_refused_with_the_bound(table: Table) -> None:
    """commits_retained 10^30 (and file versions above the instant count) refused naming the
    table's instant count, before anything is stored; the count itself is accepted."""
    user = person("op", "operator")
    count = table.instants.count()
    assert count > 10
    for overrides in ({"commits_retained": 10**30}, {"policy": "KEEP_LATEST_FILE_VERSIONS",
                                                      "file_versions_retained": count + 1}):
        with pytest.raises(ValidationError) as refused:
            services.plan_request(table=table, user=user, overrides=overrides)
        assert f"is above {count}, the table's instant count" in refused.value.messages[0]
    assert not CleanPlan.objects.exists()
    plan = services.plan_request(table=table, user=user, overrides={"commits_retained": count})
    assert plan.settings["hoodie.clean.commits.retained"] == str(count)

