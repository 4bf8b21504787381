"""The candidate selection on small hand-made pools, with the default embedding model."""

import json

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from analysis.candidates import clustering
from analysis.candidates.embeddings import DEFAULT_MODEL, embed
from analysis.candidates.parameters import SelectionParameters
from analysis.candidates.selection import (
    CandidateSelectionError,
    candidate_selection_create,
    candidate_selection_run,
)
from analysis.models import CandidateCluster, CandidateSelection, ClusterMember, TextEmbedding
from studies.datafiles.materials import MaterialsImportError, materials_import
from studies.models import Batch, BatchItem, PoolCandidate, Reflection
from tests.factories import StageFactory, StudyFactory

pytestmark = pytest.mark.django_db

TURNS = [{"role": "client", "text": "I can't sleep since I lost my job."}]

# Three clear topics per context; within a topic, paraphrases (one cluster each at 0.7).
TOPICS = {
    "sleep": [
        "You have not been sleeping since you lost your job.",
        "Losing your job has left you unable to sleep at night.",
        "Since the job went, sleep has not come easily for you.",
    ],
    "money": [
        "You are worried about paying the rent.",
        "Money is a big worry for you right now.",
    ],
    "family": ["Your family does not know yet and you feel alone with it."],
}


def pool_doc(ids=("d1", "d2"), extra=()):
    contexts = []
    for dialogue in ids:
        synthetic = [
            {
                "source": "GPT-4" if n % 2 else "Llama",
                "text": text,
                "generation": {"decoding": "nucleus" if n % 2 else "greedy", "p": 0.9},
            }
            for n, text in enumerate(t for texts in TOPICS.values() for t in texts)
        ]
        synthetic += list(extra)
        contexts.append(
            {
                "id": dialogue,
                "turns": TURNS,
                "human_reflection": f"It sounds like {dialogue} weighs on you.",
                "synthetic": synthetic,
            }
        )
    return {"contexts": contexts}


@pytest.fixture
def study():
    study = StudyFactory()
    StageFactory(study=study, name="Selected", position=1)
    StageFactory(study=study, name="Second", position=2)
    return study


def import_pool(study, doc):
    return materials_import(study=study, content=json.dumps(doc), fmt="json", pool=True)


def run(study, stage="Selected", seed=None, **params):
    selection = candidate_selection_create(
        study=study,
        stage=study.stages.get(name=stage),
        parameters=SelectionParameters(**params),
        seed=seed,
    )
    candidate_selection_run(selection_id=selection.pk)
    selection.refresh_from_db()
    return selection


def test_a_pool_is_imported_in_no_stage_and_again_changes_nothing(study):
    summary = import_pool(study, pool_doc())
    assert summary.pool_candidates_created == 12
    assert "12 pool candidates" in str(summary)
    assert PoolCandidate.objects.count() == 12
    assert not Batch.objects.exists()
    assert Reflection.objects.filter(kind="human").count() == 2
    again = import_pool(study, pool_doc())
    assert not again.changed
    assert PoolCandidate.objects.count() == 12


def test_a_pool_keeps_equal_texts_of_two_settings(study):
    twin = {"source": "GPT-4", "text": TOPICS["money"][0], "generation": {"decoding": "beam"}}
    import_pool(study, pool_doc(ids=("d1",), extra=[twin]))
    assert PoolCandidate.objects.filter(text=TOPICS["money"][0]).count() == 2


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"source": "GPT-4", "text": "x", "stage": "Selected"}, "a pool candidate is in no stage"),
        ({"source": "", "text": "x"}, "empty source"),
        ({"source": "Human", "text": "x"}, "reserved for the human reflection"),
        ({"source": "GPT-4", "text": ""}, "empty text"),
    ],
)
def test_a_bad_pool_candidate_is_refused_and_nothing_written(study, item, message):
    with pytest.raises(MaterialsImportError) as caught:
        import_pool(study, pool_doc(extra=[item]))
    assert message in str([p.message for p in caught.value.problems])
    assert not PoolCandidate.objects.exists()
    assert not study.contexts.exists()


