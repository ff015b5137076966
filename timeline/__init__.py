"""Cleanline's library: reads and changes Apache Hudi tables the way Apache Hudi does. Knows
nothing of Django or Celery; PySpark is imported only by `timeline.spark`, when asked for.

The public surface is what this module exports: open a table with `HudiTable.open(uri, *,
storage_options=None, hudi_options=None, roots=None)` (configuration is passed, never set in a
module: `timeline.roots.LakeRoots`), ask `table.inspect` and act through `table.maintenance()`,
whose changes are dry runs unless `dry_run=False`. The console and the `cleanline` command use
nothing else (tests/test_boundaries.py checks it)."""

import lazy_loader

# What the package exports lives in __init__.pyi (one list, read by type checkers too); each name
# is imported from its module on first use, so `cleanline fsview` does not load the executor,
# pyarrow's S3 support or the remote API client. EAGER_IMPORT=1 imports everything at once.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__all__ += ["__version__"]

__version__ = "0.1.0"
