"""Writes, by entity (HackSoft style: `<entity>_<action>(*, ...)`). Lake rules stay in `timeline/`;
these modules mirror what the library reads and record who did what."""

from __future__ import annotations

from console.services.archival import (
    archival_approve,
    archival_decline,
    archival_holder,
    archival_request,
    archival_run,
)
from console.services.audit import audit
from console.services.locks import Lease, LockLost, TableBusy, check_table_free, live_lock, table_lock, table_lock_break
from console.services.operations import (
    job_holder,
    job_request,
    job_run,
    metadata_table_drop,
    savepoint_create,
    savepoint_delete,
)
from console.services.people import (
    person_admin_confirm,
    person_admin_decline,
    person_create,
    person_deactivate,
    person_reactivate,
    person_role_change,
)
from console.services.plans import (
    auto_clean,
    plan_approval_request,
    plan_approve,
    plan_build,
    plan_folder,
    plan_holder,
    plan_reject,
    plan_request,
    plan_run,
    plan_store,
    plans_request,
)
from console.services.preferences import preference_time_zone
from console.services.retention import estimate_request, estimate_run
from console.services.runs import run_gave_up
from console.services.tables import (
    SyncResult,
    fingerprint,
    is_allowed,
    summary,
    sync_fingerprint,
    table_register,
    table_settings_update,
    table_sync,
    table_sync_after_change,
    table_sync_failed,
    table_sync_queue,
    table_sync_request,
    tables_register,
    tables_sync_request,
)
from console.services.tokens import token_create, token_revoke, token_user

__all__ = [
    "plans_request",
    "tables_sync_request",
    "tables_register",
    "preference_time_zone",
    "archival_approve",
    "archival_decline",
    "archival_holder",
    "archival_request",
    "archival_run",
    "estimate_request",
    "estimate_run",
    "Lease",
    "LockLost",
    "SyncResult",
    "TableBusy",
    "audit",
    "auto_clean",
    "check_table_free",
    "fingerprint",
    "is_allowed",
    "job_holder",
    "job_request",
    "job_run",
    "live_lock",
    "metadata_table_drop",
    "plan_approval_request",
    "plan_approve",
    "plan_build",
    "plan_holder",
    "plan_reject",
    "plan_request",
    "plan_run",
    "plan_folder",
    "plan_store",
    "person_admin_confirm",
    "person_admin_decline",
    "person_create",
    "person_deactivate",
    "person_reactivate",
    "person_role_change",
    "run_gave_up",
    "savepoint_create",
    "savepoint_delete",
    "summary",
    "table_lock",
    "table_lock_break",
    "table_register",
    "table_settings_update",
    "table_sync",
    "table_sync_failed",
    "sync_fingerprint",
    "table_sync_after_change",
    "table_sync_queue",
    "table_sync_request",
    "token_create",
    "token_revoke",
    "token_user",
]