def test_a_pool_csv_needs_no_stage_column(study):
    csv = (
        "annomi_dialogue_id,dialogue_context,reflection_source,reflection,decoding\n"
        'd1,"[{""role"": ""client"", ""text"": ""hi""}]",Human,Hello there.,\n'
        "d1,,GPT-4,You said hello.,greedy\n"
        "d1,,GPT-4,You said hello.,beam\n"
    )
    summary = materials_import(study=study, content=csv, fmt="csv", pool=True)
    assert summary.pool_candidates_created == 2
    assert sorted(PoolCandidate.objects.values_list("generation__decoding", flat=True)) == [
        "beam",
        "greedy",
    ]


def test_duplicates_exact_and_but_for_case_and_punctuation():
    kept_of, exact, near = clustering.duplicates(
        [
            "You feel alone.",
            "you feel alone",
            "You feel alone.",
            "Something else",
            "YOU, feel alone!",
        ]
    )
    assert kept_of.tolist() == [0, 0, 0, 3, 0]
    assert (exact, near) == (1, 2)


def test_clusters_are_numbered_by_first_member_and_cut_at_the_threshold():
    # Unit vectors at angles: 0 and 10 degrees together, 90 degrees apart.
    angles = np.radians([90, 0, 10, 95])
    vectors = np.column_stack([np.cos(angles), np.sin(angles)])
    labels = clustering.clusters(vectors, threshold=0.5, metric="cosine", linkage="average")
    assert labels.tolist() == [1, 2, 2, 1]
    # A threshold above every distance makes one cluster.
    assert set(clustering.clusters(vectors, threshold=1.5, metric="cosine", linkage="average")) == {
        1
    }


def test_the_representative_has_most_tokens_and_a_tie_is_drawn_with_the_seed():
    import random

    labels = np.array([1, 1, 2, 2, 2])
    chosen = clustering.representatives(labels, [3, 5, 4, 4, 2], random.Random(1))
    assert chosen[1] == 1
    assert chosen[2] in (2, 3)
    draws = {
        clustering.representatives(labels, [3, 5, 4, 4, 2], random.Random(s))[2] for s in range(20)
    }
    assert draws == {2, 3}


def test_the_draw_is_seeded_and_stratified_in_turn():
    import random

    numbers = list(range(1, 11))
    strata = ["a"] * 8 + ["b"] * 2
    first = clustering.sample(numbers, 4, random.Random(3), strata)
    assert first == clustering.sample(numbers, 4, random.Random(3), strata)
    assert sum(n > 8 for n in first) == 2  # both b clusters, two a clusters
    assert clustering.sample(numbers, 20, random.Random(3)) == numbers


def test_the_default_model_embeds_offline_and_caches_by_text(study):
    texts = [TOPICS["sleep"][0], TOPICS["sleep"][1], TOPICS["family"][0], TOPICS["sleep"][0]]
    vectors = embed(texts)
    assert vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[3])
    # Paraphrases are nearer each other than to another topic.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert TextEmbedding.objects.filter(model=DEFAULT_MODEL).count() == 3
    assert np.array_equal(embed(texts[:1]), vectors[:1])  # from the cache


def test_the_selection_fills_the_stage_with_cluster_representatives(study):
    import_pool(study, pool_doc())
    selection = run(study, per_context=2)
    assert selection.status == CandidateSelection.Status.DONE, selection.error
    assert selection.counts["candidates"] == 12
    assert selection.counts["selected"] == 4
    clusters = CandidateCluster.objects.filter(selection=selection)
    # The three topics are the clusters of each context.
    for cluster in clusters:
        members = {m.candidate.text for m in cluster.members.select_related("candidate")}
        topic = next(t for t, texts in TOPICS.items() if cluster.representative.text in texts)
        assert members == set(TOPICS[topic])
        longest = max(len(t.split()) for t in TOPICS[topic])
        assert len(cluster.representative.text.split()) == longest
    assert clusters.count() == 6
    stage = study.stages.get(name="Selected")
    batches = Batch.objects.filter(stage=stage)
    assert batches.count() == 2
    for batch in batches:
        kinds = list(batch.items.values_list("reflection__kind", flat=True))
        assert kinds.count("synthetic") == 2
        assert kinds.count("human") == 1 and kinds.count("attention_check") == 1
    chosen = clusters.filter(selected=True)
    assert sorted(chosen.values_list("reflection__text", flat=True)) == sorted(
        chosen.values_list("representative__text", flat=True)
    )
    assert all(r.generation for r in Reflection.objects.filter(kind="synthetic"))


