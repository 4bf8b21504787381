"""From global permissions to roles per study.

Before roles, an account's model permissions applied to every study. Each active staff
account (superusers aside: they may do everything anyway) that could see studies
(*view study* or *change study*) gets, in every existing study, the role matching what
it could do, the first that applies:

* **owner** where it could delete studies;
* **collaborator** where it could change them;
* **coder** where it could code descriptions and held nothing beyond what coding needed
  (the "Coders" group's four permissions: *view study*, *view judgement*, *add
  description coding*, *add code*);
* **analyst** where it could read judgements (*view* or *change judgement*);
* **viewer** otherwise.

Each grant is recorded in the study's audit list, by the system. A study left without
an owner is listed for superusers (the admin's index) to assign one. Accounts and groups
holding *add study* get "may create studies" (``studies.create_study``). The "Coders"
group is retired: its members' roles above replace it, and so is the permission *Can
export platform ids for payment*: that export is for owners and collaborators.

Reversing removes every role and audit line, the "may create studies" grants this made,
and makes the "Coders" group again (with its four permissions) for the accounts that
are coders somewhere.
"""

from django.conf import settings
from django.db import migrations

CODERS_GROUP = "Coders"
CODER_PERMS = {
    "studies.view_study",
    "studies.view_judgement",
    "studies.add_descriptioncoding",
    "studies.add_code",
}
EXPORT_PLATFORM_IDS = "export_platform_ids"
NOTE = "from the account's permissions before roles"


def _permission(apps, model: str, codename: str, name: str):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    content_type, _ = ContentType.objects.get_or_create(app_label="studies", model=model)
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type, codename=codename, defaults={"name": name}
    )
    return permission


def _held(user) -> set[str]:
    """The permissions ``user`` holds directly or through a group, as "app.codename"."""
    Permission = user.user_permissions.model
    held = Permission.objects.filter(user=user) | Permission.objects.filter(group__user=user)
    return {
        f"{app}.{codename}"
        for app, codename in held.values_list("content_type__app_label", "codename")
    }


def role_for(held: set[str]) -> str | None:
    """The role matching what an account holding ``held`` could do (the module
    docstring), or None when it could not see studies."""
    if not held & {"studies.view_study", "studies.change_study"}:
        return None
    if "studies.delete_study" in held:
        return "owner"
    if "studies.change_study" in held:
        return "collaborator"
    if "studies.add_descriptioncoding" in held and held <= CODER_PERMS:
        return "coder"
    if held & {"studies.view_judgement", "studies.change_judgement"}:
        return "analyst"
    return "viewer"


def roles_from_permissions(apps, schema_editor):
    app_label, model_name = settings.AUTH_USER_MODEL.split(".")
    User = apps.get_model(app_label, model_name)
    Group = apps.get_model("auth", "Group")
    Study = apps.get_model("studies", "Study")
    StudyRole = apps.get_model("studies", "StudyRole")
    StudyRoleEvent = apps.get_model("studies", "StudyRoleEvent")

    study_ids = list(Study.objects.order_by("pk").values_list("pk", flat=True))
    roles, events = [], []
    for user in User.objects.filter(is_active=True, is_staff=True, is_superuser=False):
        role = role_for(_held(user))
        if role is None:
            continue
        for study_id in study_ids:
            roles.append(StudyRole(study_id=study_id, user=user, role=role))
            events.append(
                StudyRoleEvent(
                    study_id=study_id,
                    user=user,
                    username=getattr(user, User.USERNAME_FIELD),
                    role=role,
                    note=NOTE,
                )
            )
    StudyRole.objects.bulk_create(roles)
    StudyRoleEvent.objects.bulk_create(events)

    create = _permission(apps, "study", "create_study", "May create studies")
    add = _permission(apps, "study", "add_study", "Can add study")
    create.user_set.add(*add.user_set.all())
    create.group_set.add(*add.group_set.all())

    Group.objects.filter(name=CODERS_GROUP).delete()
    # A permission no code asks any more: the platform-id export is a role's.
    Permission = apps.get_model("auth", "Permission")
    Permission.objects.filter(
        content_type__app_label="studies", codename=EXPORT_PLATFORM_IDS
    ).delete()


def roles_removed(apps, schema_editor):
    app_label, model_name = settings.AUTH_USER_MODEL.split(".")
    User = apps.get_model(app_label, model_name)
    Group = apps.get_model("auth", "Group")
    StudyRole = apps.get_model("studies", "StudyRole")
    StudyRoleEvent = apps.get_model("studies", "StudyRoleEvent")

    coders = User.objects.filter(study_roles__role="coder").distinct()
    group, _ = Group.objects.get_or_create(name=CODERS_GROUP)
    group.permissions.add(
        *[
            _permission(apps, codename.split("_", 1)[1], codename, codename)
            for codename in (perm.split(".")[1] for perm in sorted(CODER_PERMS))
        ]
    )
    group.user_set.add(*coders)
    StudyRoleEvent.objects.all().delete()
    StudyRole.objects.all().delete()
    create = _permission(apps, "study", "create_study", "May create studies")
    create.user_set.clear()
    create.group_set.clear()
    _permission(apps, "annotator", EXPORT_PLATFORM_IDS, "Can export platform ids for payment")


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0026_study_roles"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(roles_from_permissions, roles_removed)]
