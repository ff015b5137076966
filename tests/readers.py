"""hudi-rs, the independent reader the tests compare with."""

from __future__ import annotations

from pathlib import Path

import hudi
import pyarrow as pa


def hudi_read(path: Path | str, as_of: str | None = None) -> pa.Table | None:
    """What hudi-rs reads from the table now, or as of an instant; None for no rows."""
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTable(str(path)).read(options)
    return pa.Table.from_batches(batches) if batches else None
