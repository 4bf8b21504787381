"""Links with a NUL character (%00), which PostgreSQL cannot store or look up: the
site's 404 page for an invitation or crowd link with one in its path, the 400 page for
one in the coding page's query or form (studies.unstorable). Nothing is written."""

import pytest
from django.urls import reverse

from studies.models import Annotator, Coder, DescriptionCoding
from studies.services import annotators_create
from studies.services.coding import code_create
from studies.sessions import SESSION_ANNOTATORS
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import coded_descriptions
from tests.studies.services.test_crowd_joins import prolific, snapshot, stage

pytestmark = pytest.mark.usefixtures("empty_cache")

NOT_A_PAGE = "This address contains a NUL character, so it is not the address of any page."


def test_an_invitation_link_with_a_nul_is_the_not_found_page(client, loaded_study):
    annotator = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    for url in ("/i/a%00b/", f"/i/{annotator.access_token}%00/"):
        response = client.get(url)
        assert response.status_code == 404
        html = response.content.decode()
        assert "This page does not exist" in html and NOT_A_PAGE in html
    annotator.refresh_from_db()
    assert annotator.last_seen_at is None
    assert SESSION_ANNOTATORS not in client.session


def test_a_crowd_join_link_whose_key_has_a_nul_is_the_not_found_page(client, crowd_study):
    key = stage(crowd_study, 1).join_key
    response = client.get(
        f"/s/{crowd_study.slug}/join/{key}%00?PROLIFIC_PID=p1&STUDY_ID=PS1&SESSION_ID=S-p1"
    )
    assert response.status_code == 404
    assert NOT_A_PAGE in response.content.decode()
    assert snapshot() == ([], [], 0)
    assert client.get(prolific(crowd_study, 1, "p1")).status_code == 302  # the link works


def test_a_crowd_join_with_a_nul_in_a_platform_id_is_a_bad_request(client, crowd_study):
    key = stage(crowd_study, 1).join_key
    response = client.get(
        f"/s/{crowd_study.slug}/join/{key}?PROLIFIC_PID=p%001&STUDY_ID=PS1&SESSION_ID=S1"
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "This request cannot be accepted" in html
    assert "The link&#x27;s parameter &quot;PROLIFIC_PID&quot; contains a NUL character" in html
    assert snapshot() == ([], [], 0)


@pytest.fixture
def coder_client(client, coding_stage, alice):
    code_create(study=coding_stage.study, slug="parrots", label="Parrots", definition="D")
    client.force_login(alice)
    return client


def coding_url(stage) -> str:
    return reverse("studies:coding", args=[stage.study.slug, stage.position])


def test_the_coding_page_with_a_nul_code_filter_is_a_bad_request(coder_client, coding_stage):
    assert coder_client.get(coding_url(coding_stage) + "?code=parrots").status_code == 200
    response = coder_client.get(coding_url(coding_stage) + "?code=%00")
    assert response.status_code == 400
    html = response.content.decode()
    assert "This request cannot be accepted" in html
    assert "&quot;code&quot; contains a NUL character, which cannot be stored." in html
    assert not Coder.objects.exists() and not DescriptionCoding.objects.exists()


def test_coding_with_a_nul_in_the_posted_codes_is_a_bad_request(coder_client, coding_stage):
    judgement = coded_descriptions(coding_stage)[0]
    response = coder_client.post(
        coding_url(coding_stage), {"judgement": judgement, "codes": ["parrots\x00"]}
    )
    assert response.status_code == 400
    assert "The form&#x27;s field &quot;codes&quot; contains a NUL" in response.content.decode()
    assert not Coder.objects.exists() and not DescriptionCoding.objects.exists()


def test_a_session_cookie_with_a_nul_is_ignored_like_an_unknown_one(client, crowd_study):
    unknown = client.get(f"/s/{crowd_study.slug}/", HTTP_COOKIE="sessionid=unknownsession0")
    # A quoted cookie value may spell a NUL character as \000.
    nul = client.get(f"/s/{crowd_study.slug}/", HTTP_COOKIE='sessionid="abcdefgh\\000"')
    assert nul.status_code == unknown.status_code != 500
    assert Annotator.objects.count() == 0
