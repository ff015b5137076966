"""Models that mirror the lake: tables and their instants. The lake is the source of truth;
a sync makes these rows equal to it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models

from console.models_approvals import Approvable, ApprovalStatus


class SyncStatus(models.TextChoices):
    NEVER = "never", "never synced"
    QUEUED = "queued", "queued"
    RUNNING = "running", "syncing"
    OK = "ok", "in sync"
    FAILED = "failed", "sync failed"


class Table(models.Model):
    """A registered Hudi table."""

    path = models.CharField(max_length=1024, unique=True, help_text="base path or URI")
    name = models.CharField(max_length=255)
    table_type = models.CharField(max_length=32)
    table_version = models.PositiveSmallIntegerField()
    layout_version = models.PositiveSmallIntegerField()
    partition_fields = models.JSONField(default=list)
    properties = models.JSONField(default=dict)
    metadata_table_enabled = models.BooleanField(default=False)
    sync_status = models.CharField(max_length=16, choices=SyncStatus.choices, default=SyncStatus.NEVER)
    sync_error = models.TextField(blank=True)
    sync_task_id = models.CharField(max_length=64, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)
    timeline_fingerprint = models.CharField(max_length=64, blank=True,
                                            help_text="hash of the timeline listing at the last sync")
    total_bytes = models.BigIntegerField(default=0)
    total_files = models.BigIntegerField(default=0)
    layout_summary = models.JSONField(default=dict, help_text="bytes per partition and file versions per "
                                                              "file group, from the last sync")
    auto_clean = models.BooleanField(default=False, help_text="plan cleans periodically")
    auto_max_files = models.BigIntegerField(default=1000, help_text="automatic approval up to this many files")
    auto_max_bytes = models.BigIntegerField(default=10 * 1024**3, help_text="automatic approval up to this many bytes")
    write_options = models.JSONField(default=dict, blank=True,
                                     help_text="Hudi writer options over hoodie.properties (the table's concurrency "
                                               "mode and lock: hoodie.write.concurrency.mode, hoodie.write.lock.*)")
    failed_writes = models.IntegerField(default=0, help_text="failed writes under the table's failed-writes "
                                                              "policy, at the last sync")
    registered_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    registered_at = models.DateTimeField(auto_now_add=True)
    location_error = models.TextField(blank=True, help_text="why the last change or sync was refused: the table's "
                                                            "folder no longer resolves where it was registered")
    folder_identity = models.CharField(max_length=64, blank=True,
                                       help_text="device:inode of the table's folder when it was registered (local "
                                                 "tables): every run holds the folder it opens against it")
    archival = models.JSONField(default=dict, blank=True,
                                help_text="what archival would do now, from the last sync (the library's plan with the "
                                          "table's writer options): active instants, how many it moves, its blockers")
    services = models.JSONField(default=dict, blank=True,
                                help_text="compaction and clustering at the last sync that changed something "
                                          "(console/services/compaction.py): delta commits since the last "
                                          "compaction, the pending table services, the compaction backlog of the "
                                          "last listing")
    sync_full = models.BooleanField(default=False, help_text="the next sync reads the whole timeline and lists the "
                                                             "whole table (a full re-sync asked for, or Cleanline "
                                                             "changed the table's files)")

    class Meta:
        ordering = ["name"]
        permissions = [
            ("register_table", "Can register tables"),
            ("plan_clean", "Can plan cleans"),
            ("approve_clean", "Can approve and run cleans"),
            ("create_savepoint", "Can create savepoints"),
            ("delete_savepoint", "Can delete savepoints"),
            ("restore_table", "Can restore tables and roll back writes"),
            ("change_settings", "Can change table settings"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_syncing(self) -> bool:
        """A sync is queued or running: the badge polls."""
        return self.sync_status in (SyncStatus.QUEUED, SyncStatus.RUNNING)

    @property
    def sync_failed(self) -> bool:
        return self.sync_status == SyncStatus.FAILED

    @property
    def active_instants(self) -> int | None:
        """Instants on the active timeline at the last sync (None before one)."""
        found = (self.archival or {}).get("active")
        return int(found) if found is not None else None

    @property
    def archivable_instants(self) -> int | None:
        """Instants archival would move now, at the last sync (None before one)."""
        found = (self.archival or {}).get("archivable")
        return int(found) if found is not None else None

    @property
    def figures_source(self) -> dict[str, Any]:
        """Where the size, layout and reclaimable figures came from (the last sync's listing:
        "metadata" or "storage", with when; the reclaimable figure may come from a plan, with its
        id): {} before the first sync."""
        return _with_moment((self.layout_summary or {}).get("source") or {})

    @property
    def reclaimable_source(self) -> dict[str, Any]:
        """Where the reclaimable figure came from: the listing's source, or a plan ("plan",
        with its id and when it was requested); {} before the first sync."""
        return _with_moment(self.reclaimable.get("source") or {})

    @property
    def reclaimable(self) -> dict[str, Any]:
        """What a clean under the table's own settings would free, from its last sync (the
        dashboard's column; {} before the first sync)."""
        found: dict[str, Any] = (self.layout_summary or {}).get("reclaimable") or {}
        return found


