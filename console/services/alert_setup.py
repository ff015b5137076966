"""Alerts set up in the console by an admin (issue 30): the lake-wide default of each rule, and
the channels alerts go to (e-mail addresses, webhooks) with a test message per channel. Every
change is audited (`alert.defaults.changed`, `alert.channel.added`, `.changed`, `.removed`,
`.tested`); a webhook's URL is a secret, so the audit log names only its host. What is in effect
is read by console/alerts_setup.py."""

from __future__ import annotations

import logging
from datetime import UTC
from typing import Any
from urllib.parse import urlparse
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from console import outbound, zones
from console.alerts import THRESHOLDS
from console.alerts_setup import Channel, channel_of, host_of
from console.models import AlertKind, AlertRule
from console.models_alerts import AlertChannel, ChannelKind, LakeAlertRule
from console.services.audit import audit

logger = logging.getLogger(__name__)


def lake_rules_update(*, user: User | None, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Save the lake-wide default of every rule (`enabled_<kind>`, `threshold_<kind>`: empty
    means the setting's); every table's rule that follows the lake (not set for its table by an
    admin) follows at once. Audited with each default's new state."""
    changed: dict[str, dict[str, Any]] = {}
    with transaction.atomic():
        for kind in AlertKind.values:
            enabled = bool(values.get(f"enabled_{kind}"))
            threshold = values.get(f"threshold_{kind}") if kind in THRESHOLDS else None
            LakeAlertRule.objects.update_or_create(kind=kind, defaults={"enabled": enabled, "threshold": threshold,
                                                                        "changed_by": user})
            AlertRule.objects.filter(kind=kind, custom=False).update(enabled=enabled, threshold=None)
            changed[kind] = {"enabled": enabled, "threshold": threshold}
    audit(user=user, action="alert.defaults.changed", parameters=changed)
    return changed


def _shown(kind: str, target: str) -> str:
    return target if kind == ChannelKind.EMAIL else host_of(target)


def channel_add(*, user: User | None, kind: str, target: str) -> AlertChannel:
    """Add an e-mail address or a webhook (an http or https URL) to the console's channels;
    the first one makes the console's list replace the settings'."""
    target = target.strip()
    if kind == ChannelKind.EMAIL:
        try:
            validate_email(target)
        except ValidationError:
            raise ValidationError(f"{target!r} is not an e-mail address.") from None
    elif kind == ChannelKind.WEBHOOK:
        parsed = urlparse(target)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValidationError("A webhook is an http:// or https:// URL.")
        refused = outbound.check(target)  # and again at every send
        if refused is not None:
            raise ValidationError(f"Refused: {refused}.")
    else:
        raise ValidationError(f"{kind!r} is not a kind of channel (email, webhook).")
    try:
        with transaction.atomic():
            channel = AlertChannel.objects.create(kind=kind, target=target, added_by=user)
    except IntegrityError:
        raise ValidationError(f"That {ChannelKind(kind).label} is already a channel.") from None
    audit(user=user, action="alert.channel.added", parameters={"channel": channel.pk, "kind": kind,
                                                               "shown": _shown(kind, target)})
    return channel


def channel_change(*, user: User | None, channel: AlertChannel, enabled: bool) -> AlertChannel:
    """Turn one of the console's channels on or off."""
    AlertChannel.objects.filter(pk=channel.pk).update(enabled=enabled)
    channel.enabled = enabled
    audit(user=user, action="alert.channel.changed", parameters={"channel": channel.pk, "kind": channel.kind,
                                                                 "shown": _shown(channel.kind, channel.target),
                                                                 "enabled": enabled})
    return channel


def channel_remove(*, user: User | None, channel: AlertChannel) -> None:
    """Remove one of the console's channels (the last one gone, the settings' are the channels again)."""
    audit(user=user, action="alert.channel.removed", parameters={"channel": channel.pk, "kind": channel.kind,
                                                                 "shown": _shown(channel.kind, channel.target)})
    channel.delete()


def _send_test(channel: Channel, sender: str) -> None:
    at = timezone.now()
    email = channel.kind == ChannelKind.EMAIL
    zone = ZoneInfo(next(iter(zones.zones_of_addresses([channel.target])))) if email else UTC
    text = (f"[Cleanline] test: alerts reach this {channel.label} (sent by {sender} from the console's alert "
            f"set-up at {zones.readable(at, zone=zone)}).")
    if channel.kind == ChannelKind.EMAIL:
        send_mail("[Cleanline] test of an alert channel", f"{text}\n\nNothing to do: real alerts come the same way.\n",
                  settings.CLEANLINE_ALERT_FROM, [channel.target])
    else:
        outbound.post_json(channel.target, {"text": text, "cleanline": {"alert": None, "test": True,
                                                                         "sent_by": sender, "at": at.isoformat()}})


def channel_test(*, user: User | None, key: str) -> Channel:
    """Send a test message to one channel (the console's, or the settings' while they are in
    use), on or off. Audited with its outcome: sent, refused (why the target is not allowed) or
    failed, never the failure's reason (what listens where: console/outbound.py); that goes to
    the server log."""
    channel = channel_of(key)
    if channel is None:
        raise ValidationError("No such channel.")
    sender = user.get_username() if user is not None else "Cleanline"
    parameters = {"channel": key, "kind": channel.kind, "shown": channel.shown}
    try:
        _send_test(channel, sender)
    except Exception as exc:
        logger.warning("test of alert channel %s (%s) failed: %s: %s", key, channel.shown, type(exc).__name__, exc)
        result = outbound.outcome_of(exc)[:500]
        audit(user=user, action="alert.channel.tested", parameters=parameters, result=result)
        said = f"was {result}" if isinstance(exc, outbound.Refused) else "failed"
        raise ValidationError(f"The test to {channel.label} {channel.shown} {said}.") from None
    audit(user=user, action="alert.channel.tested", parameters=parameters, result="sent")
    return channel
