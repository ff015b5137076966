"""The viewer, operator and admin roles: Django groups and the permissions each holds."""

from __future__ import annotations

ROLES = {
    "viewer": ["view_table", "view_instant"],
    "operator": ["view_table", "view_instant", "plan_clean", "create_savepoint"],
    "admin": ["view_table", "view_instant", "plan_clean", "create_savepoint", "approve_clean",
              "delete_savepoint", "restore_table", "change_settings", "register_table"],
}


def ensure_roles() -> None:
    """Create (or repair) the role groups; the migration does the same at install time."""
    from django.contrib.auth.models import Group, Permission

    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(Permission.objects.filter(content_type__app_label="console", codename__in=codenames))
