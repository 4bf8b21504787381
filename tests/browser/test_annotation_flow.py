"""The annotator's path in a real browser: invitation link, information
sheet and consent, tutorial, one batch answered with mouse, keyboard, touch or plain
forms, review and submission. Each test ends by checking what the database stored."""

import re

from playwright.sync_api import expect

from studies.models import Assignment, Judgement, Reflection

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
# Time "reading" an item before saving it, so the seconds_spent the page measures
# (rounded to tenths) is above zero.
READING_MS = 250


def _choice(page, name: str, value: str):
    """The clickable label of one radio button or checkbox of the current item."""
    return page.locator(f"#item-panel label:has(> input[name='{name}'][value='{value}'])")


def _save(page):
    return page.locator("#item-panel").get_by_role("button", name="Save and next")


def _heading(page):
    return page.locator("#item-heading")


def _expect_item(page, number: int, n: int) -> None:
    """Item ``number`` is shown and annotate.js has set it up (after a page load, or
    after htmx swapped it in and settled), so key presses, the Save button's state and
    the time spent are meaningful."""
    expect(_heading(page)).to_have_text(f"Response candidate {number} of {n}")
    expect(page.locator("#item-panel form[data-annotate]")).to_have_attribute(
        "data-opened-at", re.compile(r"^\d+$")
    )


def _plan(annotator):
    """The annotator's assignment, its shuffled reflection ids and the position of the
    attention-check item (the page never says which one it is)."""
    assignment = Assignment.objects.select_related("batch__context").get(annotator=annotator)
    kinds = dict(Reflection.objects.filter(pk__in=assignment.order).values_list("pk", "kind"))
    attention_at = next(
        number
        for number, rid in enumerate(assignment.order, start=1)
        if kinds[rid] == Reflection.Kind.ATTENTION_CHECK
    )
    return assignment, assignment.order, attention_at


def _consent_and_tutorial(page, invitation_url: str, *, tap: bool = False) -> None:
    press = (lambda locator: locator.tap()) if tap else (lambda locator: locator.click())
    page.goto(invitation_url)
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    press(page.locator("label[for=id_agree]"))
    expect(page.locator("#id_agree")).to_be_checked()
    press(page.get_by_role("button", name="I agree and want to take part"))
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    press(page.get_by_role("button", name="I have read the tutorial — start"))
    expect(page.get_by_text("You can reopen the tutorial at any time.")).to_be_visible()
    press(page.get_by_role("button", name="Start a batch"))
    expect(_heading(page)).to_have_text(re.compile(r"^Response candidate 1 of \d+$"))


def _expect_answer_shown(page, answer: dict) -> None:
    """The item form shows ``answer`` (as given earlier) again."""
    expect(
        page.locator(f"#item-panel input[name=coherent][value={answer['coherent']}]")
    ).to_be_checked()
    if "empathy" in answer:
        expect(
            page.locator(f"#item-panel input[name=empathy][value='{answer['empathy']}']")
        ).to_be_checked()
    ticked = page.locator("#item-panel input[name=categories]:checked")
    expect(ticked).to_have_count(len(answer.get("categories", ())))
    for slug in answer.get("categories", ()):
        expect(page.locator(f"#item-panel input[name=categories][value={slug}]")).to_be_checked()
    if "most_evident" in answer:
        expect(
            page.locator(f"#item-panel input[name=most_evident][value={answer['most_evident']}]")
        ).to_be_checked()


