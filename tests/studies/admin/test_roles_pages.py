"""The study page and the admin's own pages follow the roles: each link and action is
shown to those who may use it and its page refuses the others (a 403 saying why, a
404 without a role in the study), changing nothing; personal data for those who may
see it; creating a study makes its creator owner; the index for coders and for studies
nobody owns."""

from html import escape

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from studies.models import Annotator, PersonalDataPurge, Role, Study, StudyRole
from studies.permissions import Capability
from tests.factories import StaffMemberFactory, StaffUserFactory, StudyFactory, user_with_role
from tests.studies.admin.roles_fixtures import (  # noqa: F401  (fixtures)
    B_EMAIL,
    B_PLATFORM_ID,
    ROLE_MAY,
    SENTINELS,
    two_studies,
    two_studies_of_the_module,
)
from tests.studies.admin.test_study import new_study_post

C = Capability
SEEING = [Role.OWNER, Role.COLLABORATOR, Role.ANALYST, Role.VIEWER]

#: The study page's links and what each takes.
LINKS = {
    "Import materials": C.CONFIGURE,
    "Import automatic scores": C.ANALYSE,
    "Create annotators": C.MANAGE_ANNOTATORS,
    "Add questionnaire": C.CONFIGURE,
    "Export annotations": C.READ_ROWS,
    "Code descriptions (GPT-2 stage)": C.CODE,
}

#: The study list's actions and what each takes.
ACTIONS = {
    "export_annotations": C.READ_ROWS,
    "purge_personal_data": C.GOVERN,
    "run_analysis": C.ANALYSE,
    "compute_scores": C.ANALYSE,
    "delete_selected": C.GOVERN,
}


def pages(study) -> dict[str, Capability]:
    """The study's own admin pages and what each takes."""
    return {
        reverse("admin:studies_study_import_materials", args=[study.pk]): C.CONFIGURE,
        reverse("admin:studies_study_create_annotators", args=[study.pk]): C.MANAGE_ANNOTATORS,
        reverse("admin:studies_study_platform_ids", args=[study.pk, 2, "prolific"]): (
            C.PERSONAL_DATA
        ),
        reverse("admin:studies_study_export", args=[study.pk]): C.READ_ROWS,
        reverse("admin:analysis_automaticscore_import", args=[study.pk]): C.ANALYSE,
    }


@pytest.mark.parametrize("role", SEEING, ids=str)
def test_the_study_page_shows_each_link_and_action_to_those_who_may_use_it(
    client, two_studies, role
):
    a = two_studies.a
    client.force_login(user_with_role(a, role))
    page = client.get(reverse("admin:studies_study_change", args=[a.pk])).content.decode()
    for text, capability in LINKS.items():
        assert (text in page) == (capability in ROLE_MAY[role]), text
    delete = reverse("admin:studies_study_delete", args=[a.pk])
    assert (delete in page) == (role == Role.OWNER)
    assert ('name="_save"' in page) == (C.CONFIGURE in ROLE_MAY[role])
    listed = client.get(reverse("admin:studies_study_changelist")).content.decode()
    for action, capability in ACTIONS.items():
        assert (f'value="{action}"' in listed) == (capability in ROLE_MAY[role]), action


def test_a_coder_has_no_study_page(client, two_studies):
    a = two_studies.a
    client.force_login(user_with_role(a, Role.CODER))
    assert client.get(reverse("admin:studies_study_changelist")).status_code == 403
    response = client.get(reverse("admin:studies_study_change", args=[a.pk]))
    assert response.status_code == 403 and a.title not in response.content.decode()


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_the_study_pages_refuse_a_role_that_does_not_allow_them(client, two_studies, role):
    client.force_login(user_with_role(two_studies.a, role))
    for url, capability in pages(two_studies.a).items():
        response = client.get(url)
        if capability in ROLE_MAY[role]:
            assert response.status_code == 200, url
        else:
            assert response.status_code == 403, url
            reason = (
                f"Your role in this study ({role.label.lower()}) does not allow this: it "
                f"takes a role that may {capability.value}."
            )
            assert escape(reason) in response.content.decode(), url


def test_the_pages_of_a_study_without_a_role_in_it_are_not_found(client, two_studies):
    client.force_login(user_with_role(two_studies.a, Role.OWNER))
    for url in pages(two_studies.b):
        response = client.get(url)
        assert response.status_code == 404, url
        assert not any(s in response.content.decode() for s in SENTINELS), url


