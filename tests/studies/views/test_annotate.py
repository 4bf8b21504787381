"""The annotator's pages end to end through the test client: every step, every bad
input (status, message, nothing written), htmx and plain-form variants."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from studies.forms import item_shown_at
from studies.models import (
    Annotator,
    Assignment,
    CrowdEntry,
    Judgement,
    Reflection,
    Stage,
    Study,
)
from studies.services import (
    annotators_create,
    assignment_claim,
    consent_version_current,
)
from studies.times import time_rounded_up
from studies.views.common import SESSION_ANNOTATORS

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def open_study(loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, batches_per_stage=2, tutorial_intro="How it works."
    )
    loaded_study.refresh_from_db()
    return loaded_study


@pytest.fixture
def annotator(open_study):
    return annotators_create(group=open_study.groups.get(name="Layperson"), count=1)[0]


@pytest.fixture
def ready(client, annotator, open_study):
    """Signed in, consented, tutorial done."""
    annotator.consented_version = consent_version_current(study=open_study)
    annotator.consented_at = timezone.now()
    annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    client.get(f"/i/{annotator.access_token}/")
    return annotator


@pytest.fixture
def assignment(ready):
    return assignment_claim(annotator=ready)


def item_url(assignment, number):
    return reverse("studies:item", args=["pilot", assignment.pk, number])


def kind_of(assignment, number) -> str:
    return Reflection.objects.get(pk=assignment.order[number - 1]).kind


def good_answer(assignment, number) -> dict:
    if kind_of(assignment, number) == Reflection.Kind.ATTENTION_CHECK:
        return {"coherent": "no", "categories": ["off_topic"]}
    return {"coherent": "yes", "empathy": "4"}


# --- entry -------------------------------------------------------------------------------


def test_invitation_link_signs_in_and_leads_to_consent(client, annotator):
    response = client.get(f"/i/{annotator.access_token}/")
    assert response.status_code == 302 and response["Location"] == "/s/pilot/"
    assert client.session[SESSION_ANNOTATORS] == {"pilot": annotator.pk}
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/consent/"
    annotator.refresh_from_db()
    assert annotator.last_seen_at is not None


def test_wrong_invitation_link_gets_a_clear_page_not_an_error(client, open_study):
    response = client.get("/i/not-a-real-token/")
    assert response.status_code == 404
    assert "This link is not valid" in response.content.decode()
    assert SESSION_ANNOTATORS not in client.session


def test_disabled_invitation_link_is_refused(client, annotator):
    Annotator.objects.filter(pk=annotator.pk).update(is_active=False)
    response = client.get(f"/i/{annotator.access_token}/")
    assert response.status_code == 404
    assert SESSION_ANNOTATORS not in client.session


def test_pages_without_a_session_ask_for_the_personal_link(client, open_study):
    for url in ("/s/pilot/", "/s/pilot/consent/", "/s/pilot/tutorial/", "/s/pilot/b/1/1/"):
        response = client.get(url)
        assert response.status_code == 403
        assert "Please use your personal link" in response.content.decode()


def test_a_session_for_one_study_does_not_open_another(client, ready, db):
    other = Study.objects.create(slug="other", title="Other", status="open")
    assert client.get(f"/s/{other.slug}/").status_code == 403


def test_home_page_points_annotators_to_their_link(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert "personal link" in response.content.decode()


# --- consent --------------------------------------------------------------------------


def test_without_consent_every_page_redirects_to_the_information_sheet(client, annotator):
    client.get(f"/i/{annotator.access_token}/")
    for url in ("/s/pilot/", "/s/pilot/tutorial/", "/s/pilot/done/", "/s/pilot/b/1/1/"):
        assert client.get(url)["Location"] == "/s/pilot/consent/", url
    assert client.post("/s/pilot/start/")["Location"] == "/s/pilot/consent/"
    assert not Assignment.objects.exists()


def test_consent_page_shows_the_sheet_and_needs_the_tick(client, annotator, open_study):
    client.get(f"/i/{annotator.access_token}/")
    page = client.get("/s/pilot/consent/").content.decode()
    assert "What the study is about." in page and "I agree to take part." in page
    version = consent_version_current(study=open_study)
    response = client.post("/s/pilot/consent/", {"version": version.pk})
    assert response.status_code == 422
    assert "Please tick the box to say that you agree." in response.content.decode()
    annotator.refresh_from_db()
    assert annotator.consented_at is None


def test_consent_stores_version_and_time_then_the_tutorial_comes(client, annotator, open_study):
    client.get(f"/i/{annotator.access_token}/")
    version = consent_version_current(study=open_study)
    response = client.post("/s/pilot/consent/", {"version": version.pk, "agree": "on"})
    assert response["Location"] == "/s/pilot/"
    annotator.refresh_from_db()
    assert annotator.consented_version == version and annotator.consented_at is not None
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/tutorial/"


def test_consent_to_an_outdated_version_is_refused(client, annotator, open_study):
    client.get(f"/i/{annotator.access_token}/")
    old = consent_version_current(study=open_study)
    open_study.information_sheet = "A corrected sheet."
    open_study.save()
    from studies.services import consent_version_sync

    consent_version_sync(study=open_study)
    response = client.post("/s/pilot/consent/", {"version": old.pk, "agree": "on"})
    assert response.status_code == 422
    assert "The information sheet has changed since you opened it." in response.content.decode()
    annotator.refresh_from_db()
    assert annotator.consented_version is None


def test_a_new_consent_version_asks_again(client, ready, open_study):
    open_study.consent_text = "I agree to the new terms."
    open_study.save()
    from studies.services import consent_version_sync

    consent_version_sync(study=open_study)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/consent/"


def test_declining_shows_a_polite_exit_and_stores_nothing(client, annotator):
    client.get(f"/i/{annotator.access_token}/")
    response = client.post("/s/pilot/consent/decline/")
    assert response.status_code == 200
    assert "Thank you for considering it" in response.content.decode()
    annotator.refresh_from_db()
    assert annotator.consented_at is None


# --- tutorial and home -------------------------------------------------------------------


def test_tutorial_is_mandatory_once_and_stays_reachable(client, ready):
    Annotator.objects.filter(pk=ready.pk).update(tutorial_completed_at=None)
    assert client.get("/s/pilot/")["Location"] == "/s/pilot/tutorial/"
    page = client.get("/s/pilot/tutorial/").content.decode()
    assert "How it works." in page and "Malformed" in page and "Keyboard" in page
    assert client.post("/s/pilot/tutorial/")["Location"] == "/s/pilot/"
    assert client.get("/s/pilot/").status_code == 200
    later = client.get("/s/pilot/tutorial/").content.decode()
    assert "Back to your batches" in later


def test_the_tutorial_explains_the_categories_the_current_stage_offers(client, ready):
    """A stage offering a subset of the study's categories: the tutorial explains those
    (and the attention check's), not categories the annotator cannot choose."""
    categories = {c.slug: c for c in ready.study.categories.all()}
    ready.study.stages.get(position=1).categories.set([categories["parroting"]])
    page = client.get("/s/pilot/tutorial/").content.decode()
    assert categories["parroting"].label in page
    assert categories["malformed"].label not in page
    catching = next(c for c in categories.values() if c.catches_attention_check)
    assert catching.label in page


def test_home_shows_stages_and_the_start_button(client, ready):
    page = client.get("/s/pilot/").content.decode()
    assert "Stage 1</strong>:" in page and "open (0 of 2 submitted)" in page
    assert "GPT" not in page  # stage names name the models
    assert "locked until you finish the stage before" in page
    assert "Start a batch" in page


def test_home_shows_the_unlock_time_rounded_up_while_waiting(client, ready):
    now = timezone.now().replace(second=0, microsecond=0) - timedelta(minutes=5)
    for i in range(2):
        a = assignment_claim(annotator=ready, now=now + timedelta(minutes=i))
        Judgement.objects.bulk_create(
            Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
        )
        Assignment.objects.filter(pk=a.pk).update(
            status="submitted", submitted_at=now + timedelta(minutes=i, seconds=30)
        )
    unlock = now + timedelta(minutes=1, seconds=30) + timedelta(days=3)
    page = client.get("/s/pilot/").content.decode()
    assert "Stage 2</strong> opens for you on" in page and "GPT" not in page
    shown = time_rounded_up(unlock)  # never earlier than the real moment
    assert shown - unlock == timedelta(seconds=30)
    assert f'datetime="{shown:%Y-%m-%dT%H:%M:%SZ}" data-local' in page


def test_start_claims_a_batch_and_opens_its_first_item(client, ready):
    response = client.post("/s/pilot/start/")
    assignment = Assignment.objects.get(annotator=ready)
    assert response["Location"] == f"/s/pilot/b/{assignment.pk}/"
    assert client.get(response["Location"])["Location"] == item_url(assignment, 1)


def test_start_when_no_slot_is_left_shows_a_friendly_page(client, ready, open_study):
    Study.objects.filter(pk=open_study.pk).update(overlap_k=1)
    for other in annotators_create(group=ready.group, count=3):
        other.consented_version = consent_version_current(study=open_study)
        other.consented_at = timezone.now()
        other.save()
        assignment_claim(annotator=other)
    response = client.post("/s/pilot/start/")
    assert response.status_code == 200
    assert "No work available right now" in response.content.decode()
    assert not Assignment.objects.filter(annotator=ready).exists()


def test_start_before_the_unlock_time_says_when(client, ready):
    Stage.objects.filter(study=ready.study, position=2).update(min_wait=timedelta(days=3))
    now = timezone.now()
    for _ in range(2):
        a = assignment_claim(annotator=ready, now=now)
        Judgement.objects.bulk_create(
            Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
        )
        Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=now)
    response = client.post("/s/pilot/start/", follow=True)
    assert "Stage 2 opens for you at" in response.content.decode()
    assert "GPT" not in response.content.decode()
    assert Assignment.objects.filter(annotator=ready).count() == 2


