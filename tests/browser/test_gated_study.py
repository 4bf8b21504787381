"""A gated study built in the admin and walked in a real browser. A researcher sets,
on each stage's page, the groups taking part, k, the gated stage's own question and
categories, and the gates. Then the last layperson judges coherence, which decides the
context's items at once; an expert, told until then that more work may come, answers
"Is this a good reflection?" on exactly the items the lay majority found coherent, then
adjudicates the items whose laypeople were not unanimous."""

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from studies.models import Assignment, Reflection, StageGate
from studies.protocol import GATE_MAJORITY_COHERENT, GATE_NOT_UNANIMOUS
from studies.services import annotators_create, assignment_create
from tests.browser.test_annotation_flow import DESKTOP, _expect_item, _save
from tests.studies.gate_fixtures import (
    LAY_ANSWERS,
    batch_of,
    gated_study_unbuilt,
    items_of,
    lay_judge,
)
from tests.studies.services.test_assignments import consented

GOOD_QUESTION = "Is this a good reflection by counselling standards?"
GOOD_CATEGORIES = {"off_topic", "parroting", "malformed"}
PASSWORD = "pw-for-tests-only"


@pytest.fixture
def built_in_admin(transactional_db, browser, live_server):
    """The gated study's stages set on their admin pages, in the browser, as a
    researcher would: laypeople (k = 3) in the lay stage; experts in the two gated
    stages, the first with its own question and categories."""
    study = gated_study_unbuilt()
    get_user_model().objects.create_superuser("researcher", password=PASSWORD)
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.goto(f"{live_server.url}/admin/login/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    lay, expert = (study.groups.get(name=n) for n in ("Layperson", "Expert"))
    first, good, adjudication = study.stages.order_by("position")

    def stage_page(stage, group, *, k=None):
        page.goto(f"{live_server.url}/admin/studies/stage/{stage.pk}/change/")
        page.locator(f"input[name=groups][value='{group.pk}']").check()
        if k is not None:
            page.locator("input[name=overlap_k]").fill(str(k))

    def gate(rule):
        page.locator("#gate-group .add-row a").click()
        page.locator("select[name=gate-0-source_stage]").select_option(str(first.pk))
        page.locator("select[name=gate-0-rule]").select_option(rule)
        page.locator("select[name=gate-0-deciding_group]").select_option(str(lay.pk))

    def save():
        page.locator("input[name=_save]").click()
        expect(page.locator(".messagelist .success")).to_be_visible()

    stage_page(first, lay, k=3)
    save()
    stage_page(good, expert)
    page.locator("[name=coherence_question]").fill(GOOD_QUESTION)
    for box in page.locator("input[name=categories]").all():
        slug = study.categories.get(pk=int(box.get_attribute("value"))).slug
        box.set_checked(slug in GOOD_CATEGORIES)
    gate(GATE_MAJORITY_COHERENT)
    save()
    stage_page(adjudication, expert)
    gate(GATE_NOT_UNANIMOUS)
    save()
    page.context.close()

    first.refresh_from_db()
    assert first.k == 3 and list(first.groups.all()) == [lay]
    for stage, rule in ((good, GATE_MAJORITY_COHERENT), (adjudication, GATE_NOT_UNANIMOUS)):
        assert list(stage.groups.all()) == [expert]
        assert (stage.gate.source_stage, stage.gate.rule, stage.gate.deciding_group) == (
            first,
            rule,
            lay,
        )
    good.refresh_from_db()
    assert good.coherence_question == GOOD_QUESTION
    assert set(good.categories.values_list("slug", flat=True)) == GOOD_CATEGORIES
    return study


def consent_and_tutorial(page, url: str) -> None:
    page.goto(url)
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    page.locator("label[for=id_agree]").click()
    page.get_by_role("button", name="I agree and want to take part").click()
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    page.get_by_role("button", name="I have read the tutorial — start").click()


def answer_batch(page, yes_texts: set[str], *, question: str | None = None) -> list[str]:
    """Answer the batch on the page item by item: Yes (4) to the texts in
    ``yes_texts``, else No with Off-topic; submit. Returns the texts shown, in order."""
    heading = page.locator("#item-heading")
    expect(heading).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))
    if question is not None:
        expect(page.locator("#item-panel .q-coherent legend")).to_have_text(question)
    n = int(heading.inner_text().rsplit(" ", 1)[1])
    shown = []
    for number in range(1, n + 1):
        _expect_item(page, number, n)
        page.wait_for_timeout(100)  # (as the other walks: the keys after the panel settled)
        text = page.locator("#item-panel blockquote.candidate").inner_text().strip()
        shown.append(text)
        if text in yes_texts:
            page.keyboard.press("y")
            page.keyboard.press("4")
        else:
            page.keyboard.press("n")
            page.locator("#item-panel label.category", has_text="Off-topic").click()
        expect(_save(page)).to_be_enabled()
        _save(page).click()
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    page.get_by_role("button", name="Submit this batch (final)").click()
    return shown


