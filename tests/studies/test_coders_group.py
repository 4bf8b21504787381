"""The "Coders" group the data migration creates: exactly the permissions the coding
page checks, so a second coder is set up by ticking Staff status and joining it."""

import importlib

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from studies.permissions import (
    CODERS_GROUP,
    CODERS_GROUP_PERMS,
    user_may_add_codes,
    user_may_code_descriptions,
)
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)

pytestmark = pytest.mark.django_db

migration = importlib.import_module("studies.migrations.0025_coders_group")


def _perm_names(group) -> set[str]:
    return {
        f"{app}.{codename}"
        for app, codename in group.permissions.values_list("content_type__app_label", "codename")
    }


@pytest.fixture
def coders_group():
    """The group as the migration makes it (a live-server test may have flushed the
    migrated rows before this test)."""
    Group.objects.filter(name=CODERS_GROUP).delete()
    migration.create_coders_group(apps, None)
    return Group.objects.get(name=CODERS_GROUP)


def _staff_in(group, username="second_coder"):
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    user.groups.add(group)
    return get_user_model().objects.get(pk=user.pk)  # fresh permission cache


def test_the_migration_freezes_the_permissions_the_code_names():
    frozen = {f"studies.{action}_{model}" for model, action in migration.PERMISSIONS}
    assert frozen == set(CODERS_GROUP_PERMS)
    assert migration.GROUP == CODERS_GROUP


def test_the_coders_group_holds_exactly_what_coding_needs(coders_group):
    assert _perm_names(coders_group) == set(CODERS_GROUP_PERMS)
    user = _staff_in(coders_group)
    assert user_may_code_descriptions(user) and user_may_add_codes(user)


@pytest.mark.parametrize("dropped", CODERS_GROUP_PERMS)
def test_each_permission_of_the_group_is_needed(coders_group, dropped):
    app, codename = dropped.split(".")
    coders_group.permissions.remove(
        Permission.objects.get(content_type__app_label=app, codename=codename)
    )
    assert not user_may_add_codes(_staff_in(coders_group))


def test_a_member_opens_the_coding_page(client, coders_group, coding_stage):
    client.force_login(_staff_in(coders_group))
    url = reverse("studies:coding", args=[coding_stage.study.slug, 1])
    response = client.get(url)
    assert response.status_code == 200 and 'id="code-add"' in response.content.decode()


def test_the_migration_keeps_a_changed_group_and_its_other_permissions(coders_group):
    extra = Permission.objects.get(content_type__app_label="studies", codename="change_code")
    coders_group.permissions.add(extra)
    migration.create_coders_group(apps, None)  # running again adds nothing, removes nothing
    assert _perm_names(coders_group) == {*CODERS_GROUP_PERMS, "studies.change_code"}
    migration.remove_coders_group(apps, None)
    assert Group.objects.filter(name=CODERS_GROUP).exists()  # someone changed it: kept


def test_reversing_removes_the_group_it_made(coders_group):
    migration.remove_coders_group(apps, None)
    assert not Group.objects.filter(name=CODERS_GROUP).exists()
    migration.remove_coders_group(apps, None)  # and nothing to do is fine


def test_the_permissions_are_created_when_missing():
    """On a fresh database the migration runs before Django creates permissions."""
    Group.objects.filter(name=CODERS_GROUP).delete()
    Permission.objects.filter(content_type__app_label="studies", codename="add_code").delete()
    migration.create_coders_group(apps, None)
    created = Permission.objects.get(content_type__app_label="studies", codename="add_code")
    assert created.name == "Can add code"
    assert _perm_names(Group.objects.get(name=CODERS_GROUP)) == set(CODERS_GROUP_PERMS)
