"""Every free text staff write has a length cap that the admin's forms, the API, the
services and the database agree on (studies.models.limits); a text over it is refused
with a message and nothing is written."""

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import IntegrityError, models, transaction
from django.urls import reverse
from django.utils import timezone

from studies.datafiles.turns import parse_turns
from studies.limits import MATERIAL_TEXT_MAX_LENGTH, REASON_MAX_LENGTH
from studies.models import (
    CHECK_MESSAGES,
    Annotator,
    Assignment,
    Code,
    ConsentVersion,
    ErrorCategory,
    Judgement,
    LikertDimension,
    PoolCandidate,
    Question,
    QuestionAnswer,
    Questionnaire,
    QuestionnaireResponse,
    Reflection,
    Stage,
    Study,
    WaitExemption,
)
from studies.services import annotators_create, assignment_reject, study_create
from studies.validators import validate_turns
from tests.api.conftest import annotate, token_client
from tests.conftest import form_data
from tests.studies.admin.test_protection import judged, researcher, staff_client  # noqa: F401

# Texts that are not written by staff: an analysis run's or candidate selection's error
# is the worker's message, and a session's data is Django's.
UNCAPPED = {
    "analysis.AnalysisRun.error",
    "analysis.CandidateSelection.error",
    "studies.AnnotatorSession.session_data",
}


def capped_text_fields() -> list[tuple[type[models.Model], models.TextField]]:
    return [
        (model, field)
        for app in ("studies", "analysis")
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.local_fields
        if isinstance(field, models.TextField)
        and f"{model._meta.label}.{field.name}" not in UNCAPPED
    ]


def capped_field(constraint) -> str:
    """The field a ``text_cap`` constraint caps: Length(field) <= max_length."""
    (length,) = [constraint.condition.lhs]
    return length.source_expressions[0].name


def test_every_free_text_field_has_a_cap_the_database_enforces_too():
    fields = capped_text_fields()
    assert len(fields) >= 14
    for model, field in fields:
        label = f"{model._meta.label}.{field.name}"
        assert field.max_length, label
        (constraint,) = [
            c
            for c in model._meta.constraints
            if c.name.endswith("_max_length") and capped_field(c) == field.name
        ]
        assert CHECK_MESSAGES[constraint.name] == (
            f"Ensure this value has at most {field.max_length:,} characters."
        ), label