# --- one item at a time -------------------------------------------------------------------


def test_item_page_shows_the_context_and_never_the_source(client, assignment):
    page = client.get(item_url(assignment, 1)).content.decode()
    assert "What brings you here today" in page and "last client turn" in page
    assert "Response candidate 1 of 4" in page
    assert "Is this response candidate coherent and consistent with the dialogue?" in page
    assert "GPT" not in page  # neither sources nor stage names (they name the models)
    for source in ("Human", "Attention"):
        assert f">{source}<" not in page and f"{source}:" not in page


def test_htmx_gets_only_the_item_panel(client, assignment):
    response = client.get(item_url(assignment, 2), **HX)
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="item-panel"')
    assert "The conversation" not in page
    assert response["HX-Push-Url"] == item_url(assignment, 2)


def test_saving_an_answer_stores_it_and_moves_on(client, assignment):
    response = client.post(item_url(assignment, 1), good_answer(assignment, 1))
    assert response["Location"] == item_url(assignment, 2) + "?saved=1#item-panel"
    assert "Saved ✓" in client.get(response["Location"]).content.decode()
    judgement = Judgement.objects.get()
    assert judgement.reflection_id == assignment.order[0]
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_htmx_save_returns_the_next_panel_with_an_acknowledgement(client, assignment):
    response = client.post(
        item_url(assignment, 1), {**good_answer(assignment, 1), "seconds_spent": "12.5"}, **HX
    )
    assert response.status_code == 200
    assert "Response candidate 2 of 4" in response.content.decode()
    assert "Saved ✓" in response.content.decode()
    assert Judgement.objects.get().seconds_spent == 12.5


