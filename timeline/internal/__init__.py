"""The console's and the `cleanline` command's plumbing, not part of the library's public surface:
nothing here is in `timeline/__init__.pyi`, and nothing here is promised to stay as it is.

- `engine`: the choice of engine for a table (this process, forked processes or Spark), the
  Spark session and the demo lake's building.
- `forks`: the local engine's process pool (`fork_map`, `local_processes`).
- `demo`: the demo lake's tables.
- `remote`: the CLI's read commands against a console's API (`cleanline --api`).
- `plan_store`: clean plans kept as Parquet in a folder of their own, paged, searched and
  compared (`StoredPlan`, `plan_clean_stored`).

The console and the CLI import from here and from the public surface only. A library module
outside this package imports from it only where tests/test_boundaries.py lists it with its
reason (`LIBRARY_USES_OF_INTERNAL`: the planner's fork pool, `maintenance().plan_clean_stored`
and the Spark jobs writing the plan store or the demo tables). This module imports nothing, so
that importing one part loads only that part."""