def test_annotator_completes_a_batch_with_mouse_and_keyboard(
    browser, open_study, annotator, invitation_url
):
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()

    # Information sheet: no consent, no access.
    page.goto(invitation_url)
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    page.get_by_role("button", name="I agree and want to take part").click()
    expect(page).to_have_url(re.compile(r"/consent/$"))
    expect(page.get_by_role("heading", name="Information sheet")).to_be_visible()
    assert page.locator("#id_agree").evaluate("box => box.validity.valueMissing")
    annotator.refresh_from_db()
    assert annotator.consented_at is None
    page.get_by_label("I agree to take part.").check()
    page.get_by_role("button", name="I agree and want to take part").click()

    # Tutorial, then the home page.
    expect(page.get_by_role("heading", name="How to judge the response candidates")).to_be_visible()
    expect(page.get_by_text(open_study.tutorial_intro)).to_be_visible()
    expect(page.get_by_text("I barely slept before the exam.")).to_be_visible()
    page.get_by_role("button", name="I have read the tutorial — start").click()
    expect(page.get_by_role("heading", name=f"Hello, {annotator.pseudonym}")).to_be_visible()
    page.get_by_role("button", name="Start a batch").click()

    assignment, order, attention_at = _plan(annotator)
    n = len(order)
    _expect_item(page, 1, n)

    # The whole context, speakers marked, the last client turn flagged.
    turns = assignment.batch.context.turns
    transcript = page.locator(".context .transcript > li")
    expect(transcript).to_have_count(len(turns))
    for i, turn in enumerate(turns):
        expect(transcript.nth(i)).to_have_class(re.compile(rf"\bturn {turn['role']}\b"))
        expect(transcript.nth(i).locator(".words")).to_have_text(turn["text"])
    last_client = max(i for i, t in enumerate(turns) if t["role"] == "client")
    badge = page.locator(".context .badge")
    expect(badge).to_have_count(1)
    expect(badge).to_have_text("last client turn")
    expect(transcript.nth(last_client).locator(".badge")).to_be_visible()
    expect(page.locator(".context .speaker").first).to_contain_text("Therapist")

    # The tutorial stays reachable in a new tab.
    with context.expect_page() as new_tab:
        page.get_by_role("link", name="Tutorial (new tab)").click()
    tutorial = new_tab.value
    expect(
        tutorial.get_by_role("heading", name="How to judge the response candidates")
    ).to_be_visible()
    assert tutorial.url.endswith(f"/s/{open_study.slug}/tutorial/")
    tutorial.close()

    categories = list(open_study.categories.order_by("order", "bit"))  # as shown, keys 1–5
    by_slug = {c.slug: c for c in categories}
    keyboard_pair = (categories[0], categories[2])  # keys 1 and 3
    plain = [number for number in range(1, n + 1) if number != attention_at]
    keyboard_at = plain[1]
    given: dict[int, dict] = {}
    save = _save(page)

    for number in range(1, n + 1):
        _expect_item(page, number, n)
        if number > 1:
            expect(page.locator("#item-panel .saved")).to_be_visible()
        if number == 3:
            # Reload mid-batch, leave, and come back through the home page: the batch
            # resumes at the first unanswered item and earlier answers are kept.
            page.reload()
            _expect_item(page, 3, n)
            page.get_by_role("link", name="Your page").click()
            expect(
                page.get_by_text(f"You have a batch in progress (2 of {n} answered).")
            ).to_be_visible()
            page.get_by_role("link", name="Continue your batch").click()
            _expect_item(page, 3, n)
            page.get_by_role("link", name="← Back").click()
            _expect_item(page, 2, n)
            expect(page).to_have_url(re.compile(r"/2/$"))
            _expect_answer_shown(page, given[2])
            expect(save).to_be_enabled()
            page.wait_for_timeout(READING_MS)
            page.keyboard.press("Enter")  # save it unchanged
            _expect_item(page, 3, n)
        expect(save).to_be_disabled()
        page.wait_for_timeout(READING_MS)

        if number == attention_at:  # mouse: No, Off-topic
            _choice(page, "coherent", "no").click()
            expect(save).to_be_disabled()
            _choice(page, "categories", "off_topic").click()
            expect(page.locator("#item-panel .q-most-evident")).to_be_hidden()
            expect(save).to_be_enabled()
            given[number] = {"coherent": "no", "categories": ["off_topic"]}
            save.click()
        elif number == keyboard_at:  # keyboard: N, 1, 3, most evident, Enter
            page.keyboard.press("n")
            expect(page.locator("#item-panel .q-categories")).to_be_visible()
            expect(page.locator("#item-panel .q-empathy")).to_be_hidden()
            expect(save).to_be_disabled()
            page.keyboard.press("1")
            expect(save).to_be_enabled()
            page.keyboard.press("3")
            expect(save).to_be_disabled()  # two categories need the most evident one
            most_evident = page.locator("#item-panel .q-most-evident")
            expect(most_evident).to_be_visible()
            expect(most_evident.locator("label.choice")).to_have_count(len(categories))
            expect(most_evident.locator("label.choice:visible")).to_contain_text(
                [c.label for c in keyboard_pair]
            )
            most_evident.locator(f"label[data-category={keyboard_pair[1].slug}]").click()
            expect(save).to_be_enabled()
            given[number] = {
                "coherent": "no",
                "categories": [c.slug for c in keyboard_pair],
                "most_evident": keyboard_pair[1].slug,
            }
            page.keyboard.press("Enter")
        elif number == plain[0]:  # mouse: Yes, "somewhat agree"
            _choice(page, "coherent", "yes").click()
            expect(page.locator("#item-panel .q-categories")).to_be_hidden()
            expect(save).to_be_disabled()
            _choice(page, "empathy", "4").click()
            expect(save).to_be_enabled()
            given[number] = {"coherent": "yes", "empathy": 4}
            save.click()
        else:  # keyboard: Y, 5, Enter
            page.keyboard.press("y")
            expect(save).to_be_disabled()
            page.keyboard.press("5")
            expect(save).to_be_enabled()
            given[number] = {"coherent": "yes", "empathy": 5}
            page.keyboard.press("Enter")

    # Review lists every answer; submitting is final.
    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    rows = page.locator("ol.review > li")
    expect(rows).to_have_count(n)
    expect(page.locator("ol.review > li.missing")).to_have_count(0)
    by_bit = sorted(categories, key=lambda c: c.bit)
    scale = {4: "somewhat agree", 5: "agree"}
    for number, answer in given.items():
        if answer["coherent"] == "yes":
            summary = f"Yes — {scale[answer['empathy']]}"
        else:
            chosen = [c.label for c in by_bit if c.slug in answer["categories"]]
            summary = "No — " + ", ".join(chosen)
            if "most_evident" in answer:
                summary += f" (most evident: {by_slug[answer['most_evident']].label})"
        expect(rows.nth(number - 1)).to_contain_text(summary)
    page.get_by_role("button", name="Submit this batch (final)").click()
    expect(page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()
    context.close()

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.submitted_at is not None
    assert assignment.attention_passed is True
    judgements = {j.reflection_id: j for j in Judgement.objects.filter(assignment=assignment)}
    assert sorted(judgements) == sorted(order)
    keyboard = judgements[order[keyboard_at - 1]]
    assert keyboard.coherent is False
    assert keyboard.error_flags == keyboard_pair[0].mask | keyboard_pair[1].mask
    assert keyboard.most_evident_bit == keyboard_pair[1].bit
    attention = judgements[order[attention_at - 1]]
    assert attention.coherent is False
    assert attention.error_flags == by_slug["off_topic"].mask
    for number, answer in given.items():
        if answer["coherent"] == "yes":
            judgement = judgements[order[number - 1]]
            assert judgement.coherent is True
            assert (judgement.empathy, judgement.error_flags) == (answer["empathy"], 0)
    # Every item was saved through htmx, which sends the time spent on it (a revisited
    # item keeps the time of its last visit).
    assert all(j.seconds_spent and j.seconds_spent > 0 for j in judgements.values()), judgements


def test_annotator_flow_on_a_phone_viewport(browser, annotator, invitation_url):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url, tap=True)
    assignment, order, attention_at = _plan(annotator)
    n = len(order)

    def assert_no_sideways_scrolling():
        # A mobile browser zooms out to fit content that is too wide, which widens
        # innerWidth too, so the width must also still be the phone's.
        scroll_width, inner_width = page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth]"
        )
        assert inner_width == PHONE["width"]
        assert scroll_width <= inner_width + 1

    for number in range(1, n + 1):
        _expect_item(page, number, n)
        assert_no_sideways_scrolling()
        if number == attention_at:
            _choice(page, "coherent", "no").tap()
            _choice(page, "categories", "off_topic").tap()
        else:
            _choice(page, "coherent", "yes").tap()
            _choice(page, "empathy", "3").tap()
        assert_no_sideways_scrolling()
        _save(page).tap()

    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    assert_no_sideways_scrolling()
    page.get_by_role("button", name="Submit this batch (final)").tap()
    expect(page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()
    context.close()

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.attention_passed is True
    assert Judgement.objects.filter(assignment=assignment).count() == n


def test_flow_completes_with_javascript_disabled(browser, open_study, annotator, invitation_url):
    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    _consent_and_tutorial(page, invitation_url)
    assignment, order, attention_at = _plan(annotator)
    n = len(order)
    categories = list(open_study.categories.order_by("order", "bit"))
    pair = (categories[1], categories[3])  # dialogue-contradicting, off-topic
    no_at = next(number for number in range(1, n + 1) if number != attention_at)

    # Without JavaScript every question is on the page, and the server checks the answer.
    for question in ("q-coherent", "q-categories", "q-most-evident", "q-empathy"):
        expect(page.locator(f"#item-panel .{question}")).to_be_visible()
    expect(page.get_by_text("If Yes:")).to_be_visible()
    _choice(page, "coherent", "yes").click()
    _save(page).click()
    expect(page.get_by_role("alert")).to_have_text("Choose how much you agree with the statement.")
    expect(_heading(page)).to_have_text(f"Response candidate 1 of {n}")
    expect(page.locator("#item-panel input[name=coherent][value=yes]")).to_be_checked()
    assert not Judgement.objects.filter(assignment=assignment).exists()

    for number in range(1, n + 1):
        expect(_heading(page)).to_have_text(f"Response candidate {number} of {n}")
        if number == attention_at:
            _choice(page, "coherent", "no").click()
            _choice(page, "categories", "off_topic").click()
        elif number == no_at:
            _choice(page, "coherent", "no").click()
            for category in pair:
                _choice(page, "categories", category.slug).click()
            _choice(page, "most_evident", pair[0].slug).click()
        else:
            _choice(page, "coherent", "yes").click()
            _choice(page, "empathy", "2").click()
        _save(page).click()
        if number < n:
            expect(page.get_by_text("Saved ✓")).to_be_visible()

    expect(page.get_by_role("heading", name="Review your answers")).to_be_visible()
    expect(page.locator("ol.review > li.missing")).to_have_count(0)
    page.get_by_role("button", name="Submit this batch (final)").click()
    expect(page.get_by_text("Thank you: your batch is submitted.")).to_be_visible()
    context.close()

    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.attention_passed is True
    judgements = {j.reflection_id: j for j in Judgement.objects.filter(assignment=assignment)}
    assert sorted(judgements) == sorted(order)
    # Without JavaScript the time spent comes from the server's timestamps.
    assert all(j.seconds_spent is not None and j.seconds_spent >= 0 for j in judgements.values())
    no = judgements[order[no_at - 1]]
    assert (no.coherent, no.error_flags, no.most_evident_bit) == (
        False,
        pair[0].mask | pair[1].mask,
        pair[0].bit,
    )
