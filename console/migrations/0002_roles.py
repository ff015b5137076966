"""The viewer, operator and admin roles as Django groups."""

from __future__ import annotations

from django.db import migrations

from console.roles import ROLES


def create_roles(apps, schema_editor):  # type: ignore[no-untyped-def]
    from django.contrib.auth.management import create_permissions

    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, apps=apps, verbosity=0)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.set(Permission.objects.filter(content_type__app_label="console", codename__in=codenames))


def remove_roles(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("console", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length"),
                    ("contenttypes", "0002_remove_content_type_name")]
    operations = [migrations.RunPython(create_roles, remove_roles)]
