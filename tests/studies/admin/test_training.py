"""The training quiz for researchers: set up inline on the study page (checked, locked
once annotation started), each annotator's outcome on their page, and the training
file of the export (without changing the other files)."""

import csv
import io

import pytest
from django.urls import reverse

from studies.exports import ExportOptions, export_csv_chunks, export_file_write, export_header
from studies.exports.training import TRAINING_COLUMNS
from studies.models import ErrorCategory, Role, TrainingItem, TrainingQuiz
from studies.services.judgements import Answer
from studies.services.training import training_answer_record, training_attempt_start
from tests.conftest import form_data
from tests.factories import StaffUserFactory, user_with_role
from tests.studies.training_fixtures import annotator_ready_for_quiz, quiz_add
from tests.studies.typed_helpers import assert_same_as_csv, parquet_frame


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def take(annotator, answers: list[Answer]) -> None:
    training_attempt_start(annotator=annotator)
    for position, answer in enumerate(answers, start=1):
        training_answer_record(annotator=annotator, number=position, answer=answer)


RIGHT = [
    Answer(coherent=True, empathy=4),
    Answer(coherent=False, categories=frozenset({"off_topic"})),
    Answer(coherent=True, empathy=5),
    Answer(coherent=False, categories=frozenset({"parroting"})),
    Answer(coherent=True, empathy=3),
]
WRONG = Answer(coherent=False, categories=frozenset({"malformed"}))


def _item_post(study, staff_client, **item) -> tuple[str, dict]:
    url = reverse("admin:studies_study_change", args=[study.pk])
    data = form_data(staff_client.get(url))
    data.update({"training_items-TOTAL_FORMS": 1, "training_items-INITIAL_FORMS": 0})
    data.update({f"training_items-0-{k}": v for k, v in item.items()})
    return url, data


# --- the admin ----------------------------------------------------------------------------


def test_a_researcher_adds_a_practice_item_and_the_quiz_settings_on_the_study_page(
    staff_client, loaded_study
):
    off_topic = ErrorCategory.objects.get(study=loaded_study, slug="off_topic")
    malformed = ErrorCategory.objects.get(study=loaded_study, slug="malformed")
    url, data = _item_post(
        loaded_study,
        staff_client,
        position=1,
        turns='[{"role": "client", "text": "I lost my job."}]',
        text="You enjoy gardening.",
        required_categories=[off_topic.pk],
        wrong_categories=[malformed.pk],
        explanation="Nothing in the dialogue is about gardening.",
    )
    data.update(
        {
            "training_quiz-TOTAL_FORMS": 1,
            "training_quiz-INITIAL_FORMS": 0,
            "training_quiz-0-pass_mark": 60,
            "training_quiz-0-attempts": 3,
            "training_quiz-0-items_per_attempt": 4,
        }
    )
    response = staff_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:3000]
    item = TrainingItem.objects.get(study=loaded_study)
    assert item.expected_coherent is False
    assert list(item.required_categories.values_list("slug", flat=True)) == ["off_topic"]
    assert list(item.wrong_categories.values_list("slug", flat=True)) == ["malformed"]
    quiz = TrainingQuiz.objects.get(study=loaded_study)
    assert (quiz.pass_mark, quiz.attempts, quiz.items_per_attempt) == (60, 3, 4)
    # One practice item for three attempts of four: the study page says what is needed.
    page = staff_client.get(url).content.decode()
    assert "3 attempts of 1 practice item need 3 practice items" in page
    assert "this study has 1" in page


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"expected_coherent": "on", "required_categories": ["off_topic"]},
            "Required and wrong categories go with an expected &quot;No&quot; only.",
        ),
        (
            {"expected_coherent": "on", "wrong_categories": ["off_topic"]},
            "Required and wrong categories go with an expected &quot;No&quot; only.",
        ),
        (
            {"required_categories": ["off_topic", "parroting"], "wrong_categories": ["parroting"]},
            "A category cannot be both required and wrong: Parroting.",
        ),
        ({"turns": ""}, "Give the dialogue either as an existing context or as turns"),
        ({"explanation": ""}, "This field is required."),
        ({"turns": '[{"role": "doctor", "text": "Hi"}]'}, "doctor"),
    ],
)
def test_the_admin_refuses_a_bad_practice_item_and_writes_nothing(
    staff_client, loaded_study, item, message
):
    values = {
        "position": 1,
        "turns": '[{"role": "client", "text": "I lost my job."}]',
        "text": "You enjoy gardening.",
        "explanation": "Nothing in the dialogue is about gardening.",
        **item,
    }
    for name in ("required_categories", "wrong_categories"):
        if values.get(name):
            values[name] = [
                ErrorCategory.objects.get(study=loaded_study, slug=s).pk for s in values[name]
            ]
    url, data = _item_post(loaded_study, staff_client, **values)
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not TrainingItem.objects.exists()


