"""The table doctor's alert rules (issue 28), one per severity: a finding of that severity in the
table's last health check (console/models_health.py) is an alert, one per finding kind, resolved
once a check no longer finds it. Errors and warnings are on by default; info findings (leftover
markers, say) are listed on the table's Health section and off as alerts unless an admin turns
their rule on. Wired into console/alerts.py's CONDITIONS."""

from __future__ import annotations

from collections.abc import Callable

from console.models import Table
from console.models_health import TableHealth


def _findings_of(severity: str) -> Callable[[Table, float | None, object], dict[str, str]]:
    def condition(table: Table, threshold: float | None, figures: object) -> dict[str, str]:
        """The table's findings of this severity at its last check, one alert per kind."""
        health = TableHealth.objects.filter(table=table).first()
        found: dict[str, str] = {}
        for finding in health.findings if health is not None else []:
            if finding.get("severity") != severity:
                continue
            kind = str(finding.get("kind"))
            message = f"{kind}: {finding.get('summary')}; {finding.get('why')} Repair: {finding.get('repair')}"
            found[f"finding:{kind}"] = (f"{found[f'finding:{kind}']}; {message}" if f"finding:{kind}" in found
                                        else message)[:2000]
        return found

    condition.__name__ = f"health_{severity}"
    return condition


health_error = _findings_of("error")
health_warning = _findings_of("warning")
health_info = _findings_of("info")