def _with_moment(source: dict[str, Any]) -> dict[str, Any]:
    """A figure's source with its "at" (ISO text in the JSON) as a datetime, for the pages."""
    at = source.get("at")
    return {**source, "at": datetime.fromisoformat(at)} if isinstance(at, str) and at else dict(source)


# The actions that write data: their pending instants are pending (and maybe failed) writes.
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")


class Instant(models.Model):
    """One instant of a table's timeline (active or archived) with a summary of its metadata."""

    table = models.ForeignKey(Table, related_name="instants", on_delete=models.CASCADE)
    requested_time = models.CharField(max_length=32)
    completion_time = models.CharField(max_length=32, blank=True)
    action = models.CharField(max_length=32)
    state = models.CharField(max_length=16)
    archived = models.BooleanField(default=False)
    partitions = models.IntegerField(default=0)
    files = models.IntegerField(default=0)
    records = models.BigIntegerField(default=0)
    bytes = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-requested_time", "action"]
        constraints = [
            models.UniqueConstraint(fields=["table", "requested_time", "action"], name="instant_unique_per_table"),
        ]
        indexes = [models.Index(fields=["table", "action", "state"]), models.Index(fields=["table", "requested_time"])]

    def __str__(self) -> str:
        return f"{self.requested_time} {self.action} {self.state}"


class CleanPlan(Approvable):
    """A clean plan under review: made by the library's planner (its files in a plan store), written
    to the timeline only once an admin approves it."""

    kind_name = "clean plan"
    audit_prefix = "clean.plan"
    page = "console:plan"

    table = models.ForeignKey(Table, related_name="clean_plans", on_delete=models.CASCADE)
    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PLANNING)
    settings = models.JSONField(default=dict, help_text="cleaning settings the plan was made with")
    engine = models.CharField(max_length=8, blank=True, help_text="the engine that made the plan (local or spark); "
                                                                   "its approval re-validates on the same")
    automatic = models.BooleanField(default=False)
    policy = models.CharField(max_length=32, blank=True)
    earliest_retained = models.CharField(max_length=32, blank=True)
    last_completed_commit = models.CharField(max_length=32, blank=True)
    incremental = models.BooleanField(default=False)
    files_to_delete = models.BigIntegerField(default=0)
    bytes_to_delete = models.BigIntegerField(default=0)
    files_kept = models.BigIntegerField(default=0)
    partitions_with_deletes = models.IntegerField(default=0)
    partitions_to_delete = models.JSONField(default=list)
    store = models.CharField(max_length=2048, blank=True, help_text="the plan store folder holding the plan's "
                             "files as Parquet (CLEANLINE_PLAN_STORE/table-<id>/plan-<id>)")
    partition_summary = models.JSONField(default=list, help_text="per partition: files, bytes, reclaimed, failed")
    warnings = models.JSONField(default=list)
    notes = models.JSONField(default=list)
    stale_reasons = models.JSONField(default=list)
    clean_instant = models.CharField(max_length=32, blank=True, help_text="the requested clean on the timeline")
    progress_done = models.BigIntegerField(default=0)
    progress_total = models.BigIntegerField(default=0)
    progress_bytes = models.BigIntegerField(default=0)
    listing = models.CharField(max_length=16, default="auto", help_text="where the requester asked the table to be "
                                                                         "listed from: auto, metadata or storage")
    listing_used = models.CharField(max_length=16, blank=True, help_text="where the planner listed the table from: "
                                                                          "metadata or storage")

    class Meta:
        ordering = ["-requested_at"]

    @property
    def deletes_nothing(self) -> bool:
        """The empty-plan rule, in its one home: a plan deleting no file and no partition has
        nothing to approve (Hudi schedules no clean for it either)."""
        return self.files_to_delete == 0 and not self.partitions_to_delete

    def approval_blocker(self) -> str:
        return ("Nothing to clean: this plan deletes no file, so there is nothing to approve (Hudi schedules no "
                "clean for it either)." if self.deletes_nothing else "")

    @property
    def summary(self) -> str:
        return f"clean {self.table.name}: {self.files_to_delete} files to delete"

    @property
    def bytes_changed(self) -> int | None:
        return self.bytes_to_delete

    @property
    def requester_name(self) -> str:
        return "automatic mode" if self.requested_by is None else self.requested_by.get_username()



