"""Models that mirror the lake: tables and their instants. The lake is the source of truth;
a sync makes these rows equal to it."""

from __future__ import annotations

from django.db import models


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
    registered_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL)
    registered_at = models.DateTimeField(auto_now_add=True)

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
