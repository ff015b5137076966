"""The viewer, operator and admin roles as Django groups."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from console.roles import ROLES


def create_roles(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    from django.contrib.auth.management import create_permissions

    for config in apps.get_app_configs():
        config.models_module = True  # type: ignore[assignment]  # what create_permissions checks, set as Django does
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(Permission.objects.filter(content_type__app_label="console", codename__in=codenames))


def remove_roles(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("console", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length"),
                    ("contenttypes", "0002_remove_content_type_name")]
    operations = [migrations.RunPython(create_roles, remove_roles)]