def test_saving_the_last_item_leads_to_the_review(client, assignment):
    for n in range(1, 4):
        client.post(item_url(assignment, n), good_answer(assignment, n))
    plain = client.post(item_url(assignment, 4), good_answer(assignment, 4))
    assert plain["Location"] == f"/s/pilot/b/{assignment.pk}/review/"
    htmx = client.post(item_url(assignment, 4), good_answer(assignment, 4), **HX)
    assert htmx.status_code == 204 and htmx["HX-Redirect"] == f"/s/pilot/b/{assignment.pk}/review/"
    assert Judgement.objects.count() == 4


def test_double_submitting_an_answer_keeps_one_row(client, assignment):
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    client.post(item_url(assignment, 1), good_answer(assignment, 1), **HX)
    assert Judgement.objects.count() == 1


def test_a_revised_answer_replaces_the_earlier_one(client, assignment):
    client.post(item_url(assignment, 1), {"coherent": "yes", "empathy": "2"})
    client.post(
        item_url(assignment, 1),
        {"coherent": "no", "categories": ["malformed", "parroting"], "most_evident": "parroting"},
    )
    judgement = Judgement.objects.get()
    assert judgement.coherent is False and judgement.empathy is None
    page = client.get(item_url(assignment, 1)).content.decode()
    assert 'value="parroting" checked' in page


