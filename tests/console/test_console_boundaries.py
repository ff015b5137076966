"""The console's layers stay visible (STYLE.md, HackSoft's styleguide): views and the REST API
call services and selectors, never a Celery task; a task is sent only by the one
enqueue-on-commit helper (console/services/queue.py), which the services call."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.console.helpers import ROOT

CONSOLE = ROOT / "console"
QUEUE = CONSOLE / "services" / "queue.py"
SENDS = {"delay", "apply_async", "send_task"}


def sends(path: Path) -> list[str]:
    """The task sends in a module (`.delay(`, `.apply_async(`, `.send_task(`) and its imports of
    console.tasks, with their lines."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SENDS:
            found.append(f".{node.func.attr}( at line {node.lineno}")
        modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                   else [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
                   if isinstance(node, ast.ImportFrom) else [])
        found += [f"imports {m} at line {node.lineno}" for m in modules if m == "console.tasks"]
    return found


def test_console_boundaries_views_and_the_api_never_send_a_task() -> None:
    """A view or an API endpoint calls the service, which queues the task on commit."""
    modules = [*CONSOLE.glob("views*.py"), *(CONSOLE / "api").rglob("*.py")]
    assert {CONSOLE / "views.py", CONSOLE / "api" / "plans.py"} <= set(modules)
    offenders = {str(p.relative_to(CONSOLE)): found for p in modules if (found := sends(p))}
    assert offenders == {}


def test_console_boundaries_tasks_are_sent_only_by_the_enqueue_helper() -> None:
    """One way to send a task (on commit, its id on its row first): no other console module
    calls `.delay(`, `.apply_async(` or `.send_task(`."""
    assert any(".apply_async(" in s for s in sends(QUEUE))
    offenders = {str(p.relative_to(CONSOLE)): calls for p in CONSOLE.rglob("*.py")
                 if p != QUEUE and (calls := [s for s in sends(p) if not s.startswith("imports")])}
    assert offenders == {}
