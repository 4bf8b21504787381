"""Deleting the personal data of a closed study (studies.services.privacy): what goes
(the registry in studies.personal_data), what stays, the log, and the refusals."""

import csv
import io

import pandas as pd
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.urls import reverse

from analysis.report.build import report_build
from analysis.selectors.questionnaires import questionnaire_data
from studies.models import (
    Annotator,
    AnnotatorSession,
    Assignment,
    Batch,
    CrowdEntry,
    ItemDraft,
    Judgement,
    PersonalDataPurge,
    QuestionAnswer,
    Study,
)
from studies.personal_data import PERSONAL_ROWS, personal_data_phrases, personal_fields
from studies.services import (
    annotators_create,
    assignment_create,
    study_open,
    study_personal_data_counts,
    study_purge_personal_data,
)
from studies.services.questionnaires import questionnaire_respond
from tests.conftest import annotate_study, form_data
from tests.factories import StaffUserFactory
from tests.studies.questionnaire_helpers import after_stage, consent, ids, screening

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(loaded_study, client):
    """Two invited annotators with e-mail addresses (one signed in: a session), a
    Prolific worker, and a session of another study that must survive."""
    group = loaded_study.groups.get(name="Layperson")
    invited = annotators_create(group=group, count=2, email="someone@example.org")
    worker = Annotator.objects.create(
        study=loaded_study,
        group=group,
        number=3,
        pseudonym="Layperson 3",
        platform=Annotator.Platform.PROLIFIC,
        platform_participant_id="5f0c1a2b3c4d5e6f7a8b9c0d",
        platform_data={"SESSION_ID": "abc", "STUDY_ID": "xyz"},
    )
    CrowdEntry.objects.create(
        annotator=worker,
        stage=loaded_study.stages.get(position=1),
        platform=Annotator.Platform.PROLIFIC,
        session_id="sess-123",
        platform_study_id="study-456",
    )
    AnnotatorSession.objects.create(
        session_key="a" * 32,
        session_data="",
        expire_date="2099-01-01T00:00Z",
        annotators={loaded_study.slug: invited[0].pk},
    )
    AnnotatorSession.objects.create(
        session_key="b" * 32,
        session_data="",
        expire_date="2099-01-01T00:00Z",
        annotators={"another-study": 999},
    )
    q = screening(loaded_study)
    m = ids(q)
    questionnaire_respond(
        annotator=invited[0],
        questionnaire=q,
        answers={m["1"]: [str(m["1:Yes"])], m["3"]: ["2"], m["4"]: ["I live at 3 Elm Road."]},
    )
    # An item's choices kept but never saved (words typed included).
    batch = Batch.objects.filter(stage__study=loaded_study).order_by("pk").first()
    ItemDraft.objects.create(
        assignment=assignment_create(annotator=invited[1], batch=batch),
        number=1,
        base_revision=0,
        fields={"coherent": ["no"], "description": ["Reminds me of my brother."]},
        updated_at="2026-01-01T00:00Z",
    )
    return [*invited, worker]


def close(study):
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    study.refresh_from_db()


def snapshot(study):
    return (
        list(Annotator.objects.filter(study=study).order_by("pk").values()),
        list(AnnotatorSession.objects.exclude(annotators={}).order_by("pk").values()),
        Study.objects.get(pk=study.pk).purged_at,
        PersonalDataPurge.objects.count(),
    )


def test_purge_deletes_what_identifies_people_and_logs_it(loaded_study, people):
    Assignment.objects.filter(drafts__isnull=False).delete()  # its batch is filled below
    annotate_study(loaded_study, annotators_per_group=3)
    judgements = list(Judgement.objects.order_by("pk").values())
    close(loaded_study)
    researcher = StaffUserFactory()
    before = study_personal_data_counts(study=loaded_study)
    assert before == {
        "annotator: platform participant id": 1,
        "annotator: platform data": 1,
        "annotator: email": 2,
        "annotator: access token": Annotator.objects.filter(study=loaded_study).count(),
        "crowd entry: session id": 1,
        "crowd entry: platform study id": 1,
        "question answer: text": 1,
        "unsaved item drafts": 0,
        "browser sessions": 1,
    }

    purge = study_purge_personal_data(study=loaded_study, by=researcher)

    assert purge.deleted == before and purge.purged_by == researcher
    assert purge.purged_by_name == researcher.username
    assert set(study_personal_data_counts(study=loaded_study).values()) == {0}
    for annotator in Annotator.objects.filter(study=loaded_study):
        assert annotator.email == "" and annotator.platform_data == {}
        # A fresh random token, not one derived from the row (which could be guessed).
        assert annotator.access_token.startswith("purged-")
        assert annotator.access_token != f"purged-{annotator.pk}"
        assert annotator.is_active  # a researcher's decision, which the purge keeps
    entry = CrowdEntry.objects.get()
    assert (entry.session_id, entry.platform_study_id) == ("", "")
    written = QuestionAnswer.objects.get(question__kind="text")
    assert written.text == f"purged-{written.pk}"  # the words go, the answer's place stays
    assert QuestionAnswer.objects.filter(choice__text="Yes").exists()
    worker = Annotator.objects.get(pk=people[2].pk)
    assert worker.platform == "prolific"  # which platform stays known, not who
    assert worker.platform_participant_id == f"purged-{worker.pk}"
    assert worker.pseudonym == "Layperson 3"
    # The other study's session stays; the annotations are untouched.
    assert list(AnnotatorSession.objects.values_list("session_key", flat=True)) == ["b" * 32]
    assert list(Judgement.objects.order_by("pk").values()) == judgements
    loaded_study.refresh_from_db()
    assert loaded_study.purged_at == purge.purged_at
    # Old invitation links no longer sign anyone in.
    assert Annotator.objects.filter(access_token=people[0].access_token).count() == 0