def test_reload_resumes_at_the_first_unanswered_item(client, assignment):
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    client.post(item_url(assignment, 2), good_answer(assignment, 2))
    response = client.get(f"/s/pilot/b/{assignment.pk}/")
    assert response["Location"] == item_url(assignment, 3)
    home = client.get("/s/pilot/").content.decode()
    assert "2 of 4 answered" in home and "Continue your batch" in home


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "Answer Yes or No."),
        ({"coherent": "yes"}, "Choose how much you agree with the statement."),
        ({"coherent": "no"}, "Choose at least one error category."),
        (
            {"coherent": "no", "categories": ["malformed", "parroting"]},
            "Choose the most evident error among the chosen categories.",
        ),
        (
            {
                "coherent": "no",
                "categories": ["malformed", "parroting"],
                "most_evident": "off_topic",
            },
            "The most evident error must be one of the chosen categories.",
        ),
        (
            {"coherent": "no", "categories": ["malformed"], "empathy": "3"},
            "The agreement rating is only asked when the answer is Yes.",
        ),
        (
            {"coherent": "yes", "empathy": "4", "categories": ["malformed"]},
            "Error categories can only be chosen when the answer is No.",
        ),
        ({"coherent": "yes", "empathy": "7"}, "Select a valid choice. 7 is not one of"),
        ({"coherent": "no", "categories": ["rudeness"]}, "Select a valid choice. rudeness"),
        ({"coherent": "maybe"}, "Select a valid choice. maybe"),
    ],
)
@pytest.mark.parametrize("htmx", [False, True])
def test_an_incomplete_or_inconsistent_answer_is_refused(client, assignment, data, message, htmx):
    response = client.post(item_url(assignment, 1), data, **(HX if htmx else {}))
    assert response.status_code == 422
    assert message in response.content.decode().replace("&quot;", '"')
    assert not Judgement.objects.exists()


def test_another_annotators_batch_is_not_found(client, assignment, open_study):
    other = annotators_create(group=open_study.groups.get(name="Expert"), count=1)[0]
    other.consented_version = consent_version_current(study=open_study)
    other.consented_at = timezone.now()
    other.save()
    foreign = assignment_claim(annotator=other)
    for url in (item_url(foreign, 1), f"/s/pilot/b/{foreign.pk}/review/"):
        assert client.get(url).status_code == 404
    response = client.post(item_url(foreign, 1), {"coherent": "yes", "empathy": "3"})
    assert response.status_code == 404
    assert not Judgement.objects.exists()


