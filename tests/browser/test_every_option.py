"""A study with every option on, walked in a real browser from the link to the last
code: a screening questionnaire, the training quiz, crowd entry through Prolific,
six stages with a wait between them (the first asking for descriptions in the
annotator's own words, the second for error categories: a subset of the study's,
from coding, whose scheme a researcher marked final, with its own question and a
tutorial of its own read before its first batch; the third rating each candidate on
Likert dimensions, points and a slider, with the keyboard; the fourth comparing pairs
of candidates and the fifth ranking them, each after its tutorial, with the keyboard;
the laypeople's own wait of nothing before the fifth, whose candidates a candidate
selection drew from each context's pool), a sixth stage for experts only,
which the layperson skips, a questionnaire after the
first stage, and every code of each stage set (completion, partial completion,
screened out). Each new option of the platform joins this walk.

The steps come in one order: screening, consent, tutorial, quiz, batches, then the
stage's questionnaire before its completion code; an invitation link goes the same
way to the first batch. A crowd worker whose part of a stage ends early (no batch
left for them now) is paid with the partial-completion code."""

import json
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db.models import DateTimeField, F, Q
from django.utils import timezone
from playwright.sync_api import expect

from analysis.candidates.parameters import SelectionParameters
from analysis.candidates.selection import candidate_selection_create, candidate_selection_run
from studies.datafiles.materials import materials_import
from studies.models import (
    Annotator,
    Assignment,
    CrowdEntry,
    LikertRating,
    QuestionnaireResponse,
    Reflection,
    Stage,
    StageGroupWait,
    Study,
    TrainingAttempt,
)
from studies.protocol import NO_ANSWER_FREE_TEXT
from studies.services import annotators_create, assignment_claim
from studies.services.stages import stage_scheme_mark_final
from tests.browser.test_annotation_flow import DESKTOP, _expect_item, _save
from tests.browser.test_training_quiz import KEYS
from tests.conftest import materials_doc
from tests.studies.likert_fixtures import make_likert
from tests.studies.questionnaire_helpers import after_stage, screening
from tests.studies.services.test_crowd_joins import finish_stage, prolific
from tests.studies.services.test_crowd_partial import consented
from tests.studies.training_fixtures import quiz_add

CODES = {
    1: {
        "completion_code": "DONE1",
        "partial_completion_code": "PART1",
        "screened_out_code": "OUT1",
    },
    2: {
        "completion_code": "DONE2",
        "partial_completion_code": "PART2",
        "screened_out_code": "OUT2",
    },
    3: {
        "completion_code": "DONE3",
        "partial_completion_code": "PART3",
        "screened_out_code": "OUT3",
    },
    4: {
        "completion_code": "DONE4",
        "partial_completion_code": "PART4",
        "screened_out_code": "OUT4",
    },
    5: {
        "completion_code": "DONE5",
        "partial_completion_code": "PART5",
        "screened_out_code": "OUT5",
    },
}
DESCRIPTION = "The reflection invents a job loss the client never mentioned."


# A context's pool: two paraphrases of one thing, and another thing three times (the
# same text under two decodings, and but for case and punctuation): two clusters.
POOL = [
    {"source": "GPT-4", "text": text, "generation": {"decoding": decoding}}
    for text, decoding in (
        ("You have not been sleeping since you lost your job.", "greedy"),
        ("Losing your job has left you unable to sleep at night.", "nucleus"),
        ("You are worried about paying the rent.", "greedy"),
        ("You are worried about paying the rent.", "beam"),
        ("you are worried about paying the rent", "nucleus"),
    )
]

STAGE_2_QUESTION = "Does the response fit what the client said?"
STAGE_2_TUTORIAL = "In this stage, tick every kind of problem you see in a response."
STAGE_3_TUTORIAL = "In this stage, rate each response on two statements."