def test_every_registered_kind_of_personal_data_is_counted_and_purged(loaded_study, people):
    close(loaded_study)
    kinds = [item.what for item in personal_fields()] + [rows.what for rows in PERSONAL_ROWS]
    counts = study_personal_data_counts(study=loaded_study)
    assert list(counts) == kinds and all(counts.values())
    # Every model's declared personal fields are found (one declaration per model).
    declared = {
        (model, name)
        for model in (Annotator, CrowdEntry, QuestionAnswer)
        for name in model.PERSONAL_FIELDS
    }
    assert {(item.model, item.field) for item in personal_fields()} == declared
    study_purge_personal_data(study=loaded_study)
    assert set(study_personal_data_counts(study=loaded_study).values()) == {0}


@pytest.mark.parametrize("status", [Study.Status.DRAFT, Study.Status.OPEN])
def test_purging_a_study_that_is_not_closed_is_refused_and_changes_nothing(
    loaded_study, people, status
):
    Study.objects.filter(pk=loaded_study.pk).update(status=status)
    before = snapshot(loaded_study)
    with pytest.raises(ValidationError) as caught:
        study_purge_personal_data(study=loaded_study)
    assert caught.value.messages == [
        f"Close the study before deleting its personal data (it is {status}): annotators "
        "may still be at work."
    ]
    assert snapshot(loaded_study) == before


def test_a_purged_study_cannot_reopen(loaded_study, people, client):
    close(loaded_study)
    study_purge_personal_data(study=loaded_study)
    with pytest.raises(ValidationError) as caught:
        study_open(study=loaded_study)
    assert "stays closed" in " ".join(caught.value.messages)
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    # The admin's study form says why and saves nothing.
    client.force_login(StaffUserFactory())
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = {**form_data(client.get(url)), "status": "open"}
    response = client.post(url, data)
    assert response.status_code == 200
    assert "it stays closed" in response.content.decode()
    assert Study.objects.get(pk=loaded_study.pk).status == Study.Status.CLOSED


def test_command_purges_a_closed_study_and_refuses_an_open_one(loaded_study, people):
    researcher = StaffUserFactory()
    before = snapshot(loaded_study)
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    with pytest.raises(CommandError, match="Close the study before"):
        call_command("purge_personal_data", "pilot", stdout=io.StringIO())
    assert snapshot(loaded_study)[1:] == before[1:]
    close(loaded_study)
    out = io.StringIO()
    call_command("purge_personal_data", "pilot", "--dry-run", stdout=out)
    assert (
        "Would delete from pilot: platform participant id of 1 annotator, platform data of 1 "
        "annotator, emails of 2 annotators, access tokens of" in out.getvalue()
    )
    assert PersonalDataPurge.objects.count() == 0
    with pytest.raises(CommandError, match='No account "nobody"'):
        call_command("purge_personal_data", "pilot", "--by", "nobody", stdout=io.StringIO())
    assert PersonalDataPurge.objects.count() == 0
    out = io.StringIO()
    call_command("purge_personal_data", "pilot", "--by", researcher.username, stdout=out)
    assert "Deleted from pilot at" in out.getvalue()
    assert "1 browser session" in out.getvalue() and "1 unsaved item draft" in out.getvalue()
    assert PersonalDataPurge.objects.get().purged_by == researcher


def test_admin_action_confirms_then_purges_and_logs_the_researcher(loaded_study, people, client):
    close(loaded_study)
    researcher = StaffUserFactory()
    client.force_login(researcher)
    url = reverse("admin:studies_study_changelist")
    action = {"action": "purge_personal_data", "_selected_action": [loaded_study.pk]}
    page = client.post(url, action)
    assert page.status_code == 200
    confirmation = page.content.decode()
    assert "<li>emails of 2 annotators</li>" in confirmation
    assert "annotator: email" not in confirmation
    assert PersonalDataPurge.objects.count() == 0  # nothing until confirmed
    response = client.post(url, {**action, "apply": "1"}, follow=True)
    done = response.content.decode()
    assert "Deleted from Pilot study" in done and "emails of 2 annotators" in done
    log = PersonalDataPurge.objects.get()
    assert log.purged_by == researcher and log.deleted["annotator: email"] == 2
    listing = client.get(reverse("admin:studies_personaldatapurge_changelist"))
    assert "emails of 2 annotators" in listing.content.decode()


