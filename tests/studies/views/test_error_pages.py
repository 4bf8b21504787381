"""The site's own error pages where Django would show its bare ones."""

from studies.services import annotators_create, consent_version_current


def test_a_form_without_its_csrf_token_gets_a_page_of_the_site(client_factory, crowd_study):
    """Django's own CSRF page has an inline style the site's policy blocks and says
    nothing to an annotator: the site's 403_csrf.html says what to do."""
    browser = client_factory(enforce_csrf_checks=True)
    annotator = annotators_create(group=crowd_study.groups.get(name="Layperson"), count=1)[0]
    browser.get(f"/i/{annotator.access_token}/")
    # A consent that would be accepted with its token.
    version = consent_version_current(study=crowd_study)
    response = browser.post(
        f"/s/{crowd_study.slug}/consent/", {"agree": "on", "version": version.pk}
    )
    assert response.status_code == 403
    page = response.content.decode()
    assert "Please reload the page and send it again" in page and "Nothing was saved" in page
    assert "<style" not in page
    annotator.refresh_from_db()
    assert annotator.consented_at is None