@pytest.fixture
def every_option(open_study):
    """``open_study`` with every option on (see the module's docstring)."""
    Study.objects.filter(pk=open_study.pk).update(
        batches_per_stage=1, crowd_group=open_study.groups.get(name="Layperson")
    )
    # Stage 3 rates each candidate on Likert dimensions (5 points, the attention check's,
    # and a slider with "cannot judge"), with a tutorial of its own.
    stage_3 = Stage.objects.create(
        study=open_study,
        position=3,
        name="Ratings stage",
        instrument=Stage.Instrument.LIKERT,
        tutorial_intro=STAGE_3_TUTORIAL,
    )
    make_likert(stage_3)
    # Stage 4 compares pairs of candidates (ties allowed, a reason asked), stage 5 ranks
    # them.
    Stage.objects.create(
        study=open_study,
        position=4,
        name="Pairs stage",
        instrument=Stage.Instrument.PAIRWISE,
        asks_reason=True,
    )
    ranks = Stage.objects.create(
        study=open_study, position=5, name="Ranks stage", instrument=Stage.Instrument.RANKING
    )
    # Laypeople wait nothing before stage 5 (their group's own wait), and stage 6 is the
    # experts' only: laypeople skip it.
    layperson, expert = (open_study.groups.get(name=n) for n in ("Layperson", "Expert"))
    StageGroupWait.objects.create(stage=ranks, group=layperson, min_wait=timedelta(0))
    Stage.objects.create(study=open_study, position=6, name="Experts stage").groups.set([expert])
    stages = ("Ratings stage", "Pairs stage", "Experts stage")
    materials_import(study=open_study, content=json.dumps(materials_doc(stages=stages)), fmt="json")
    # The ranks stage's candidates come from each context's pool, by a candidate selection.
    pool = materials_doc(stages=())
    for context in pool["contexts"]:
        context["synthetic"] = POOL
    materials_import(study=open_study, content=json.dumps(pool), fmt="json", pool=True)
    selection = candidate_selection_create(
        study=open_study, stage=ranks, parameters=SelectionParameters(per_context=2)
    )
    candidate_selection_run(selection_id=selection.pk)
    selection.refresh_from_db()
    assert selection.counts["selected"] == 2 * len(pool["contexts"]), selection.error
    for position, codes in CODES.items():
        Stage.objects.filter(study=open_study, position=position).update(**codes)
    Stage.objects.filter(study=open_study, position=1).update(no_answer=NO_ANSWER_FREE_TEXT)
    # Stage 2 offers two of the study's categories (the attention check's comes along),
    # as the codes of stage 1's descriptions would give, once the scheme is final.
    stage_2 = Stage.objects.get(study=open_study, position=2)
    stage_2.categories.set(
        open_study.categories.filter(catches_attention_check=False).order_by("order", "bit")[:2]
    )
    # Stage 2 words its question and has a tutorial of its own, read before its first
    # batch (stage 1's free text leaves the categories unexplained).
    Stage.objects.filter(pk=stage_2.pk).update(
        categories_from_coding=True,
        coherence_question=STAGE_2_QUESTION,
        tutorial_intro=STAGE_2_TUTORIAL,
    )
    stage_2.refresh_from_db()
    stage_scheme_mark_final(stage=stage_2, by=get_user_model().objects.create_user("researcher"))
    screening(open_study)
    after_stage(open_study, 1)
    quiz_add(open_study)
    open_study.refresh_from_db()
    return open_study


def answer_screening(page) -> None:
    expect(page.get_by_role("heading", name="A few questions before you start")).to_be_visible()
    page.get_by_role("group", name="1. Is English your first language?").get_by_label("Yes").check()
    page.get_by_role("group", name="3. How often do you read online forums?").get_by_label(
        "3", exact=True
    ).check()
    page.get_by_role("button", name="Send my answers").click()


def answer_stage_questionnaire(page) -> None:
    expect(page.get_by_role("heading", name="A few questions about Stage 1")).to_be_visible()
    expect(page.get_by_text(re.compile("PART1|DONE1"))).to_have_count(0)
    page.get_by_role("group", name="1. Did you remember any response candidate?").get_by_label(
        "No"
    ).check()
    page.get_by_role("group", name="2. How hard was the stage?").get_by_label(
        "2", exact=True
    ).check()
    page.get_by_role("button", name="Send my answers").click()


