"""Cleanline's library: reads and writes Apache Hudi table timelines. Knows nothing of Django."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
