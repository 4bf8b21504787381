"""A stage filled by a candidate selection, annotated through the services, then
analysed: the report's ``spread`` rows against a plain count of the stored rows, its
``diversity.selections`` record, and the dashboard's tables."""

import json
from collections import defaultdict
from datetime import timedelta

import pytest
from django.urls import reverse

from analysis.models import CandidateCluster, ClusterMember
from analysis.services import analysis_run_compute
from studies.models import Assignment, Batch, Judgement
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    judgement_record,
    study_create,
)
from tests.analysis.candidates.test_selection import import_pool, pool_doc, run
from tests.factories import StaffUserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def annotated():
    study = study_create(
        slug="spread", title="Spread", stages=[("Selected", timedelta(0))], groups=["Layperson"]
    )
    group = study.groups.get()
    category = study.categories.order_by("order").first().slug
    twin = {"source": "GPT-4", "text": "Money is a BIG worry for you right now!", "generation": {}}
    import_pool(study, pool_doc(ids=("d1", "d2", "d3", "d4"), extra=[twin]))
    selection = run(study, per_context=3)
    annotators = annotators_create(group=group, count=3)
    for batch in Batch.objects.filter(stage__study=study):
        for n, annotator in enumerate(annotators):
            assignment = assignment_create(annotator=annotator, batch=batch)
            for reflection in batch.reflections.all():
                # Coherent unless the text's length and the rater say otherwise.
                coherent = (len(reflection.text) + n) % 3 != 0
                judgement_record(
                    assignment=assignment,
                    reflection=reflection,
                    answer=Answer(coherent=True, empathy=4)
                    if coherent
                    else Answer(coherent=False, categories=frozenset({category})),
                )
            Assignment.objects.filter(pk=assignment.pk).update(
                status=Assignment.Status.SUBMITTED, submitted_at=assignment.assigned_at
            )
    return study, selection


def plain_spread(selection):
    """(setting, value) → [members labelled, coherent] by counting the stored rows."""
    votes = defaultdict(list)
    for reflection_id, coherent in Judgement.objects.filter(
        assignment__stage=selection.stage
    ).values_list("reflection_id", "coherent"):
        votes[reflection_id].append(coherent)
    counts = defaultdict(lambda: [0, 0, 0])  # members, labelled, coherent
    for member in ClusterMember.objects.filter(
        cluster__selection=selection, cluster__selected=True
    ).select_related("cluster", "candidate"):
        given = votes[member.cluster.reflection_id]
        yes = sum(given)
        label = (
            "coherent" if yes * 2 > len(given) else ("incoherent" if yes * 2 < len(given) else None)
        )
        for key in [("all", "all")] + [
            (k, v if isinstance(v, str) else json.dumps(v))
            for k, v in member.candidate.generation.items()
        ]:
            counts[key][0] += 1
            counts[key][1] += label is not None
            counts[key][2] += label == "coherent"
    return counts


def test_the_spread_and_the_selection_in_the_report(client, annotated):
    study, selection = annotated
    report = analysis_run_compute(study=study, parameters={"bootstrap_resamples": 20}).result
    rows = {(r["key"], r["value"]): r for r in report["spread"] if r["group"] == "Layperson"}
    expected = plain_spread(selection)
    assert set(rows) == set(expected)
    for key, (members, labelled, coherent) in expected.items():
        row = rows[key]
        assert (row["n_members"], row["n_members_labelled"]) == (members, labelled)
        assert row["spread_coherent_rate"] == pytest.approx(coherent / labelled)
    # The duplicates joined their clusters: 4 contexts × 2 near-duplicate twins.
    all_row = rows[("all", "all")]
    selected_members = ClusterMember.objects.filter(
        cluster__selection=selection, cluster__selected=True
    )
    assert all_row["n_members"] == selected_members.count()
    assert (
        all_row["n_representatives"]
        == 12
        == CandidateCluster.objects.filter(selection=selection, selected=True).count()
    )

    record = report["diversity"]["selections"]["Selected"]
    assert record["selection_id"] == selection.pk and record["seed"] == selection.seed
    assert record["counts"] == selection.counts
    assert record["pool"] == selection.diversity["pool"]
    assert set(record["selection"]["contexts"]) == {"d1", "d2", "d3", "d4"}
    assert set(record["pool"]["sources"]) == {"GPT-4", "Llama"}
    # The stage's own diversity is the selection's (the same candidates).
    stage_entry = report["diversity"]["stages"]["Selected"]["all"]
    assert stage_entry["mean_cosine"] == pytest.approx(
        selection.diversity["selection"]["all"]["mean_cosine"], abs=1e-6
    )
    assert stage_entry["self_bleu"] == pytest.approx(
        selection.diversity["selection"]["all"]["self_bleu"]
    )

    client.force_login(StaffUserFactory(is_superuser=True))
    html = client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    assert "Coherent rate spread from cluster representatives to their members" in html
    assert "Diversity of the candidate pool and of the selection drawn from it" in html
    assert "decoding = nucleus" in html


def test_an_import_asks_for_the_embeddings_and_the_report_then_needs_no_model(db, monkeypatch):
    from unittest import mock

    from analysis.candidates import embeddings
    from analysis.models import TextEmbedding
    from analysis.services import candidate_texts_embed
    from studies.datafiles.materials import materials_import
    from tests.conftest import materials_doc

    study = study_create(
        slug="embedded", title="Embedded", stages=[("GPT-2 stage", timedelta(0))], groups=["L"]
    )
    with mock.patch("analysis.services._task") as task:
        materials_import(
            study=study, content=json.dumps(materials_doc(stages=["GPT-2 stage"])), fmt="json"
        )
    task.assert_called_once_with("analysis.embed_candidates")
    task.return_value.apply_async.assert_called_once_with((study.pk, 0))
    # What the worker then does: the stage's 3 × 2 candidates, embedded and kept.
    assert candidate_texts_embed(study_id=study.pk) == 6
    assert TextEmbedding.objects.count() == 6

    def no_model(name):
        raise AssertionError("the report loaded the model")

    monkeypatch.setattr(embeddings, "_model", no_model)
    report = analysis_run_compute(study=study, parameters={"bootstrap_resamples": 20}).result
    assert report["diversity"]["stages"]["GPT-2 stage"]["all"]["mean_cosine"] is not None


def test_a_report_without_the_embeddings_shows_no_cosine_and_asks_for_them(
    db, client, django_capture_on_commit_callbacks
):
    from unittest import mock

    from studies.datafiles.materials import materials_import
    from tests.conftest import materials_doc

    study = study_create(
        slug="pending", title="Pending", stages=[("GPT-2 stage", timedelta(0))], groups=["L"]
    )
    with mock.patch("analysis.services._task"):  # the import's request, not run here
        materials_import(
            study=study, content=json.dumps(materials_doc(stages=["GPT-2 stage"])), fmt="json"
        )
    with (
        mock.patch("analysis.services._task") as task,
        django_capture_on_commit_callbacks(execute=True),
    ):
        run = analysis_run_compute(study=study, parameters={"bootstrap_resamples": 20, "seed": 3})
    block = run.result["diversity"]
    assert block["embeddings_pending"] == 6
    assert block["stages"]["GPT-2 stage"]["all"]["mean_cosine"] is None
    assert block["stages"]["GPT-2 stage"]["all"]["self_bleu"]["2"] is not None
    task.return_value.apply_async.assert_called_once_with((study.pk, 3))
    client.force_login(StaffUserFactory(is_superuser=True))
    html = client.get(reverse("analysis:dashboard", args=[study.slug])).content.decode()
    assert "once the worker has embedded the candidates (6 texts still to do)" in html
