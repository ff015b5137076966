"""The archived timeline, one home: reading it (`reader`: v6 `.hoodie/archived` log files and the
v8+ LSM timeline), and, as Hudi's `HoodieTimelineArchiver` does, deciding what to archive and
writing it."""

from __future__ import annotations

from timeline.archive.reader import load_archived_timeline

__all__ = ["load_archived_timeline"]