def test_admin_action_on_an_open_study_says_why_and_writes_nothing(loaded_study, people, client):
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    before = snapshot(loaded_study)
    client.force_login(StaffUserFactory())
    url = reverse("admin:studies_study_changelist")
    action = {"action": "purge_personal_data", "_selected_action": [loaded_study.pk], "apply": "1"}
    response = client.post(url, action, follow=True)
    assert "Close the study before deleting its personal data" in response.content.decode()
    assert snapshot(loaded_study) == before


def questionnaire_outputs(study, client) -> tuple[list[list[str]], dict]:
    """The questionnaire answers file (as downloaded) and the report's questionnaire
    blocks."""
    response = client.get(reverse("studies:export_questionnaires", args=[study.slug]))
    assert response.status_code == 200
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    report = report_build(
        frame=pd.DataFrame(),
        study_slug=study.slug,
        parameters={},
        categories=[],
        questionnaires=questionnaire_data(study_id=study.pk),
    )
    blocks = ("questionnaires", "questionnaires_screened_out", "questionnaire_order")
    return rows, {block: report[block] for block in blocks}


def test_purge_keeps_the_questionnaire_export_and_report_but_the_written_words(
    loaded_study, client
):
    first, second = screening(loaded_study), after_stage(loaded_study, 1)
    a, b = ids(first), ids(second)
    expert = annotators_create(group=loaded_study.groups.get(name="Expert"), count=1)[0]
    layperson, deactivated, unconsented, out = annotators_create(
        group=loaded_study.groups.get(name="Layperson"), count=4
    )
    for annotator, english, words in (
        (expert, "Yes", "I live at 3 Elm Road."),
        (layperson, "Yes", "My name is Ann."),
        (deactivated, "Yes", "Staff took my link away."),
        (unconsented, "Yes", "I never agreed."),
        (out, "No", "Screened out."),
    ):
        questionnaire_respond(
            annotator=annotator,
            questionnaire=first,
            answers={
                a["1"]: [str(a[f"1:{english}"])],
                a["2"]: [str(a["2:Linguistics"]), str(a["2:Neither"])],
                a["3"]: ["4"],
                a["4"]: [words],
            },
        )
    consent(expert, layperson, deactivated)
    questionnaire_respond(
        annotator=expert, questionnaire=second, answers={b["1"]: [str(b["1:No"])], b["2"]: ["2"]}
    )
    # A researcher disabled this annotator's link: their answers never count.
    Annotator.objects.filter(pk=deactivated.pk).update(is_active=False)
    close(loaded_study)
    client.force_login(StaffUserFactory())
    rows, report = questionnaire_outputs(loaded_study, client)
    exported = {row[4] for row in rows[1:]}
    assert exported == {"Expert 1", "Layperson 1"}  # the deactivated and the unconsented absent
    assert len(rows) == 1 + 2 * 5 + 2  # the header, two screenings, one after stage 1
    written = dict(
        QuestionAnswer.objects.filter(question__kind="text").values_list(
            "response__annotator__pseudonym", "pk"
        )
    )

    active = dict(Annotator.objects.values_list("pk", "is_active"))

    study_purge_personal_data(study=loaded_study)

    assert dict(Annotator.objects.values_list("pk", "is_active")) == active
    after_rows, after_report = questionnaire_outputs(loaded_study, client)
    annotator, kind, answer = 4, 9, 10
    assert after_rows == [
        [*row[:answer], f"purged-{written[row[annotator]]}"] if row[kind] == "text" else row
        for row in rows
    ]
    assert "Elm Road" not in str(after_rows) and "Ann" not in str(after_rows)
    assert after_report == report
    assert report["questionnaires"]["Screening"]["Is English your first language?"] == {
        "Expert": {"n": 1, "counts": {"Yes": 1, "No": 0}},
        "Layperson": {"n": 1, "counts": {"Yes": 1, "No": 0}},
    }


def test_counts_read_as_plain_english_with_proper_plurals():
    counts = {
        "annotator: platform participant id": 5,
        "annotator: platform data": 2,
        "annotator: email": 1,
        "crowd entry: session id": 0,
        "browser sessions": 1,
        "a kind an old log holds": 3,
    }
    assert personal_data_phrases(counts) == [
        "platform participant ids of 5 annotators",
        "platform data of 2 annotators",
        "email of 1 annotator",
        "session ids of 0 crowd entries",
        "1 browser session",
        "3 a kind an old log holds",
    ]
