"""The fixture tables of the demo lake (`make run`, `make demo-lake`; seconds, no Spark): every zip
under SOURCE is unpacked once into DEST/<table name>. Existing tables are left as they are."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path


def main(source: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for archive in sorted(source.rglob("*.zip")):
        target = dest / archive.stem
        if target.exists():
            continue
        staging = dest / f".{archive.stem}.unpacking"
        with zipfile.ZipFile(archive) as zipped:
            members = [m for m in zipped.namelist() if not m.startswith("__MACOSX/")]
            zipped.extractall(staging, members)
        (staging / archive.stem).rename(target)
        staging.rmdir()
    print(f"demo lake: {len(list(dest.iterdir()))} tables in {dest}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