@pytest.mark.parametrize(
    ("quiz_settings", "message"),
    [
        ({"pass_mark": 120}, "The pass mark is a percentage from 1 to 100."),
        (
            {"items_per_attempt": 0},
            "An attempt shows at least one practice item (or leave it empty for all of them).",
        ),
    ],
)
def test_the_admin_refuses_bad_quiz_settings_and_writes_nothing(
    staff_client, loaded_study, quiz_settings, message
):
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(staff_client.get(url))
    values = {"pass_mark": 80, "attempts": 2, **quiz_settings}
    data.update({"training_quiz-TOTAL_FORMS": 1})
    data.update({f"training_quiz-0-{k}": v for k, v in values.items()})
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not TrainingQuiz.objects.exists()


def test_the_quiz_is_locked_once_an_attempt_started(staff_client, loaded_study):
    items = quiz_add(loaded_study)
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    assert 'name="training_items-0-text"' in staff_client.get(url).content.decode()
    training_attempt_start(annotator=annotator_ready_for_quiz(loaded_study))
    page = staff_client.get(url).content.decode()
    assert 'name="training_items-0-text"' not in page
    assert 'name="training_quiz-0-pass_mark"' not in page
    assert items[0].text in page  # shown, read-only
    # Posting the form back changes nothing in the quiz.
    data = form_data(staff_client.get(url))
    data["training_items-0-text"] = "Changed."
    assert staff_client.post(url, data).status_code == 302
    assert TrainingItem.objects.get(pk=items[0].pk).text == items[0].text


def test_the_annotator_page_shows_the_outcome_and_each_attempt(staff_client, loaded_study):
    quiz_add(loaded_study)
    annotator = annotator_ready_for_quiz(loaded_study)
    take(annotator, [WRONG] * 5)
    take(annotator, RIGHT)
    url = reverse("admin:studies_annotator_change", args=[annotator.pk])
    page = staff_client.get(url).content.decode()
    assert "Passed (2 of 2 attempts used; pass mark 80 %)" in page
    assert "0 of 5 (0 %)" in page and "5 of 5 (100 %)" in page
    assert "2: No (Off-topic) — right" in page and "1: No (Malformed) — wrong" in page
    other = annotator_ready_for_quiz(loaded_study)
    page = staff_client.get(reverse("admin:studies_annotator_change", args=[other.pk]))
    assert "Not started (0 of 2 attempts used" in page.content.decode()


# --- the export ---------------------------------------------------------------------------


@pytest.fixture
def trained_study(loaded_study):
    quiz_add(loaded_study)
    passed, failed, busy = (annotator_ready_for_quiz(loaded_study) for _ in range(3))
    take(passed, RIGHT)
    take(failed, [WRONG] * 5)
    take(failed, [*RIGHT[:3], WRONG, WRONG])
    training_attempt_start(annotator=busy)
    training_answer_record(annotator=busy, number=1, answer=RIGHT[0])
    return loaded_study, passed, failed, busy


