"""The table doctor on the overview and the dashboard (issue 28): `{% health_section table %}`
draws a table's Health section and `{% lake_health %}` the lake's tables worst first, each from
the selectors (console/selectors/health.py), so that the pages' views stay as they are."""

from __future__ import annotations

from typing import Any

from django import template

from console.models import Table
from console.selectors import health as selectors

register = template.Library()

SEVERITY_CLASSES = {"error": "sync-failed", "warning": "sync-running", "info": "state-requested"}


@register.filter
def severity_class(severity: str) -> str:
    """The badge class of a finding's severity (error red, warning amber, info blue)."""
    return SEVERITY_CLASSES.get(severity, "")


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
