"""A decoded payload as `timeline.metadata.decode` returns it (`Raw`: Hudi's field names to
values), and how the typed records read it (`records.py`, `archived.py`): leniently, so that a
missing, null or hand-mangled value reads as empty or 0 instead of failing the whole record;
and how a record attribute's name becomes Hudi's camelCase field name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Raw = Mapping[str, Any]
_EMPTY: Mapping[str, Any] = {}


def camel(name: str) -> str:
    """`earliest_commit_to_retain` -> `earliestCommitToRetain`."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def text(raw: Raw, key: str) -> str:
    """A string field; "" for a missing or null one."""
    value = raw.get(key)
    return "" if value is None else str(value)


def number(raw: Raw, key: str) -> int:
    """A count; what is not a number (e.g. "lots" written by hand) counts as 0."""
    value = raw.get(key)
    if isinstance(value, bool):
        return 0
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError, OverflowError):
        return 0


def texts(value: Any) -> tuple[str, ...]:
    """An array of strings (file names, ids, partitions), nulls left out."""
    return tuple(str(v) for v in value or () if v is not None)


def mapping(raw: Raw, key: str) -> Mapping[str, Any]:
    """A map field; empty for a missing or null one, or one that is not a map."""
    value = raw.get(key)
    return value if isinstance(value, Mapping) else _EMPTY


def extra(raw: Raw) -> Mapping[str, str]:
    """A payload's `extraMetadata`, every value a string."""
    return {str(k): "" if v is None else str(v) for k, v in mapping(raw, "extraMetadata").items()}


def file_name_of(path: str) -> str:
    """The file name of a path as a payload gives it (relative or full)."""
    return path.rsplit("/", 1)[-1]
