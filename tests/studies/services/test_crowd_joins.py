"""Crowd entry per stage (studies.services.crowd.crowd_join and the join view): each
stage's own link, returning for a later stage, entry that cannot be borrowed, rate
limits. Every refusal: a clear page, and nothing written."""

from datetime import timedelta

import pytest
from django.utils import timezone

from studies.errors import ErrorCode
from studies.models import Annotator, Assignment, CrowdEntry, Judgement, Stage, Study
from studies.services import annotators_create, assignment_claim, consent_version_current
from studies.sessions import SESSION_ANNOTATORS
from tests.conftest import refusal_code

pytestmark = pytest.mark.usefixtures("empty_cache")


def stage(study, position: int) -> Stage:
    return study.stages.get(position=position)


def prolific(study, position: int, pid: str, session: str = "", study_id: str = "") -> str:
    """A stage's Prolific link as Prolific fills it (one Prolific study per stage)."""
    key = stage(study, position).join_key
    study_id = study_id or f"PS{position}"
    return (
        f"/s/{study.slug}/join/{key}?PROLIFIC_PID={pid}&STUDY_ID={study_id}"
        f"&SESSION_ID={session or 'S-' + pid}"
    )


def mturk(study, position: int, worker: str, assignment: str, submit_to="https://www.mturk.com/"):
    key = stage(study, position).join_key
    return (
        f"/s/{study.slug}/join/{key}?workerId={worker}&assignmentId={assignment}&hitId=H{position}"
        f"&turkSubmitTo={submit_to}"
    )


def snapshot():
    return (
        list(Annotator.objects.values_list("pk", "platform_participant_id", "platform_data")),
        list(CrowdEntry.objects.values_list("pk", "session_id", "outcome")),
        Assignment.objects.count(),
    )


def finish_stage(annotator: Annotator, *, when=None) -> Assignment:
    """Consent, claim and submit the annotator's one batch of their current stage."""
    annotator.consented_version = consent_version_current(study=annotator.study)
    annotator.consented_at = annotator.tutorial_completed_at = timezone.now()
    annotator.save()
    when = when or timezone.now()
    a = assignment_claim(annotator=annotator, now=when - timedelta(minutes=10))
    Judgement.objects.bulk_create(
        Judgement(assignment=a, reflection_id=rid, coherent=True, empathy=3) for rid in a.order
    )
    Assignment.objects.filter(pk=a.pk).update(status="submitted", submitted_at=when)
    return a


def test_prolific_link_creates_a_pseudonymous_annotator_with_its_stage_entry(client, crowd_study):
    response = client.get(prolific(crowd_study, 1, "abc123", "se1", "st1"))
    assert response.status_code == 302 and response["Location"] == "/s/pilot/"
    annotator = Annotator.objects.get()
    assert (annotator.platform, annotator.platform_participant_id) == ("prolific", "abc123")
    assert annotator.platform_data == {"STUDY_ID": "st1", "SESSION_ID": "se1"}
    assert annotator.pseudonym == "Layperson 1"
    entry = CrowdEntry.objects.get()
    assert (entry.stage.position, entry.session_id, entry.platform_study_id) == (1, "se1", "st1")
    assert client.session[SESSION_ANNOTATORS] == {"pilot": annotator.pk}


def test_the_same_platform_session_resumes_in_another_browser(client, crowd_study):
    client.get(prolific(crowd_study, 1, "abc123", "se1"))
    client.logout()
    client.cookies.clear()
    assert client.get(prolific(crowd_study, 1, "abc123", "se1")).status_code == 302
    assert Annotator.objects.count() == 1 and CrowdEntry.objects.count() == 1


def test_the_browser_that_joined_resumes_from_another_session(client, crowd_study):
    client.get(prolific(crowd_study, 1, "abc123", "se1"))
    client.session.flush()  # signed out, the join cookie stays
    assert client.get(prolific(crowd_study, 1, "abc123", "other")).status_code == 302


