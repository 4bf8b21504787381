"""Every per-study admin follows the roles: a user with a role in study A lists A's rows
only, never opens B's, and may view, change, add and delete what the role allows;
model permissions alone grant nothing."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.test import RequestFactory
from django.urls import reverse

from analysis.models import AnalysisRun, AutomaticScore, CandidateSelection
from studies.admin.per_study import study_id_of
from studies.models import (
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    Code,
    Coder,
    ConsentVersion,
    DescriptionCoding,
    DialogueContext,
    ErrorCategory,
    Judgement,
    PersonalDataPurge,
    Question,
    Questionnaire,
    Reflection,
    Role,
    Stage,
    Study,
)
from studies.permissions import Capability
from tests.factories import StaffMemberFactory, user_with_role
from tests.studies.admin.roles_fixtures import (  # noqa: F401  (fixtures)
    ROLE_MAY,
    SENTINELS,
    per_study_admins,
    rows_of,
    two_studies,
    two_studies_of_the_module,
)

C = Capability
CONFIGURATION = (C.SEE, C.CONFIGURE, C.CONFIGURE, C.CONFIGURE)
#: What each admin's view, change, add and delete take (None: nobody; Study's add is
#: the global "may create studies", tested apart).
ADMIN_CAPABILITIES = {
    Study: (C.SEE, C.CONFIGURE, None, C.GOVERN),
    Stage: CONFIGURATION,
    AnnotatorGroup: CONFIGURATION,
    ErrorCategory: CONFIGURATION,
    ConsentVersion: (C.SEE, None, None, None),
    Questionnaire: CONFIGURATION,
    Question: CONFIGURATION,
    DialogueContext: CONFIGURATION,
    Reflection: CONFIGURATION,
    Batch: (C.SEE, C.CONFIGURE, None, C.CONFIGURE),
    Code: CONFIGURATION,
    PersonalDataPurge: (C.SEE, None, None, None),
    Annotator: (C.READ_ROWS, C.MANAGE_ANNOTATORS, None, C.MANAGE_ANNOTATORS),
    Assignment: (C.READ_ROWS, None, None, None),
    Judgement: (C.READ_ROWS, None, None, None),
    Coder: (C.READ_ROWS, C.CONFIGURE, C.CONFIGURE, C.CONFIGURE),
    DescriptionCoding: (C.READ_ROWS, None, None, None),
    AnalysisRun: (C.ANALYSE, None, None, C.ANALYSE),
    AutomaticScore: (C.ANALYSE, None, None, C.ANALYSE),
    CandidateSelection: (C.SEE, None, None, C.CONFIGURE),
}


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def change_page(obj) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])


def test_every_model_of_a_study_has_a_per_study_admin():
    """No admin of the studies or analysis apps is left on model permissions."""
    registered = {
        model
        for model in apps.get_models()
        if model._meta.app_label in ("studies", "analysis") and admin.site.is_registered(model)
    }
    assert registered == set(per_study_admins()) == set(ADMIN_CAPABILITIES)


def test_the_fixture_has_rows_of_every_admin_in_both_studies(two_studies):
    for model in per_study_admins():
        assert rows_of(model, two_studies.a).exists(), model
        assert rows_of(model, two_studies.b).exists(), model


@pytest.mark.parametrize("model", list(ADMIN_CAPABILITIES), ids=lambda m: m.__name__)
def test_a_role_in_study_a_lists_a_rows_only_and_never_opens_b_rows(client, two_studies, model):
    a, b = two_studies.a, two_studies.b
    client.force_login(user_with_role(a, Role.OWNER))
    response = client.get(changelist(model))
    assert response.status_code == 200
    model_admin = response.context["cl"].model_admin
    listed = list(response.context["cl"].result_list)
    assert {study_id_of(row, model_admin.study_path) for row in listed} == {a.pk}
    assert len(listed) == min(rows_of(model, a).count(), model_admin.list_per_page)
    for row in rows_of(model, b)[:3]:
        response = client.get(change_page(row))
        assert response.status_code == 302 and response["Location"] == reverse("admin:index")
        assert not any(s in response.content.decode() for s in SENTINELS)


@pytest.mark.parametrize("role", list(Role), ids=str)
def test_each_admin_allows_a_role_what_the_table_gives_it(two_studies, role):
    a, b = two_studies.a, two_studies.b
    request = RequestFactory().get("/admin/")
    request.user = user_with_role(a, role)
    may = ROLE_MAY[role]
    for model, (view, change, add, delete) in ADMIN_CAPABILITIES.items():
        model_admin = per_study_admins()[model]
        ours, theirs = rows_of(model, a).first(), rows_of(model, b).first()
        name = f"{model.__name__} for a {role}"
        assert model_admin.has_view_permission(request, ours) == (view in may), name
        assert model_admin.has_view_permission(request) == (view in may), name
        assert model_admin.has_change_permission(request, ours) == (change in may), name
        assert model_admin.has_add_permission(request) == (add in may), name
        assert model_admin.has_delete_permission(request) == (delete in may), name
        assert model_admin.has_module_permission(request) == (view in may), name
        for check in ("view", "change", "delete"):
            assert not getattr(model_admin, f"has_{check}_permission")(request, theirs), name
        assert list(model_admin.get_queryset(request).filter(pk=theirs.pk)) == [], name


def test_a_viewer_reads_a_stage_but_cannot_change_add_or_delete_it(client, two_studies):
    stage = Stage.objects.filter(study=two_studies.a).order_by("position").first()
    client.force_login(user_with_role(two_studies.a, Role.VIEWER))
    page = client.get(change_page(stage))
    assert page.status_code == 200 and stage.name in page.content.decode()
    assert 'name="_save"' not in page.content.decode()
    refused = client.post(change_page(stage), {"name": "Renamed", "position": stage.position})
    assert refused.status_code == 403
    assert client.get(reverse("admin:studies_stage_add")).status_code == 403
    assert client.get(reverse("admin:studies_stage_delete", args=[stage.pk])).status_code == 403
    stage.refresh_from_db()
    assert stage.name == "GPT-2 stage"


def test_a_collaborator_changes_a_stage_of_their_study(client, two_studies):
    from tests.conftest import form_data

    stage = Stage.objects.filter(study=two_studies.a).order_by("position").first()
    client.force_login(user_with_role(two_studies.a, Role.COLLABORATOR))
    data = form_data(client.get(change_page(stage)))
    response = client.post(change_page(stage), {**data, "name": "Renamed"})
    assert response.status_code == 302
    stage.refresh_from_db()
    assert stage.name == "Renamed"


def test_a_new_row_may_only_go_to_a_study_the_user_configures(client, two_studies):
    """The add page's menu lists study A only; study B posted anyway is refused, and
    nothing is written."""
    a, b = two_studies.a, two_studies.b
    user = user_with_role(a, Role.COLLABORATOR)
    client.force_login(user)
    url = reverse("admin:studies_code_add")
    page = client.get(url)
    assert list(page.context["adminform"].form.fields["study"].queryset) == [a]
    assert b.title not in page.content.decode()
    data = {"study": b.pk, "slug": "sneaky", "label": "Sneaky", "definition": "D"}
    response = client.post(url, data)
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not Code.objects.filter(slug="sneaky").exists()
    response = client.post(url, {**data, "study": a.pk})
    assert response.status_code == 302
    assert Code.objects.get(slug="sneaky").study == a


def test_a_questionnaire_cannot_follow_a_stage_of_a_study_the_user_has_no_role_in(
    client, two_studies
):
    """The stage menu lists study A's stages only, and a stage of B posted anyway is
    refused without naming B."""
    a, b = two_studies.a, two_studies.b
    client.force_login(user_with_role(a, Role.COLLABORATOR))
    url = reverse("admin:studies_questionnaire_add")
    page = client.get(url)
    stages = page.context["adminform"].form.fields["stage"].queryset
    assert {stage.study_id for stage in stages} == {a.pk}
    theirs = b.stages.get(position=1)
    data = {"study": a.pk, "name": "Later", "placement": "after_stage", "stage": theirs.pk}
    response = client.post(url, data)
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not any(s in response.content.decode() for s in SENTINELS)
    assert not Questionnaire.objects.filter(name="Later").exists()


@pytest.mark.parametrize("model", list(ADMIN_CAPABILITIES), ids=lambda m: m.__name__)
def test_the_filters_offer_only_the_values_of_the_rows_listed(client, two_studies, model):
    """No filter's choices name study B or its rows (a filter with one choice is not
    drawn, so its choices are read from the list's filters, drawn or not)."""
    client.force_login(user_with_role(two_studies.a, Role.OWNER))
    cl = client.get(changelist(model)).context["cl"]
    for spec in cl.filter_specs:
        shown = " ".join(str(choice["display"]) for choice in spec.choices(cl))
        assert not any(s in shown for s in SENTINELS), (model, spec.title)
        if getattr(spec, "field", None) is not None and spec.field.related_model is Study:
            assert [pk for pk, _ in spec.lookup_choices] == [two_studies.a.pk]


def test_model_permissions_without_a_role_see_no_study_row(client, two_studies):
    """A staff account holding every permission of the studies and analysis apps, but
    no role: the lists are refused (the studies list, theirs to add to since they may
    create studies, is empty) and the index lists none of them."""
    user = StaffMemberFactory()
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["studies", "analysis"])
    )
    client.force_login(user)
    for model in per_study_admins():
        response = client.get(changelist(model))
        if model is Study:
            assert response.status_code == 200 and response.context["cl"].result_count == 0
        else:
            assert response.status_code == 403, model
        row = rows_of(model, two_studies.a).first()
        assert client.get(change_page(row)).status_code in (302, 403), model
    index = client.get(reverse("admin:index")).content.decode()
    assert two_studies.a.title not in index and "Judgements" not in index