def test_the_same_seed_gives_the_same_selection(study):
    import_pool(study, pool_doc(ids=("d1", "d2", "d3")))
    first = run(study, per_context=2, seed=11)
    second = run(study, stage="Second", per_context=2, seed=11)

    def chosen(selection):
        return sorted(
            CandidateCluster.objects.filter(selection=selection, selected=True).values_list(
                "context__external_id", "representative_id"
            )
        )

    assert chosen(first) == chosen(second)
    assert first.diversity == second.diversity
    texts = [
        sorted(BatchItem.objects.filter(batch__stage__name=s, reflection__kind="synthetic")
               .values_list("reflection__text", flat=True))
        for s in ("Selected", "Second")
    ]  # fmt: skip
    assert texts[0] == texts[1]


def test_duplicates_join_their_copy_s_cluster_and_are_counted(study):
    extra = [
        {"source": "GPT-4", "text": TOPICS["money"][0], "generation": {"decoding": "beam"}},
        {"source": "GPT-4", "text": TOPICS["money"][0].upper(), "generation": {}},
        {"source": "GPT-4", "text": "It sounds like d1 weighs on you."},
    ]
    # Three contexts: d2 may select d1's human reflection's text, and its attention
    # check is then d3's.
    import_pool(study, pool_doc(ids=("d1", "d2", "d3"), extra=extra))
    selection = run(study)
    assert selection.counts["exact_duplicates"] == 3
    assert selection.counts["near_duplicates"] == 3
    # d1's third extra is its human reflection's text: left out of its clusters.
    assert selection.counts["same_as_human"] == 1
    in_clusters = ClusterMember.objects.filter(candidate__text=extra[2]["text"])
    assert sorted(in_clusters.values_list("candidate__context__external_id", flat=True)) == [
        "d2",
        "d3",
    ]
    duplicates = ClusterMember.objects.filter(cluster__selection=selection, duplicate=True)
    assert duplicates.count() == 6
    for member in duplicates:
        assert member.cluster.members.filter(
            duplicate=False, candidate__text=TOPICS["money"][0]
        ).exists()


def test_a_stage_with_batches_is_refused_and_nothing_written(study):
    import_pool(study, pool_doc())
    run(study)
    with pytest.raises(ValidationError) as caught:
        run(study)
    assert "already has batches" in str(caught.value)
    assert CandidateSelection.objects.count() == 1


def test_bad_parameters_are_refused_by_field(study):
    import_pool(study, pool_doc())
    with pytest.raises(ValidationError) as caught:
        candidate_selection_create(
            study=study,
            stage=study.stages.first(),
            parameters=SelectionParameters(
                threshold=0, linkage="ward", per_context=0, stratify_by="colour"
            ),
        )
    assert set(caught.value.message_dict) == {"threshold", "linkage", "per_context", "stratify_by"}
    assert not CandidateSelection.objects.exists()


def test_no_pool_is_refused(study):
    with pytest.raises(ValidationError, match="no candidate pool"):
        run(study)


def test_a_model_that_cannot_load_fails_the_selection_with_its_message(study, tmp_path):
    import_pool(study, pool_doc())
    with pytest.raises(CandidateSelectionError, match="cannot load the embedding model"):
        run(study, model=str(tmp_path / "no-such-model"))
    selection = CandidateSelection.objects.get()
    assert selection.status == CandidateSelection.Status.FAILED
    assert "cannot load the embedding model" in selection.error
    assert not Batch.objects.exists()
    assert not CandidateCluster.objects.exists()


def test_the_command_selects_and_reports(study, capsys):
    import_pool(study, pool_doc())
    call_command("select_candidates", study.slug, "--stage", "Selected", "--per-context", "2")
    out = capsys.readouterr().out
    assert "Embedding" in out
    assert "12 candidates in 2 contexts" in out
    assert "4 selected into stage" in out
    with pytest.raises(CommandError, match="already has batches"):
        call_command("select_candidates", study.slug, "--stage", "Selected")
    with pytest.raises(CommandError, match='No stage "Nope"'):
        call_command("select_candidates", study.slug, "--stage", "Nope")