@pytest.mark.django_db
def test_the_database_refuses_a_text_over_its_cap(annotated_study):
    """Raw writes, past the forms and the services: each cap is a check constraint."""
    questionnaire = Questionnaire.objects.create(
        study=annotated_study, name="Background", placement=Questionnaire.Placement.SCREENING
    )
    rows = {
        Study: annotated_study,
        Stage: Stage.objects.filter(study=annotated_study).first(),
        LikertDimension: LikertDimension.objects.create(
            stage=Stage.objects.filter(study=annotated_study).first(),
            position=1,
            name="fluency",
            statement="The response is fluent.",
            points=5,
            labels=["poor", "", "", "", "excellent"],
        ),
        ConsentVersion: ConsentVersion.objects.filter(study=annotated_study).first(),
        ErrorCategory: ErrorCategory.objects.filter(study=annotated_study).first(),
        Assignment: Assignment.objects.filter(stage__study=annotated_study).first(),
        # a No: a description is only stored with one
        Judgement: Judgement.objects.filter(
            assignment__stage__study=annotated_study, coherent=False
        ).first(),
        Reflection: Reflection.objects.filter(context__study=annotated_study).first(),
        PoolCandidate: PoolCandidate.objects.create(
            context=Reflection.objects.filter(context__study=annotated_study).first().context,
            source="GPT-4",
            text="A pool candidate.",
            key="k",
        ),
        Code: Code.objects.create(study=annotated_study, slug="vague", label="Vague"),
        Questionnaire: questionnaire,
        QuestionAnswer: QuestionAnswer.objects.create(
            response=QuestionnaireResponse.objects.create(
                questionnaire=questionnaire,
                annotator=Annotator.objects.filter(study=annotated_study).first(),
                submitted_at=timezone.now(),
            ),
            question=Question.objects.create(
                questionnaire=questionnaire,
                position=1,
                text="Anything else?",
                kind=Question.Kind.TEXT,
                required=False,
            ),
            text="Nothing.",
        ),
        WaitExemption: WaitExemption.objects.create(
            annotator=Annotator.objects.filter(study=annotated_study).first(),
            stage=Stage.objects.get(study=annotated_study, position=2),
            reason="Travelling.",
        ),
    }
    judgement = rows[Judgement]
    # A reason is a pairwise answer's: the row written as one for that field.
    as_pair = {
        "coherent": None,
        "error_flags": 0,
        "most_evident_bit": None,
        "empathy": None,
        "error_description": "",
        "opponent": Reflection.objects.filter(context=judgement.reflection.context)
        .exclude(pk=judgement.reflection_id)
        .first(),
        "choice": Judgement.Choice.A,
    }
    also = {(Judgement, "reason"): as_pair}
    for model, field in capped_text_fields():
        row = rows[model]
        name = f"{model._meta.db_table.removeprefix('studies_')}_{field.name}_max_length"
        before = getattr(model.objects.get(pk=row.pk), field.name)
        if model is ConsentVersion:
            continue  # immutable: its trigger refuses any update; checked on insert below
        extra = also.get((model, field.name), {})
        with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
            model.objects.filter(pk=row.pk).update(
                **extra, **{field.name: "x" * (field.max_length + 1)}
            )
        assert any(c.name in str(excinfo.value) for c in model._meta.constraints), name
        if extra:  # the cap refused it, not the answer's shape
            assert name in str(excinfo.value)
        assert getattr(model.objects.get(pk=row.pk), field.name) == before
        # exactly at the cap is fine
        with transaction.atomic():
            model.objects.filter(pk=row.pk).update(**extra, **{field.name: "x" * field.max_length})
            transaction.set_rollback(True)
    cap = ConsentVersion._meta.get_field("consent_text").max_length
    with (
        pytest.raises(IntegrityError, match="consent_version_consent_text_max_length"),
        transaction.atomic(),
    ):
        ConsentVersion.objects.create(
            study=annotated_study,
            number=99,
            information_sheet="Sheet.",
            consent_text="x" * (cap + 1),
        )
    assert not ConsentVersion.objects.filter(number=99).exists()


@pytest.mark.django_db
def test_a_service_refuses_a_study_text_over_its_cap():
    cap = Study._meta.get_field("information_sheet").max_length
    with pytest.raises(ValidationError) as excinfo:
        study_create(
            slug="long", title="Long", information_sheet="x" * (cap + 1), consent_text="I agree."
        )
    assert excinfo.value.messages == [f"Ensure this value has at most {cap:,} characters."]
    assert not Study.objects.filter(slug="long").exists()


