"""BLEU-4 and ROUGE-L computed here (analysis/metrics/overlap.py, analysis/computed_scores.py):
the metrics pinned by hand and cross-checked, the service, its one rule with the scores
import, the command, the dashboard button and the admin action. The real worker runs the
task in tests/analysis/test_tasks.py."""

import json
import math
import random
import re
import threading
import time
import warnings
from collections import Counter
from unittest import mock

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from django.utils import timezone

from analysis import computed_scores
from analysis.computed_scores import automatic_scores_compute
from analysis.importers import AutomaticScoresImportError, automatic_scores_import
from analysis.metrics.overlap import bleu4, computed_metric_named, rouge_l
from analysis.models import AutomaticScore
from annotation_site.celery import app as celery_app
from studies.datafiles.materials import materials_import
from studies.errors import ErrorCode
from studies.models import BatchItem, Reflection, Role, StudyRole
from tests.factories import StaffUserFactory, StudyFactory, user_with_role

# --- the metrics, by hand ---------------------------------------------------------------------

REFERENCE = "you feel tired of the walking plan"
HYPOTHESIS = "you feel tired of it"


def test_bleu4_of_a_short_pair_worked_by_hand():
    # Modified n-gram precisions of the 5-token hypothesis against the 7-token reference:
    # 1-grams 4/5 ("it" is not in the reference), 2-grams 3/4 ("of it" is not), 3-grams
    # 2/3, 4-grams 1/2 ("you feel tired of"). Geometric mean with weights 1/4:
    # (4/5 · 3/4 · 2/3 · 1/2)^(1/4) = 0.2^(1/4). Brevity penalty exp(1 − 7/5).
    expected = 0.2**0.25 * math.exp(1 - 7 / 5)
    assert expected == pytest.approx(0.448270, abs=1e-6)
    assert bleu4([REFERENCE], [HYPOTHESIS])[0] == pytest.approx(expected, rel=1e-12)


def test_rouge_l_of_a_short_pair_worked_by_hand():
    # Longest common subsequence "you feel tired of": 4 tokens. Precision 4/5, recall
    # 4/7, F-measure 2·4 / (5 + 7) = 2/3.
    assert rouge_l([REFERENCE], [HYPOTHESIS])[0] == pytest.approx(2 / 3, rel=1e-12)


def test_identical_texts_score_1_and_texts_without_a_shared_word_score_0():
    refs = [REFERENCE, REFERENCE]
    hyps = [REFERENCE, "nothing in common here"]
    assert bleu4(refs, hyps).tolist() == [1.0, 0.0]
    assert rouge_l(refs, hyps).tolist() == [1.0, 0.0]


def test_bleu_splits_on_whitespace_and_keeps_case_while_rouge_l_normalises():
    # BLEU's tokens are "The", "cat,", "sat!": none is a reference token. ROUGE-L
    # lower-cases and drops punctuation: the same three tokens in order.
    assert bleu4(["the cat sat"], ["The cat, sat!"])[0] == 0.0
    assert rouge_l(["the cat sat"], ["The cat, sat!"])[0] == 1.0


def test_bleu_without_a_shared_4_gram_is_nltks_zero_and_warns_nothing():
    # 1- and 2-grams overlap, 3- and 4-grams do not: NLTK (no smoothing) puts the
    # smallest float in the geometric mean, a value near 1e-154 that ranks above an
    # exact 0 (no shared word), as in the published study's numbers.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (score,) = bleu4(["a b c d e"], ["a b x d e"])
    assert 0 < score < 1e-150


def test_computed_metric_names_ignore_case_and_surrounding_spaces():
    assert computed_metric_named("BLEU") == "bleu"
    assert computed_metric_named(" Rouge_L ") == "rouge_l"
    assert computed_metric_named("BLEU-4") is None
    assert computed_metric_named("METEOR") is None


# --- cross-checks against independent implementations -----------------------------------------


