"""java.util.Properties text: `load` and `store` as the JDK does them."""

from __future__ import annotations

from collections.abc import Mapping

_LOAD_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_STORE_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f",
                  "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!"}


def _logical_lines(text: str) -> list[str]:
    """Join continuation lines (an odd number of trailing backslashes) and drop comments."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending == "" else raw.lstrip(" \t\f")
        if pending == "" and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and len(text) >= i + 6:
            try:
                out.append(chr(int(text[i + 2:i + 6], 16)))
            except ValueError as exc:
                raise ValueError(f"malformed \\uxxxx escape in {text!r}") from exc
            i += 6
            continue
        out.append(_LOAD_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def loads(text: str) -> dict[str, str]:
    """Parse properties text. Raises ValueError on a malformed unicode escape."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == " " and (is_key or index == 0):
            out.append("\\ ")
        elif ch in _STORE_ESCAPES:
            out.append(_STORE_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append("".join(f"\\u{unit:04X}" for unit in _utf16_units(ch)))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    encoded = ch.encode("utf-16-be")
    return [int.from_bytes(encoded[i:i + 2], "big") for i in range(0, len(encoded), 2)]


def dumps(props: Mapping[str, str], *, comments: list[str]) -> str:
    """Properties text as `Properties.store(OutputStream, ...)` writes it (ISO-8859-1 safe)."""
    lines = [f"#{comment}" for comment in comments]
    lines += [f"{_escape(k, is_key=True)}={_escape(v, is_key=False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"