def test_an_item_number_outside_the_batch_is_not_found(client, assignment):
    assert client.get(item_url(assignment, 5)).status_code == 404
    assert (
        client.post(item_url(assignment, 0), {"coherent": "yes", "empathy": "3"}).status_code == 404
    )
    assert not Judgement.objects.exists()


def test_saving_after_the_time_limit_is_refused_and_the_batch_expires(client, assignment):
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    Assignment.objects.filter(pk=assignment.pk).update(
        assigned_at=timezone.now() - timedelta(hours=2),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    response = client.post(item_url(assignment, 2), good_answer(assignment, 2), **HX)
    assert response.status_code == 409
    assert "The time for this batch ran out" in response.content.decode()
    assert Judgement.objects.count() == 1
    client.get("/s/pilot/")  # the next request expires it lazily
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.EXPIRED


def test_saving_after_submission_is_refused(client, assignment):
    for n in range(1, 5):
        client.post(item_url(assignment, n), good_answer(assignment, n))
    client.post(f"/s/pilot/b/{assignment.pk}/review/")
    before = list(Judgement.objects.values_list("id", "coherent", "empathy"))
    response = client.post(item_url(assignment, 1), {"coherent": "no", "categories": ["malformed"]})
    assert response.status_code == 409
    assert "This batch is submitted" in response.content.decode()
    assert list(Judgement.objects.values_list("id", "coherent", "empathy")) == before


# --- review and submission -----------------------------------------------------------------


def test_review_lists_answers_and_refuses_an_incomplete_batch(client, assignment):
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    page = client.get(f"/s/pilot/b/{assignment.pk}/review/").content.decode()
    assert page.count("Not answered yet.") == 3
    response = client.post(f"/s/pilot/b/{assignment.pk}/review/")
    assert response.status_code == 422
    assert "3 of 4 response candidates are not answered yet." in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.IN_PROGRESS


def test_submitting_records_the_attention_check_and_thanks(client, assignment):
    for n in range(1, 5):
        client.post(item_url(assignment, n), good_answer(assignment, n))
    response = client.post(f"/s/pilot/b/{assignment.pk}/review/", follow=True)
    assert "Thank you: your batch is submitted." in response.content.decode()
    assert "Start your next batch" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and assignment.attention_passed is True
    again = client.post(f"/s/pilot/b/{assignment.pk}/review/")
    assert again.status_code == 200  # idempotent: the batch is shown as submitted
    assert "This batch is submitted" in again.content.decode()


def test_a_failed_attention_check_is_recorded_but_not_shown(client, assignment):
    for n in range(1, 5):
        data = good_answer(assignment, n)
        if kind_of(assignment, n) == Reflection.Kind.ATTENTION_CHECK:
            data = {"coherent": "yes", "empathy": "5"}
        client.post(item_url(assignment, n), data)
    page = client.post(f"/s/pilot/b/{assignment.pk}/review/", follow=True).content.decode()
    assert "attention" not in page.lower()
    assignment.refresh_from_db()
    assert assignment.attention_passed is False


# --- crowd platforms and completion -------------------------------------------------------


@pytest.fixture
def crowd_study(open_study):
    Study.objects.filter(pk=open_study.pk).update(
        crowd_group=open_study.groups.get(name="Layperson"),
    )
    Stage.objects.filter(study=open_study, position=2).update(completion_code="C0DE42")
    open_study.refresh_from_db()
    return open_study


def test_a_finished_crowd_worker_gets_the_completion_code(client, crowd_study):
    first = crowd_study.stages.get(position=1)
    client.get(f"/s/pilot/join/{first.join_key}?PROLIFIC_PID=done1&STUDY_ID=s1&SESSION_ID=x1")
    annotator = Annotator.objects.get()
    Stage.objects.filter(study=crowd_study).update(min_wait=timedelta(0))
    Study.objects.filter(pk=crowd_study.pk).update(batches_per_stage=1)
    annotator.consented_version = consent_version_current(study=crowd_study)
    annotator.consented_at = annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    CrowdEntry.objects.create(
        annotator=annotator, stage=crowd_study.stages.get(position=2), platform="prolific"
    )
    for _ in range(2):
        a = assignment_claim(annotator=annotator)
        Judgement.objects.bulk_create(
            Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
        )
        Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=timezone.now())
    response = client.get("/s/pilot/", follow=True)
    page = response.content.decode()
    assert "you have finished the study" in page
    assert "C0DE42" in page and "https://app.prolific.com/submissions/complete?cc=C0DE42" in page


