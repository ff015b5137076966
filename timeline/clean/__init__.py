"""Cleaning with Apache Hudi's semantics (hudi-format.md §7): configuration, planner, executor."""
