"""Archival, as Hudi's `HoodieTimelineArchiver` does it: deciding what to archive (`rules`,
`retain`, `plan`) and writing it (`archiver`, `write_v1`, `lsm`). Reading the archived timeline
(v6 `.hoodie/archived` log files and the v8+ LSM timeline) is the table's: its one reader is
`timeline/archived_timeline.py`, in the table layer, exported here too."""

from __future__ import annotations

from timeline.archived_timeline import load_archived_timeline

__all__ = ["load_archived_timeline"]
