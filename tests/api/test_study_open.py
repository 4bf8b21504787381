"""POST /api/studies/{slug}/open/: the admin's rule for opening a study, over the API."""

from studies.errors import ErrorCode
from studies.models import Role, Study
from tests.studies.services.test_opening import TUTORIAL


def test_opening_a_study_without_a_tutorial_is_refused_listing_what_is_missing(api, loaded_study):
    response = api.post("/api/studies/pilot/open/")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == ErrorCode.STUDY_NOT_READY
    assert body["errors"] == {
        "non_field_errors": [
            "Annotators cannot start yet: the study needs the tutorial's introduction; the "
            "tutorial's worked example dialogue; the notes on the tutorial's worked example; "
            "the tutorial's explanation of the agreement scale."
        ]
    }
    assert Study.objects.get(pk=loaded_study.pk).status == Study.Status.DRAFT


def test_opening_a_ready_study_opens_it_and_again_changes_nothing(api, loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(**TUTORIAL)
    for _ in range(2):
        response = api.post("/api/studies/pilot/open/")
        assert response.status_code == 200, response.content
        assert response.json()["status"] == "open"
    assert Study.objects.get(pk=loaded_study.pk).status == Study.Status.OPEN


def test_opening_needs_a_role_that_may_configure_the_study(role_client, loaded_study):
    Study.objects.filter(pk=loaded_study.pk).update(**TUTORIAL)
    response = role_client(loaded_study, Role.ANALYST).post("/api/studies/pilot/open/")
    assert response.status_code == 403
    assert response.json()["code"] == ErrorCode.PERMISSION_DENIED
    assert response.json()["message"] == (
        "Your role in this study (analyst) does not allow this: it takes a role that may "
        "change the study's configuration and open or close it."
    )
    assert Study.objects.get(pk=loaded_study.pk).status == Study.Status.DRAFT
