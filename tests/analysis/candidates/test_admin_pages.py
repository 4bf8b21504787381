"""The candidate-selection pages of the admin, by role."""

import csv
import io

import pytest
from django.urls import reverse

from analysis.models import CandidateCluster, CandidateSelection
from annotation_site.celery import app as celery_app
from studies.models import Batch, Role
from tests.analysis.candidates.test_selection import import_pool, pool_doc
from tests.factories import StageFactory, StudyFactory, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def study():
    study = StudyFactory()
    StageFactory(study=study, name="Selected", position=1)
    StageFactory(study=study, name="Later", position=2)
    import_pool(study, pool_doc(ids=("d1", "d2", "d3")))
    return study


@pytest.fixture
def eager_tasks(settings):
    """The selection runs in this process (Celery's eager mode); the real worker runs
    it in tests/analysis/test_tasks.py."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CELERY_TASK_EAGER_PROPAGATES = True
    assert celery_app.conf.task_always_eager


def page_url(study):
    return reverse("admin:analysis_candidateselection_study", args=[study.pk])


def form_data(stage, **changes):
    return {
        "stage": stage.pk,
        "per_context": 2,
        "threshold": 0.7,
        "metric": "cosine",
        "linkage": "average",
        "stratify_by": "",
        "model": "all-MiniLM-L6-v2",
        "pool_pairs": 50,
        "seed": "",
        **changes,
    }


def test_the_study_page_links_to_the_selection(client, study):
    client.force_login(user_with_role(study, Role.VIEWER))
    page = client.get(reverse("admin:studies_study_change", args=[study.pk])).content.decode()
    assert page_url(study) in page


def test_a_viewer_sees_the_pool_but_may_not_select(client, study):
    client.force_login(user_with_role(study, Role.VIEWER))
    page = client.get(page_url(study)).content.decode()
    assert "18 candidates in 3 contexts" in page
    assert 'id="selection-form"' not in page
    stage = study.stages.get(name="Selected")
    response = client.post(page_url(study), form_data(stage))
    assert "may not change its materials" in response.content.decode()
    assert not CandidateSelection.objects.exists()


def test_someone_without_a_role_gets_nothing(client, study):
    other = StudyFactory()
    client.force_login(user_with_role(other, Role.OWNER))
    assert client.get(page_url(study)).status_code == 404


def test_an_owner_selects_and_reads_the_result(
    client, study, eager_tasks, django_capture_on_commit_callbacks
):
    client.force_login(user_with_role(study, Role.OWNER))
    stage = study.stages.get(name="Selected")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(page_url(study), form_data(stage), follow=True)
    assert "started: it fills stage" in response.content.decode()
    page = client.get(page_url(study)).content.decode()
    selection = CandidateSelection.objects.get()
    assert selection.status == CandidateSelection.Status.DONE, selection.error
    assert selection.seed == study.seed
    assert selection.parameters["pool_pairs_per_context"] == 50
    assert Batch.objects.filter(stage=stage).count() == 3
    assert "Self-BLEU-2" in page and "Mean cosine" in page
    # The filled stage is no longer offered.
    assert f'<option value="{stage.pk}"' not in page

    detail = client.get(reverse("admin:analysis_candidateselection_change", args=[selection.pk]))
    assert "Self-BLEU-5" in detail.content.decode()

    download = client.get(
        reverse("admin:analysis_candidateselection_clusters", args=[study.pk, selection.pk])
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(download.streaming_content).decode())))
    assert len(rows) == 18
    assert {r["annomi_dialogue_id"] for r in rows} == {"d1", "d2", "d3"}
    selected = [r for r in rows if r["representative"] == "true" and r["selected"] == "true"]
    assert len(selected) == 6
    assert CandidateCluster.objects.filter(selection=selection, selected=True).count() == 6


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"threshold": 0}, "above 0"),
        ({"linkage": "ward"}, "euclidean"),
        ({"per_context": 0}, "greater than or equal to 1"),
        ({"pool_pairs": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_settings_are_refused_with_their_message(client, study, changes, message):
    client.force_login(user_with_role(study, Role.OWNER))
    stage = study.stages.get(name="Selected")
    response = client.post(page_url(study), form_data(stage, **changes))
    assert message in response.content.decode()
    assert not CandidateSelection.objects.exists()


def test_a_stage_with_batches_is_not_offered_and_refused(client, study):
    client.force_login(user_with_role(study, Role.OWNER))
    filled = study.stages.get(name="Later")
    Batch.objects.create(stage=filled, context=study.contexts.first())
    page = client.get(page_url(study)).content.decode()
    assert f'<option value="{filled.pk}"' not in page
    response = client.post(page_url(study), form_data(filled))
    assert "Select a valid choice" in response.content.decode()
    assert not CandidateSelection.objects.exists()


def test_the_list_refreshes_itself_while_a_selection_runs(client, study):
    from analysis.candidates.parameters import SelectionParameters
    from analysis.candidates.selection import candidate_selection_create, candidate_selection_run

    client.force_login(user_with_role(study, Role.OWNER))
    selection = candidate_selection_create(
        study=study, stage=study.stages.get(name="Selected"), parameters=SelectionParameters()
    )
    page = client.get(page_url(study)).content.decode()
    assert f'hx-get="{page_url(study)}?part=selections"' in page
    assert 'id="selection-form"' in page  # the form is not part of what refreshes
    part = client.get(page_url(study) + "?part=selections").content.decode()
    assert part.lstrip().startswith("{#") is False and 'id="selections-list"' in part
    assert "<form" not in part and "Queued" in part
    candidate_selection_run(selection_id=selection.pk)
    part = client.get(page_url(study) + "?part=selections").content.decode()
    assert "hx-get" not in part and "Done" in part and "Reload the page" in part
