"""The "Coders" group: the four permissions a second coder needs, picked once.

A coder codes descriptions and grows the codebook on the coding page
(``studies.permissions.user_may_add_codes``): *view study*, *view judgement* (the
descriptions are judgement data), *add description coding* and *add code*. Making a
staff account a coder is then: tick *Staff status* and add the account to this group.

The permissions are frozen here (``studies.permissions.CODERS_GROUP_PERMS`` names
them for the code; a test holds the two together). They are created if missing: on a
fresh database the migration runs before Django creates the permissions after
``migrate``. A group named "Coders" that exists already gains the four permissions and
keeps its others. Reversing removes the group only when it holds exactly these four
(a group someone changed stays).
"""

from django.db import migrations

GROUP = "Coders"
# (model, action): the permission's codename is "<action>_<model>".
PERMISSIONS = (
    ("study", "view"),
    ("judgement", "view"),
    ("descriptioncoding", "add"),
    ("code", "add"),
)


def _permissions(apps):
    """The four permissions, created as Django names them when they are missing."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    permissions = []
    for model, action in PERMISSIONS:
        content_type, _ = ContentType.objects.get_or_create(app_label="studies", model=model)
        verbose_name = apps.get_model("studies", model)._meta.verbose_name_raw
        permission, _ = Permission.objects.get_or_create(
            content_type=content_type,
            codename=f"{action}_{model}",
            defaults={"name": f"Can {action} {verbose_name}"},
        )
        permissions.append(permission)
    return permissions


def create_coders_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    group, _ = Group.objects.get_or_create(name=GROUP)
    group.permissions.add(*_permissions(apps))


def remove_coders_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    group = Group.objects.filter(name=GROUP).first()
    if group is None:
        return
    held = set(
        group.permissions.values_list("content_type__app_label", "content_type__model", "codename")
    )
    if held == {("studies", model, f"{action}_{model}") for model, action in PERMISSIONS}:
        group.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0024_study_coding_reveals_sources"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_coders_group, remove_coders_group)]