def test_the_stratified_remainder_falls_on_values_drawn_with_the_seed():
    import random
    from collections import Counter

    numbers = list(range(1, 41))
    strata = [v for v in "abcd" for _ in range(10)]
    extra = Counter()
    for seed in range(200):
        chosen = clustering.sample(numbers, 9, random.Random(seed), strata)
        per_value = Counter(strata[n - 1] for n in chosen)
        assert sorted(per_value.values()) == [2, 2, 2, 3]
        extra[per_value.most_common(1)[0][0]] += 1
    assert set(extra) == set("abcd")
    assert min(extra.values()) > 20  # about 50 each


def test_a_near_copy_of_the_human_reflection_is_left_out(study):
    copy = {"source": "GPT-4", "text": "it sounds like D1 weighs on you"}
    import_pool(study, pool_doc(ids=("d1", "d2", "d3"), extra=[copy]))
    selection = run(study)
    assert selection.counts["same_as_human"] == 1
    assert not ClusterMember.objects.filter(
        candidate__text=copy["text"], candidate__context__external_id="d1"
    ).exists()


def test_a_lost_selection_is_marked_failed_and_the_stage_freed(study, settings):
    from datetime import timedelta

    from django.utils import timezone

    import_pool(study, pool_doc())
    stage = study.stages.get(name="Selected")
    lost = candidate_selection_create(study=study, stage=stage, parameters=SelectionParameters())
    with pytest.raises(ValidationError, match="already queued or running"):
        candidate_selection_create(study=study, stage=stage, parameters=SelectionParameters())
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 120)
    CandidateSelection.objects.filter(pk=lost.pk).update(created_at=long_ago)
    again = candidate_selection_create(study=study, stage=stage, parameters=SelectionParameters())
    lost.refresh_from_db()
    assert lost.status == CandidateSelection.Status.FAILED and "lost" in lost.error
    # A late message for the lost one starts nothing; the new one runs once.
    candidate_selection_run(selection_id=lost.pk)
    candidate_selection_run(selection_id=again.pk)
    candidate_selection_run(selection_id=again.pk)
    again.refresh_from_db()
    assert again.status == CandidateSelection.Status.DONE
    assert CandidateCluster.objects.filter(selection=lost).count() == 0
    assert Batch.objects.filter(stage=stage).count() == 2


def test_a_stage_deleted_before_the_run_fails_it_with_a_message(study):
    import_pool(study, pool_doc())
    selection = candidate_selection_create(
        study=study, stage=study.stages.get(name="Selected"), parameters=SelectionParameters()
    )
    study.stages.get(name="Selected").delete()
    with pytest.raises(CandidateSelectionError, match="stage was deleted"):
        candidate_selection_run(selection_id=selection.pk)
    selection.refresh_from_db()
    assert selection.status == CandidateSelection.Status.FAILED
    assert not CandidateCluster.objects.exists()


def test_a_pool_context_without_its_human_reflection_is_named(study):
    import_pool(study, pool_doc())
    Reflection.objects.filter(context__external_id="d2", kind="human").delete()
    with pytest.raises(ValidationError, match=r"no human reflection.*d2"):
        run(study)
    assert not CandidateSelection.objects.exists()


def test_the_command_takes_the_role_of_the_account_it_acts_for(study, capsys):
    from studies.models import Role
    from tests.factories import user_with_role

    import_pool(study, pool_doc())
    viewer = user_with_role(study, Role.VIEWER)
    owner = user_with_role(study, Role.OWNER)
    args = ["select_candidates", study.slug, "--stage", "Selected", "--by"]
    with pytest.raises(CommandError, match='No account "nobody"'):
        call_command(*args, "nobody")
    with pytest.raises(CommandError, match="change the study's configuration"):
        call_command(*args, viewer.username)
    assert not CandidateSelection.objects.exists() and not Batch.objects.exists()
    call_command(*args, owner.username)
    assert CandidateSelection.objects.get().requested_by == owner