def test_an_expert_sees_only_what_the_laypeople_let_through(browser, built_in_admin, live_server):
    gated = built_in_admin
    laypeople = consented(gated, "Layperson", count=2)
    dlg1 = batch_of(gated, 1, "dlg-1")
    human, c1, c2, check = items_of(dlg1)
    for number in (0, 1):  # two laypeople judged already
        lay_judge(laypeople[number], dlg1, number)
    expert = annotators_create(group=gated.groups.get(name="Expert"), count=1)[0]
    expert_page = browser.new_context(viewport=DESKTOP).new_page()
    consent_and_tutorial(expert_page, f"{live_server.url}/i/{expert.access_token}/")
    expect(expert_page.get_by_text(re.compile(r"More work may come in Stage 2"))).to_be_visible()
    expect(expert_page.get_by_text("Stage 1: not part of your work")).to_be_visible()

    # The third layperson judges dlg-1 in the browser: human Yes, c1 No, c2 Yes.
    third = annotators_create(group=laypeople[0].group, count=1)[0]
    assignment_create(annotator=third, batch=dlg1)  # (now: the browser saves in real time)
    lay_page = browser.new_context(viewport=DESKTOP).new_page()
    consent_and_tutorial(lay_page, f"{live_server.url}/i/{third.access_token}/")
    lay_page.get_by_role("link", name="Continue your batch").click()
    answers = dict(zip((human, c1, c2), LAY_ANSWERS["dlg-1"], strict=True))  # (per item)
    yes = {r.text for r, votes in answers.items() if votes[2]}
    shown = answer_batch(lay_page, yes)
    assert sorted(shown) == sorted(r.text for r in (human, c1, c2, check))
    expect(lay_page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()

    # Decided at once: the expert's good-reflection batch holds the human reflection
    # and c1 (the lay majority said coherent), then the attention check.
    good = StageGate.objects.get(stage__position=2)
    assert good.decisions.count() == 3
    expert_page.reload()
    expect(expert_page.get_by_role("button", name="Start a batch")).to_be_visible()
    # The laypeople find everything of dlg-2 incoherent: it gets no expert batch, and
    # once the expert has done dlg-1's, their part of stage 2 is over.
    dlg2 = batch_of(gated, 1, "dlg-2")
    for number, person in enumerate([*laypeople, third]):
        lay_judge(person, dlg2, number)
    assert batch_of(gated, 2, "dlg-2") is None and batch_of(gated, 3, "dlg-2") is None
    expert_page.get_by_role("button", name="Start a batch").click()
    shown = answer_batch(expert_page, {human.text}, question=GOOD_QUESTION)
    assert sorted(shown) == sorted(r.text for r in (human, c1, check))
    # Then adjudication: c1 and c2 (not unanimous), and the check.
    expect(expert_page.get_by_role("button", name="Start a batch")).to_be_visible()
    expert_page.get_by_role("button", name="Start a batch").click()
    shown = answer_batch(expert_page, {c2.text})
    assert sorted(shown) == sorted(r.text for r in (c1, c2, check))
    submitted = Assignment.objects.filter(annotator=expert, status=Assignment.Status.SUBMITTED)
    assert sorted(submitted.values_list("stage__position", flat=True)) == [2, 3]
    judged = {
        (j.reflection_id, j.coherent)
        for j in submitted.get(stage__position=2).judgements.exclude(
            reflection__kind=Reflection.Kind.ATTENTION_CHECK
        )
    }
    assert judged == {(human.pk, True), (c1.pk, False)}
    assert all(a.attention_passed for a in submitted)
    expect(expert_page.get_by_role("heading", name=re.compile("finished"))).to_be_visible()