# --- query counts -------------------------------------------------------------------------


def test_item_display_query_count(client, assignment, django_assert_num_queries):
    """The session's annotator (with the session check, its study, its categories
    and the current consent version), assignment, and in one query the reflection's
    text with the batch's answers (this one and the count)."""
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    with django_assert_num_queries(3):
        assert client.get(item_url(assignment, 2), **HX).status_code == 200


def test_item_save_query_count(client, assignment, django_assert_num_queries):
    """The session's annotator (with the session check, its study, its categories
    and the current consent version); the save; the next panel (the reflection's text
    with the batch's answers, one query). The save is one statement (lock, upsert with
    the revision check, the in-progress mark)."""
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    answer = good_answer(assignment, 2)
    with django_assert_num_queries(3):
        response = client.post(item_url(assignment, 2), answer, **HX)
    assert response.status_code == 200
    assert Judgement.objects.filter(assignment=assignment).count() == 2


def test_review_query_count(client, assignment, django_assert_num_queries):
    """The session's annotator (with the study's categories), assignment, the batch's
    answers, the candidates' texts: the categories are not read again."""
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    with django_assert_num_queries(4):
        response = client.get(f"/s/pilot/b/{assignment.pk}/review/")
    assert response.status_code == 200


def test_without_javascript_switching_to_no_drops_the_rating_instead_of_trapping(
    client, assignment
):
    """A plain form cannot untick the 1–5 radio button, so after revising Yes → No the
    page sends both; in plain mode the rating is dropped, elsewhere it is refused."""
    client.post(item_url(assignment, 1), {"coherent": "yes", "empathy": "4", "form_mode": "plain"})
    revised = {"coherent": "no", "categories": ["malformed"], "empathy": "4"}
    strict = client.post(item_url(assignment, 1), {**revised, "form_mode": "js"})
    assert strict.status_code == 422
    plain = client.post(item_url(assignment, 1), {**revised, "form_mode": "plain"})
    assert plain.status_code == 302
    judgement = Judgement.objects.get()
    assert (judgement.coherent, judgement.empathy) == (False, None)
    back = client.post(
        item_url(assignment, 1),
        {"coherent": "yes", "empathy": "2", "categories": ["malformed"], "form_mode": "plain"},
    )
    assert back.status_code == 302
    judgement.refresh_from_db()
    assert (judgement.coherent, judgement.error_flags, judgement.empathy) == (True, 0, 2)


def test_review_change_links_come_back_to_the_review(client, assignment):
    for n in range(1, 5):
        client.post(item_url(assignment, n), good_answer(assignment, n))
    review = client.get(f"/s/pilot/b/{assignment.pk}/review/").content.decode()
    assert f'href="{item_url(assignment, 2)}?next=review"' in review
    page = client.get(item_url(assignment, 2) + "?next=review").content.decode()
    assert "Save and back to review" in page
    response = client.post(item_url(assignment, 2) + "?next=review", good_answer(assignment, 2))
    assert response["Location"] == f"/s/pilot/b/{assignment.pk}/review/"


