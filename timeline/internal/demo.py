"""The demo lake's tables (`cleanline demo`, `make run`): which there are and which are still
to be written. No Spark here: `timeline.internal.engine.build_demo_lake` starts it only when a table is
missing, and `timeline/spark/demo.py` writes them."""

from __future__ import annotations

from timeline.storage import Storage, storage_for

# The demo lake's tables, in the order `cleanline demo` writes them (timeline/spark/demo.py). While
# one is written, a marker `.<name>.building` lies beside it: a build stopped half-way is redone.
DEMO_TABLES = ("trips_cow_v6", "events_mor_v6", "orders_cow_v8")


def demo_tables_to_build(path: str) -> list[str]:
    """The demo tables not completely written under `path` yet (no `hoodie.properties`, or the
    marker of a build that was stopped). Looks at the folder only: no Spark."""
    storage, base = storage_for(path)
    return [name for name in DEMO_TABLES
            if storage.exists(Storage.join(base, f".{name}.building"))
            or not storage.exists(Storage.join(base, name, ".hoodie", "hoodie.properties"))]


__all__ = ["DEMO_TABLES", "demo_tables_to_build"]