def test_the_training_file_has_one_row_per_answer_with_scores_and_outcomes(trained_study):
    study, passed, failed, busy = trained_study
    rows = rows_of("".join(export_csv_chunks(study=study, options=ExportOptions(fmt="training"))))
    assert rows[0] == list(TRAINING_COLUMNS)
    body = [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]
    assert len(body) == 5 + 10 + 1
    by = {(r["annotator"], r["attempt"], r["practice_item"]): r for r in body}
    first = by[(passed.pseudonym, "1", "1")]
    assert (first["training_outcome"], first["attempt_status"], first["attempt_score"]) == (
        "passed",
        "passed",
        "100",
    )
    assert (first["coherent_and_context_consistent"], first["empathy"], first["is_right"]) == (
        "Yes",
        "4",
        "Yes",
    )
    second = by[(failed.pseudonym, "2", "4")]
    assert second["training_outcome"] == "failed" and second["attempt_score"] == "60"
    assert (second["required_categories"], second["wrong_categories"]) == ("parroting", "off_topic")
    assert (second["error_categories"], second["is_right"]) == ("malformed", "No")
    progress = by[(busy.pseudonym, "1", "1")]
    assert progress["training_outcome"] == "in_progress"
    assert (progress["attempt_status"], progress["attempt_score"]) == ("in_progress", "")


def test_the_training_file_as_parquet_keeps_its_kinds(trained_study):
    study = trained_study[0]
    expected = rows_of(
        "".join(export_csv_chunks(study=study, options=ExportOptions(fmt="training")))
    )
    target = io.BytesIO()
    export_file_write(
        study=study, options=ExportOptions(fmt="training", file="parquet"), target=target
    )
    frame = parquet_frame(target.getvalue())
    assert_same_as_csv(frame, expected)
    kinds = {
        name: str(frame[name].dtype)
        for name in ("attempt", "attempt_score", "is_right", "answered_at")
    }
    assert kinds == {
        "attempt": "int64[pyarrow]",
        "attempt_score": "double[pyarrow]",
        "is_right": "bool[pyarrow]",
        "answered_at": "timestamp[us, tz=UTC][pyarrow]",
    }


def test_the_download_names_the_training_file_and_the_other_files_are_unchanged(
    client, trained_study
):
    study = trained_study[0]
    client.force_login(user_with_role(study, Role.ANALYST))
    url = reverse("studies:export", args=["pilot"])
    response = client.get(url, {"format": "training"})
    assert response.status_code == 200
    assert (
        response["Content-Disposition"] == 'attachment; filename="pilot-annotations-training.csv"'
    )
    assert len(rows_of(b"".join(response.streaming_content).decode())) == 1 + 16
    for fmt in ("published", "full"):
        options = ExportOptions(fmt=fmt)
        assert "training_outcome" not in export_header(study=study, options=options)
        # No judgements yet: the practice answers are not annotations.
        assert len(rows_of("".join(export_csv_chunks(study=study, options=options)))) == 1


def test_an_answered_practice_item_cannot_be_deleted_but_its_annotator_can(trained_study):
    """Like a judged reflection, an answered practice item stays; removing an annotator
    (e.g. a crowd worker who withdraws) removes their attempts and answers."""
    from django.db.models import RestrictedError

    from studies.models import TrainingAnswer, TrainingAttempt

    study, passed, *_ = trained_study
    answered = TrainingItem.objects.filter(study=study).first()
    with pytest.raises(RestrictedError):
        answered.delete()
    assert TrainingItem.objects.filter(pk=answered.pk).exists()
    passed.delete()
    assert not TrainingAttempt.objects.filter(annotator_id=passed.pk).exists()
    assert TrainingAnswer.objects.count() == 10 + 1


def test_the_export_command_writes_the_training_file(trained_study):
    from django.core.management import call_command

    out = io.StringIO()
    call_command("export_annotations", "pilot", "--format", "training", stdout=out)
    rows = rows_of(out.getvalue())
    assert rows[0] == list(TRAINING_COLUMNS) and len(rows) == 1 + 16
