"""Fixtures of the REST API tests: clients for each kind of caller (a superuser, each
role of a study, staff without a role) and a study with annotations (submitted, open
and rejected work, incoherent answers, an annotator with personal data the API must
never show)."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from studies.models import Annotator, Assignment, Batch, Reflection, Study
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_reject,
    assignment_submit,
    consent_version_current,
    judgement_record,
)
from tests.factories import StaffMemberFactory, StaffUserFactory, user_with_role

PERSONAL = {
    "email": "layperson.one@example.org",
    "platform": "prolific",
    "platform_participant_id": "PROLIFICPID5f3c9a7e",
}


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def staff(db):
    return StaffUserFactory()


@pytest.fixture
def api(staff) -> APIClient:
    """A superuser with a token: may do everything in every study."""
    return token_client(staff)


@pytest.fixture
def role_client(db):
    """``role_client(study, role)``: a token client of a new staff account holding
    ``role`` in ``study`` and nothing else."""

    def make(study, role: str) -> APIClient:
        return token_client(user_with_role(study, role))

    return make


@pytest.fixture
def anonymous(db) -> APIClient:
    return APIClient()


@pytest.fixture
def non_staff(db) -> APIClient:
    user = get_user_model().objects.create_user("participant")
    return token_client(user)


def staff_with_every_permission():
    """Staff holding every global permission of the studies and analysis apps, and no
    role: permissions grant nothing in a study any more."""
    user = StaffMemberFactory()
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label__in=["studies", "analysis"])
    )
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def staff_without_roles(db) -> APIClient:
    return token_client(staff_with_every_permission())


def answer_for(reflection: Reflection, n: int) -> Answer:
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, categories=frozenset({"off_topic"}))
    if reflection.kind == Reflection.Kind.SYNTHETIC and n % 3 == 0:
        return Answer(
            coherent=False,
            categories=frozenset({"malformed", "parroting"}),
            most_evident="parroting",
            seconds_spent=12.5,
        )
    return Answer(coherent=True, empathy=1 + n % 5, seconds_spent=8.0)


def annotate(assignment: Assignment, *, submit: bool = True, n: int = 0) -> None:
    reflections = Reflection.objects.in_bulk(assignment.order)
    for i, reflection_id in enumerate(assignment.order):
        reflection = reflections[reflection_id]
        judgement_record(
            assignment=assignment, reflection=reflection, answer=answer_for(reflection, n + i)
        )
    if submit:
        assignment_submit(assignment=assignment)


@pytest.fixture
def api_study(loaded_study, staff) -> Study:
    """``loaded_study`` (3 contexts × 2 stages), open, with k = 2:

    * Layperson 1 (who has an e-mail and a Prolific id) and Layperson 2 submitted every
      batch of both stages;
    * Expert 1 submitted every stage-1 batch; Expert 2 has one stage-2 batch in
      progress (one answer saved) and one rejected after submission.
    """
    study = loaded_study
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN, overlap_k=2)
    study.refresh_from_db()
    version = consent_version_current(study=study)
    lay = annotators_create(group=study.groups.get(name="Layperson"), count=2)
    experts = annotators_create(group=study.groups.get(name="Expert"), count=2)
    Annotator.objects.filter(pk=lay[0].pk).update(**PERSONAL)
    Annotator.objects.filter(pk__in=[a.pk for a in lay + experts]).update(
        consented_version=version, consented_at=timezone.now()
    )
    batches = list(Batch.objects.filter(stage__study=study).order_by("stage__position", "pk"))
    stage1 = [b for b in batches if b.stage.position == 1]
    stage2 = [b for b in batches if b.stage.position == 2]
    n = 0
    for annotator in lay:
        for batch in batches:
            annotate(assignment_create(annotator=annotator, batch=batch), n=n)
            n += 1
    for batch in stage1:
        annotate(assignment_create(annotator=experts[0], batch=batch), n=n)
        n += 1
    open_one = assignment_create(annotator=experts[1], batch=stage2[0])
    judgement_record(
        assignment=open_one,
        reflection=Reflection.objects.get(pk=open_one.order[0]),
        answer=Answer(coherent=True, empathy=3),
    )
    rejected = assignment_create(annotator=experts[1], batch=stage2[1])
    annotate(rejected, n=n)
    assignment_reject(assignment=rejected, reason="Answered in 3 seconds.", by=staff)
    return study


@pytest.fixture
def small_study(loaded_study) -> Study:
    """``loaded_study``, open, with one annotator (Layperson 1, with personal data)
    who submitted one batch."""
    study = loaded_study
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    Annotator.objects.filter(pk=annotator.pk).update(
        consented_version=consent_version_current(study=study),
        consented_at=timezone.now(),
        **PERSONAL,
    )
    batch = Batch.objects.filter(stage__study=study).order_by("pk").first()
    annotate(assignment_create(annotator=annotator, batch=batch))
    return study


@pytest.fixture
def annotator_client(small_study, client):
    """An annotator signed in through their invitation link: a session, no user."""
    annotator = Annotator.objects.get(study=small_study, pseudonym="Layperson 1")
    response = client.get(f"/i/{annotator.access_token}/")
    assert response.status_code == 302
    return client
