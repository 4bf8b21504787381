"""A study's own wording of the instrument (the coherence question, the rating's
statement and labels) and the categories that catch the attention check: their effect
on the item panel, the review page, the exports and the attention check; and the lock
once annotation started."""

import csv
import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from studies.models import Assignment, ErrorCategory, Reflection, Study
from studies.protocol import COHERENCE_QUESTION, default_empathy_labels
from studies.services import (
    Answer,
    annotators_create,
    assignment_claim,
    assignment_submit,
    consent_version_current,
    judgement_record,
)

LABELS = ["not at all", "a little", "somewhat", "mostly", "completely"]
QUESTION = "Does this reply make sense after the conversation?"
STATEMENT = "The reply shows the counsellor understood the client."


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, batches_per_stage=2, tutorial_intro="How it works."
    )
    loaded_study.refresh_from_db()
    return loaded_study


def _ready(client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    annotator.consented_version = consent_version_current(study=study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


def test_a_new_study_has_the_protocol_texts(study):
    assert study.coherence_question == COHERENCE_QUESTION
    assert study.empathy_labels == default_empathy_labels()
    assert study.empathy_scale[1] == "disagree" and study.empathy_scale[5] == "agree"
    catching = ErrorCategory.objects.filter(study=study, catches_attention_check=True)
    assert list(catching.values_list("slug", flat=True)) == ["off_topic"]


@pytest.mark.parametrize(
    "labels", [["a", "b", "c", "d"], ["a", "b", "c", "d", " "], "agree", [1, 2, 3, 4, 5]]
)
def test_the_labels_must_be_five_texts(study, labels):
    study.empathy_labels = labels
    with pytest.raises(ValidationError) as caught:
        study.full_clean()
    assert "five labels" in str(caught.value.message_dict["empathy_labels"])
    assert Study.objects.get(pk=study.pk).empathy_labels == default_empathy_labels()


def test_the_panel_review_and_export_use_the_study_wording(client, open_study):
    Study.objects.filter(pk=open_study.pk).update(
        coherence_question=QUESTION, empathy_statement=STATEMENT, empathy_labels=LABELS
    )
    assignment = assignment_claim(annotator=_ready(client, open_study))
    url = reverse("studies:item", args=["pilot", assignment.pk, 1])
    html = client.get(url).content.decode()
    assert QUESTION in html and STATEMENT in html and "completely" in html
    assert COHERENCE_QUESTION not in html
    client.post(url, {"coherent": "yes", "empathy": "5"})
    review = client.get(reverse("studies:review", args=["pilot", assignment.pk]))
    assert "Yes — completely" in review.content.decode()


def _answer_batch(assignment, attention_answer: Answer) -> bool | None:
    for rid in assignment.order:
        reflection = Reflection.objects.get(pk=rid)
        answer = (
            attention_answer
            if reflection.kind == Reflection.Kind.ATTENTION_CHECK
            else Answer(coherent=True, empathy=4)
        )
        judgement_record(assignment=assignment, reflection=reflection, answer=answer)
    assignment_submit(assignment=Assignment.objects.get(pk=assignment.pk))
    return Assignment.objects.get(pk=assignment.pk).attention_passed


@pytest.mark.parametrize(
    ("chosen", "passed"),
    [({"parroting"}, True), ({"malformed", "off_topic"}, True), ({"malformed"}, False)],
)
def test_the_attention_check_expects_the_study_s_catching_categories(
    client, open_study, chosen, passed
):
    """Here Parroting and Off-topic catch it: either passes, neither fails."""
    ErrorCategory.objects.filter(study=open_study, slug="parroting").update(
        catches_attention_check=True
    )
    assignment = assignment_claim(annotator=_ready(client, open_study))
    most_evident = sorted(chosen)[0]
    answer = Answer(coherent=False, categories=frozenset(chosen), most_evident=most_evident)
    assert _answer_batch(assignment, answer) is passed


def test_a_yes_to_the_attention_check_fails(client, open_study):
    assignment = assignment_claim(annotator=_ready(client, open_study))
    assert _answer_batch(assignment, Answer(coherent=True, empathy=3)) is False


def test_the_instrument_is_read_only_in_the_admin_once_annotated(admin_client, client, open_study):
    change = reverse("admin:studies_study_change", args=[open_study.pk])
    assert 'name="coherence_question"' in admin_client.get(change).content.decode()
    assignment = assignment_claim(annotator=_ready(client, open_study))
    judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        answer=Answer(coherent=True, empathy=4),
    )
    html = admin_client.get(change).content.decode()
    assert 'name="coherence_question" value="' + COHERENCE_QUESTION in html
    assert "readonly" in html.split('name="coherence_question"')[1].split(">")[0]


def test_the_full_export_labels_ratings_with_the_study_labels(client, open_study):
    Study.objects.filter(pk=open_study.pk).update(empathy_labels=LABELS)
    assignment = assignment_claim(annotator=_ready(client, open_study))
    _answer_batch(assignment, Answer(coherent=False, categories=frozenset({"off_topic"})))
    out = io.StringIO()
    call_command("export_annotations", "pilot", "--format", "full", stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue(), newline="")))
    rated = [r for r in rows if r["empathy"]]
    assert rated and {r["empathy_label"] for r in rated} == {"mostly"}  # all rated 4
