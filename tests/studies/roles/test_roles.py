"""Roles per study: the table of what each allows, the one lookup every interface asks,
granting and withdrawing with the audit list, and the last owner."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404

from studies.models import Role, Study, StudyRole, StudyRoleEvent
from studies.permissions import (
    ROLE_CAPABILITIES,
    Capability,
    rows_where,
    studies_where,
    study_for_user,
    user_has_a_role,
    user_may,
    user_may_create_studies,
)
from studies.services.roles import (
    role_user_by_name,
    study_created_by,
    study_role_grant,
    study_role_withdraw,
)
from tests.factories import (
    StaffMemberFactory,
    StaffUserFactory,
    StageFactory,
    StudyFactory,
    user_with_role,
)

pytestmark = pytest.mark.django_db

# The table, written out again by hand: role -> what it may do.
C = Capability
EXPECTED = {
    "owner": {
        C.SEE,
        C.CONFIGURE,
        C.MANAGE_ANNOTATORS,
        C.READ_ROWS,
        C.PERSONAL_DATA,
        C.ANALYSE,
        C.CODE,
        C.GOVERN,
    },
    "collaborator": {
        C.SEE,
        C.CONFIGURE,
        C.MANAGE_ANNOTATORS,
        C.READ_ROWS,
        C.PERSONAL_DATA,
        C.ANALYSE,
        C.CODE,
    },
    "analyst": {C.SEE, C.READ_ROWS, C.ANALYSE},
    "coder": {C.CODE},
    "viewer": {C.SEE},
}


def test_the_table_of_roles_is_the_documented_one():
    assert {role.value: set(caps) for role, caps in ROLE_CAPABILITIES.items()} == EXPECTED


@pytest.mark.parametrize("role", [r.value for r in Role])
def test_a_role_allows_its_capabilities_in_its_study_only(role):
    study, other = StudyFactory(), StudyFactory()
    user = user_with_role(study, role)
    for capability in Capability:
        assert user_may(user, study, capability) == (capability in EXPECTED[role])
        assert not user_may(user, other, capability)
        assert list(studies_where(user, capability)) == (
            [study] if capability in EXPECTED[role] else []
        )


def test_superusers_may_everything_everywhere_and_inactive_accounts_nothing():
    study = StudyFactory()
    admin = StaffUserFactory()
    assert all(user_may(admin, study, capability) for capability in Capability)
    assert user_has_a_role(admin)
    admin.is_active = False
    assert not user_may(admin, study, Capability.SEE) and not user_has_a_role(admin)
    owner = user_with_role(study, "owner")
    owner.is_staff = False  # a role needs an account that can sign in
    assert not user_may(owner, study, Capability.SEE)


def test_global_model_permissions_grant_nothing_in_a_study():
    from django.contrib.auth.models import Permission

    study = StudyFactory()
    user = StaffMemberFactory()
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="studies"))
    user = type(user).objects.get(pk=user.pk)
    assert user.has_perm("studies.view_judgement")
    assert not any(user_may(user, study, capability) for capability in Capability)
    assert not user_has_a_role(user)
    assert user_may_create_studies(user)  # create_study is the one global permission


def test_rows_are_narrowed_through_their_path_to_the_study():
    study, other = StudyFactory(), StudyFactory()
    StageFactory(study=study), StageFactory(study=other)
    user = user_with_role(study, "viewer")
    from studies.models import Stage

    assert set(
        rows_where(Stage.objects.all(), user, Capability.SEE).values_list("study", flat=True)
    ) == {study.pk}
    assert not rows_where(Stage.objects.all(), user, Capability.READ_ROWS).exists()
    assert rows_where(Stage.objects.all(), StaffUserFactory(), Capability.GOVERN).count() == 2


def test_the_study_of_a_url_is_a_404_without_a_role_and_a_403_with_a_lesser_one():
    study, other = StudyFactory(), StudyFactory()
    analyst = user_with_role(study, "analyst")
    assert study_for_user(analyst, study.slug, Capability.READ_ROWS) == study
    with pytest.raises(Http404):
        study_for_user(analyst, other.slug, Capability.SEE)
    with pytest.raises(Http404):  # the same answer as for a study that does not exist
        study_for_user(analyst, "no-such-study", Capability.SEE)
    with pytest.raises(PermissionDenied) as refused:
        study_for_user(analyst, study.slug, Capability.CONFIGURE)
    assert str(refused.value) == (
        "Your role in this study (analyst) does not allow this: it takes a role that may "
        "change the study's configuration and open or close it."
    )


def _events(study):
    return list(
        StudyRoleEvent.objects.filter(study=study)
        .order_by("pk")
        .values_list("username", "previous_role", "role", "by_username", "note")
    )


def test_granting_changing_and_withdrawing_are_recorded():
    study = StudyFactory()
    owner = StaffMemberFactory(username="olga")
    study_created_by(study=study, user=owner)
    assert Study.objects.get(pk=study.pk).created_by == owner
    alex = StaffMemberFactory(username="alex")
    study_role_grant(study=study, user=alex, role="coder", by=owner)
    assert user_may(alex, study, Capability.CODE)
    study_role_grant(study=study, user=alex, role="analyst", by=owner)
    assert not user_may(alex, study, Capability.CODE)  # the change is seen at once
    assert user_may(alex, study, Capability.READ_ROWS)
    study_role_withdraw(study=study, user=alex, by=owner)
    assert not user_may(alex, study, Capability.SEE)
    assert _events(study) == [
        ("olga", "", "owner", "olga", "created the study"),
        ("alex", "", "coder", "olga", ""),
        ("alex", "coder", "analyst", "olga", ""),
        ("alex", "analyst", "", "olga", ""),
    ]


def test_a_study_keeps_its_last_owner():
    study = StudyFactory()
    owner = StaffMemberFactory(username="olga")
    study_created_by(study=study, user=owner)
    before = _events(study)
    for attempt in (
        lambda: study_role_withdraw(study=study, user=owner, by=owner),
        lambda: study_role_grant(study=study, user=owner, role="collaborator", by=owner),
    ):
        with pytest.raises(ValidationError) as refused:
            attempt()
        assert refused.value.messages == [
            "A study keeps at least one owner: make another user its owner before olga "
            "stops being one."
        ]
    assert _events(study) == before
    assert StudyRole.objects.get(study=study, user=owner).role == "owner"
    second = StaffMemberFactory()
    study_role_grant(study=study, user=second, role="owner", by=owner)
    study_role_withdraw(study=study, user=owner, by=second)  # now another owner stays
    assert list(StudyRole.objects.filter(study=study).values_list("user", flat=True)) == [second.pk]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"is_staff": False}, "pat is not an active staff account"),
        ({"is_active": False}, "pat is not an active staff account"),
    ],
)
def test_a_role_needs_an_active_staff_account(change, message):
    study = StudyFactory()
    user = StaffMemberFactory(username="pat", **change)
    with pytest.raises(ValidationError) as refused:
        study_role_grant(study=study, user=user, role="viewer", by=None)
    assert refused.value.messages[0].startswith(message)
    assert not StudyRole.objects.exists() and not StudyRoleEvent.objects.exists()


def test_the_same_role_again_is_refused_and_records_nothing():
    study = StudyFactory()
    user = user_with_role(study, "viewer", username="vic")
    with pytest.raises(ValidationError, match="vic is already viewer of this study"):
        study_role_grant(study=study, user=user, role="viewer", by=None)
    with pytest.raises(ValidationError, match="has no role in this study"):
        study_role_withdraw(study=study, user=StaffMemberFactory(), by=None)
    assert not StudyRoleEvent.objects.exists()


def test_accounts_are_found_by_username_or_email_address():
    user = StaffMemberFactory(username="kim", email="Kim@example.org")
    assert role_user_by_name(" kim ") == user
    assert role_user_by_name("kim@example.org") == user
    StaffMemberFactory(username="kim2", email="kim@example.org")
    with pytest.raises(ValidationError, match="Several staff accounts"):
        role_user_by_name("kim@example.org")
    with pytest.raises(ValidationError, match="No active staff account"):
        role_user_by_name("nobody")
    StaffMemberFactory(username="gone", is_active=False)
    with pytest.raises(ValidationError, match="No active staff account"):
        role_user_by_name("gone")