def test_resaving_the_same_consent_texts_with_crlf_makes_no_new_version(open_study):
    from studies.services import consent_version_sync

    open_study.information_sheet = open_study.information_sheet.replace("\n", "\r\n") + "  \r\n"
    open_study.save()
    assert consent_version_sync(study=open_study) is None
    assert open_study.consent_versions.count() == 1


def test_a_crowd_worker_who_declines_leaves_no_trace(client, crowd_study):
    first = crowd_study.stages.get(position=1)
    client.get(f"/s/pilot/join/{first.join_key}?PROLIFIC_PID=w42&STUDY_ID=s&SESSION_ID=x")
    assert Annotator.objects.filter(platform_participant_id="w42").exists()
    response = client.post("/s/pilot/consent/decline/")
    assert "We have not kept anything about you" in response.content.decode()
    assert not Annotator.objects.filter(platform_participant_id="w42").exists()


def test_declining_after_annotating_explains_how_to_withdraw(client, assignment):
    client.post(item_url(assignment, 1), good_answer(assignment, 1))
    page = client.post("/s/pilot/consent/decline/").content.decode()
    assert "If you want them withdrawn from the study, write to the research team" in page
    assert Annotator.objects.filter(pk=assignment.annotator_id).exists()


def test_no_template_syntax_leaks_into_the_pages(client, assignment):
    for url in ("/s/pilot/", item_url(assignment, 1), f"/s/pilot/b/{assignment.pk}/review/"):
        page = client.get(url).content.decode()
        assert "{#" not in page and "{%" not in page and "{{" not in page, url


# --- revisions: a late, abandoned save cannot overwrite a newer answer --------------------


def test_a_save_from_an_outdated_page_is_refused_and_shows_the_saved_answer(client, assignment):
    url = item_url(assignment, 1)
    first = good_answer(assignment, 1)
    page = client.get(url).content.decode()
    assert 'name="revision" value="0"' in page
    # Two saves made from the same page (revision 0): a retry after a timeout, say.
    assert client.post(url, {**first, "revision": "0"}).status_code == 302
    judgement = Judgement.objects.get(assignment=assignment)
    assert judgement.revision == 1
    late = {"coherent": "no", "categories": ["malformed"], "revision": "0"}
    response = client.post(url, late, **HX)
    assert response.status_code == 409
    body = response.content.decode()
    assert "This answer was changed since this page was loaded" in body
    assert 'name="revision" value="1"' in body
    judgement.refresh_from_db()
    assert (judgement.coherent, judgement.revision) == (first["coherent"] == "yes", 1)
    # Saving from the page that shows revision 1 works and moves it on.
    assert client.post(url, {**late, "revision": "1"}).status_code == 302
    judgement.refresh_from_db()
    assert (judgement.coherent, judgement.revision) == (False, 2)


# --- time spent without JavaScript ---------------------------------------------------------


def test_a_plain_form_save_measures_the_time_from_when_the_server_showed_the_item(
    client, assignment
):
    page = client.get(item_url(assignment, 1)).content.decode()
    assert 'name="shown_at" value="' in page
    shown = item_shown_at(now=timezone.now() - timedelta(seconds=42))
    response = client.post(
        item_url(assignment, 1), {**good_answer(assignment, 1), "shown_at": shown}
    )
    assert response.status_code == 302
    assert Judgement.objects.get().seconds_spent == pytest.approx(42, abs=2)


def test_the_browsers_own_measure_wins_and_a_forged_timestamp_is_ignored(client, assignment):
    shown = item_shown_at(now=timezone.now() - timedelta(seconds=42))
    client.post(
        item_url(assignment, 1),
        {**good_answer(assignment, 1), "shown_at": shown, "seconds_spent": "7.5"},
    )
    client.post(
        item_url(assignment, 2),
        {**good_answer(assignment, 2), "shown_at": shown.replace(":", ":9", 1)},
    )
    times = dict(Judgement.objects.values_list("reflection_id", "seconds_spent"))
    assert times == {assignment.order[0]: 7.5, assignment.order[1]: None}
