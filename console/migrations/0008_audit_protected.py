"""The audit log is append-only in the database too: triggers refuse every UPDATE and DELETE of a
row of console_auditevent, on SQLite and on PostgreSQL.

One UPDATE is let through: the one Django's on_delete=SET_NULL issues when a table or a user is
deleted, which only clears table_id or user_id and leaves every other column as it was; the event
survives, with its username, action, parameters and result.

TRUNCATE (PostgreSQL's `manage.py flush`) fires no row trigger; emptying the whole database stays
possible, changing or removing single events does not."""

from __future__ import annotations

from typing import Any

from django.db import migrations

MESSAGE = "audit events are append-only"

# True when the new row differs from the old one only by a table_id or user_id set to NULL.
# SQLite's IS and PostgreSQL's IS NOT DISTINCT FROM both compare NULLs as equal.
_ALLOWED_UPDATE = """(
    NEW.id {same} OLD.id AND NEW.at {same} OLD.at AND NEW.username {same} OLD.username
    AND NEW.action {same} OLD.action AND NEW.parameters {same} OLD.parameters AND NEW.result {same} OLD.result
    AND (NEW.table_id {same} OLD.table_id OR NEW.table_id IS NULL)
    AND (NEW.user_id {same} OLD.user_id OR NEW.user_id IS NULL)
)"""

SQLITE_FORWARD = [
    f"""CREATE TRIGGER console_auditevent_no_update BEFORE UPDATE ON console_auditevent
    WHEN NOT {_ALLOWED_UPDATE.format(same="IS")}
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;""",
    f"""CREATE TRIGGER console_auditevent_no_delete BEFORE DELETE ON console_auditevent
    BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END;""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS console_auditevent_no_update;",
    "DROP TRIGGER IF EXISTS console_auditevent_no_delete;",
]

POSTGRESQL_FORWARD = [
    f"""CREATE OR REPLACE FUNCTION console_auditevent_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
    END;
    $$;""",
    f"""CREATE TRIGGER console_auditevent_no_update BEFORE UPDATE ON console_auditevent
    FOR EACH ROW WHEN (NOT {_ALLOWED_UPDATE.format(same="IS NOT DISTINCT FROM")})
    EXECUTE FUNCTION console_auditevent_refuse();""",
    """CREATE TRIGGER console_auditevent_no_delete BEFORE DELETE ON console_auditevent
    FOR EACH ROW EXECUTE FUNCTION console_auditevent_refuse();""",
]
POSTGRESQL_REVERSE = [
    "DROP TRIGGER IF EXISTS console_auditevent_no_update ON console_auditevent;",
    "DROP TRIGGER IF EXISTS console_auditevent_no_delete ON console_auditevent;",
    "DROP FUNCTION IF EXISTS console_auditevent_refuse();",
]

STATEMENTS = {
    "sqlite": (SQLITE_FORWARD, SQLITE_REVERSE),
    "postgresql": (POSTGRESQL_FORWARD, POSTGRESQL_REVERSE),
}


def _statements(schema_editor: Any, index: int) -> list[str]:
    vendor = schema_editor.connection.vendor
    if vendor not in STATEMENTS:
        raise NotImplementedError(f"console_auditevent protection: no triggers for the {vendor!r} database")
    return STATEMENTS[vendor][index]


def protect(apps: Any, schema_editor: Any) -> None:
    for statement in _statements(schema_editor, 0):
        schema_editor.execute(statement, params=None)


def unprotect(apps: Any, schema_editor: Any) -> None:
    for statement in _statements(schema_editor, 1):
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ('console', '0007_layout_summary'),
    ]

    operations = [
        migrations.RunPython(protect, unprotect),
    ]