class TableLock(models.Model):
    """At most one mutating run per table: a lease owned by one run (its random token), kept
    alive by the run's heartbeat and free for another run to take once it expires."""

    table = models.OneToOneField(Table, related_name="lock", on_delete=models.CASCADE)
    holder = models.CharField(max_length=128, help_text="what holds it, e.g. clean-plan:12")
    token = models.CharField(max_length=64, default="", help_text="the owning run's random token")
    acquired_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="the owner's last heartbeat")
    expires_at = models.DateTimeField(null=True, blank=True,
                                      help_text="free to take over from then on unless the owner beats again")


class AuditEvent(models.Model):
    """Append-only: who did what, when, with what parameters and result."""

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    username = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    table = models.ForeignKey(Table, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    parameters = models.JSONField(default=dict)
    result = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-pk"]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise PermissionError("audit events cannot be changed")
        super().save(*args, **kwargs)  # type: ignore[unreachable]  # django-stubs types pk as int; it is None until saved

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise PermissionError("audit events cannot be deleted")


class JobStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    COMPLETED = "completed", "completed"
    FAILED = "failed", "failed"


class Job(models.Model):
    """A long mutation other than an approved plan (a restore, a rollback, a pending clean found
    on the timeline), run by a Celery task."""

    class Kind(models.TextChoices):
        RESTORE = "restore", "restore"
        ROLLBACK = "rollback", "rollback"
        CLEAN = "clean", "pending clean"

    table = models.ForeignKey(Table, related_name="jobs", on_delete=models.CASCADE)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target = models.CharField(max_length=32, help_text="savepoint or instant time")
    writers_stopped = models.BooleanField(default=False, help_text="the admin said the table's Hudi writers are "
                                                                   "stopped: no lock known and a writer live did "
                                                                   "not refuse it (audited)")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    requested_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    task_id = models.CharField(max_length=64, blank=True)
    run_token = models.CharField(max_length=64, blank=True, help_text="the table lock token of the run that "
                                                                      "claimed the job")
    result = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    progress_done = models.BigIntegerField(default=0, help_text="files done (a clean), instants rolled back "
                                                                 "(a restore or rollback)")
    progress_total = models.BigIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]

    @property
    def is_active(self) -> bool:
        """Queued or running: its page polls."""
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)

    @property
    def is_completed(self) -> bool:
        return self.status == JobStatus.COMPLETED

    @property
    def is_restore(self) -> bool:
        return self.kind == Job.Kind.RESTORE

    @property
    def is_rollback(self) -> bool:
        return self.kind == Job.Kind.ROLLBACK

    @property
    def is_clean(self) -> bool:
        return self.kind == Job.Kind.CLEAN

    @property
    def number(self) -> int:
        """Its number among the table's jobs of its kind (rollback 1, 2, ...; restores and
        cleans count their own), not its id, which every kind shares."""
        return Job.objects.filter(table_id=self.table_id, kind=self.kind, pk__lte=self.pk).count()


class RetentionEstimate(models.Model):
    """What-if retention: the files and bytes a clean would free under each of several retention
    settings (the library's `what_if`, from one listing of the table), computed by a Celery
    task. It reads the table only: no lock, nothing written to the lake."""

    table = models.ForeignKey(Table, related_name="retention_estimates", on_delete=models.CASCADE)
    commits = models.JSONField(default=list, help_text="commits-retained settings tried")
    hours = models.JSONField(default=list, help_text="hours-retained settings tried")
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    requested_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    task_id = models.CharField(max_length=64, blank=True)
    result = models.JSONField(default=list, help_text="per setting: policy, retained, files and bytes freed, ...")
    listing = models.JSONField(default=dict, help_text="the listing the settings were planned over: files, bytes")
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]

    @property
    def is_active(self) -> bool:
        """Queued or running: its panel polls."""
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)

    @property
    def is_completed(self) -> bool:
        return self.status == JobStatus.COMPLETED