def test_someone_elses_platform_id_does_not_sign_a_second_browser_in(
    client, client_factory, crowd_study
):
    client.get(prolific(crowd_study, 1, "victim", "se1"))
    before = snapshot()
    thief = client_factory()
    response = thief.get(prolific(crowd_study, 1, "victim", "made-up"))
    assert response.status_code == 403
    assert "You have started Stage 1 already, in another browser" in response.content.decode()
    assert snapshot() == before
    assert SESSION_ANNOTATORS not in thief.session


def test_a_forged_join_cookie_is_ignored(client, client_factory, crowd_study):
    client.get(prolific(crowd_study, 1, "victim", "se1"))
    annotator = Annotator.objects.get()
    thief = client_factory()
    thief.cookies["joined-pilot"] = str(annotator.pk)  # unsigned
    assert thief.get(prolific(crowd_study, 1, "victim", "made-up")).status_code == 403


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "lacks your crowd-platform id"),
        ("PROLIFIC_PID=abc", "lacks your Prolific ids"),
        ("PROLIFIC_PID=abc&STUDY_ID=s", "lacks your Prolific ids"),
        ("PROLIFIC_PID=%3Cscript%3E&STUDY_ID=s&SESSION_ID=x", "malformed"),
        ("workerId=W1&assignmentId=A1&hitId=H1", "lacks your MTurk ids"),
        ("workerId=W1&assignmentId=A1&hitId=H1&turkSubmitTo=https://evil.example", "MTurk ids"),
    ],
)
def test_links_without_the_platforms_ids_are_refused(client, crowd_study, query, message):
    key = stage(crowd_study, 1).join_key
    response = client.get(f"/s/pilot/join/{key}?{query}")
    assert response.status_code == 400 and message in response.content.decode()
    assert snapshot() == ([], [], 0)


def test_an_unknown_join_key_and_the_old_study_link_are_refused(client, crowd_study):
    wrong = client.get("/s/pilot/join/not-a-key?PROLIFIC_PID=a&STUDY_ID=b&SESSION_ID=c")
    assert wrong.status_code == 404
    assert "is not (or no longer) a way into this study" in wrong.content.decode()
    assert refusal_code(wrong) == ErrorCode.JOIN_KEY_UNKNOWN
    old = client.get("/s/pilot/join?PROLIFIC_PID=a&STUDY_ID=b&SESSION_ID=c")
    assert old.status_code == 404 and "does not name a stage" in old.content.decode()
    assert refusal_code(old) == ErrorCode.JOIN_WITHOUT_STAGE
    assert snapshot() == ([], [], 0)


def test_a_study_without_a_crowd_group_refuses_crowd_workers(client, crowd_study):
    Study.objects.filter(pk=crowd_study.pk).update(crowd_group=None)
    response = client.get(prolific(crowd_study, 1, "p1"))
    assert response.status_code == 403
    assert "not taking part through a crowd platform" in response.content.decode()
    assert snapshot() == ([], [], 0)


def test_mturk_worker_joins_with_the_hits_submit_target_and_preview_stores_nothing(
    client, crowd_study
):
    key = stage(crowd_study, 1).join_key
    preview = client.get(f"/s/pilot/join/{key}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H")
    assert preview.status_code == 200 and "Accept the task" in preview.content.decode()
    assert snapshot() == ([], [], 0)
    client.get(mturk(crowd_study, 1, "W1", "A1", "https://workersandbox.mturk.com"))
    entry = CrowdEntry.objects.get()
    assert (entry.platform, entry.session_id, entry.submit_to) == (
        "mturk",
        "A1",
        "https://workersandbox.mturk.com",
    )


def test_a_platform_id_first_seen_on_a_later_stage_is_refused(client, crowd_study):
    response = client.get(prolific(crowd_study, 2, "newcomer"))
    assert response.status_code == 403
    assert "open only to people who took part in the earlier stages" in response.content.decode()
    assert snapshot() == ([], [], 0)