def consent_tutorial_and_quiz(page) -> None:
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    page.locator("label[for=id_agree]").click()
    page.get_by_role("button", name="I agree and want to take part").click()
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    expect(page.get_by_role("heading", name="A short practice quiz")).to_be_visible()
    page.get_by_role("button", name="Start the practice quiz").click()
    for number, (answer, key, _) in enumerate(KEYS, start=1):  # every Yes/No as expected
        expect(page.locator("#item-heading")).to_have_text(f"Practice item {number} of 5")
        expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
            "data-opened-at", re.compile(r"^\d+$")
        )
        page.keyboard.press(answer)
        if answer == "n":  # the first stage asks for a description, not categories
            page.locator("#item-panel textarea[name='description']").fill(DESCRIPTION)
            _save(page).click()
        else:
            page.keyboard.press(key)
            page.keyboard.press("Enter")
        expect(page.locator("#item-panel .feedback")).to_be_visible()
        page.locator("#item-panel [data-next]").click()
    expect(page.get_by_role("heading", name="You passed the practice quiz")).to_be_visible()
    page.get_by_role("button", name="Go to your first batch").click()  # starts it


def annotate_batch(
    page,
    *,
    describe_first: bool,
    started: bool = False,
    categories: list[str] | None = None,
    question: str | None = None,
) -> None:
    """Start a batch (unless ``started``) and answer every item with the keyboard (Yes,
    4), the first one No with a description when ``describe_first``; then submit it.
    ``categories``: the labels the stage's "No" must offer, in order; ``question``:
    the stage's Yes/No question."""
    if not started:
        page.get_by_role("button", name="Start a batch").click()
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    if question is not None:
        expect(page.locator("#item-panel .q-coherent legend")).to_have_text(question)
    if categories is not None:
        offered = page.locator("#item-panel .q-categories label.category strong")
        expect(offered).to_have_text(categories)
    n = int(heading.inner_text().rsplit(" ", 1)[1])
    for number in range(1, n + 1):
        _expect_item(page, number, n)
        page.wait_for_timeout(100)
        if number == 1 and describe_first:
            page.keyboard.press("n")
            page.locator("#item-panel textarea[name='description']").fill(DESCRIPTION)
            expect(_save(page)).to_be_enabled()
            _save(page).click()
        else:
            page.keyboard.press("y")
            page.keyboard.press("4")
            expect(_save(page)).to_be_enabled()
            page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()


def wait_passes(worker) -> None:
    """Four days pass for the worker's assignments: the next stage's wait is over."""
    Assignment.objects.filter(annotator=worker).update(
        **{
            field.name: F(field.name) - timedelta(days=4)
            for field in Assignment._meta.concrete_fields
            if isinstance(field, DateTimeField)
        }
    )


def rate_batch(page, worker) -> None:
    """Rate every candidate of the batch just started with the keyboard: fluency 4 (1,
    which passes, on the attention check's), warmth 60 on the slider; then submit."""
    page.get_by_role("button", name="Start a batch").click()
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    assignment = Assignment.objects.get(annotator=worker, stage__position=3)
    kinds = dict(Reflection.objects.filter(pk__in=assignment.order).values_list("pk", "kind"))
    n = len(assignment.order)
    for number, rid in enumerate(assignment.order, start=1):
        _expect_item(page, number, n)
        page.keyboard.press("1" if kinds[rid] == Reflection.Kind.ATTENTION_CHECK else "4")
        page.keyboard.type("60")
        expect(_save(page)).to_be_enabled()
        page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()


def compare_batch(page, worker) -> None:
    """Answer every pair of the batch just started with the keyboard (A, or the side
    that makes the off-topic candidate lose), a reason on the first; then submit."""
    page.get_by_role("button", name="Start a batch").click()
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(r"^Pair 1 of \d+$"))
    assignment = Assignment.objects.get(annotator=worker, stage__position=4)
    n = len(assignment.order)
    for number, (first, _, swapped) in enumerate(assignment.order, start=1):
        expect(heading).to_have_text(f"Pair {number} of {n}")
        expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
            "data-opened-at", re.compile(r"^\d+$")
        )
        off_topic = Reflection.objects.get(pk=first).kind == Reflection.Kind.ATTENTION_CHECK
        # The off-topic candidate is the pair's first: shown on the left unless swapped.
        page.keyboard.press(("a" if swapped else "b") if off_topic else "a")
        if number == 1:
            page.locator("#id_reason").fill("Closer to what the client said.")
        expect(_save(page)).to_be_enabled()
        _save(page).click()
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()


