"""A Likert stage built in the admin: the instrument chosen on the study's and the
stage's page, its dimensions listed on the stage's page (labels typed one per line),
the refusals that write nothing, the locks once rated, and what the study lacks
before it can open."""

import pytest
from django.urls import reverse
from django.utils.html import escape

from studies.models import LikertDimension, Reflection, Stage, TrainingItem
from studies.selectors import study_missing_for_opening
from studies.services import Answer, annotators_create, assignment_create, judgement_record
from tests.conftest import form_data
from tests.studies.likert_fixtures import FIVE, make_likert

PREFIX = "dimensions"


def _stage_page(admin_client, stage):
    return admin_client.get(reverse("admin:studies_stage_change", args=[stage.pk]))


def _dimension(i: int, **values) -> dict:
    row = {
        "position": i + 1,
        "name": f"dim{i + 1}",
        "statement": f"Statement {i + 1}.",
        "points": "",
        "labels": "low\nhigh",
    }
    row.update(values)
    return {f"{PREFIX}-{i}-{name}": value for name, value in row.items() if value is not False}


def _with_dimensions(data: dict, *rows: dict) -> dict:
    data = {k: v for k, v in data.items() if not k.startswith(f"{PREFIX}-")}
    data.update({f"{PREFIX}-TOTAL_FORMS": len(rows), f"{PREFIX}-INITIAL_FORMS": 0})
    for row in rows:
        data.update(row)
    return data


@pytest.fixture
def likert_stage(loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=2)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.LIKERT)
    stage.refresh_from_db()
    return stage


def test_the_instrument_is_chosen_on_the_stage_and_the_study_page(admin_client, loaded_study):
    study_page = admin_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert 'name="stages-0-instrument"' in study_page.content.decode()
    stage = Stage.objects.get(study=loaded_study, position=2)
    response = _stage_page(admin_client, stage)
    page = response.content.decode()
    assert "Likert ratings on named dimensions" in page
    assert "needs a coherence first stage" in page  # the quiz's rule, beside the choice
    assert "Likert dimensions" not in page  # a coherence stage lists none
    data = form_data(response)
    data["instrument"] = Stage.Instrument.LIKERT
    assert (
        admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data).status_code
        == 302
    )
    stage.refresh_from_db()
    assert stage.instrument == Stage.Instrument.LIKERT
    assert (
        "Likert dimensions (a Likert stage rates"
        in _stage_page(admin_client, stage).content.decode()
    )


def test_dimensions_are_added_with_labels_one_per_line(admin_client, likert_stage):
    url = reverse("admin:studies_stage_change", args=[likert_stage.pk])
    data = _with_dimensions(
        form_data(_stage_page(admin_client, likert_stage)),
        _dimension(
            0,
            name="fluency",
            points=5,
            labels="poor\nexcellent\n",  # the two ends of five points
            checks_attention="on",
        ),
        _dimension(1, name="warmth", labels="cold\r\nwarm", offers_cannot_judge="on"),
        _dimension(2, name="clarity", points=3, labels="unclear\n\nclear"),
    )
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    fluency, warmth, clarity = LikertDimension.objects.filter(stage=likert_stage)
    assert (fluency.name, fluency.points, fluency.labels) == (
        "fluency",
        5,
        FIVE[:1] + [""] * 3 + ["excellent"],
    )
    assert fluency.attention_pass == (1, 1)  # the default: the lowest point
    assert (warmth.points, warmth.labels, warmth.offers_cannot_judge) == (
        None,
        ["cold", "warm"],
        True,
    )
    assert clarity.labels == ["unclear", "", "clear"]
    # Shown again one label per line.
    assert (
        "poor\n\n\n\nexcellent</textarea>"
        in _stage_page(admin_client, likert_stage).content.decode()
    )


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            [_dimension(0, points=5, labels="one\ntwo\nthree")],
            "Give 5 labels, one per line from point 1 to point 5 (the first and last not "
            "empty, those between may be), or just the two end labels.",
        ),
        (
            [_dimension(0, labels="only one")],
            "Give the slider&#x27;s two end labels, one per line: the one at 0, then the one at 100.",
        ),
        (
            [_dimension(0, points=12, labels="a\nb")],
            "Give 2 to 11 points, or none for a slider.",
        ),
        (
            [
                _dimension(0, checks_attention="on"),
                _dimension(1, checks_attention="on"),
            ],
            "Only one dimension of a stage checks attention: untick all but one.",
        ),
        (
            [_dimension(0), _dimension(1, name="dim1")],
            "Please correct the duplicate data for name",
        ),
        (
            [_dimension(0, name="Not A Slug")],
            "likert_dimension_name_format",
        ),
        (
            [
                _dimension(
                    0,
                    points=5,
                    labels="a\nb",
                    checks_attention="on",
                    attention_pass_min=4,
                    attention_pass_max=9,
                )
            ],
            "The passing ratings must lie within the scale (1 to 5), the first not above the last.",
        ),
    ],
    ids=["labels", "slider-labels", "points", "two-checks", "duplicate-name", "name", "pass-range"],
)
def test_a_bad_dimension_is_refused_with_a_message_and_nothing_is_written(
    admin_client, likert_stage, rows, message
):
    url = reverse("admin:studies_stage_change", args=[likert_stage.pk])
    data = _with_dimensions(form_data(_stage_page(admin_client, likert_stage)), *rows)
    data["name"] = "Renamed in the same save"
    response = admin_client.post(url, data)
    assert response.status_code == 200
    page = response.content.decode()
    assert message in page or _constraint_message(message) in page
    assert not LikertDimension.objects.filter(stage=likert_stage).exists()
    likert_stage.refresh_from_db()
    assert likert_stage.name != "Renamed in the same save"