@pytest.mark.parametrize("role", [Role.ANALYST, Role.VIEWER], ids=str)
def test_creating_annotators_refused_creates_none(client, two_studies, role):
    a = two_studies.a
    client.force_login(user_with_role(a, role))
    before = Annotator.objects.filter(study=a).count()
    response = client.post(
        reverse("admin:studies_study_create_annotators", args=[a.pk]),
        {"group": a.groups.first().pk, "count": 3},
    )
    assert response.status_code == 403
    assert "does not allow this" in response.content.decode()
    assert Annotator.objects.filter(study=a).count() == before


def test_purging_is_offered_to_owners_only_and_refused_to_collaborators(client, two_studies):
    a = two_studies.a
    Study.objects.filter(pk=a.pk).update(status=Study.Status.CLOSED)
    before = PersonalDataPurge.objects.filter(study=a).count()
    client.force_login(user_with_role(a, Role.COLLABORATOR))
    client.post(
        reverse("admin:studies_study_changelist"),
        {"action": "purge_personal_data", "_selected_action": [a.pk], "apply": "1"},
    )
    assert PersonalDataPurge.objects.filter(study=a).count() == before
    assert Annotator.objects.filter(study=a).exclude(email="").exists()


# --- personal data -------------------------------------------------------------------


def annotator_with_personal_data(study) -> Annotator:
    return Annotator.objects.filter(study=study).exclude(email="").get()


def test_a_collaborator_sees_the_annotators_personal_data(client, two_studies):
    annotator = annotator_with_personal_data(two_studies.a)
    client.force_login(user_with_role(two_studies.a, Role.COLLABORATOR))
    url = reverse("admin:studies_annotator_change", args=[annotator.pk])
    page = client.get(url).content.decode()
    assert annotator.email in page and annotator.platform_participant_id in page
    assert annotator.access_token in page  # the invitation link
    listed = client.get(
        reverse("admin:studies_annotator_changelist"), {"q": annotator.platform_participant_id}
    )
    assert listed.context["cl"].result_count == 1


def test_an_analyst_reads_the_annotators_without_their_personal_data(client, two_studies):
    annotator = annotator_with_personal_data(two_studies.a)
    client.force_login(user_with_role(two_studies.a, Role.ANALYST))
    url = reverse("admin:studies_annotator_change", args=[annotator.pk])
    page = client.get(url).content.decode()
    assert annotator.pseudonym in page
    assert annotator.email not in page
    assert annotator.platform_participant_id not in page
    assert annotator.access_token not in page
    assert 'name="_save"' not in page
    changelist = reverse("admin:studies_annotator_changelist")
    listed = client.get(changelist, {"q": annotator.platform_participant_id})
    assert listed.context["cl"].result_count == 0
    assert listed.context["cl"].search_fields == ["pseudonym"]
    # A filter in the address would tell the e-mail address letter by letter.
    for lookup in ("email__startswith", "platform_participant_id", "access_token__contains"):
        assert client.get(changelist, {lookup: "s"}).status_code == 400, lookup


def test_personal_data_leaves_a_list_that_holds_a_study_where_the_user_may_not_see_it(
    client, two_studies
):
    """Collaborator in A, analyst in B: the list of both studies' annotators searches
    neither study's platform ids (a search is one for the whole list)."""
    user = user_with_role(two_studies.a, Role.COLLABORATOR)
    StudyRole.objects.create(study=two_studies.b, user=user, role=Role.ANALYST)
    client.force_login(user)
    listed = client.get(reverse("admin:studies_annotator_changelist"), {"q": B_PLATFORM_ID})
    assert listed.context["cl"].result_count == 0
    theirs = annotator_with_personal_data(two_studies.b)
    page = client.get(reverse("admin:studies_annotator_change", args=[theirs.pk]))
    assert B_EMAIL not in page.content.decode()
    ours = annotator_with_personal_data(two_studies.a)
    page = client.get(reverse("admin:studies_annotator_change", args=[ours.pk]))
    assert ours.email in page.content.decode()


def test_the_join_links_offer_the_platform_ids_to_those_who_may_see_them(client, two_studies):
    a = two_studies.a
    ids = reverse("admin:studies_study_platform_ids", args=[a.pk, 2, "prolific"])
    for role, shown in ((Role.COLLABORATOR, True), (Role.VIEWER, False)):
        client.force_login(user_with_role(a, role))
        page = client.get(reverse("admin:studies_study_change", args=[a.pk])).content.decode()
        assert (ids in page) == shown, role


