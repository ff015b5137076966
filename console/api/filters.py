"""The query parameters of the list endpoints, checked: a value outside its choices, a time that
is not one or an id that is not a number is a 400 naming the parameter and what it takes, never
an empty or unfiltered list."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from console.forms import TYPED_TIME


def one_of(name: str, value: str, choices: Iterable[str]) -> str:
    """`value` if empty (no filter) or one of `choices`."""
    allowed = sorted(choices)
    if value and value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of: {', '.join(allowed)}")
    return value


def typed_time(name: str, value: str) -> str:
    """An instant time's leading digits (yyyyMMddHHmmssSSS) or a date or date-time
    (yyyy-mm-dd[Thh:mm[:ss[.SSS]]]), as the timeline's From and To take them."""
    if not value:
        return value
    if re.fullmatch(TYPED_TIME, value):
        if "-" not in value:
            return value
        try:
            datetime.fromisoformat(value)
            return value
        except ValueError:
            raise ValueError(f"{name}={value!r} is not a real date or time") from None
    raise ValueError(f"{name}={value!r} is neither an instant time's leading digits (yyyyMMddHHmmssSSS) nor a date "
                     "or date-time (yyyy-mm-dd, yyyy-mm-ddThh:mm[:ss])")


def whole_number(name: str, value: str) -> str:
    if value and not value.isdigit():
        raise ValueError(f"{name}={value!r} is not an id (a whole number)")
    return value
