"""Data steps of the console's migrations, run forward on rows made by the schema before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(target: tuple[str, str]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    executor.loader.build_graph()
    return executor


def test_migration_0015_retires_plans_under_review_whose_files_were_rows() -> None:
    old = migrate(("console", "0014_job_progress")).loader.project_state(("console", "0014_job_progress")).apps
    table = old.get_model("console", "Table").objects.create(
        name="t", path="/lake/t", table_type="COPY_ON_WRITE", table_version=6, layout_version=1)
    plans = {status: old.get_model("console", "CleanPlan").objects.create(table=table, status=status, settings={})
             for status in ("draft", "approving", "approved", "completed")}
    old.get_model("console", "PlanFile").objects.create(
        plan=plans["draft"], partition="p", file_name="f.parquet", path="/lake/t/p/f.parquet", size=1, delete=True,
        reason="r", file_id="f", base_instant="1")
    try:
        new = migrate(("console", "0015_plan_store")).loader.project_state(("console", "0015_plan_store")).apps
        found = {p.pk: p for p in new.get_model("console", "CleanPlan").objects.all()}
        assert found[plans["draft"].pk].status == found[plans["approving"].pk].status == "stale"
        assert "plan again" in found[plans["draft"].pk].stale_reasons[0]
        assert found[plans["approved"].pk].status == "approved" and found[plans["completed"].pk].status == "completed"
    finally:
        migrate(("console", MigrationExecutor(connection).loader.graph.leaf_nodes("console")[0][1]))


def test_migration_0029_keeps_a_tables_changed_alert_rules_as_its_own() -> None:
    old = migrate(("console", "0028_table_snapshots")).loader.project_state(("console", "0028_table_snapshots")).apps
    one, two = (old.get_model("console", "Table").objects.create(
        name=name, path=f"/lake/{name}", table_type="COPY_ON_WRITE", table_version=6, layout_version=1)
        for name in ("t", "u"))
    rule = old.get_model("console", "AlertRule").objects
    made = {"default_on": rule.create(table=one, kind="clean_failed", enabled=True),
            "default_off": rule.create(table=one, kind="health_info", enabled=False),
            "turned_off": rule.create(table=one, kind="plan_stale", enabled=False),
            "turned_on": rule.create(table=two, kind="health_info", enabled=True),
            "threshold": rule.create(table=one, kind="reclaimable", enabled=True, threshold=5.0)}
    try:
        new = migrate(("console", "0029_alerts_set_up_in_console")).loader.project_state(
            ("console", "0029_alerts_set_up_in_console")).apps
        rules = new.get_model("console", "AlertRule").objects
        custom = {name: rules.get(pk=row.pk).custom for name, row in made.items()}
        assert custom == {"default_on": False, "default_off": False, "turned_off": True, "turned_on": True,
                          "threshold": True}
    finally:
        migrate(("console", MigrationExecutor(connection).loader.graph.leaf_nodes("console")[0][1]))


def test_migration_0031_makes_the_next_sync_of_every_table_a_full_one() -> None:
    """Issue 38: a full sync indexes the huge commits synced before the write-stats index existed."""
    old = migrate(("console", "0030_sync_mark")).loader.project_state(("console", "0030_sync_mark")).apps
    made = [old.get_model("console", "Table").objects.create(
        name=name, path=f"/lake/{name}", table_type="COPY_ON_WRITE", table_version=6, layout_version=1)
        for name in ("t", "u")]
    try:
        new = migrate(("console", "0031_write_stats_index")).loader.project_state(
            ("console", "0031_write_stats_index")).apps
        assert [t.sync_full for t in new.get_model("console", "Table").objects.filter(pk__in=[m.pk for m in made])] == [
            True, True]
    finally:
        migrate(("console", MigrationExecutor(connection).loader.graph.leaf_nodes("console")[0][1]))


def test_migration_0035_keeps_every_approvable_change_with_its_meaning_and_goes_back() -> None:
    """Issue 40: one vocabulary of approval states. An archival's "pending" becomes "draft" and its
    "declined" "rejected" (a clean plan's and a repair's words already), every row is kept with
    who asked and decided, when, and the note; migrating back restores the old words."""
    before = ("console", "0033_table_folder_identity")
    old = migrate(before).loader.project_state(before).apps
    ada = old.get_model("auth", "User").objects.create(username="ada-0035")
    bob = old.get_model("auth", "User").objects.create(username="bob-0035")
    table = old.get_model("console", "Table").objects.create(
        name="t", path="/lake/t-0035", table_type="COPY_ON_WRITE", table_version=6, layout_version=1)
    archival = old.get_model("console", "Archival").objects
    archivals = {status: archival.create(table=table, status=status, requested_by=ada, decided_by=bob,
                                         decision_note=f"note {status}", instants=[{"requested_time": "1"}])
                 for status in ("declined", "completed", "stale", "failed")}
    archivals["pending"] = archival.create(table=table, status="pending", requested_by=ada)
    plans = {status: old.get_model("console", "CleanPlan").objects.create(
        table=table, status=status, settings={}, requested_by=ada, decided_by=bob, decision_note=status)
        for status in ("planning", "draft", "approving", "approved", "running", "completed", "failed", "stale",
                       "rejected")}
    repairs = {status: old.get_model("console", "Repair").objects.create(
        table=table, kind="orphans", status=status, requested_by=ada, decision_note=status)
        for status in ("draft", "approved", "running", "completed", "failed", "stale", "rejected")}
    kept = ("requested_by_id", "decided_by_id", "decision_note", "requested_at")

    def rows(apps: object, model: str, made: dict[str, object]) -> dict[str, tuple[object, ...]]:
        found = apps.get_model("console", model).objects  # type: ignore[attr-defined]
        return {was: tuple(getattr(found.get(pk=row.pk), f) for f in ("status", *kept))  # type: ignore[attr-defined]
                for was, row in made.items()}

    def values(made: dict[str, object], words: dict[str, str]) -> dict[str, tuple[object, ...]]:
        return {was: (words.get(was, was), *(getattr(row, f) for f in kept)) for was, row in made.items()}

    after = ("console", "0036_one_open_archival")
    try:
        new = migrate(after).loader.project_state(after).apps
        assert rows(new, "Archival", archivals) == values(archivals, {"pending": "draft", "declined": "rejected"})
        assert rows(new, "CleanPlan", plans) == values(plans, {})
        assert rows(new, "Repair", repairs) == values(repairs, {})
        # the table's one open archival is still held by the waiting one, under its new word
        assert new.get_model("console", "Archival").objects.filter(table_id=table.pk, status="draft").count() == 1
        back = migrate(before).loader.project_state(before).apps
        assert rows(back, "Archival", archivals) == values(archivals, {})
        assert rows(back, "CleanPlan", plans) == values(plans, {})
    finally:
        migrate(("console", MigrationExecutor(connection).loader.graph.leaf_nodes("console")[0][1]))
