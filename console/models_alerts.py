"""Alerts set up in the console (issue 30): the lake-wide default of each rule and the channels
alerts go to, edited by admins (console/services/alert_setup.py). The settings are the
defaults: a kind with no LakeAlertRule follows the built-in default and its CLEANLINE_ALERT_*
threshold; while no AlertChannel exists, CLEANLINE_ALERT_EMAILS and CLEANLINE_ALERT_WEBHOOKS are
the channels, and once one does the console's list replaces them. Imported by console/models.py."""

from __future__ import annotations

from django.db import models


class LakeAlertRule(models.Model):
    """The lake-wide default of one rule: on or off, and its threshold (empty: the setting's).
    Every table's rule follows it unless an admin set that table's own (`AlertRule.custom`)."""

    kind = models.CharField(max_length=32, unique=True)
    enabled = models.BooleanField(default=True)
    threshold = models.FloatField(null=True, blank=True, help_text="hours, days, bytes or instants, by kind")
    changed_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["kind"]


class ChannelKind(models.TextChoices):
    EMAIL = "email", "e-mail address"
    WEBHOOK = "webhook", "webhook"


class AlertChannel(models.Model):
    """Where alerts go: an e-mail address, or a webhook URL (a secret to Slack and the like:
    the pages and the audit log show only its host)."""

    kind = models.CharField(max_length=16, choices=ChannelKind.choices)
    target = models.CharField(max_length=2048, help_text="the e-mail address or the webhook's URL")
    enabled = models.BooleanField(default=True)
    added_by = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "pk"]
        constraints = [models.UniqueConstraint(fields=["kind", "target"], name="alert_channel_unique")]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"
