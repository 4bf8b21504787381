"""The admin shows judgements in their study's words: the assignment page's judgement
rows, the judgement list and a judgement's page use the study's category labels and
rating labels, not the protocol's defaults."""

import pytest
from django.urls import reverse

from studies.models import Batch, ErrorCategory, Reflection, Study
from studies.protocol import EMPATHY_SCALE
from studies.services import Answer, annotators_create, assignment_create, judgement_record

LABELS = ["not at all", "a little", "somewhat", "mostly", "completely"]


@pytest.fixture
def judged(loaded_study):
    """A study with its own labels; one assignment with a Yes rated 4 and a No with two
    categories, Parroting the most evident."""
    Study.objects.filter(pk=loaded_study.pk).update(empathy_labels=LABELS)
    ErrorCategory.objects.filter(study=loaded_study, slug="parroting").update(label="Echoing")
    ErrorCategory.objects.filter(study=loaded_study, slug="off_topic").update(label="Unrelated")
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    batch = Batch.objects.filter(stage__study=loaded_study, stage__position=1).first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    first, second = (Reflection.objects.get(pk=rid) for rid in assignment.order[:2])
    yes = judgement_record(assignment=assignment, reflection=first, answer=Answer(True, empathy=4))
    no = judgement_record(
        assignment=assignment,
        reflection=second,
        answer=Answer(False, frozenset({"parroting", "off_topic"}), most_evident="parroting"),
    )
    return assignment, yes, no


def _shows_study_labels(page: str) -> None:
    assert "4 – mostly" in page
    assert EMPATHY_SCALE[4] not in page  # "somewhat agree"
    assert "Unrelated" in page and "Echoing" in page
    assert "Off-topic" not in page and "Parroting" not in page


def test_the_assignment_page_judgement_rows_use_the_study_labels(admin_client, judged):
    assignment, _, _ = judged
    response = admin_client.get(reverse("admin:studies_assignment_change", args=[assignment.pk]))
    assert response.status_code == 200
    _shows_study_labels(response.content.decode())


def test_the_judgement_list_uses_the_study_labels(admin_client, judged):
    response = admin_client.get(reverse("admin:studies_judgement_changelist"))
    _shows_study_labels(response.content.decode())


def test_a_judgement_page_uses_the_study_labels(admin_client, judged):
    _, yes, no = judged
    yes_page = admin_client.get(reverse("admin:studies_judgement_change", args=[yes.pk]))
    assert "4 – mostly" in yes_page.content.decode()
    no_page = admin_client.get(reverse("admin:studies_judgement_change", args=[no.pk]))
    assert "Unrelated, Echoing" in no_page.content.decode()  # in storage order
