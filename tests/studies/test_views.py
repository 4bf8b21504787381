from studies.services import annotators_create
from studies.views import SESSION_ANNOTATOR


def test_invitation_link_signs_the_annotator_in(client, study):
    annotator = annotators_create(group=study.groups.get(name="Layperson"), count=1)[0]
    response = client.get(f"/i/{annotator.access_token}/")
    assert response.status_code == 200
    assert "Layperson 1" in response.content.decode()
    assert client.session[SESSION_ANNOTATOR] == annotator.pk
    annotator.refresh_from_db()
    assert annotator.last_seen_at is not None


def test_wrong_invitation_link_gets_a_clear_page_not_an_error(client, study):
    response = client.get("/i/not-a-real-token/")
    assert response.status_code == 404
    assert "This link is not valid" in response.content.decode()
    assert SESSION_ANNOTATOR not in client.session


def test_disabled_invitation_link_is_refused(client, study):
    annotator = annotators_create(group=study.groups.get(name="Expert"), count=1)[0]
    annotator.is_active = False
    annotator.save()
    response = client.get(f"/i/{annotator.access_token}/")
    assert response.status_code == 404
    assert SESSION_ANNOTATOR not in client.session


def test_home_page_points_annotators_to_their_link(client, db):
    response = client.get("/")
    assert response.status_code == 200
    assert "personal link" in response.content.decode()
