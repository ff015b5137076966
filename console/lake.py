"""The one place the console opens a table or a plan store: with the lake-wide settings read from
its settings at that moment (CLEANLINE_S3_ROOTS, CLEANLINE_HUDI_OPTIONS), passed to the library
as `HudiTable.open(uri, roots=...)` takes them. Nothing is set in the library when the settings
are imported, so the web process, each Celery worker and a test's settings override open every
table alike."""

from __future__ import annotations

from django.conf import settings

from timeline import HudiTable
from timeline.discover import FoundTable, discover
from timeline.internal.plan_store import StoredPlan
from timeline.roots import LakeRoots


def lake_roots() -> LakeRoots:
    """The lake-wide settings per root, as the settings give them now."""
    return LakeRoots(s3=settings.CLEANLINE_S3_ROOTS or {}, hudi=settings.CLEANLINE_HUDI_OPTIONS or {})


def open_table(path: str) -> HudiTable:
    """The table at `path` (a registered table's path, or one being registered), opened with
    its root's S3 settings and Hudi writer options."""
    return HudiTable.open(path, roots=lake_roots())


def open_stored_plan(uri: str) -> StoredPlan:
    """A plan in the plan store (CLEANLINE_PLAN_STORE), opened with its root's S3 settings."""
    return StoredPlan.open(uri, lake_roots().storage_options_for(uri))


def discover_tables(root: str) -> list[FoundTable]:
    """Every Hudi table under an allowed root (`timeline.discover`), with the lake's settings."""
    return discover(root, roots=lake_roots())