class ApiToken(models.Model):
    """A personal API token: acts as its user, with that user's role. Only the SHA-256 of the
    secret is stored; the secret is shown once, when the token is created."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, help_text="the secret's first characters, to recognise it")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the secret, hex")
    created_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["user", "name"], name="api_token_name_unique_per_user")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


# An archival in these states holds the table's one open archival (a second request gets it back).
OPEN_ARCHIVAL = (ApprovalStatus.DRAFT, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


class Archival(Approvable):
    """Archiving a table's active timeline as Hudi's archiver would now (the library's plan,
    `inspect.archival`, with the table's writer options): asked for by an operator, approved by
    an admin (the two-person rule of a clean), then run by a worker under the table's lock,
    where the timeline must still give the approved instants (else STALE, nothing written)."""

    kind_name = "archival"
    audit_prefix = "archival"
    page = "console:archival_detail"

    table = models.ForeignKey(Table, related_name="archivals", on_delete=models.CASCADE)
    instants = models.JSONField(default=list, help_text="the instants the plan moves, oldest first: requested_time, "
                                                        "action, completion_time")
    plan = models.JSONField(default=dict, help_text="the plan as requested: active timeline before and after, "
                                                    "archiver, keep counts, blockers, warnings")
    result = models.JSONField(default=dict, help_text="what the run did: instants archived, files written and "
                                                      "deleted, the active timeline after, the lock decisions")
    stale_reason = models.TextField(blank=True, help_text="why the timeline no longer gives the approved plan")

    class Meta:
        ordering = ["-requested_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["table"], condition=models.Q(status__in=OPEN_ARCHIVAL),
                                               name="one_open_archival_per_table")]

    def __str__(self) -> str:
        return f"archival #{self.pk} of {self.table_id}"

    @property
    def summary(self) -> str:
        return f"archive {self.table.name}: {len(self.instants)} instants"

    @property
    def expected(self) -> list[str]:
        """The approved plan's instant times: the run refuses any other."""
        return [i["requested_time"] for i in self.instants]


class AlertKind(models.TextChoices):
    CLEAN_FAILED = "clean_failed", "a clean failed"
    PLAN_STALE = "plan_stale", "a plan went stale"
    WRITE_PENDING = "write_pending", "a write pending too long"
    SAVEPOINT_OLD = "savepoint_old", "a savepoint holding back archival"
    RECLAIMABLE = "reclaimable", "reclaimable bytes over the threshold"
    MDT_OUT_OF_SYNC = "mdt_out_of_sync", "the metadata table out of sync"
    HEALTH_ERROR = "health_error", "the doctor found an error"
    HEALTH_WARNING = "health_warning", "the doctor found a warning"
    HEALTH_INFO = "health_info", "the doctor found something worth knowing"
    APPROVAL_WAITING = "approval_waiting", "a plan waits for approval"
    ACTIVE_TIMELINE = "active_timeline", "an active timeline longer than the threshold"
    BACKLOG_COMMITS = "backlog_commits", "a compaction backlog of more delta commits than the threshold"
    BACKLOG_BYTES = "backlog_bytes", "a compaction backlog of more log bytes than the threshold"
    SERVICE_INFLIGHT = "service_inflight", "a compaction or clustering inflight too long"


class AlertRule(models.Model):
    """One alert rule of one table (every kind exists per table, with its default threshold,
    once the table is checked): on or off, and its threshold (hours, days, bytes or instants by kind)."""

    table = models.ForeignKey(Table, related_name="alert_rules", on_delete=models.CASCADE)
    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(null=True, blank=True, help_text="hours, days, bytes or instants, by kind")
    custom = models.BooleanField(default=False, help_text="set for this table by an admin; else it follows the "
                                                          "lake-wide default (LakeAlertRule)")

    class Meta:
        ordering = ["table", "kind"]
        constraints = [models.UniqueConstraint(fields=["table", "kind"], name="alert_rule_unique_per_table")]


class Alert(models.Model):
    """A rule's condition found true: fired (and delivered) once, open until the condition is
    gone, then resolved."""

    table = models.ForeignKey(Table, related_name="alerts", on_delete=models.CASCADE)
    kind = models.CharField(max_length=32, choices=AlertKind.choices)
    key = models.CharField(max_length=128, help_text="what the alert is about: a plan, an instant, ...")
    message = models.TextField()
    fired_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    deliveries = models.JSONField(default=dict, help_text="channel -> outcome")

    class Meta:
        ordering = ["-fired_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["table", "kind", "key"], condition=models.Q(resolved_at=None),
                                               name="alert_open_once")]


class GrantStatus(models.TextChoices):
    PENDING = "pending"
    GRANTED = "granted"
    DECLINED = "declined"


