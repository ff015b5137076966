"""The archived timeline's entries as Cleanline reads them: a v6 archive's HoodieArchivedMetaEntry
(the instant it names) and the LSM timeline's (table versions 8 and 9) manifest and instant
columns. `timeline/archive/reader.py` loads the archived timeline with them."""

from __future__ import annotations

from dataclasses import dataclass

from timeline.metadata.raw import Raw, text


@dataclass(frozen=True, slots=True)
class ArchivedEntry:
    """One HoodieArchivedMetaEntry of a v6 archive (only the instant it names)."""

    time: str
    action: str
    state: str
    completion_time: str

    @classmethod
    def from_raw(cls, raw: Raw) -> ArchivedEntry:
        return cls(text(raw, "commitTime"), text(raw, "actionType"), text(raw, "actionState") or "COMPLETED",
                   text(raw, "stateTransitionTime"))


# The columns of an LSM timeline file (HoodieLSMTimelineInstant) that name its instants, in
# the order (instant time, completion time, action).
LSM_INSTANT_COLUMNS = ("instantTime", "completionTime", "action")


def lsm_manifest_files(manifest: Raw) -> list[str]:
    """The file names an LSM timeline manifest lists (raises KeyError/TypeError when malformed)."""
    return [str(entry["fileName"]) for entry in manifest["files"]]
