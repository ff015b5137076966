"""A user's own choices: the time zone every time is shown in (console/zones.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from console.models import Preference
from console.services.audit import audit
from console.zones import known_zone


def preference_time_zone(*, user: User, time_zone: str) -> str:
    """Set (or, with "", clear: the browser's zone then) the zone `user` sees times in;
    audited (`preferences.changed`). A name this machine does not know is refused."""
    time_zone = time_zone.strip()
    if time_zone and not known_zone(time_zone):
        raise ValidationError(f"{time_zone!r} is not a time zone this console knows (an IANA name such as "
                              "Europe/Amsterdam).")
    Preference.objects.update_or_create(user=user, defaults={"time_zone": time_zone})
    audit(user=user, action="preferences.changed", parameters={"time_zone": time_zone or "the browser's"})
    return time_zone
