"""Cleanline's web admin console (Django): mirrors the lake in a database and adds who asked,
who approved, progress and audit. It never re-implements a Hudi rule: those live in timeline/."""

from __future__ import annotations

from console.celery import app as celery_app

__all__ = ["celery_app"]
