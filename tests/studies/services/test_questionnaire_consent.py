"""Screening answers count only once their author consents: someone who answers and
then declines leaves nothing behind, and someone who never consents (or was
deactivated) is neither exported nor reported."""

import csv
import io

import pandas as pd
import pytest
from django.core.cache import cache
from django.urls import reverse

from analysis.report.build import report_build
from analysis.selectors.questionnaires import questionnaire_data
from studies.models import Annotator, QuestionAnswer, QuestionnaireResponse, Study
from studies.services import annotators_create
from tests.factories import StaffUserFactory
from tests.studies.questionnaire_helpers import consent, post_data, screening

ANSWERS = {1: "Yes", 2: ["Linguistics"], 3: "4", 4: "My private story."}


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    loaded_study.refresh_from_db()
    return loaded_study


def invited(client, study, group="Layperson") -> Annotator:
    annotator = annotators_create(group=study.groups.get(name=group), count=1)[0]
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def exported(study) -> list[list[str]]:
    from django.test import Client

    staff = Client()
    staff.force_login(StaffUserFactory())
    response = staff.get(reverse("studies:export_questionnaires", args=[study.slug]))
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def reported(study) -> dict:
    return report_build(
        frame=pd.DataFrame(),
        study_slug=study.slug,
        parameters={},
        categories=[],
        questionnaires=questionnaire_data(study_id=study.pk),
    )["questionnaires"]["Screening"]


def test_an_invited_person_who_declines_after_screening_leaves_no_answers(client, open_study):
    q = screening(open_study)
    annotator = invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, ANSWERS))
    assert QuestionAnswer.objects.filter(response__annotator=annotator).exists()
    client.post("/s/pilot/consent/decline/")
    assert not QuestionnaireResponse.objects.filter(annotator=annotator).exists()
    assert not QuestionAnswer.objects.exists()
    assert len(exported(open_study)) == 1  # the header only
    assert reported(open_study)["Anything else we should know?"] == {}


def test_answers_count_only_once_consented_and_while_active(client, open_study):
    q = screening(open_study)
    waiting = invited(client, open_study)
    client.post("/s/pilot/questionnaire/", post_data(q, ANSWERS))
    assert len(exported(open_study)) == 1
    assert reported(open_study)["Is English your first language?"] == {}
    consent(waiting)
    rows = exported(open_study)
    assert len(rows) == 5 and "My private story." in rows[-1]
    assert reported(open_study)["Is English your first language?"] == {
        "Layperson": {"n": 1, "counts": {"Yes": 1, "No": 0}}
    }
    Annotator.objects.filter(pk=waiting.pk).update(is_active=False)
    assert len(exported(open_study)) == 1
    assert reported(open_study)["Is English your first language?"] == {}
