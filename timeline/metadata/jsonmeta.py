"""JSON instant content as Hudi writes it with Jackson's default pretty printer: v6 commit,
delta-commit and replace-commit metadata and schema-commit history."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

import simdjson

from timeline.exceptions import CorruptInstantError


def decode(data: bytes, *, path: str) -> dict[str, Any]:
    """Parse a JSON object. An empty file is an empty object, as Hudi reads it."""
    if not data.strip():
        return {}
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptInstantError(path, f"invalid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CorruptInstantError(path, f"expected a JSON object, found {type(value).__name__}")
    return value


UTF8_BOM = b"\xef\xbb\xbf"


def validate(data: bytes, *, path: str) -> None:
    """What `decode` checks, without building what the file holds: simdjson validates the
    document in C++ (a commit can list every file of a table; several times faster than any
    parser that builds Python objects), and a document it accepts whose top level is an object
    passes. Everything else is for `decode` to judge, as ever: what simdjson refuses and
    Python reads (NaN, numbers beyond 64 bits, lone surrogate escapes) passes, and a leading
    byte order mark, which simdjson skips and Python refuses, is corrupt."""
    if not data.strip():
        return
    if not data.startswith(UTF8_BOM):
        parser = simdjson.Parser()  # one per call: a parser may not be reused while its result lives
        try:
            is_object = isinstance(parser.parse(data), simdjson.Object)
        except Exception:  # simdjson's refusals are ValueError, RuntimeError or UnicodeDecodeError
            is_object = False
        if is_object:
            return
    decode(data, path=path)


# ijson's first event -> the Python type `decode` names for a top level that is not an object
_KINDS = {"start_array": "list", "string": "str", "number": "int", "boolean": "bool", "null": "NoneType"}


def check(stream: BinaryIO, *, path: str) -> None:
    """What `decode` checks (UTF-8 JSON whose top level is an object), read as a stream: memory
    stays constant however many files a commit lists (ijson's C parser; no Python object per
    value). A file of only white space is an empty object, as `decode` reads it."""
    import ijson

    try:
        while True:  # nothing but white space is an empty object
            chunk = stream.read(1 << 16)
            if not chunk:
                return
            if chunk.strip():
                break
        stream.seek(0)
        events = ijson.basic_parse(stream, use_float=True)
        first = next(events, None)
        if first is None:
            raise CorruptInstantError(path, "invalid JSON: no value")
        if first[0] != "start_map":
            found = _KINDS.get(first[0], first[0])
            raise CorruptInstantError(path, f"expected a JSON object, found {found}")
        for _ in events:
            pass
    except ijson.JSONError as exc:
        raise CorruptInstantError(path, f"invalid JSON: {exc}") from exc


def _render(value: Any, indent: int) -> str:
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f"{pad}{json.dumps(str(k))} : {_render(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(_render(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)


def encode(value: dict[str, Any]) -> bytes:
    """Jackson `writerWithDefaultPrettyPrinter` output: `"key" : value`, two-space indent,
    arrays inline as `[ a, b ]`. Field order is the caller's (Java declaration order)."""
    return _render(value, 0).encode("utf-8")


def map_of_arrays(stream: BinaryIO, field: str, *, path: str) -> Iterator[tuple[str, dict[str, Any] | None]] | None:
    """The top-level `field` of a JSON object, a map of arrays of objects, read as a stream:
    `(key, None)` as each key's array begins, then `(key, item)` for each object in it, one at
    a time (memory stays that of one item however long the arrays; reading stops where the map
    ends). None when the object has no `field` (the whole document is then parsed, as a
    stream). A `null` map or array holds nothing; an array's values that are not objects are
    skipped. What is not JSON raises CorruptInstantError naming `path`."""
    import ijson

    events = ijson.basic_parse(stream, use_float=True)
    try:
        first = next(events, None)
        if first is None or first[0] != "start_map":
            raise CorruptInstantError(path, "expected a JSON object")
        depth = 1
        for event, value in events:
            if depth == 1 and event == "map_key" and value == field:
                return _entries(events, path)
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
    except ijson.JSONError as exc:
        raise CorruptInstantError(path, f"invalid JSON: {exc}") from exc
    return None


def _entries(events: Iterator[tuple[str, Any]], path: str) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """`map_of_arrays`'s entries, from the event after the field's name."""
    import ijson
    from ijson.common import ObjectBuilder

    try:
        event, _ = next(events)
        if event == "null":
            return
        if event != "start_map":
            raise CorruptInstantError(path, f"expected a JSON object of arrays, found {_KINDS.get(event, event)}")
        for event, key in events:
            if event == "end_map":
                return
            yield key, None
            event, _ = next(events)
            if event == "null":
                continue
            if event != "start_array":
                raise CorruptInstantError(path, f"expected an array under {key!r}, found {_KINDS.get(event, event)}")
            for event, value in events:
                if event == "end_array":
                    break
                if event not in ("start_map", "start_array"):
                    continue  # a scalar item
                builder = ObjectBuilder()
                builder.event(event, value)
                depth = 1
                for inner, inner_value in events:
                    builder.event(inner, inner_value)
                    if inner in ("start_map", "start_array"):
                        depth += 1
                    elif inner in ("end_map", "end_array"):
                        depth -= 1
                        if depth == 0:
                            break
                if event == "start_map":
                    yield key, builder.value
    except ijson.JSONError as exc:
        raise CorruptInstantError(path, f"invalid JSON: {exc}") from exc