def rank_batch(page, worker) -> None:
    """Rank the batch just started with the keyboard: the off-topic candidate moved to
    the bottom, the second tied with the first; then submit."""
    page.get_by_role("button", name="Start a batch").click()
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Rank the \d+ responses$"))
    assignment = Assignment.objects.get(annotator=worker, stage__position=5)
    items = page.locator(".ranking-item")
    n = len(assignment.order)
    check = next(
        i
        for i, rid in enumerate(assignment.order)
        if Reflection.objects.get(pk=rid).kind == Reflection.Kind.ATTENTION_CHECK
    )
    for _ in range(check + 1):
        page.keyboard.press("ArrowDown")
    expect(items.nth(check)).to_be_focused()
    for _ in range(n - 1 - check):
        page.keyboard.press("d")
    expect(items.nth(n - 1)).to_be_focused()
    for _ in range(n - 2):
        page.keyboard.press("ArrowUp")
    page.keyboard.press("t")
    expect(items.nth(1).locator("[data-place]")).to_have_text("=1")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()


def quiz_passed(annotator) -> None:
    now = timezone.now()
    TrainingAttempt.objects.create(
        annotator=annotator,
        number=1,
        status=TrainingAttempt.Status.PASSED,
        n_items=5,
        n_right=5,
        started_at=now,
        finished_at=now,
    )


def test_an_invitation_link_leads_through_every_step_to_the_first_batch(
    browser, every_option, annotator, invitation_url
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(invitation_url)
    answer_screening(page)
    consent_tutorial_and_quiz(page)
    expect(page.locator("#item-heading")).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    assert QuestionnaireResponse.objects.get(annotator=annotator).screened_out is False
    assert Assignment.objects.get(annotator=annotator).stage.position == 1


def test_a_prolific_worker_goes_from_the_join_link_to_the_last_code(
    browser, every_option, live_server, tmp_path
):
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(live_server.url + prolific(every_option, 1, "pid1", "se1"))
    answer_screening(page)
    consent_tutorial_and_quiz(page)
    annotate_batch(page, describe_first=True, started=True)

    # Stage 1 is finished: its questionnaire comes before the completion code.
    expect(page.get_by_text("DONE1")).to_have_count(0)
    answer_stage_questionnaire(page)
    expect(page.get_by_text("Your completion code: DONE1")).to_be_visible()
    back = page.get_by_role("link", name="Return to Prolific")
    expect(back).to_have_attribute("href", "https://app.prolific.com/submissions/complete?cc=DONE1")
    expect(page.get_by_text(re.compile(r"Stage 2 opens for you on"))).to_be_visible()
    page.screenshot(path=tmp_path / "stage-1-code.png", full_page=True)

    # The wait passes; the worker comes back through stage 2's own Prolific study.
    worker = Annotator.objects.get(platform_participant_id="pid1")
    wait_passes(worker)
    page.goto(live_server.url + prolific(every_option, 2, "pid1", "se2", study_id="PS2"))
    chosen = every_option.stages.get(position=2).categories.all()
    offered = list(
        every_option.categories.filter(Q(pk__in=chosen) | Q(catches_attention_check=True))
        .order_by("order", "bit")
        .values_list("label", flat=True)
    )
    assert len(offered) == 3 < every_option.categories.count()
    expect(
        page.get_by_role("heading", name="How to judge the response candidates in Stage 2")
    ).to_be_visible()
    expect(page.get_by_text(STAGE_2_TUTORIAL)).to_be_visible()
    for label in offered:  # the categories it explains are those the stage offers
        expect(page.locator("dl.categories-explained dt", has_text=label)).to_have_count(1)
    page.get_by_role("button", name="I have read the tutorial — start").click()
    annotate_batch(page, describe_first=False, categories=offered, question=STAGE_2_QUESTION)
    expect(page.get_by_text("Your completion code: DONE2")).to_be_visible()
    expect(page.get_by_text(re.compile(r"Stage 3 opens for you on"))).to_be_visible()

    # Stage 3 rates on Likert dimensions, after its own tutorial: with the keyboard.
    wait_passes(worker)
    page.goto(live_server.url + prolific(every_option, 3, "pid1", "se3", study_id="PS3"))
    expect(
        page.get_by_role("heading", name="How to judge the response candidates in Stage 3")
    ).to_be_visible()
    expect(page.get_by_text(STAGE_3_TUTORIAL)).to_be_visible()
    expect(page.locator("dl.dimensions-explained dt")).to_have_text(
        ["The response is fluent.", "The response is warm."]
    )
    page.get_by_role("button", name="I have read the tutorial — start").click()
    rate_batch(page, worker)
    expect(page.get_by_text("Your completion code: DONE3")).to_be_visible()
    expect(page.get_by_text(re.compile(r"Stage 4 opens for you on"))).to_be_visible()

    # Stage 4 compares pairs, after its own tutorial: with the keyboard.
    wait_passes(worker)
    page.goto(live_server.url + prolific(every_option, 4, "pid1", "se4", study_id="PS4"))
    expect(
        page.get_by_role("heading", name="How to judge the response candidates in Stage 4")
    ).to_be_visible()
    expect(page.get_by_role("heading", name="What you compare")).to_be_visible()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    compare_batch(page, worker)
    expect(page.get_by_text("Your completion code: DONE4")).to_be_visible()
    # Laypeople wait nothing before stage 5: open at once, from its task on the platform.
    expect(page.get_by_text("Stage 5 is open to you.")).to_be_visible()
    expect(page.get_by_text("Stage 6: not part of your work")).to_be_visible()

    # Stage 5 ranks, after its own tutorial: with the keyboard. Stage 6 is the
    # experts': the study ends for the layperson after stage 5.
    page.goto(live_server.url + prolific(every_option, 5, "pid1", "se5", study_id="PS5"))
    expect(page.get_by_role("heading", name="What you rank")).to_be_visible()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    rank_batch(page, worker)
    expect(
        page.get_by_role("heading", name="Thank you, you have finished the study")
    ).to_be_visible()
    expect(page.get_by_text("Your completion code: DONE5")).to_be_visible()
    expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
        "href", "https://app.prolific.com/submissions/complete?cc=DONE5"
    )
    entries = CrowdEntry.objects.filter(annotator=worker).order_by("stage__position")
    assert [e.outcome for e in entries] == ["completed"] * 5
    assert not worker.assignments.filter(stage__position=6).exists()
    rated = worker.assignments.get(stage__position=3)
    assert rated.attention_passed is True
    assert LikertRating.objects.filter(judgement__assignment=rated, value=60).exists()
    compared = worker.assignments.get(stage__position=4)
    assert compared.attention_passed is True
    assert compared.judgements.filter(reason="Closer to what the client said.").count() == 1
    ranked = worker.assignments.get(stage__position=5)
    assert ranked.attention_passed is True
    assert sorted(ranked.judgements.values_list("rank", flat=True))[:2] == [1, 1]
    described = worker.assignments.get(stage__position=1).judgements.exclude(error_description="")
    assert [j.error_description for j in described] == [DESCRIPTION]


