"""The settings mypy's django-stubs plugin loads (`[tool.django-stubs]` in pyproject.toml).

console.settings refuses to start without SECRET_KEY when DEBUG is off; type checking needs no
secret, so `mypy` gets a random throwaway key when none is set, and otherwise the settings
exactly as they are. For mypy only: never a server's DJANGO_SETTINGS_MODULE.
"""

from __future__ import annotations

import os
import secrets

os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

from console.settings import *  # noqa: E402, F403
