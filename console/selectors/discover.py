"""What lies under an allowed root (the Discover tables page): every Hudi table there
(`timeline.discover`), each with the registered table it already is, if any."""

from __future__ import annotations

from dataclasses import dataclass

from console.lake import discover_tables
from console.models import Table
from timeline.discover import FoundTable


@dataclass(frozen=True, slots=True)
class Discovered:
    found: FoundTable
    registered: Table | None


def discovered(root: str) -> list[Discovered]:
    """Every table under `root`, in path order, with its registration (matched on the location
    the console stores)."""
    found = discover_tables(root)
    known = {t.path: t for t in Table.objects.filter(path__in=[f.uri for f in found])}
    return [Discovered(f, known.get(f.uri)) for f in found]
