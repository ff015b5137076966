"""What the alerts set up in the console say now (reads; the writes are
console/services/alert_setup.py): each rule's lake-wide default, and the channels alerts go to.
The settings are the defaults: a rule with no lake-wide default of its own is on (but
`health_info`) with its CLEANLINE_ALERT_* threshold; while the console lists no channel,
CLEANLINE_ALERT_EMAILS and CLEANLINE_ALERT_WEBHOOKS are the channels, and once it lists one its
list replaces theirs (an admin turns a channel off, rather than the settings coming back)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from django.conf import settings

from console.models import AlertKind
from console.models_alerts import AlertChannel, ChannelKind, LakeAlertRule

# Rules that start turned off: the doctor's info findings are worth a look, not a page.
OFF_BY_DEFAULT = frozenset({AlertKind.HEALTH_INFO})


def built_in_enabled(kind: str) -> bool:
    return kind not in OFF_BY_DEFAULT


def lake_rules() -> dict[str, LakeAlertRule]:
    """The lake-wide default of every kind that has one set in the console."""
    return {r.kind: r for r in LakeAlertRule.objects.all()}


def lake_enabled(kind: str, lake: dict[str, LakeAlertRule] | None = None) -> bool:
    """Whether a table's rule of `kind` that follows the lake-wide default is on."""
    found = (lake if lake is not None else lake_rules()).get(kind)
    return found.enabled if found is not None else built_in_enabled(kind)


def lake_threshold(kind: str) -> float | None:
    """The lake-wide threshold set in the console for `kind` (None: the setting's)."""
    found = LakeAlertRule.objects.filter(kind=kind).values_list("threshold", flat=True).first()
    return float(found) if found is not None else None


def channels_from_console() -> bool:
    """Whether the console's channel list replaces the settings' (it lists at least one)."""
    return AlertChannel.objects.exists()


def host_of(url: str) -> str:
    return urlparse(url).hostname or "?"


@dataclass(frozen=True, slots=True)
class Channel:
    """One channel as the pages show it: where it comes from, what it is (a webhook by its host
    only), whether alerts go to it now, and the name its deliveries are recorded under."""

    key: str  # what "send a test" names: "console:<pk>", "settings:email:<n>" or "settings:webhook:<n>"
    kind: str
    shown: str
    source: str  # "console" or "settings"
    enabled: bool
    delivery: str
    target: str

    @property
    def label(self) -> str:
        return "e-mail" if self.kind == ChannelKind.EMAIL else "webhook"

    @property
    def pk(self) -> int | None:
        return int(self.key.split(":")[1]) if self.source == "console" else None


def _webhook_name(index: int | str, url: str) -> str:
    return f"webhook {index} ({host_of(url)})"


def _console_channel(row: AlertChannel) -> Channel:
    email = row.kind == ChannelKind.EMAIL
    return Channel(f"console:{row.pk}", row.kind, row.target if email else host_of(row.target), "console",
                   row.enabled, "email" if email else _webhook_name(f"#{row.pk}", row.target), row.target)


def all_channels() -> list[Channel]:
    """Every channel there is: the console's when it lists any (on or off), else the settings'."""
    if channels_from_console():
        return [_console_channel(c) for c in AlertChannel.objects.order_by("kind", "pk")]
    found = [Channel(f"settings:email:{n}", ChannelKind.EMAIL, address, "settings", True, "email", address)
             for n, address in enumerate(settings.CLEANLINE_ALERT_EMAILS, 1)]
    found += [Channel(f"settings:webhook:{n}", ChannelKind.WEBHOOK, host_of(url), "settings", True,
                      _webhook_name(n, url), url) for n, url in enumerate(settings.CLEANLINE_ALERT_WEBHOOKS, 1)]
    return found


def alert_emails() -> list[str]:
    """The addresses every alert's e-mail goes to now."""
    return [c.target for c in all_channels() if c.kind == ChannelKind.EMAIL and c.enabled]


def alert_webhooks() -> list[tuple[str, str]]:
    """The webhooks every alert is POSTed to now: (the name deliveries are recorded under, URL)."""
    return [(c.delivery, c.target) for c in all_channels() if c.kind == ChannelKind.WEBHOOK and c.enabled]


def channel_of(key: str) -> Channel | None:
    return next((c for c in all_channels() if c.key == key), None)
