"""Archivals take the one vocabulary of approvable changes (issue 40): an archival waiting for
approval was "pending" and is "draft", a declined one was "declined" and is "rejected", as a
clean plan's and a repair's are. Every row is kept with its history (who asked and decided, when,
the note); going back restores the old words."""

from __future__ import annotations

from typing import Any

from django.db import migrations

# The archival's old word -> the one vocabulary's.
WORDS = {"pending": "draft", "declined": "rejected"}


def forward(apps: Any, schema_editor: Any) -> None:
    archivals = apps.get_model("console", "Archival").objects
    for old, new in WORDS.items():
        archivals.filter(status=old).update(status=new)


def backward(apps: Any, schema_editor: Any) -> None:
    archivals = apps.get_model("console", "Archival").objects
    for old, new in WORDS.items():
        archivals.filter(status=new).update(status=old)


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0034_approvable"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