def _bleu4_by_definition(reference: str, hypothesis: str) -> float:
    """Papineni et al.: clipped n-gram precisions, uniform weights, brevity penalty."""
    ref, hyp = reference.split(), hypothesis.split()
    log_sum = 0.0
    for n in range(1, 5):
        hyp_grams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        ref_grams = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        clipped = sum(min(count, ref_grams[gram]) for gram, count in hyp_grams.items())
        log_sum += math.log(clipped / sum(hyp_grams.values())) / 4
    penalty = 1.0 if len(hyp) > len(ref) else math.exp(1 - len(ref) / len(hyp))
    return penalty * math.exp(log_sum)


def _rouge_l_by_definition(reference: str, hypothesis: str) -> float:
    """Lin 2004: F-measure of the longest common subsequence of the lower-cased
    alphanumeric tokens (rouge_score's tokenisation), by dynamic programming."""

    def tokens(text):
        return re.sub(r"[^a-z0-9]+", " ", text.lower()).split()

    ref, hyp = tokens(reference), tokens(hypothesis)
    table = [[0] * (len(hyp) + 1) for _ in range(len(ref) + 1)]
    for i, r in enumerate(ref):
        for j, h in enumerate(hyp):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if r == h else max(table[i][j + 1], table[i + 1][j])
            )
    lcs = table[-1][-1]
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(hyp), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def _random_pairs(n: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = ["you", "feel", "it", "the", "plan", "walking", "tired", "of", "and,", "Yes;"]
    refs, hyps = [], []
    for _ in range(n):
        shared = [rng.choice(words) for _ in range(4)]  # a shared 4-gram: no zero precision
        refs.append(" ".join([rng.choice(words) for _ in range(rng.randint(0, 8))] + shared))
        hyps.append(" ".join(shared + [rng.choice(words) for _ in range(rng.randint(0, 8))]))
    return refs, hyps


def test_bleu4_agrees_with_the_definition_on_random_pairs():
    refs, hyps = _random_pairs(200, seed=1)
    expected = [_bleu4_by_definition(r, h) for r, h in zip(refs, hyps, strict=True)]
    assert bleu4(refs, hyps).tolist() == pytest.approx(expected, rel=1e-9)


def test_rouge_l_agrees_with_the_definition_on_random_pairs():
    refs, hyps = _random_pairs(200, seed=2)
    expected = [_rouge_l_by_definition(r, h) for r, h in zip(refs, hyps, strict=True)]
    assert rouge_l(refs, hyps).tolist() == pytest.approx(expected, rel=1e-9)


# --- the service --------------------------------------------------------------------------------

SYNTHETIC = {
    # (stage, j) -> text, per dialogue i (the human reflection is REFERENCE + f" {i}")
    ("GPT-2 stage", 1): "you feel tired of it",
    ("GPT-2 stage", 2): "the walking plan is hard",
    ("GPT-3 stage", 1): "so you feel tired of the walking plan",
    ("GPT-3 stage", 2): "nothing in common",
}


def scoring_doc(n_contexts: int = 3) -> dict:
    return {
        "contexts": [
            {
                "id": f"dlg-{i}",
                "turns": [{"role": "client", "text": f"I am tired ({i})."}],
                "human_reflection": f"{REFERENCE} {i}",
                "synthetic": [
                    {"stage": stage, "source": stage.split()[0], "text": f"{text} {i}"}
                    for (stage, _), text in SYNTHETIC.items()
                ],
            }
            for i in range(1, n_contexts + 1)
        ]
    }


@pytest.fixture
def text_study(study):
    materials_import(study=study, content=json.dumps(scoring_doc()), fmt="json")
    return study


def stored(origin=None) -> dict[tuple[str, str, str], float]:
    scores = AutomaticScore.objects.all()
    if origin is not None:
        scores = scores.filter(origin=origin)
    return {
        (stage, text, evaluator): score
        for stage, text, evaluator, score in scores.values_list(
            "stage__name", "reflection__text", "evaluator", "score"
        )
    }


def test_every_synthetic_reflection_is_scored_against_its_contexts_human_reflection(text_study):
    summary = automatic_scores_compute(study=text_study, metrics=["bleu", "rouge_l"])

    expected = {}
    for i in (1, 2, 3):
        for (stage, _), text in SYNTHETIC.items():
            hypothesis, reference = f"{text} {i}", f"{REFERENCE} {i}"
            expected[(stage, hypothesis, "bleu")] = bleu4([reference], [hypothesis])[0]
            expected[(stage, hypothesis, "rouge_l")] = rouge_l([reference], [hypothesis])[0]
    assert stored(AutomaticScore.Origin.COMPUTED) == pytest.approx(expected, rel=1e-12)
    # The human reflection (the reference) and attention checks take no score.
    scored = set(AutomaticScore.objects.values_list("reflection__kind", flat=True))
    assert scored == {Reflection.Kind.SYNTHETIC}
    # Against "you feel tired of the walking plan 2": every n-gram but the one starting
    # with "so" is shared (8/9, 7/8, 6/7, 5/6: product 5/9), and the hypothesis is the
    # longer one (no brevity penalty).
    assert expected[("GPT-3 stage", "so you feel tired of the walking plan 2", "bleu")] == (
        pytest.approx((5 / 9) ** 0.25, rel=1e-12)
    )
    assert (summary.reflections, summary.created, summary.replaced) == (12, 24, 0)
    assert str(summary) == (
        "Computed bleu and rouge_l for 12 synthetic reflections (24 scores; 0 computed "
        "earlier were replaced)."
    )


def test_rerunning_replaces_the_metrics_computed_scores_and_keeps_the_others(text_study):
    automatic_scores_compute(study=text_study, metrics=["bleu", "rouge_l"])
    before = stored()
    first_ids = set(AutomaticScore.objects.filter(evaluator="bleu").values_list("pk", flat=True))
    AutomaticScore.objects.filter(evaluator="bleu").update(score=0.5)  # stale values

    summary = automatic_scores_compute(study=text_study, metrics=["bleu"])

    assert stored() == before
    assert (summary.created, summary.replaced) == (12, 12)
    assert not first_ids & set(
        AutomaticScore.objects.filter(evaluator="bleu").values_list("pk", flat=True)
    )


def test_other_evaluators_are_left_alone(text_study):
    automatic_scores_import(study=text_study, file=_scores_csv(text_study, "METEOR"))
    automatic_scores_compute(study=text_study, metrics=["rouge_l"])
    counts = Counter(AutomaticScore.objects.values_list("evaluator", "origin"))
    assert counts == {("METEOR", "imported"): 12, ("rouge_l", "computed"): 12}


def _refused(exc_info, *needles):
    message = " ".join(exc_info.value.messages)
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize(
    ("metrics", "needle"),
    [
        (
            ["bleu", "meteor"],
            "Unknown metric 'meteor': the metrics computed here are bleu, rouge_l.",
        ),
        (["BLEU"], "Unknown metric 'BLEU'"),
        ([], "Name at least one metric to compute: bleu, rouge_l."),
    ],
)
def test_an_unknown_metric_is_refused_and_nothing_is_written(text_study, metrics, needle):
    with pytest.raises(ValidationError) as exc_info:
        automatic_scores_compute(study=text_study, metrics=metrics)
    _refused(exc_info, needle)
    assert AutomaticScore.objects.count() == 0


def test_a_study_without_human_reflections_is_refused(study):
    with pytest.raises(ValidationError) as exc_info:
        automatic_scores_compute(study=study, metrics=["bleu"])
    _refused(exc_info, 'The study "pilot" has no human reflections to score against')
    assert AutomaticScore.objects.count() == 0


def _scores_csv(study, evaluator: str) -> str:
    """One score per synthetic item of ``study`` under ``evaluator``."""
    lines = ["stage,annomi_dialogue_id,reflection,evaluator,score"]
    for stage, dialogue, text in BatchItem.objects.filter(
        batch__stage__study=study, reflection__kind=Reflection.Kind.SYNTHETIC
    ).values_list("batch__stage__name", "batch__context__external_id", "reflection__text"):
        lines.append(f'{stage},{dialogue},"{text}",{evaluator},0.25')
    return "\n".join(lines) + "\n"


def _import_unchecked(study, evaluator: str) -> None:
    """Imported scores under a metric's name, as a study may hold them from before."""
    automatic_scores_import(study=study, file=_scores_csv(study, evaluator), replace=True)


def test_scores_imported_under_a_metrics_name_refuse_the_computation(text_study):
    _import_unchecked(text_study, "BLEU")
    before = stored()
    with pytest.raises(ValidationError) as exc_info:
        automatic_scores_compute(study=text_study, metrics=["bleu", "rouge_l"])
    _refused(
        exc_info,
        "The study holds imported scores under the name of a metric computed here "
        "(bleu: imported as 'BLEU'). Replace them",
    )
    assert exc_info.value.code == ErrorCode.SCORES_IMPORTED_UNDER_METRIC_NAME
    assert stored() == before


def test_replace_deletes_the_imported_scores_of_the_metric_and_computes_it(text_study):
    _import_unchecked(text_study, "BLEU")
    _import_unchecked(text_study, "METEOR")
    summary = automatic_scores_compute(study=text_study, metrics=["bleu"], replace=True)
    counts = Counter(AutomaticScore.objects.values_list("evaluator", "origin"))
    assert counts == {("bleu", "computed"): 12, ("METEOR", "imported"): 12}
    assert summary.imported_deleted == 12
    assert "12 imported scores of the same name were deleted." in str(summary)


@pytest.mark.parametrize("name", ["BLEU", "bleu", "Rouge_L"])
def test_the_import_refuses_an_evaluator_named_like_a_computed_metric(text_study, name):
    automatic_scores_compute(study=text_study, metrics=["bleu", "rouge_l"])
    before = stored()
    with pytest.raises(AutomaticScoresImportError) as exc_info:
        automatic_scores_import(study=text_study, file=_scores_csv(text_study, name))
    assert exc_info.value.total == 12
    metric = computed_metric_named(name)
    assert (
        f"row 2, column 'evaluator': '{name}' is the name of a metric computed here ({metric}): "
        "rename the evaluator, or import with replace"
    ) in exc_info.value.report("scores.csv")
    assert stored() == before


def test_the_import_with_replace_deletes_the_computed_scores_of_that_metric(text_study):
    automatic_scores_compute(study=text_study, metrics=["bleu", "rouge_l"])
    summary = automatic_scores_import(
        study=text_study, file=_scores_csv(text_study, "BLEU"), replace=True
    )
    counts = Counter(AutomaticScore.objects.values_list("evaluator", "origin"))
    assert counts == {("BLEU", "imported"): 12, ("rouge_l", "computed"): 12}
    assert summary.computed_deleted == 12
    assert "12 computed scores of the same metric were deleted." in str(summary)


def test_the_database_keeps_computed_scores_to_the_computed_metrics(text_study):
    item = BatchItem.objects.filter(reflection__kind=Reflection.Kind.SYNTHETIC).first()
    with pytest.raises(IntegrityError, match="automatic_score_origin_valid"), transaction.atomic():
        AutomaticScore.objects.create(
            study=text_study,
            stage=item.batch.stage,
            reflection=item.reflection,
            evaluator="BERTScore",
            score=0.5,
            origin=AutomaticScore.Origin.COMPUTED,
            imported_at=timezone.now(),
        )


def test_computed_scores_feed_the_report_like_imported_ones(text_study):
    from analysis.selectors.judgements import automatic_scores_frame

    automatic_scores_compute(study=text_study, metrics=["rouge_l"])
    frame = automatic_scores_frame(study_id=text_study.pk)
    assert set(frame["evaluator"]) == {"rouge_l"} and len(frame) == 12


@pytest.mark.django_db(transaction=True)
def test_two_computations_of_one_study_run_one_after_the_other(text_study):
    """Each holds the study's row lock from its first read to its commit: the second
    waits for the first, so their scores never interleave."""
    spans: list[tuple[float, float]] = []
    scorer = computed_scores.SCORERS["bleu"]
    both_started = threading.Barrier(2, timeout=30)

    def slow_bleu(references, hypotheses):
        start = time.monotonic()
        time.sleep(0.5)
        scores = scorer(references, hypotheses)
        spans.append((start, time.monotonic()))
        return scores

    errors = []

    def job():
        try:
            both_started.wait()
            automatic_scores_compute(study=text_study, metrics=["bleu"])
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    with mock.patch.dict(computed_scores.SCORERS, {"bleu": slow_bleu}):
        threads = [threading.Thread(target=job) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert errors == []
    (_, first_end), (second_start, _) = sorted(spans)
    assert first_end <= second_start, f"the computations overlapped: {spans}"
    assert AutomaticScore.objects.filter(evaluator="bleu").count() == 12


# --- the command ----------------------------------------------------------------------------------


def test_command_computes_and_prints_the_summary(text_study, capsys):
    call_command("compute_scores", "pilot", "--metric", "bleu", "rouge_l")
    assert "Computed bleu and rouge_l for 12 synthetic reflections" in capsys.readouterr().out
    assert AutomaticScore.objects.filter(origin="computed").count() == 24


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--metric", "bleu"], 'No study with slug "nope".'),
        (["pilot", "--metric", "bleu", "meteor"], "Unknown metric 'meteor'"),
    ],
)
def test_command_refuses_bad_input_and_writes_nothing(text_study, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("compute_scores", *args)
    assert AutomaticScore.objects.count() == 0


def test_command_names_the_replace_option_when_scores_were_imported_under_a_metrics_name(
    text_study,
):
    _import_unchecked(text_study, "Bleu")
    with pytest.raises(CommandError, match=r"imported as 'Bleu'.*To replace them: --replace\."):
        call_command("compute_scores", "pilot", "--metric", "bleu")
    assert set(AutomaticScore.objects.values_list("origin", flat=True)) == {"imported"}
    call_command("compute_scores", "pilot", "--metric", "bleu", "--replace")
    assert set(AutomaticScore.objects.values_list("evaluator", "origin")) == {("bleu", "computed")}


def test_import_scores_command_takes_replace(text_study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(_scores_csv(text_study, "ROUGE_L"))
    with pytest.raises(CommandError, match="is the name of a metric computed here"):
        call_command("import_scores", "pilot", str(path))
    assert AutomaticScore.objects.count() == 0
    call_command("import_scores", "pilot", str(path), "--replace")
    assert AutomaticScore.objects.filter(evaluator="ROUGE_L").count() == 12


# --- the dashboard and the admin -------------------------------------------------------------------


@pytest.fixture
def eager_tasks(settings):
    """Tasks run in this process (Celery's eager mode). The real worker runs
    the task in tests/analysis/test_tasks.py."""
    # Celery reads its CELERY_ settings live (none is set on its conf), so the
    # settings fixture's undo undoes these too.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CELERY_TASK_EAGER_PROPAGATES = True
    assert celery_app.conf.task_always_eager and celery_app.conf.task_eager_propagates
    yield


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def compute_url(study) -> str:
    return reverse("analysis:scores_compute", args=[study.slug])


def dashboard_url(study) -> str:
    return reverse("analysis:dashboard", args=[study.slug])


def test_dashboard_lists_the_evaluators_and_offers_the_computation(staff_client, text_study):
    _import_unchecked(text_study, "METEOR")
    page = staff_client.get(dashboard_url(text_study)).content.decode()
    assert 'id="scores"' in page and f'action="{compute_url(text_study)}"' in page
    assert f'hx-post="{compute_url(text_study)}"' in page
    assert '<th scope="row">METEOR</th><td>imported</td><td class="num">12</td>' in page
    assert 'value="bleu"' in page and 'value="rouge_l"' in page


def test_the_dashboard_button_computes_on_the_worker_and_returns_to_the_dashboard(
    staff_client, text_study, eager_tasks
):
    response = staff_client.post(compute_url(text_study), {"metrics": ["bleu", "rouge_l"]})
    assert response.status_code == 302
    assert response["Location"] == dashboard_url(text_study) + "#scores"
    assert Counter(AutomaticScore.objects.values_list("evaluator", flat=True)) == {
        "bleu": 12,
        "rouge_l": 12,
    }
    page = staff_client.get(response["Location"]).content.decode()
    # In eager mode the work is done already: no "reload the page".
    assert "Computed bleu and rouge_l: the scores are listed under Automatic metrics." in page
    assert "reload the page" not in page
    assert '<th scope="row">bleu</th><td>computed here</td><td class="num">12</td>' in page


def test_the_dashboard_button_with_htmx_returns_the_panel(staff_client, text_study, eager_tasks):
    response = staff_client.post(
        compute_url(text_study), {"metrics": ["rouge_l"]}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert page.startswith('<div id="scores-panel"')
    assert '<th scope="row">rouge_l</th><td>computed here</td><td class="num">12</td>' in page


@pytest.mark.parametrize("htmx", [False, True])
def test_a_refused_computation_shows_why_and_queues_nothing(staff_client, text_study, htmx):
    _import_unchecked(text_study, "BLEU")
    before = stored()
    with mock.patch("analysis.services._task") as task:
        response = staff_client.post(
            compute_url(text_study),
            {"metrics": ["bleu"]},
            **({"HTTP_HX_REQUEST": "true"} if htmx else {}),
        )
    assert response.status_code == 422
    assert "bleu: imported as &#x27;BLEU&#x27;" in response.content.decode()
    task.assert_not_called()
    assert stored() == before


def test_with_a_worker_the_notice_says_the_scores_come_later(staff_client, text_study, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker and a worker, even on a laptop
    with mock.patch("analysis.services._task") as task:
        response = staff_client.post(
            compute_url(text_study), {"metrics": ["bleu"]}, HTTP_HX_REQUEST="true"
        )
    assert response.status_code == 200
    task.return_value.apply_async.assert_called_once_with((text_study.pk, ["bleu"], False))
    assert "Computing bleu in the background" in response.content.decode()
    assert AutomaticScore.objects.count() == 0


def test_without_a_broker_a_refusal_under_the_lock_is_shown(staff_client, text_study, eager_tasks):
    # Scores imported under the metric's name after the first check passed (a race):
    # the computation refuses, and the researcher is told so rather than a log line.
    _import_unchecked(text_study, "BLEU")
    before = stored()
    real_check = computed_scores.automatic_scores_compute_check
    calls = []

    def check(**kwargs):  # the first check (before the lock) saw no import yet
        calls.append(kwargs)
        return list(kwargs["metrics"]) if len(calls) == 1 else real_check(**kwargs)

    with mock.patch("analysis.computed_scores.automatic_scores_compute_check", check):
        response = staff_client.post(compute_url(text_study), {"metrics": ["bleu"]})
    assert response.status_code == 422
    assert "bleu: imported as &#x27;BLEU&#x27;" in response.content.decode()
    assert stored() == before


def test_the_replace_box_replaces_imported_scores(staff_client, text_study, eager_tasks):
    _import_unchecked(text_study, "BLEU")
    response = staff_client.post(compute_url(text_study), {"metrics": ["bleu"], "replace": "on"})
    assert response.status_code == 302
    assert set(AutomaticScore.objects.values_list("evaluator", "origin")) == {("bleu", "computed")}


def test_a_study_without_human_reflections_is_refused_on_the_dashboard(staff_client, study):
    response = staff_client.post(compute_url(study), {"metrics": ["bleu"]})
    assert response.status_code == 422
    assert "has no human reflections to score against" in response.content.decode()
    assert AutomaticScore.objects.count() == 0


def test_an_unknown_metric_from_the_form_is_refused(staff_client, text_study):
    response = staff_client.post(compute_url(text_study), {"metrics": ["meteor"]})
    assert response.status_code == 422
    assert "Select a valid choice. meteor is not one of the available choices." in (
        response.content.decode()
    )
    assert AutomaticScore.objects.count() == 0


def test_a_viewer_sees_no_button_and_is_refused_saying_why(client, text_study):
    client.force_login(user_with_role(text_study, Role.VIEWER))
    page = client.get(dashboard_url(text_study)).content.decode()
    assert 'id="scores"' in page and compute_url(text_study) not in page
    with mock.patch("analysis.services._task") as task:
        response = client.post(compute_url(text_study), {"metrics": ["bleu"]})
    assert response.status_code == 403
    assert "it takes a role that may run and download analyses" in response.content.decode()
    task.assert_not_called()
    assert AutomaticScore.objects.count() == 0


def test_a_role_that_may_run_analyses_may_compute(client, text_study, eager_tasks):
    client.force_login(user_with_role(text_study, Role.ANALYST))
    assert compute_url(text_study) in client.get(dashboard_url(text_study)).content.decode()
    assert client.post(compute_url(text_study), {"metrics": ["bleu"]}).status_code == 302
    assert AutomaticScore.objects.count() == 12


def test_anonymous_visitors_are_sent_to_the_login(client, text_study):
    response = client.post(compute_url(text_study), {"metrics": ["bleu"]})
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
    assert AutomaticScore.objects.count() == 0


def test_the_admin_action_computes_both_metrics(staff_client, text_study, eager_tasks):
    response = staff_client.post(
        reverse("admin:studies_study_changelist"),
        {"action": "compute_scores", "_selected_action": [text_study.pk]},
        follow=True,
    )
    assert "Computed bleu and rouge_l for pilot: the scores are listed" in (
        response.content.decode()
    )
    assert AutomaticScore.objects.filter(origin="computed").count() == 24


def test_the_admin_action_names_a_refused_study_and_queues_nothing(staff_client, text_study):
    _import_unchecked(text_study, "ROUGE_L")
    with mock.patch("analysis.services._task") as task:
        response = staff_client.post(
            reverse("admin:studies_study_changelist"),
            {"action": "compute_scores", "_selected_action": [text_study.pk]},
            follow=True,
        )
    assert "Pilot study: The study holds imported scores" in response.content.decode()
    task.assert_not_called()
    assert set(AutomaticScore.objects.values_list("origin", flat=True)) == {"imported"}


def test_the_admin_action_is_offered_only_to_roles_that_run_analyses(client, text_study):
    client.force_login(user_with_role(text_study, Role.VIEWER))
    page = client.get(reverse("admin:studies_study_changelist")).content.decode()
    assert 'value="compute_scores"' not in page
    client.force_login(user_with_role(text_study, Role.ANALYST))
    page = client.get(reverse("admin:studies_study_changelist")).content.decode()
    assert '<option value="compute_scores">Compute BLEU-4 and ROUGE-L scores' in page


def test_the_admin_action_refuses_a_study_where_the_role_may_not_run_analyses(client, text_study):
    """Analyst of another study (so offered the action), viewer of this one: refused,
    nothing queued."""
    user = user_with_role(text_study, Role.VIEWER)
    StudyRole.objects.create(study=StudyFactory(), user=user, role=Role.ANALYST)
    client.force_login(user)
    with mock.patch("analysis.services._task") as task:
        response = client.post(
            reverse("admin:studies_study_changelist"),
            {"action": "compute_scores", "_selected_action": [text_study.pk]},
            follow=True,
        )
    assert "Nothing was changed: Pilot study: Your role in this study (viewer)" in (
        response.content.decode()
    )
    task.assert_not_called()
    assert AutomaticScore.objects.count() == 0


def test_the_admin_scores_import_has_the_replace_box(staff_client, text_study):
    url = reverse("admin:analysis_automaticscore_import", args=[text_study.pk])
    upload = SimpleUploadedFile("scores.csv", _scores_csv(text_study, "BLEU").encode())
    response = staff_client.post(url, {"file": upload})
    assert "is the name of a metric computed here" in response.content.decode()
    assert AutomaticScore.objects.count() == 0
    upload = SimpleUploadedFile("scores.csv", _scores_csv(text_study, "BLEU").encode())
    response = staff_client.post(url, {"file": upload, "replace": "on"})
    assert response.status_code == 302
    assert AutomaticScore.objects.filter(evaluator="BLEU").count() == 12
