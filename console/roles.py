"""The viewer, operator and admin roles: Django groups and the permissions each holds."""

from __future__ import annotations

ROLES = {
    "viewer": ["view_table", "view_instant"],
    "operator": ["view_table", "view_instant", "plan_clean", "create_savepoint"],
    "admin": ["view_table", "view_instant", "plan_clean", "create_savepoint", "approve_clean",
              "delete_savepoint", "restore_table", "change_settings", "register_table", "manage_people"],
}

# Permissions of the console that no model declares (the table's Meta holds the others); they
# hang on the table's content type, so that they read `console.<codename>` like the rest.
EXTRA_PERMISSIONS = {"manage_people": "Can add users, give roles and deactivate users"}

SUPERUSER = "superuser (all permissions)"
NO_ROLE = "no role"


def role_of(user: object) -> str:
    """The role a badge shows: a superuser's, else the user's role groups (viewer, operator,
    admin; several if the Django admin gave several), else "no role"."""
    if getattr(user, "is_superuser", False):
        return SUPERUSER
    groups = getattr(user, "groups", None)
    names = {g.name for g in groups.all()} if groups is not None else set()
    return ", ".join(r for r in ROLES if r in names) or NO_ROLE


def role_name(user: object) -> str:
    """The user's role group with the most permissions (what the People page's role choice
    shows as chosen), "" when they have none."""
    groups = getattr(user, "groups", None)
    names = {g.name for g in groups.all()} if groups is not None else set()
    return next((r for r in reversed(ROLES) if r in names), "")


def ensure_roles() -> None:
    """Create (or repair) the role groups; the migration does the same at install time."""
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

    table = ContentType.objects.get_by_natural_key("console", "table")
    for codename, name in EXTRA_PERMISSIONS.items():
        Permission.objects.get_or_create(content_type=table, codename=codename, defaults={"name": name})
    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(Permission.objects.filter(content_type__app_label="console", codename__in=codenames))


SOURCES = {"local": "local", "oidc": "OIDC", "ldap": "LDAP"}


def source_of(user: object) -> str:
    """Where a user comes from: "local", "oidc" or "ldap" (`console.models.Profile`; none: local)."""
    from django.core.exceptions import ObjectDoesNotExist

    try:
        profile = getattr(user, "profile", None)
    except ObjectDoesNotExist:
        return "local"
    return str(profile.source) if profile is not None else "local"
