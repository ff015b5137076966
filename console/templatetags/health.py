"""The table doctor on the overview and the dashboard (issue 28): `{% health_section table %}`
draws a table's Health section and `{% lake_health %}` the lake's tables worst first, each from
the selectors (console/selectors/health.py), so that the pages' views stay as they are;
`evidence|compact` shows a finding's evidence in a compact form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django import template

from console.models import Table
from console.selectors import health as selectors
from console.templatetags.humanize_bytes import human_bytes

register = template.Library()

SHOWN = 5  # rows of an evidence list on the page (the API and the JSON have them all)
SEVERITY_CLASSES = {"error": "sync-failed", "warning": "sync-running", "info": "state-requested"}


@register.filter
def severity_class(severity: str) -> str:
    """The badge class of a finding's severity (error red, warning amber, info blue)."""
    return SEVERITY_CLASSES.get(severity, "")


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One field of a finding's evidence, compact: a value, or the first rows of a list."""

    key: str
    value: str = ""
    rows: list[str] = field(default_factory=list)
    count: int = 0

    @property
    def more(self) -> int:
        return max(0, self.count - len(self.rows))


def _text(key: str, value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and key.lower().endswith("bytes"):
        return human_bytes(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_text(k, v)}" for k, v in value.items() if not isinstance(v, list | dict))
    if isinstance(value, list):
        return ", ".join(_text(key, v) for v in value[:SHOWN]) + (f", … ({len(value)})" if len(value) > SHOWN else "")
    return "-" if value is None else str(value)


@register.filter
def compact(evidence: dict[str, Any]) -> list[EvidenceItem]:
    """A finding's evidence as the page shows it: scalars as `key: value` (bytes readable),
    lists by their first rows and a count."""
    items = []
    for key, value in evidence.items():
        if isinstance(value, list):
            items.append(EvidenceItem(key, rows=[_text(key, v) for v in value[:SHOWN]], count=len(value)))
        else:
            items.append(EvidenceItem(key, value=_text(key, value)))
    return items


@register.inclusion_tag("console/_health.html", takes_context=True)
def health_section(context: template.Context, table: Table) -> dict[str, Any]:
    """A table's findings, worst first, as its last check stored them, and its repairs."""
    health = selectors.table_health(table)
    return {"table": table, "user": context.get("user"), "health": health,
            "findings": selectors.finding_rows(health), "repairs": selectors.repairs_of(table)[:10]}


@register.inclusion_tag("console/_lake_health.html")
def lake_health() -> dict[str, Any]:
    """Every table with its health, worst first."""
    return {"rows": selectors.lake_health()}
