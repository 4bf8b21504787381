"""A gated study walked in a real browser: the last layperson judges coherence, which
decides the context's items at once; an expert, told until then that more work may
come, answers "Is this a good reflection?" on exactly the items the lay majority found
coherent, then adjudicates the items whose laypeople were not unanimous."""

import re

from playwright.sync_api import expect

from studies.models import Assignment, Reflection, Stage, StageGate
from studies.services import annotators_create, assignment_create
from tests.browser.test_annotation_flow import DESKTOP, _expect_item, _save
from tests.studies.gate_fixtures import LAY_ANSWERS, T0, batch_of, gated, items_of, lay_judge  # noqa: F401
from tests.studies.services.test_assignments import consented

GOOD_QUESTION = "Is this a good reflection by counselling standards?"


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


def test_an_expert_sees_only_what_the_laypeople_let_through(browser, gated, live_server):
    Stage.objects.filter(study=gated, position=2).update(coherence_question=GOOD_QUESTION)
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
