"""The WSGI application (`console.wsgi:application`) gunicorn serves (`cleanline-console serve`)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
application = get_wsgi_application()
