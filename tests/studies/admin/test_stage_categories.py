"""The stage page's categories offered: only the stage's own study's, with a message."""

from datetime import timedelta

from django.urls import reverse

from studies.services import study_create
from tests.conftest import form_data
from tests.factories import StaffUserFactory


def test_the_stage_page_refuses_another_study_s_category_and_saves_nothing(client, study):
    client.force_login(StaffUserFactory())
    other = study_create(slug="other", title="Other", stages=[("Only", timedelta(0))], groups=["G"])
    stage = study.stages.get(position=1)
    url = reverse("admin:studies_stage_change", args=[stage.pk])
    page = client.get(url)
    listed = {str(c.pk) for c in page.context["adminform"].form.fields["categories"].queryset}
    assert listed == {str(pk) for pk in study.categories.values_list("pk", flat=True)}
    data = form_data(page)
    foreign = other.categories.first()
    data["categories"] = [str(foreign.pk)]
    data["name"] = "Renamed"
    response = client.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["categories"] == [
        f"A stage offers only its own study's error categories; {foreign.pk} is not one of them."
    ]
    stage.refresh_from_db()
    assert stage.name == "GPT-2 stage" and not stage.categories.exists()

    data["categories"] = [str(study.categories.first().pk)]
    assert client.post(url, data).status_code == 302
    assert list(stage.categories.all()) == [study.categories.first()]


def test_a_new_stage_names_the_study_of_each_category(client, study):
    """A new stage lists every study's categories (it has no study yet): each says whose
    it is, so two studies' "Off-topic" can be told apart; a saved stage's do not."""
    client.force_login(StaffUserFactory())
    study_create(slug="other", title="Other", stages=[("Only", timedelta(0))], groups=["G"])
    label = study.categories.first().label
    page = client.get(reverse("admin:studies_stage_add")).content.decode()
    assert f"{label} (pilot)" in page and f"{label} (other)" in page
    stage = study.stages.get(position=1)
    saved = client.get(reverse("admin:studies_stage_change", args=[stage.pk])).content.decode()
    assert f"{label} (pilot)" not in saved and label in saved


def test_a_new_stage_refuses_another_study_s_category_or_group(client, study):
    """A new stage's page offers every study's categories and groups; those of another
    study than the one chosen are refused with a message, and no stage is made."""
    client.force_login(StaffUserFactory())
    other = study_create(slug="other", title="Other", stages=[("Only", timedelta(0))], groups=["G"])
    data = {
        "study": study.pk,
        "position": 3,
        "name": "Third",
        "min_wait": "0",
        "instrument": "coherence",
        "no_answer": "categories",
        "join_key": "third-stage-key",
        "categories": [str(other.categories.first().pk)],
        "groups": [str(other.groups.get().pk)],
    }
    response = client.post(reverse("admin:studies_stage_add"), data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    label = other.categories.first().label
    assert errors["categories"] == [
        f"A stage offers only its own study's error categories; not of this study: {label}."
    ]
    assert errors["groups"] == ["A stage takes only its own study's groups; not of this study: G."]
    assert not study.stages.filter(position=3).exists()
