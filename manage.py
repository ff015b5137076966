#!/usr/bin/env python
"""Django's command-line utility for the Cleanline console."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.management import execute_from_command_line

    from console.command import refusing_bad_settings

    refusing_bad_settings(lambda: execute_from_command_line(sys.argv), "manage.py")


if __name__ == "__main__":
    main()