def _constraint_message(name: str) -> str:
    from studies.models import CHECK_MESSAGES

    return escape(CHECK_MESSAGES.get(name, name))


def test_a_rated_dimension_s_scale_is_locked(admin_client, loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=1)
    make_likert(stage)
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assignment = assignment_create(annotator=annotator, batch=stage.batches.first())
    judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        answer=Answer(coherent=None, ratings={"fluency": 4, "warmth": 70}),
    )
    response = _stage_page(admin_client, stage)
    data = form_data(response)
    data[f"{PREFIX}-0-labels"] = "poor\n\n\n\nexcellent"
    data[f"{PREFIX}-1-labels"] = "cold\nwarm"
    data[f"{PREFIX}-0-points"] = 7
    data[f"{PREFIX}-0-statement"] = "Changed in the same save."
    response = admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)
    assert response.status_code == 200
    assert (
        "Points cannot change: annotators have already rated this dimension."
        in response.content.decode()
    )
    fluency = LikertDimension.objects.get(stage=stage, name="fluency")
    assert (fluency.points, fluency.statement) == (5, "The response is fluent.")


def test_an_unrated_stage_s_instrument_and_dimensions_still_change(admin_client, loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=1)
    make_likert(stage)
    data = form_data(_stage_page(admin_client, stage))
    data[f"{PREFIX}-0-labels"] = "bad\nbetter\n\ngood\nbest"
    data[f"{PREFIX}-1-labels"] = "cold\nwarm"
    response = admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)
    assert response.status_code == 302
    assert LikertDimension.objects.get(stage=stage, name="fluency").labels == [
        "bad", "better", "", "good", "best"
    ]  # fmt: skip