def test_a_stage_the_crowd_group_does_not_take_part_in_turns_its_workers_away(client, crowd_study):
    """The crowd group skips the first stage (the experts' only): a newcomer is refused
    there, with its code and nothing written, and starts in the second."""
    experts = crowd_study.groups.exclude(pk=crowd_study.crowd_group_id).first()
    stage(crowd_study, 1).groups.set([experts])
    refused = client.get(prolific(crowd_study, 1, "p1", "first-session"))
    assert refused.status_code == 403
    assert "Stage 1 is not done through this crowd platform" in refused.content.decode()
    assert refusal_code(refused) == ErrorCode.STAGE_NOT_FOR_GROUP
    assert snapshot() == ([], [], 0)
    joined = client.get(prolific(crowd_study, 2, "p1", "second-session"))
    assert joined.status_code == 302
    annotator = Annotator.objects.get()
    assert list(annotator.crowd_entries.values_list("stage__position", flat=True)) == [2]


def test_a_later_stage_waits_for_the_first_and_its_pause(client, crowd_study):
    client.get(prolific(crowd_study, 1, "p1", "first-session"))
    annotator = Annotator.objects.get()
    early = client.get(prolific(crowd_study, 2, "p1", "second-session"))
    assert early.status_code == 403 and "once you have finished the stage before" in (
        early.content.decode()
    )
    assert refusal_code(early) == ErrorCode.STAGE_LOCKED
    submitted = timezone.now() - timedelta(days=1)
    finish_stage(annotator, when=submitted)
    before = snapshot()
    waiting = client.get(prolific(crowd_study, 2, "p1", "second-session"))
    page = waiting.content.decode()
    assert waiting.status_code == 403 and "Stage 2 opens for you at" in page
    assert refusal_code(waiting) == ErrorCode.STAGE_WAITING
    assert snapshot() == before
    Stage.objects.filter(pk=stage(crowd_study, 2).pk).update(min_wait=timedelta(hours=1))
    ok = client.get(prolific(crowd_study, 2, "p1", "second-session"))
    assert ok.status_code == 302
    assert list(annotator.crowd_entries.values_list("stage__position", "session_id")) == [
        (1, "first-session"),
        (2, "second-session"),
    ]


def test_the_first_stages_session_does_not_open_the_second(client, crowd_study):
    client.get(prolific(crowd_study, 1, "p1", "first-session"))
    finish_stage(Annotator.objects.get(), when=timezone.now() - timedelta(days=4))
    before = snapshot()
    response = client.get(prolific(crowd_study, 2, "p1", "first-session"))
    assert response.status_code == 403 and "belongs to another stage" in response.content.decode()
    assert snapshot() == before


def test_joins_are_rate_limited_per_client_address(client, crowd_study, settings):
    settings.CROWD_JOIN_LIMIT = 3
    for n in range(3):
        assert client.get(prolific(crowd_study, 1, f"p{n}"), REMOTE_ADDR="10.0.0.9").status_code
    before = snapshot()
    refused = client.get(prolific(crowd_study, 1, "p9"), REMOTE_ADDR="10.0.0.9")
    assert refused.status_code == 429
    assert "Too many people joined from your network" in refused.content.decode()
    assert refusal_code(refused) == ErrorCode.JOIN_RATE_LIMITED
    assert snapshot() == before
    assert client.get(prolific(crowd_study, 1, "p9"), REMOTE_ADDR="10.0.0.10").status_code == 302


def test_behind_a_trusted_proxy_the_address_comes_from_its_header(client, crowd_study, settings):
    settings.CROWD_JOIN_LIMIT = 1
    settings.CROWD_CLIENT_ADDRESS_HEADER = "HTTP_X_FORWARDED_FOR"
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    assert (
        client.get(
            prolific(crowd_study, 1, "a"), HTTP_X_FORWARDED_FOR="1.2.3.4, 5.6.7.8", **proxy
        ).status_code
        == 302
    )
    # A different client behind the same proxy is counted on its own; a made-up first
    # address does not change who the proxy saw.
    assert (
        client.get(
            prolific(crowd_study, 1, "b"), HTTP_X_FORWARDED_FOR="5.6.7.9", **proxy
        ).status_code
        == 302
    )
    assert (
        client.get(
            prolific(crowd_study, 1, "c"), HTTP_X_FORWARDED_FOR="9.9.9.9, 5.6.7.8", **proxy
        ).status_code
        == 429
    )


