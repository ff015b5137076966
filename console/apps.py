from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Cleanline console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Celery's registry holds the console's tasks in every process, the web's too: the
        # services send them by name (console/services/queue.py).
        from console import tasks  # noqa: F401
