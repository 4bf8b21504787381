"""The migration from global permissions to roles, run on a copy of the demo with the
kinds of accounts an installation had: each gets, in every study, the role matching
what it could do; "may create studies" follows *add study*; the Coders group goes."""

import importlib
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from studies.models import Study, StudyRole, StudyRoleEvent
from studies.permissions import Capability, user_may, user_may_create_studies
from tests.factories import StudyFactory

pytestmark = pytest.mark.django_db

migration = importlib.import_module("studies.migrations.0027_study_roles_from_permissions")


def _perms(*names):
    return [
        Permission.objects.get(content_type__app_label="studies", codename=name) for name in names
    ]


def _account(username, *perms, groups=(), **flags):
    user = get_user_model().objects.create_user(
        username=username, password="pw", is_staff=flags.pop("is_staff", True), **flags
    )
    user.user_permissions.add(*_perms(*perms))
    user.groups.add(*groups)
    return user


@pytest.fixture
def before_roles():
    """The demo's two studies and a third, as an installation before roles: accounts
    with global permissions (and the Coders group), no roles."""
    call_command("load_demo", "--force", "--no-judgements", stdout=StringIO())
    StudyFactory(slug="second")
    StudyRole.objects.all().delete()
    StudyRoleEvent.objects.all().delete()
    coders = Group.objects.get_or_create(name="Coders")[0]
    coders.permissions.set(
        _perms("view_study", "view_judgement", "add_descriptioncoding", "add_code")
    )
    creators = Group.objects.create(name="Study creators")
    creators.permissions.set(_perms("add_study", "view_study"))
    _account("head", "delete_study", "change_study", "view_study", "add_study")
    _account("colleague", "change_study", "view_judgement")
    _account("coder", groups=[coders])
    _account("coder_and_more", "view_assignment", groups=[coders])
    _account("statistician", "view_study", "view_judgement", "view_assignment")
    _account("observer", "view_study")
    _account("creator", groups=[creators])
    _account("rows_only", "view_judgement")  # could not see studies: no role
    _account("former", "delete_study", "view_study", is_active=False)
    _account("not_staff", "view_study", is_staff=False)
    get_user_model().objects.create_superuser("root", password="pw")


def _roles():
    return {
        (role.user.username, role.study.slug): role.role
        for role in StudyRole.objects.select_related("user", "study")
    }


def test_each_account_gets_the_role_matching_what_it_could_do(before_roles):
    migration.roles_from_permissions(apps, None)
    expected_role = {
        "head": "owner",
        "colleague": "collaborator",
        "coder": "coder",
        "coder_and_more": "analyst",  # held more than coding needed
        "statistician": "analyst",
        "observer": "viewer",
        "creator": "viewer",
    }
    slugs = set(Study.objects.values_list("slug", flat=True))
    assert slugs == {"demo", "demo-likert", "demo-comparisons", "demo-gated", "second"}
    assert _roles() == {
        (user, slug): role for user, role in expected_role.items() for slug in slugs
    }
    events = StudyRoleEvent.objects.all()
    assert events.count() == len(expected_role) * len(slugs)
    assert {(e.by_id, e.by_username, e.previous_role, e.note) for e in events} == {
        (None, "", "", migration.NOTE)
    }
    User = get_user_model()
    assert {u.username for u in User.objects.all() if user_may_create_studies(u)} == {
        "head",
        "creator",
        "root",
        "researcher",  # the demo's superuser
    }
    assert not Group.objects.filter(name="Coders").exists()
    assert not Permission.objects.filter(codename="export_platform_ids").exists()
    coder = User.objects.get(username="coder")
    demo = Study.objects.get(slug="demo")
    assert user_may(coder, demo, Capability.CODE)
    assert not user_may(coder, demo, Capability.READ_ROWS)


def test_without_an_account_that_could_delete_a_study_is_left_without_owner(before_roles):
    get_user_model().objects.filter(username="head").update(is_active=False)
    migration.roles_from_permissions(apps, None)
    assert not StudyRole.objects.filter(role="owner").exists()
    assert Study.objects.without_owner().count() == Study.objects.count() == 5


def test_reversing_removes_the_roles_and_brings_the_coders_group_back(before_roles):
    migration.roles_from_permissions(apps, None)
    migration.roles_removed(apps, None)
    assert not StudyRole.objects.exists() and not StudyRoleEvent.objects.exists()
    coders = Group.objects.get(name="Coders")
    assert {u.username for u in coders.user_set.all()} == {"coder"}
    assert {p.codename for p in coders.permissions.all()} == {
        "view_study",
        "view_judgement",
        "add_descriptioncoding",
        "add_code",
    }
    User = get_user_model()
    assert not Permission.objects.get(codename="create_study").user_set.exists()
    assert not user_may_create_studies(User.objects.get(username="creator"))
    assert Permission.objects.filter(codename="export_platform_ids").exists()