def test_a_full_study_turns_crowd_newcomers_away_before_storing_anything(client, crowd_study):
    Study.objects.filter(pk=crowd_study.pk).update(overlap_k=1)
    group = crowd_study.groups.get(name="Layperson")
    for worker in annotators_create(group=group, count=3):
        worker.consented_version = consent_version_current(study=crowd_study)
        worker.consented_at = timezone.now()
        worker.save()
        assignment_claim(annotator=worker)
    before = snapshot()
    response = client.get(prolific(crowd_study, 1, "latecomer"))
    assert response.status_code == 403
    page = response.content.decode()
    assert "This study has all the participants it needs." in page
    # Each platform's own word for what the worker gives back.
    assert "Please return the study on Prolific" in page
    assert snapshot() == before
    page = client.get(mturk(crowd_study, 1, "W-late", "A-late")).content.decode()
    assert "Please return the HIT on MTurk" in page
    assert "return the study" not in page
    assert snapshot() == before


# --- inviting workers back: the platform ids whose wait has passed ------------------------


@pytest.fixture
def payer(client, crowd_study):
    """A collaborator of the study: may see its personal data, platform ids included."""
    from studies.models import Role
    from tests.factories import user_with_role

    client.force_login(user_with_role(crowd_study, Role.COLLABORATOR))
    return client


def test_staff_with_the_permission_download_the_ids_whose_wait_has_passed(
    client, client_factory, crowd_study, payer
):
    for pid, days_ago in (("ready1", 4), ("waiting1", 1)):
        worker = client_factory()
        worker.get(prolific(crowd_study, 1, pid))
        finish_stage(
            Annotator.objects.get(platform_participant_id=pid),
            when=timezone.now() - timedelta(days=days_ago),
        )
    client_factory().get(prolific(crowd_study, 1, "unfinished"))
    url = f"/admin/studies/study/{crowd_study.pk}/platform-ids/2/prolific/"
    response = payer.get(url)
    assert response.status_code == 200
    assert response.content.decode() == "ready1\n"
    assert "attachment" in response["Content-Disposition"]
    assert payer.get(f"/admin/studies/study/{crowd_study.pk}/platform-ids/2/mturk/").content == b""


def test_the_platform_id_download_needs_a_role_that_sees_personal_data(crowd_study, client):
    """An analyst is refused, saying why; a user without a role in the study finds no
    such page. Neither changes anything."""
    from studies.models import Role
    from tests.factories import StudyFactory, user_with_role

    url = f"/admin/studies/study/{crowd_study.pk}/platform-ids/2/prolific/"
    before = snapshot()
    client.force_login(user_with_role(crowd_study, Role.ANALYST))
    response = client.get(url)
    assert response.status_code == 403
    assert "it takes a role that may see annotators&#x27; personal data" in (
        response.content.decode()
    )
    client.force_login(user_with_role(StudyFactory(), Role.OWNER))
    assert client.get(url).status_code == 404
    assert snapshot() == before


def test_a_framed_mturk_join_carries_a_token_but_never_for_a_staff_login(client, crowd_study):
    """The frame token is signed, not encrypted: the session key inside it is readable,
    so it is never made for a session that also holds a staff login."""
    from django.contrib.auth.models import User

    from studies.middleware import TOKEN_PARAMETER, frame_token_read

    Study.objects.filter(pk=crowd_study.pk).update(mturk_frame=True)
    worker = client.get(mturk(crowd_study, 1, "W1", "A1"))
    assert worker.status_code == 302
    from urllib.parse import parse_qs, urlsplit

    token = parse_qs(urlsplit(worker["Location"]).query)[TOKEN_PARAMETER][0]
    assert frame_token_read(token)["study"] == crowd_study.slug

    from django.test import Client

    staff = Client()
    staff.force_login(User.objects.create_user("researcher", is_staff=True))
    response = staff.get(mturk(crowd_study, 1, "W2", "A2"))
    assert response.status_code == 302
    assert f"{TOKEN_PARAMETER}=" not in response["Location"]
    assert CrowdEntry.objects.filter(session_id="A2").exists()  # joined, with cookies only


