"""Pairwise and ranking stages built in the admin: the instrument and its settings on
the stage's page, refusals that write nothing, the settings locked once annotators
work in the stage, and what the study lacks before it can open."""

import pytest
from django.urls import reverse

from studies.models import Stage, TrainingItem
from studies.selectors import study_missing_for_opening
from studies.services import annotators_create, assignment_create
from tests.conftest import form_data


def _page(admin_client, stage):
    return admin_client.get(reverse("admin:studies_stage_change", args=[stage.pk]))


def _post(admin_client, stage, **changes):
    data = form_data(_page(admin_client, stage))
    data.update(changes)
    for name, value in changes.items():
        if value is False:
            data.pop(name)  # an unticked box is not posted
    return admin_client.post(reverse("admin:studies_stage_change", args=[stage.pk]), data)


def test_a_pairwise_stage_is_set_up_on_the_stage_page(admin_client, loaded_study):
    stage = loaded_study.stages.get(position=1)
    page = _page(admin_client, stage).content.decode()
    assert "Pairwise preference (A, B or a tie)" in page
    assert "Ranking of a context&#x27;s candidates" in page
    for name in ("allows_ties", "asks_reason", "pairs_per_context"):
        assert f'name="{name}"' in page
    response = _post(
        admin_client,
        stage,
        instrument=Stage.Instrument.PAIRWISE,
        allows_ties=False,
        asks_reason="on",
        pairs_per_context=2,
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    stage.refresh_from_db()
    assert (stage.instrument, stage.allows_ties, stage.asks_reason, stage.pairs_per_context) == (
        Stage.Instrument.PAIRWISE,
        False,
        True,
        2,
    )
    # The study's page lists the settings on each stage's row too.
    study_page = admin_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    assert 'name="stages-0-pairs_per_context"' in study_page.content.decode()


def test_zero_pairs_per_context_is_refused_and_nothing_changes(admin_client, loaded_study):
    stage = loaded_study.stages.get(position=1)
    response = _post(admin_client, stage, instrument=Stage.Instrument.PAIRWISE, pairs_per_context=0)
    assert response.status_code == 200
    assert "at least one pair per context" in response.content.decode()
    stage.refresh_from_db()
    assert (stage.instrument, stage.pairs_per_context) == (Stage.Instrument.COHERENCE, None)


def test_the_comparison_settings_lock_once_annotators_work_in_the_stage(admin_client, loaded_study):
    stage = loaded_study.stages.get(position=1)
    Stage.objects.filter(pk=stage.pk).update(instrument=Stage.Instrument.PAIRWISE)
    annotator = annotators_create(group=loaded_study.groups.first(), count=1)[0]
    assignment_create(annotator=annotator, batch=stage.batches.first())
    response = _post(admin_client, stage, pairs_per_context=1, allows_ties=False)
    assert response.status_code == 200
    assert (
        "Ties allowed, Pairs per context cannot change: annotators already work in this stage."
        in response.content.decode()
    )
    stage.refresh_from_db()
    assert (stage.pairs_per_context, stage.allows_ties) == (None, True)


@pytest.mark.parametrize(
    ("instrument", "does"),
    [
        (Stage.Instrument.PAIRWISE, "compares pairs of candidates"),
        (Stage.Instrument.RANKING, "ranks candidates"),
    ],
)
def test_the_training_quiz_needs_a_coherence_first_stage(loaded_study, instrument, does):
    TrainingItem.objects.create(
        study=loaded_study, position=1, turns=[{"role": "client", "text": "Hi."}], text="Hello.",
        expected_coherent=True, explanation="It fits.",
    )  # fmt: skip
    before = study_missing_for_opening(study=loaded_study)
    Stage.objects.filter(study=loaded_study, position=1).update(instrument=instrument)
    assert study_missing_for_opening(study=loaded_study) == [
        *before,
        "a coherence first stage for the training quiz (the quiz practises the coherence "
        f"protocol; a study whose first stage {does} has no practice items)",
    ]


def test_a_study_without_coherence_stages_needs_no_error_categories(loaded_study):
    Stage.objects.filter(study=loaded_study, position=1).update(
        instrument=Stage.Instrument.PAIRWISE
    )
    Stage.objects.filter(study=loaded_study, position=2).update(instrument=Stage.Instrument.RANKING)
    before = study_missing_for_opening(study=loaded_study)
    loaded_study.categories.all().delete()
    assert study_missing_for_opening(study=loaded_study) == before


def test_the_judgement_list_shows_pairs_and_ranks(admin_client, study):
    from studies.models import Judgement
    from tests.studies.comparison_fixtures import answered_comparisons

    answered_comparisons(study)
    listing = admin_client.get(reverse("admin:studies_judgement_changelist") + "?all=")
    page = listing.content.decode()
    pair = (
        Judgement.objects.filter(opponent__isnull=False)
        .select_related("reflection", "opponent")
        .first()
    )
    left, right = (
        (pair.opponent, pair.reflection) if pair.shown_swapped else (pair.reflection, pair.opponent)
    )
    assert f"A: {left.source}, B: {right.source} → {pair.choice}" in page
    assert "rank 1" in page
    detail = admin_client.get(reverse("admin:studies_judgement_change", args=[pair.pk]))
    assert detail.status_code == 200