class RoleGrant(models.Model):
    """A role given to a user (also when their account is created), with who asked for it and
    who decided: the admin role, while two-person approval is on, waits for a second admin's
    confirmation. Rows are kept: an approval by an account that the change's requester created
    or asked to promote is refused (`console.permissions.approval_refusal`)."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="role_grants")
    role = models.CharField(max_length=32, blank=True, help_text="the role given ('' for none)")
    account_created = models.BooleanField(default=False, help_text="given with the account's creation")
    status = models.CharField(max_length=16, choices=GrantStatus.choices)
    requested_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-requested_at"]
        constraints = [models.UniqueConstraint(fields=["user"], condition=models.Q(status="pending"),
                                               name="one_pending_grant_per_user")]


class UserSource(models.TextChoices):
    LOCAL = "local", "local"
    OIDC = "oidc", "OIDC"
    LDAP = "ldap", "LDAP"


class Profile(models.Model):
    """Where a user comes from: a local account (made on the People page or by `manage.py`), or
    one created at its first sign-in through OIDC or LDAP, whose role the identity provider gives
    again at every sign-in (`console.signin`). A user without a profile is local."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="profile")
    source = models.CharField(max_length=8, choices=UserSource.choices, default=UserSource.LOCAL)
    external_id = models.CharField(max_length=1024, blank=True,
                                   help_text="OIDC: the issuer and subject; LDAP: the user's DN")
    role_reason = models.CharField(max_length=1024, blank=True,
                                   help_text="the claim values or groups that gave the role at the last sign-in")
    signed_in_at = models.DateTimeField(null=True, blank=True, help_text="the last sign-in through the provider")
    email_verified = models.BooleanField(default=False, help_text="OIDC: the provider's email_verified claim was "
                                                                  "true at the last sign-in")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "external_id"], condition=~models.Q(external_id=""),
                                               name="profile_external_id_unique_per_source")]

    def __str__(self) -> str:
        return f"{self.user_id} ({self.source})"


class IdentityLink(models.Model):
    """Two accounts of one person, as an admin who is neither of them said (the People page): the
    two-person rule counts them as one (`console.lineage`). One row per pair, the lower id first."""

    user = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="+")
    other = models.ForeignKey("auth.User", on_delete=models.CASCADE, related_name="+")
    linked_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    linked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["linked_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["user", "other"], name="identity_link_once_per_pair"),
                       models.CheckConstraint(condition=models.Q(user__lt=models.F("other")),
                                              name="identity_link_lower_id_first")]


# The table doctor's health and repairs (issue 28), the history's snapshots and the alerts set up in
# the console (issue 30), the write-stats index (issue 38), compactions (issue 41) and table version
# changes (issue 42): their own modules, imported here so that Django registers their models.
from console import (  # noqa: E402,F401
    models_alerts,
    models_compaction,
    models_health,
    models_history,
    models_versions,
    models_write_stats,
)


class Preference(models.Model):
    """One user's choices for how the console shows things: the time zone every time is shown
    in (an IANA name; empty: the browser's)."""

    user = models.OneToOneField("auth.User", on_delete=models.CASCADE, related_name="preference")
    time_zone = models.CharField(max_length=64, blank=True, help_text="IANA zone; empty: the browser's")


class SyncMark(models.Model):
    """What the last successful sync of a table saw, so that the next one reads only what changed:
    the timeline folder's file names (zlib-compressed, one a line, as of a sync, with the names
    added and removed since, so that a sync of a few new instants rewrites only those), a hash of
    hoodie.properties, and a hash of the archived timeline's folder listing."""

    table = models.OneToOneField(Table, related_name="sync_mark", on_delete=models.CASCADE)
    names = models.BinaryField(default=b"")
    added = models.JSONField(default=list, help_text="names come since `names` was written")
    removed = models.JSONField(default=list, help_text="names gone since `names` was written")
    watched = models.JSONField(default=dict, help_text="the newest state files' sizes and modification times, to "
                                                       "see one rewritten in place")
    config_digest = models.CharField(max_length=64, blank=True)
    archive_fingerprint = models.CharField(max_length=64, blank=True)
    archival_at = models.DateTimeField(null=True, blank=True, help_text="when the table's archival summary was "
                                                                        "last planned")
    writing = models.JSONField(default=dict, help_text="the writes pending when the table was first listed (and at "
                                                       "each listing since that found one), and how many listings "
                                                       "that took: while any, a sync that finds the timeline moved "
                                                       "lists the table again")

    def __str__(self) -> str:
        return f"sync mark of {self.table_id}"
