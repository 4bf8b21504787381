"""The study list's "Run the analysis" action: added by the analysis admin to the study
admin of the studies app (which knows nothing of analysis)."""

from unittest import mock

import pytest
from django.contrib import admin
from django.urls import reverse

from analysis.admin import StudyAdmin
from analysis.models import AnalysisRun
from studies.admin.study import StudyAdmin as StudiesStudyAdmin
from studies.models import Role, Study
from tests.factories import StaffUserFactory, user_with_role


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def test_the_registered_study_admin_is_the_studies_one_with_the_run_action():
    model_admin = admin.site.get_model_admin(Study)
    assert type(model_admin) is StudyAdmin
    assert issubclass(StudyAdmin, StudiesStudyAdmin)
    assert model_admin.actions == (
        "run_analysis", "compute_scores", "export_annotations", "purge_personal_data",
    )  # fmt: skip
    assert "run_analysis" not in StudiesStudyAdmin.actions
    assert not hasattr(StudiesStudyAdmin, "run_analysis")


def test_the_study_list_offers_the_action(staff_client, loaded_study):
    page = staff_client.get(reverse("admin:studies_study_changelist")).content.decode()
    assert '<option value="run_analysis">Run the analysis for the selected studies</option>' in page


def test_run_analysis_action_queues_and_runs_a_report(
    staff_client, loaded_study, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            reverse("admin:studies_study_changelist"),
            {"action": "run_analysis", "_selected_action": [loaded_study.pk]},
            follow=True,
        )
    assert "Queued 1 analysis run(s)" in response.content.decode()
    run = AnalysisRun.objects.get(study=loaded_study)
    if run.status == AnalysisRun.Status.QUEUED:
        # With a broker configured the task went to Redis; run it here the way the
        # worker would (the real worker is exercised in tests/analysis).
        from analysis.services import analysis_run_execute

        run = analysis_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == AnalysisRun.Status.DONE
    assert run.result["study"] == "pilot" and run.result["n_judgements"] == 0


def test_running_the_analysis_takes_a_role_that_runs_analyses(client, loaded_study):
    """A viewer is not offered the action, and posting it anyway queues nothing; an
    analyst queues a run, listed under Analysis runs (which the viewer does not see)."""
    changelist = reverse("admin:studies_study_changelist")
    action = {"action": "run_analysis", "_selected_action": [loaded_study.pk]}
    client.force_login(user_with_role(loaded_study, Role.VIEWER))
    assert 'value="run_analysis"' not in client.get(changelist).content.decode()
    client.post(changelist, action)
    assert not AnalysisRun.objects.exists()
    assert client.get(reverse("admin:analysis_analysisrun_changelist")).status_code == 403

    analyst = user_with_role(loaded_study, Role.ANALYST)
    client.force_login(analyst)
    with mock.patch("analysis.services._task"):
        response = client.post(changelist, action, follow=True)
    assert "Queued 1 analysis run(s)" in response.content.decode()
    assert AnalysisRun.objects.get().requested_by == analyst
    runs = client.get(reverse("admin:analysis_analysisrun_changelist"))
    assert runs.context["cl"].result_count == 1