def test_the_admin_refuses_a_study_text_over_its_cap(staff_client, study):
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = form_data(staff_client.get(url))
    cap = Study._meta.get_field("information_sheet").max_length
    data["information_sheet"] = "x" * (cap + 1)
    response = staff_client.post(url, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["information_sheet"] == [
        f"Ensure this value has at most {cap} characters (it has {cap + 1})."
    ]
    study.refresh_from_db()
    assert study.information_sheet == "What the study is about."
    assert ConsentVersion.objects.filter(study=study).count() == 1


def test_the_admin_refuses_an_error_category_definition_over_its_cap(
    staff_client,
    study,
):
    category = ErrorCategory.objects.filter(study=study).first()
    url = reverse("admin:studies_errorcategory_change", args=[category.pk])
    data = form_data(staff_client.get(url))
    cap = ErrorCategory._meta.get_field("definition").max_length
    data["definition"] = "x" * (cap + 1)
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert "definition" in response.context["adminform"].form.errors
    assert ErrorCategory.objects.get(pk=category.pk).definition == category.definition


def test_the_admin_refuses_a_wait_exemption_reason_over_its_cap(staff_client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    url = reverse("admin:studies_annotator_change", args=[annotator.pk])
    data = form_data(staff_client.get(url))
    data.update(
        {
            "wait_exemptions-TOTAL_FORMS": 1,
            "wait_exemptions-0-stage": Stage.objects.get(study=study, position=2).pk,
            "wait_exemptions-0-reason": "x" * (REASON_MAX_LENGTH + 1),
        }
    )
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert f"at most {REASON_MAX_LENGTH} characters" in response.content.decode()
    assert not WaitExemption.objects.exists()


# --- the rejection reason on every path ------------------------------------------------------

MEGABYTE = "x" * 1_000_000


def test_the_reject_service_refuses_a_reason_over_its_cap(judged):
    with pytest.raises(ValidationError) as excinfo:
        assignment_reject(assignment=judged, reason=MEGABYTE)
    assert excinfo.value.message_dict == {
        "reason": [
            f"Ensure this value has at most {REASON_MAX_LENGTH:,} characters (it has 1,000,000)."
        ]
    }
    judged.refresh_from_db()
    assert (judged.status, judged.rejection_reason) == (Assignment.Status.IN_PROGRESS, "")


def test_the_admin_reject_action_refuses_a_reason_over_its_cap(staff_client, judged):
    url = reverse("admin:studies_assignment_changelist")
    response = staff_client.post(
        url,
        {"action": "reject", "_selected_action": [judged.pk], "apply": "1", "reason": MEGABYTE},
    )
    assert f"at most {REASON_MAX_LENGTH} characters" in response.content.decode()
    judged.refresh_from_db()
    assert (judged.status, judged.rejection_reason) == (Assignment.Status.IN_PROGRESS, "")


def test_the_api_refuses_a_rejection_reason_over_its_cap(researcher, judged):
    api = token_client(researcher)
    annotate(judged)
    response = api.post(
        f"/api/assignments/{judged.pk}/reject/", {"reason": MEGABYTE}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "reason": [f"Ensure this field has no more than {REASON_MAX_LENGTH} characters."]
    }
    judged.refresh_from_db()
    assert (judged.status, judged.rejection_reason) == (Assignment.Status.SUBMITTED, "")


@pytest.mark.django_db
def test_a_turn_over_the_cap_is_refused_where_staff_write_turns():
    """Turns are JSON (no check constraint can reach them): the model validator that
    the admin's forms and the services run refuses them."""

    turns = [{"role": "client", "text": "x" * (MATERIAL_TEXT_MAX_LENGTH + 1)}]
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="turns", title="Turns", tutorial_example_turns=turns)
    assert excinfo.value.message_dict == {
        "tutorial_example_turns": [
            f"Turn 1 is longer than {MATERIAL_TEXT_MAX_LENGTH:,} characters."
        ]
    }
    assert not Study.objects.filter(slug="turns").exists()


def test_one_turn_rule_for_every_turn_format():
    # The stored shape (the model's validator) and the files' shapes (the importers)
    # give the same reason for the same turn.
    for turn, reason in (
        (
            {"role": "coach", "text": "Hi"},
            "has unknown role 'coach' (expected therapist or client)",
        ),
        ({"role": "client", "text": " "}, "has empty text"),
        (
            {"role": "client", "text": "x" * (MATERIAL_TEXT_MAX_LENGTH + 1)},
            f"is longer than {MATERIAL_TEXT_MAX_LENGTH:,} characters",
        ),
    ):
        assert parse_turns([turn]) == (None, f"turn 1 {reason}")
        with pytest.raises(ValidationError) as raised:
            validate_turns([turn])
        assert raised.value.messages == [f"Turn 1 {reason}."]
