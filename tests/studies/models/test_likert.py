"""The Likert instrument's data: a stage's dimensions and an answer's ratings, with
the rules the database enforces (raw writes included) and those the model checks
before writing (``LikertDimension.clean``, ``rating_problem``)."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from studies.models import (
    Judgement,
    LikertDimension,
    LikertRating,
    Reflection,
    Stage,
)
from studies.protocol import likert_attention_pass_default, likert_scale_range
from studies.services import annotators_create, assignment_create
from studies.services.in_use import locked_fields_validate

FIVE = ["poor", "", "", "", "excellent"]


@pytest.fixture
def likert_stage(loaded_study) -> Stage:
    stage = loaded_study.stages.get(position=1)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.LIKERT)
    stage.refresh_from_db()
    return stage


def dimension(stage, **fields) -> LikertDimension:
    values = {
        "stage": stage,
        "position": 1,
        "name": "fluency",
        "statement": "The response is fluent and grammatical.",
        "points": 5,
        "labels": FIVE,
        **fields,
    }
    return LikertDimension(**values)


def refused(row, constraint: str) -> None:
    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        row.save()


# --- the scale ---------------------------------------------------------------------------


def test_scale_ranges_and_default_passing_ratings_by_hand():
    assert likert_scale_range(5) == (1, 5)
    assert likert_scale_range(11) == (1, 11)
    assert likert_scale_range(None) == (0, 100)
    assert likert_attention_pass_default(7) == (1, 1)
    assert likert_attention_pass_default(None) == (0, 20)


def test_a_dimension_is_saved_with_its_labels_and_scale(likert_stage):
    row = dimension(likert_stage)
    row.full_clean()
    row.save()
    slider = dimension(
        likert_stage, position=2, name="warmth", points=None, labels=["cold", "warm"]
    )
    slider.full_clean()
    slider.save()
    assert [d.scale for d in likert_stage.dimensions.all()] == ["5", "slider"]
    assert slider.scale_range == (0, 100) and row.scale_range == (1, 5)


@pytest.mark.parametrize(
    ("fields", "constraint"),
    [
        ({"points": 12, "labels": ["a", *[""] * 10, "b"]}, "likert_dimension_points_range"),
        ({"points": 1, "labels": ["a"]}, "likert_dimension_points_range"),
        ({"labels": ["poor", "excellent"]}, "likert_dimension_label_per_point"),
        ({"points": None, "labels": FIVE}, "likert_dimension_label_per_point"),
        ({"name": "Fluency"}, "likert_dimension_name_format"),
        ({"statement": ""}, "likert_dimension_statement_not_empty"),
        ({"position": 0}, "likert_dimension_position_positive"),
        (
            {"checks_attention": True, "attention_pass_min": 1, "attention_pass_max": 6},
            "likert_dimension_attention_pass_in_scale",
        ),
        (
            {"checks_attention": True, "attention_pass_min": 0, "attention_pass_max": 1},
            "likert_dimension_attention_pass_in_scale",
        ),
        (
            {"checks_attention": True, "attention_pass_min": 3, "attention_pass_max": 2},
            "likert_dimension_attention_pass_in_scale",
        ),
        ({"checks_attention": True}, "likert_dimension_attention_pass_in_scale"),
        (
            {"attention_pass_min": 1, "attention_pass_max": 1},
            "likert_dimension_attention_pass_only_for_the_check",
        ),
    ],
)
def test_the_database_refuses_a_malformed_dimension(likert_stage, fields, constraint):
    refused(dimension(likert_stage, **fields), constraint)
    assert not LikertDimension.objects.exists()


def test_a_slider_check_may_pass_from_0_and_names_are_unique_in_a_stage(likert_stage):
    dimension(
        likert_stage,
        points=None,
        labels=["cold", "warm"],
        checks_attention=True,
        attention_pass_min=0,
        attention_pass_max=20,
    ).save()
    refused(dimension(likert_stage, position=2), "likert_dimension_name_unique")
    refused(dimension(likert_stage, name="other"), "likert_dimension_position_unique")
    refused(
        dimension(
            likert_stage,
            position=2,
            name="other",
            checks_attention=True,
            attention_pass_min=1,
            attention_pass_max=1,
        ),
        "likert_dimension_one_attention_check",
    )


def test_clean_gives_the_check_its_default_passing_ratings(likert_stage):
    points = dimension(likert_stage, checks_attention=True)
    points.full_clean()
    assert points.attention_pass == (1, 1)
    slider = dimension(likert_stage, points=None, labels=["cold", "warm"], checks_attention=True)
    slider.full_clean()
    assert slider.attention_pass == (0, 20)
    # Only the lower bound given: the upper one is at least it.
    upper = dimension(likert_stage, checks_attention=True, attention_pass_min=2)
    upper.full_clean()
    assert upper.attention_pass == (2, 2)
    # A dimension that is not the check keeps no passing ratings.
    plain = dimension(likert_stage, attention_pass_min=1, attention_pass_max=2)
    plain.full_clean()
    assert (plain.attention_pass_min, plain.attention_pass_max, plain.attention_pass) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"labels": ["poor", "excellent"]}, "labels", "Give 5 labels, one per point from 1 to 5"),
        ({"labels": ["", "", "", "", "excellent"]}, "labels", "the two ends not empty"),
        ({"labels": "poor"}, "labels", '["poor", "", "", "", "excellent"]'),
        ({"points": None, "labels": ["cold"]}, "labels", "the two end labels of the slider"),
        ({"points": 12}, "points", "Give 2 to 11 points, or none for a slider."),
        (
            {"checks_attention": True, "attention_pass_min": 4, "attention_pass_max": 9},
            "attention_pass_max",
            "The passing ratings must lie within the scale (1 to 5)",
        ),
    ],
)
def test_clean_names_what_is_wrong(likert_stage, fields, field, message):
    row = dimension(likert_stage, **fields)
    with pytest.raises(ValidationError) as error:
        row.full_clean()
    assert any(message in text for text in error.value.message_dict[field])


# --- ratings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("points", "offers", "value", "cannot_judge", "problem"),
    [
        (5, False, 1, False, None),
        (5, False, 5, False, None),
        (5, False, 0, False, "A rating of fluency is from 1 to 5."),
        (5, False, 6, False, "A rating of fluency is from 1 to 5."),
        (5, False, None, False, "Rate fluency."),
        (5, False, None, True, '"Cannot judge" is not offered for fluency.'),
        (5, True, None, True, None),
        (5, True, 3, True, 'Give a rating or "cannot judge" for fluency, not both.'),
        (None, False, 0, False, None),
        (None, False, 100, False, None),
        (None, False, 101, False, "A rating of fluency is from 0 to 100."),
    ],
)
def test_a_rating_is_checked_against_its_dimension(
    likert_stage, points, offers, value, cannot_judge, problem
):
    labels = FIVE if points else ["cold", "warm"]
    row = dimension(likert_stage, points=points, labels=labels, offers_cannot_judge=offers)
    assert row.rating_problem(value, cannot_judge) == problem


@pytest.mark.parametrize(
    ("points", "bounds", "value", "cannot_judge", "passes"),
    [
        (5, (1, 1), 1, False, True),
        (5, (1, 1), 2, False, False),
        (5, (1, 2), 2, False, True),
        (5, (1, 1), None, True, False),  # "cannot judge" never passes
        (None, (0, 20), 20, False, True),
        (None, (0, 20), 21, False, False),
    ],
)
def test_the_attention_check_passes_within_its_ratings(
    likert_stage, points, bounds, value, cannot_judge, passes
):
    labels = FIVE if points else ["cold", "warm"]
    row = dimension(
        likert_stage,
        points=points,
        labels=labels,
        checks_attention=True,
        attention_pass_min=bounds[0],
        attention_pass_max=bounds[1],
        offers_cannot_judge=True,
    )
    assert row.passes_attention(value, cannot_judge) is passes
    assert dimension(likert_stage).passes_attention(1, False) is False  # not the check


@pytest.fixture
def likert_answer(likert_stage) -> Judgement:
    """An answer of the Likert stage: a judgement without the coherence fields."""
    annotator = annotators_create(group=likert_stage.study.groups.get(name="Layperson"), count=1)[0]
    assignment = assignment_create(annotator=annotator, batch=likert_stage.batches.first())
    return Judgement.objects.create(
        assignment=assignment,
        reflection=Reflection.objects.get(pk=assignment.order[0]),
        coherent=None,
    )


def test_an_answer_holds_one_rating_per_dimension(likert_stage, likert_answer):
    fluency = dimension(likert_stage)
    fluency.save()
    LikertRating.objects.create(judgement=likert_answer, dimension=fluency, value=4)
    refused(
        LikertRating(judgement=likert_answer, dimension=fluency, value=3), "likert_rating_unique"
    )
    assert [str(r) for r in likert_answer.ratings.all()] == ["fluency: 4"]


@pytest.mark.parametrize(
    ("value", "cannot_judge"), [(None, False), (3, True), (101, False), (-1, False)]
)
def test_a_rating_is_a_value_or_cannot_judge(likert_stage, likert_answer, value, cannot_judge):
    fluency = dimension(likert_stage)
    fluency.save()
    refused(
        LikertRating(
            judgement=likert_answer, dimension=fluency, value=value, cannot_judge=cannot_judge
        ),
        "likert_rating_value_or_cannot_judge",
    )


@pytest.mark.parametrize(
    "fields",
    [{"empathy": 3}, {"error_flags": 1}, {"error_description": "Wrong."}],
)
def test_an_answer_without_yes_or_no_has_no_coherence_fields(likert_answer, fields):
    for name, value in fields.items():
        setattr(likert_answer, name, value)
    refused(likert_answer, "judgement_other_instrument_without_coherence_fields")


def test_the_instrument_and_a_rated_dimension_are_locked_once_used(likert_stage, likert_answer):
    """The one check every interface asks before writing (``locked_fields_validate``)."""
    with pytest.raises(ValidationError, match="Instrument cannot change: annotators already"):
        locked_fields_validate(instance=likert_stage, changed=["instrument"])
    fluency = dimension(likert_stage)
    fluency.save()
    locked_fields_validate(instance=fluency, changed=["points"])  # nothing rated yet
    LikertRating.objects.create(judgement=likert_answer, dimension=fluency, value=2)
    with pytest.raises(ValidationError, match="Points cannot change: annotators have already"):
        locked_fields_validate(instance=fluency, changed=["points", "statement"])
    locked_fields_validate(instance=fluency, changed=["statement"])  # its wording may


def test_a_dimension_in_use_cannot_be_deleted(likert_stage, likert_answer):
    fluency = dimension(likert_stage)
    fluency.save()
    LikertRating.objects.create(judgement=likert_answer, dimension=fluency, cannot_judge=True)
    with pytest.raises(ProtectedError), transaction.atomic():
        fluency.delete()
    assert LikertDimension.objects.filter(pk=fluency.pk).exists()