# --- creating and deleting studies --------------------------------------------------


def test_creating_a_study_needs_the_permission_and_makes_the_creator_owner(client, db):
    creator = StaffMemberFactory()
    client.force_login(creator)
    add = reverse("admin:studies_study_add")
    assert client.get(add).status_code == 403
    assert client.post(add, new_study_post()).status_code == 403
    assert not Study.objects.filter(slug="new-study").exists()

    creator.user_permissions.add(Permission.objects.get(codename="create_study"))
    creator = type(creator).objects.get(pk=creator.pk)
    client.force_login(creator)
    assert client.get(add).status_code == 200
    response = client.post(add, new_study_post())
    assert response.status_code == 302
    study = Study.objects.get(slug="new-study")
    assert study.created_by == creator
    assert list(StudyRole.objects.filter(study=study).values_list("user", "role")) == [
        (creator.pk, Role.OWNER)
    ]
    # Its page is theirs now, with the rest of the owner's links.
    page = client.get(reverse("admin:studies_study_change", args=[study.pk]))
    assert page.status_code == 200 and "Import materials" in page.content.decode()


def test_a_role_in_a_study_does_not_let_one_create_studies(client, two_studies):
    client.force_login(user_with_role(two_studies.a, Role.OWNER))
    assert client.get(reverse("admin:studies_study_add")).status_code == 403


@pytest.mark.parametrize("role", [Role.COLLABORATOR, Role.VIEWER], ids=str)
def test_deleting_a_study_needs_its_owner(client, db, role):
    study = StudyFactory()
    client.force_login(user_with_role(study, role))
    url = reverse("admin:studies_study_delete", args=[study.pk])
    assert client.get(url).status_code == 403
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert Study.objects.filter(pk=study.pk).exists()


def test_the_owner_deletes_their_study(client, db):
    study = StudyFactory()
    client.force_login(user_with_role(study, Role.OWNER))
    url = reverse("admin:studies_study_delete", args=[study.pk])
    assert client.get(url).status_code == 200
    assert client.post(url, {"post": "yes"}).status_code == 302
    assert not Study.objects.filter(pk=study.pk).exists()


# --- the index ----------------------------------------------------------------------


def test_a_coder_finds_the_coding_pages_of_their_studies_on_the_index(client, two_studies):
    a = two_studies.a
    coder = user_with_role(a, Role.CODER)
    StudyRole.objects.create(study=StudyFactory(title="Nothing to code"), user=coder, role="coder")
    client.force_login(coder)
    page = client.get(reverse("admin:index")).content.decode()
    coding = reverse("studies:coding", args=[a.slug, 1])
    assert f'<a href="{coding}">Alpha study: GPT-2 stage</a>' in page
    assert reverse("studies:coding", args=[a.slug, 2]) not in page  # asks for no description
    assert "Nothing to code" not in page
    assert "permission to view or edit anything" not in page


def test_an_analyst_gets_the_lists_not_the_coding_panel(client, two_studies):
    client.force_login(user_with_role(two_studies.a, Role.ANALYST))
    page = client.get(reverse("admin:index")).content.decode()
    assert 'id="coding-pages"' not in page and "Judgements" in page


def test_superusers_are_told_of_the_studies_without_an_owner(client, two_studies):
    ownerless = StudyFactory(title="Left without owner")
    owned = StudyFactory(title="Owned one")
    StudyRole.objects.create(study=owned, user=StaffMemberFactory(), role=Role.OWNER)
    client.force_login(StaffUserFactory())
    page = client.get(reverse("admin:index")).content.decode()
    assert "Studies without an owner" in page and "Roles page" in page
    change = reverse("admin:studies_study_change", args=[ownerless.pk])
    assert f'<a href="{change}">Left without owner</a>' in page
    assert "Owned one" not in page


def test_others_are_not_told_of_studies_without_an_owner(client, two_studies):
    StudyFactory(title="Left without owner")
    client.force_login(user_with_role(two_studies.a, Role.COLLABORATOR))
    page = client.get(reverse("admin:index")).content.decode()
    assert "Studies without an owner" not in page and "Left without owner" not in page