def test_what_a_likert_study_lacks_before_it_opens(loaded_study):
    first, second = Stage.objects.filter(study=loaded_study).order_by("position")
    before = study_missing_for_opening(study=loaded_study)  # the tutorial's texts
    Stage.objects.filter(pk=second.pk).update(instrument=Stage.Instrument.LIKERT)
    missing = study_missing_for_opening(study=loaded_study)
    assert f'Likert dimensions for the stage "{second.name}"' in missing
    LikertDimension.objects.create(
        stage=second, position=1, name="fluency", statement="Fluent.", points=5, labels=FIVE
    )
    missing = study_missing_for_opening(study=loaded_study)
    assert not any("Likert dimensions" in m for m in missing)
    # Its batches hold off-topic candidates: one dimension must check them.
    assert (
        f'an attention check dimension for the stage "{second.name}" (its off-topic '
        "candidate is rated on it)"
    ) in missing
    LikertDimension.objects.filter(stage=second).update(
        checks_attention=True, attention_pass_min=1, attention_pass_max=1
    )
    assert study_missing_for_opening(study=loaded_study) == before
    # A Likert first stage cannot follow the training quiz, which practises the
    # coherence protocol.
    TrainingItem.objects.create(
        study=loaded_study, position=1, turns=[{"role": "client", "text": "Hi."}], text="Hello.",
        expected_coherent=True, explanation="It fits.",
    )  # fmt: skip
    assert study_missing_for_opening(study=loaded_study) == before
    make_likert(first)
    assert study_missing_for_opening(study=loaded_study) == [
        *before,
        "a coherence first stage for the training quiz (the quiz practises the coherence "
        "protocol; a study whose first stage rates on Likert dimensions has no practice items)",
    ]


def test_a_study_of_likert_stages_only_needs_no_error_categories(loaded_study):
    for stage in Stage.objects.filter(study=loaded_study):
        make_likert(stage)
    before = study_missing_for_opening(study=loaded_study)
    loaded_study.categories.all().delete()
    assert study_missing_for_opening(study=loaded_study) == before
    Stage.objects.filter(study=loaded_study, position=2).update(
        instrument=Stage.Instrument.COHERENCE
    )
    assert "error categories" in study_missing_for_opening(study=loaded_study)


def test_the_judgement_list_shows_a_likert_answer_s_ratings(admin_client, loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=1)
    make_likert(stage)
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assignment = assignment_create(annotator=annotator, batch=stage.batches.first())
    judgement = judgement_record(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        answer=Answer(coherent=None, ratings={"fluency": 5, "warmth": None}),
    )
    expected = "fluency: 5 of 5 (excellent); warmth: cannot judge"
    listing = admin_client.get(reverse("admin:studies_judgement_changelist"))
    assert expected in listing.content.decode()
    detail = admin_client.get(reverse("admin:studies_judgement_change", args=[judgement.pk]))
    assert expected in detail.content.decode()


def test_dimensions_are_not_added_or_removed_once_annotators_work_in_the_stage(
    admin_client, loaded_study
):
    stage = Stage.objects.get(study=loaded_study, position=1)
    make_likert(stage)
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    assignment_create(annotator=annotator, batch=stage.batches.first())  # work under way
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    data = form_data(_stage_page(admin_client, stage))
    data[f"{PREFIX}-0-labels"] = "poor\nexcellent"
    data[f"{PREFIX}-1-labels"] = "cold\nwarm"
    added = {**data, **_dimension(2, name="clarity", position=3), f"{PREFIX}-TOTAL_FORMS": 3}
    removed = {**data, f"{PREFIX}-1-DELETE": "on"}
    for post in (added, removed):
        response = admin_client.post(url, post)
        assert response.status_code == 200
        assert (
            "Dimensions cannot be added or removed: annotators already work in this stage."
            in response.content.decode()
        )
        assert list(stage.dimensions.values_list("name", flat=True)) == ["fluency", "warmth"]
    # Correcting a statement is still possible.
    data[f"{PREFIX}-1-statement"] = "The response is warm towards the client."
    assert admin_client.post(url, data).status_code == 302


def test_the_attention_check_moves_to_another_dimension_in_one_save(admin_client, loaded_study):
    stage = Stage.objects.get(study=loaded_study, position=1)
    make_likert(stage)
    data = form_data(_stage_page(admin_client, stage))
    data[f"{PREFIX}-0-labels"] = "poor\nexcellent"
    data[f"{PREFIX}-1-labels"] = "cold\nwarm"
    for name in ("checks_attention", "attention_pass_min", "attention_pass_max"):
        data.pop(f"{PREFIX}-0-{name}")
    data[f"{PREFIX}-1-checks_attention"] = "on"
    response = admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)
    assert response.status_code == 302
    moved = stage.dimensions.get(checks_attention=True)
    assert (moved.name, moved.attention_pass) == ("warmth", (0, 20))  # a slider's default
