from __future__ import annotations

from django import template

register = template.Library()


@register.filter(name="bytes")
def human_bytes(value: int | None) -> str:
    """1536 -> '1.5 KiB'."""
    size = float(value or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


@register.filter
def bar(value: int, largest: int) -> int:
    """Width in pixels (0-300) of a bar for `value` out of `largest`."""
    return int(300 * value / largest) if largest else 0

