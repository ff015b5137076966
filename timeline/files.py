"""Data file names: base files and log files, for both table versions (hudi-format.md §5)."""

from __future__ import annotations

import operator
import re
from typing import NamedTuple

from timeline.exceptions import InvalidFileNameError

BASE_FILE_EXTENSIONS = frozenset({".parquet", ".orc", ".hfile", ".lance"})
PARTITION_METADATA_PREFIX = ".hoodie_partition_metadata"
# HoodiePartitionMetadata.hasPartitionMetadata: the text file or its base-format variants mark a
# partition folder (one rule for every listing).
PARTITION_METADATA_FILES = frozenset({PARTITION_METADATA_PREFIX, PARTITION_METADATA_PREFIX + ".parquet",
                                      PARTITION_METADATA_PREFIX + ".orc"})

# FSUtils.LOG_FILE_PATTERN (matched with find(), so trailing text is tolerated).
_TOKEN = re.compile(r"[0-9]+-[0-9]+-[0-9]+\Z", re.ASCII)
_LOG_FILE = re.compile(r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?", re.ASCII)


class BaseFile(NamedTuple):
    """`<fileId>_<writeToken>_<instantTime>.<ext>`. Value objects made once per data file are
    NamedTuples: immutable like frozen dataclasses and three times cheaper to build."""

    name: str
    file_id: str
    write_token: str
    instant_time: str
    size: int = 0


class LogFile(NamedTuple):
    """`.<fileId>_<instant>.log.<version>_<writeToken>[.cdc]`. `instant_time` is the base
    instant of the slice in table version 6 and the writing delta commit in version 8+."""

    name: str
    file_id: str
    instant_time: str
    version: int
    write_token: str
    suffix: str = ""
    size: int = 0

    @property
    def sort_key(self) -> tuple[str, int, str, str]:
        """Hudi's LogFileComparator order (oldest first)."""
        return LOG_ORDER(self)  # type: ignore[no-any-return]  # itemgetter returns Any


# tuple.__new__ builds a NamedTuple without its Python-level __new__: these run once per file.
_new = tuple.__new__

# Hudi's LogFileComparator order (oldest first) as a sort key over LogFile fields.
LOG_ORDER = operator.itemgetter(2, 3, 4, 5)


def is_base_file_name(name: str) -> bool:
    dot = name.rfind(".")
    return dot > 0 and not name.startswith(".") and name[dot:] in BASE_FILE_EXTENSIONS


def parse_base_file(name: str, size: int = 0) -> BaseFile:
    """Parse a base file name as FSUtils does: file id before the first `_`, commit time from
    the third `_` field up to the first `.`."""
    if not is_base_file_name(name):
        raise InvalidFileNameError(f"{name!r} is not a Hudi base file name")
    return base_file_of(name, size)


def base_file_of(name: str, size: int = 0) -> BaseFile:
    """Parse a name already known to end in a base file extension (the hot path of a view)."""
    parts = name.split("_", 2)
    instant = parts[2].split(".", 1)[0] if len(parts) == 3 else ""
    if not instant:
        raise InvalidFileNameError(f"{name!r} is not a Hudi base file name")
    return _new(BaseFile, (name, parts[0], parts[1], instant, size))


def parse_log_file(name: str, size: int = 0) -> LogFile:
    """Parse a log file name as FSUtils.LOG_FILE_PATTERN does. The common shape
    `.<id>_<instant>.log.<n>_<a>-<b>-<c>` is split with string methods (this runs once per log
    file of a table); anything else goes through the pattern itself."""
    at = name.rfind(".log.")
    file_id, sep, instant = name[1:at].rpartition("_")
    version, _, token = name[at + 5:].partition("_")
    if (at > 0 and name[0] == "." and sep and file_id and version.isascii() and version.isdigit()
            and _TOKEN.match(token)):
        return _new(LogFile, (name, file_id, instant, int(version), token, "", size))
    match = _LOG_FILE.match(name)
    if not match or match.group(3) != "log":
        raise InvalidFileNameError(f"{name!r} is not a Hudi log file name")
    return LogFile(name, match.group(1), match.group(2), int(match.group(4)),
                   match.group(6) or "", match.group(10) or "", size)


def base_file_name(file_id: str, write_token: str, instant_time: str, extension: str = ".parquet") -> str:
    return f"{file_id}_{write_token}_{instant_time}{extension}"


def log_file_name(file_id: str, instant_time: str, version: int, write_token: str) -> str:
    return f".{file_id}_{instant_time}.log.{version}_{write_token}"
