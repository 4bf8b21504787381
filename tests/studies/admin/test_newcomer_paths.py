"""What a researcher new to the admin meets: saving a question goes back to its
questionnaire, the study page leads to its questionnaires, the crowd group menu says
why it is empty on a new study, the progress table counts the people who take part,
the error categories keep their storage bit to themselves, and the start page and
the admin lead staff to the admin, the documentation and the dashboards."""

import pytest
from django.urls import reverse
from django.utils import timezone

from studies.admin.study import CROWD_GROUP_AFTER_SAVE
from studies.models import Annotator, Question, QuestionnaireResponse
from studies.selectors import study_progress
from studies.services import annotators_create
from tests.conftest import form_data
from tests.factories import StaffUserFactory
from tests.studies.questionnaire_helpers import screening


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def test_saving_a_question_returns_to_its_questionnaire(staff_client, study):
    questionnaire = screening(study)
    question = questionnaire.questions.get(position=1)
    url = reverse("admin:studies_question_change", args=[question.pk])
    data = form_data(staff_client.get(url))
    data["text"] = "Is English your native language?"
    response = staff_client.post(url, data)
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "admin:studies_questionnaire_change", args=[questionnaire.pk]
    )
    assert Question.objects.get(pk=question.pk).text == "Is English your native language?"
    # "Save and continue editing" still stays on the question.
    response = staff_client.post(url, {**data, "_continue": "1"})
    assert response["Location"].startswith(url)


def test_the_study_page_leads_to_its_questionnaires(staff_client, study):
    page = staff_client.get(reverse("admin:studies_study_change", args=[study.pk]))
    html = page.content.decode()
    listing = f"{reverse('admin:studies_questionnaire_changelist')}?study__id__exact={study.pk}"
    adding = f"{reverse('admin:studies_questionnaire_add')}?study={study.pk}"
    assert f'href="{listing}"' in html and f'href="{adding}"' in html
    # The add link's study is chosen on the questionnaire's form.
    form = staff_client.get(adding).context["adminform"].form
    assert form["study"].value() == str(study.pk)
    assert set(form.fields["stage"].queryset) == set(study.stages.all())


def test_a_new_study_says_to_save_its_groups_before_choosing_the_crowd_group(staff_client, study):
    page = staff_client.get(reverse("admin:studies_study_add"))
    field = page.context["adminform"].form.fields["crowd_group"]
    assert field.help_text == CROWD_GROUP_AFTER_SAVE
    assert "then choose the crowd group" in page.content.decode()
    assert not field.queryset.exists()
    # A saved study lists its groups, without the note.
    page = staff_client.get(reverse("admin:studies_study_change", args=[study.pk]))
    field = page.context["adminform"].form.fields["crowd_group"]
    assert set(field.queryset) == set(study.groups.all())
    assert CROWD_GROUP_AFTER_SAVE not in page.content.decode()


def test_the_progress_headcount_leaves_out_screened_out_and_disabled_people(loaded_study):
    group = loaded_study.groups.get(name="Layperson")
    taking_part, screened, disabled = annotators_create(group=group, count=3)
    QuestionnaireResponse.objects.create(
        questionnaire=screening(loaded_study),
        annotator=screened,
        screened_out=True,
        submitted_at=timezone.now(),
    )
    Annotator.objects.filter(pk=disabled.pk).update(is_active=False)
    progress = study_progress(study=loaded_study)
    cells = [g for s in progress.stages for g in s.groups if g.group_id == group.pk]
    assert cells and all(cell.annotators == 1 for cell in cells)
    # The same people the capacity counts: one person's m batches.
    m = loaded_study.batches_per_stage
    assert all(cell.capacity_left == min(m, cell.capacity_left) for cell in cells)
    assert list(Annotator.objects.filter(group=group).participating()) == [taking_part]


def test_the_error_category_forms_do_not_show_the_storage_bit(staff_client, study):
    category = study.categories.first()
    for url in (
        reverse("admin:studies_errorcategory_change", args=[category.pk]),
        reverse("admin:studies_errorcategory_add"),
        reverse("admin:studies_errorcategory_changelist"),
        reverse("admin:studies_study_change", args=[study.pk]),
    ):
        html = staff_client.get(url).content.decode()
        assert "Storage position" not in html, url
        assert "column-bit" not in html and 'class="field-bit' not in html, url


def test_the_start_page_leads_staff_to_the_admin_the_docs_and_the_dashboards(
    client, staff_client, study
):
    html = staff_client.get("/").content.decode()
    assert f'href="{reverse("admin:index")}"' in html
    assert 'href="/docs/"' in html
    assert f'href="{reverse("analysis:dashboard", args=[study.slug])}"' in html
    assert "sign in to the study admin" not in html
    staff_client.logout()
    html = client.get("/").content.decode()
    assert "sign in to the study admin" in html
    assert "/dashboard/" not in html and 'href="/docs/"' not in html


def test_the_admin_links_to_the_documentation(staff_client):
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert '<a href="/docs/">Documentation</a>' in html
