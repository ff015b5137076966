"""The `manage_people` permission (the People page: add users, give roles, deactivate), granted
to the admin role."""

from __future__ import annotations

from django.db import migrations
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

from console.roles import EXTRA_PERMISSIONS, ROLES


def grant(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    table, _ = ContentType.objects.get_or_create(app_label="console", model="table")
    for codename, name in EXTRA_PERMISSIONS.items():
        permission, _ = Permission.objects.get_or_create(content_type=table, codename=codename,
                                                         defaults={"name": name})
        for role, codenames in ROLES.items():
            if codename in codenames:
                Group.objects.get_or_create(name=role)[0].permissions.add(permission)


def revoke(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    apps.get_model("auth", "Permission").objects.filter(content_type__app_label="console",
                                                        codename__in=EXTRA_PERMISSIONS).delete()


class Migration(migrations.Migration):
    dependencies = [("console", "0015_plan_store"), ("console", "0002_roles")]
    operations = [migrations.RunPython(grant, revoke)]