def test_a_crowd_worker_whose_part_ends_early_gets_the_partial_code(
    browser, every_option, live_server
):
    """Two batches per stage, one annotator per batch (k = 1): after one batch, the two
    left are held by others, so the worker's part of stage 1 ends with PART1."""
    Study.objects.filter(pk=every_option.pk).update(batches_per_stage=2, overlap_k=1)
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    page.goto(live_server.url + prolific(every_option, 1, "pid2", "se2"))
    answer_screening(page)
    worker = Annotator.objects.get(platform_participant_id="pid2")
    quiz_passed(worker)
    finish_stage(worker)  # consent and tutorial, then one batch submitted
    for other in annotators_create(group=every_option.groups.get(name="Layperson"), count=2):
        assignment_claim(annotator=consented(other))
    page.goto(f"{live_server.url}/s/{every_option.slug}/")
    answer_stage_questionnaire(page)  # before the stage's code, as for a full stage
    expect(page.get_by_text("You did 1 of 2 batches in Stage 1.")).to_be_visible()
    expect(page.get_by_role("link", name="Return to Prolific")).to_have_attribute(
        "href", "https://app.prolific.com/submissions/complete?cc=PART1"
    )
    expect(page.get_by_text("Please come back to this page later")).to_have_count(0)
    assert CrowdEntry.objects.get(annotator=worker).outcome == "partial"