# --- a later stage cannot be borrowed with a known worker id --------------------------


def finished_first_stage(client, study, pid="p1"):
    client.get(prolific(study, 1, pid, f"{pid}-first"))
    annotator = Annotator.objects.get(platform_participant_id=pid)
    finish_stage(annotator, when=timezone.now() - timedelta(days=4))
    return annotator


def test_a_later_stage_from_the_earlier_stages_platform_study_is_refused(
    client, client_factory, crowd_study
):
    """Each stage is a new Prolific study (a new HIT): the first stage's STUDY_ID with
    a made-up session does not open the second stage."""
    finished_first_stage(client, crowd_study)
    before = snapshot()
    thief = client_factory()
    response = thief.get(prolific(crowd_study, 2, "p1", "made-up", study_id="PS1"))
    assert response.status_code == 403 and "belongs to another stage" in response.content.decode()
    assert snapshot() == before
    assert SESSION_ANNOTATORS not in thief.session


def test_a_later_stage_with_another_workers_session_is_refused(client, client_factory, crowd_study):
    finished_first_stage(client, crowd_study)
    client_factory().get(prolific(crowd_study, 1, "p2", "p2-first"))
    before = snapshot()
    response = client_factory().get(prolific(crowd_study, 2, "p1", "p2-first"))
    assert response.status_code == 403 and "belongs to another stage" in response.content.decode()
    assert snapshot() == before


def test_resuming_needs_the_same_platform_study_as_the_entry(client, client_factory, crowd_study):
    client.get(prolific(crowd_study, 1, "victim", "se1", study_id="PS1"))
    before = snapshot()
    thief = client_factory()
    response = thief.get(prolific(crowd_study, 1, "victim", "se1", study_id="OTHER"))
    assert response.status_code == 403 and "started Stage 1 already" in response.content.decode()
    assert refusal_code(response) == ErrorCode.CROWD_STARTED_ELSEWHERE
    assert snapshot() == before
    assert thief.get(prolific(crowd_study, 1, "victim", "se1", study_id="PS1")).status_code == 302


def test_a_stage_pinned_to_its_platform_tasks_honours_only_them(
    client, client_factory, crowd_study
):
    """With the stage's Prolific study id set, a worker id with a made-up study id
    enters nothing; the genuine returner comes in through the pinned study."""
    Stage.objects.filter(pk=stage(crowd_study, 1).pk).update(platform_task_ids="PS1")
    Stage.objects.filter(pk=stage(crowd_study, 2).pk).update(platform_task_ids="PS2,HIT2")
    wrong = client_factory().get(prolific(crowd_study, 1, "p9", study_id="MADEUP"))
    assert wrong.status_code == 403
    assert "did not come from the crowd platform&#x27;s task for Stage 1" in wrong.content.decode()
    assert refusal_code(wrong) == ErrorCode.CROWD_WRONG_TASK
    assert snapshot() == ([], [], 0)
    finished_first_stage(client, crowd_study)
    before = snapshot()
    thief = client_factory().get(prolific(crowd_study, 2, "p1", "fake", study_id="FAKE2"))
    assert thief.status_code == 403 and "task for Stage 2" in thief.content.decode()
    assert refusal_code(thief) == ErrorCode.CROWD_WRONG_TASK
    assert snapshot() == before
    genuine = client_factory().get(prolific(crowd_study, 2, "p1", "p1-second", study_id="PS2"))
    assert genuine.status_code == 302
    assert CrowdEntry.objects.filter(stage__position=2, platform_study_id="PS2").count() == 1


def test_malformed_platform_task_ids_are_refused_with_a_message(crowd_study):
    from django.core.exceptions import ValidationError

    target = stage(crowd_study, 2)
    target.platform_task_ids = "PS2, HIT 2"
    with pytest.raises(ValidationError, match="separated by commas"):
        target.full_clean()
    target.refresh_from_db()
    assert target.platform_task_ids == ""
