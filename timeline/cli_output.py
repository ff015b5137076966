"""How the `cleanline` command prints and asks: readable tables and sizes by default, JSON with
--json, and the confirmation a destructive step asks for."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

import timeline  # each name loads its module on first use (timeline/__init__.pyi)
from timeline.exceptions import CleanlineError
from timeline.instant import Instant

if TYPE_CHECKING:
    from timeline.roots import LakeRoots


class Cancelled(CleanlineError):
    """The person at the terminal said no."""


def lake_roots(environ: dict[str, str] | None = None) -> LakeRoots | None:
    """CLEANLINE_S3_ROOTS and CLEANLINE_HUDI_OPTIONS parsed, None when neither is set (then
    nothing loads: the S3 backend comes with an s3:// table). Raises S3ConfigError or
    HudiOptionsError naming the root and the key."""
    import os

    env = os.environ if environ is None else environ
    if not (env.get("CLEANLINE_S3_ROOTS", "").strip() or env.get("CLEANLINE_HUDI_OPTIONS", "").strip()):
        return None
    from timeline.roots import LakeRoots

    return LakeRoots.from_environ(env)


def open_table(args: argparse.Namespace, uri: str | None = None) -> timeline.HudiTable:
    """The table at `uri` (else the command's PATH), opened with the lake-wide settings the
    command read from the environment (`args.roots`, set by `main`): passed, not kept in a
    module."""
    return timeline.HudiTable.open(args.path if uri is None else uri, roots=getattr(args, "roots", None))


def confirm(args: argparse.Namespace, question: str) -> None:
    """Ask on the terminal before a destructive step unless --yes; no answer (no terminal)
    means no (Cancelled: nothing was changed)."""
    if args.yes:
        return
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower() if sys.stdin and not sys.stdin.closed else ""
    if answer not in ("y", "yes"):
        raise Cancelled("cancelled: nothing was changed (pass --yes to skip this question)")


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[("" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def print_json(data: Any, default: Callable[[Any], Any] | None = None) -> None:
    """Print `data` as indented JSON (orjson: a million-entry plan in well under a second; UTF-8,
    not \\u escapes)."""
    sys.stdout.flush()
    sys.stdout.buffer.write(orjson.dumps(data, default=default, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
                                         | orjson.OPT_APPEND_NEWLINE))
    sys.stdout.flush()


def emit(args: argparse.Namespace, data: Any, text: Callable[[], str]) -> None:
    if args.json:
        print_json(data)
    else:
        print(text())


def human_size(size: int) -> str:
    """A size as the console shows it: 1536 -> '1.5 KiB', 512 -> '512 B'."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def size_text(args: argparse.Namespace, size: int) -> str:
    """A size in a readable line or table: human-readable, or the byte count with --bytes."""
    return str(size) if getattr(args, "bytes", False) else human_size(size)


def sized_text(args: argparse.Namespace, size: int) -> str:
    """A size in a sentence: '1.5 KiB', or '1536 bytes' with --bytes."""
    return f"{size} bytes" if getattr(args, "bytes", False) else human_size(size)


def size_header(args: argparse.Namespace) -> str:
    return "bytes" if getattr(args, "bytes", False) else "size"


def bytes_hex(value: object) -> str:
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot show {type(value).__name__}")


def age_text(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def instant_json(instant: Instant) -> dict[str, Any]:
    return {
        "requestedTime": instant.requested_time,
        "completionTime": instant.completion_time,
        "action": instant.action,
        "state": instant.state.name,
    }

