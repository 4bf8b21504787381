"""Every code of a study pays one outcome of one stage: stages added together in the
admin get codes of their own, the admin and the database refuse a code another stage
has, and the migration renews repeated codes only where nothing was paid with them."""

import html
import importlib
from contextlib import contextmanager

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction
from django.urls import reverse

from studies.models import CrowdEntry, ErrorCategory, Stage, Study
from studies.selectors.readiness import stage_codes_repeated
from studies.services import annotators_create
from tests.conftest import form_data
from tests.factories import StaffUserFactory
from tests.studies.admin.test_study import new_study_post

STAGE = {
    "min_wait": "0",
    "instrument": "coherence",
    "no_answer": "categories",
    "empathy_after_yes": "on",
}


@pytest.fixture
def staff_client(client, db):
    client.force_login(StaffUserFactory())
    return client


def empty_stage_row(staff_client) -> dict:
    """A stage row as "Add another stage" copies it: the empty form's values."""
    page = staff_client.get(reverse("admin:studies_study_add"))
    inline = next(i for i in page.context["inline_admin_formsets"] if i.formset.prefix == "stages")
    empty = inline.formset.empty_form
    row = {}
    for name in empty.fields:
        value = empty[name].value()
        if value not in (None, False):
            row[name] = value
    return row


def test_stages_added_in_one_save_get_codes_of_their_own(staff_client):
    template = empty_stage_row(staff_client)
    rows = [
        {**template, "position": 1, "name": "First", "min_wait": "0"},
        {**template, "position": 2, "name": "Second", "min_wait": "3 days"},
    ]
    response = staff_client.post(reverse("admin:studies_study_add"), new_study_post(rows))
    assert response.status_code == 302, response.content.decode()[:3000]
    first, second = Study.objects.get(slug="new-study").stages.order_by("position")
    codes = [getattr(s, name) for s in (first, second) for name in Stage.CODE_FIELDS]
    given = [c for c in codes if c]
    assert len(given) == 4 and len(set(given)) == 4  # completion and partial, each stage


def test_the_admin_refuses_a_code_another_stage_has_and_writes_nothing(staff_client):
    rows = [
        {**STAGE, "position": 1, "name": "First", "completion_code": "SAME1"},
        {**STAGE, "position": 2, "name": "Second", "partial_completion_code": "SAME1"},
    ]
    response = staff_client.post(reverse("admin:studies_study_add"), new_study_post(rows))
    assert response.status_code == 200
    assert (
        'SAME1 is already the completion code of stage 1 ("First"). Each code pays one '
        "outcome of one stage, so give this one another code."
    ) in html.unescape(response.content.decode())
    assert not Study.objects.filter(slug="new-study").exists()


def test_the_stage_page_refuses_a_code_of_another_stage(staff_client, study):
    first, second = study.stages.order_by("position")
    url = reverse("admin:studies_stage_change", args=[second.pk])
    data = form_data(staff_client.get(url))
    data["screened_out_code"] = first.completion_code
    response = staff_client.post(url, data)
    assert response.status_code == 200
    assert f"{first.completion_code} is already the completion code of stage 1" in (
        response.content.decode()
    )
    second.refresh_from_db()
    assert second.screened_out_code == ""


def checked_now() -> None:
    """Run the checks the transaction would run when it commits (the code rule is a
    deferred constraint trigger)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def test_the_database_refuses_a_code_another_stage_of_the_study_has(study):
    first, second = study.stages.order_by("position")
    checked_now()
    for name in Stage.CODE_FIELDS:
        with (
            pytest.raises(IntegrityError, match="already used by another stage"),
            transaction.atomic(),
        ):
            Stage.objects.filter(pk=second.pk).update(**{name: first.completion_code})
            checked_now()
    # Swapped in one transaction, or another study's: fine.
    codes = (first.completion_code, second.completion_code)
    Stage.objects.filter(pk=first.pk).update(completion_code=codes[1])
    Stage.objects.filter(pk=second.pk).update(completion_code=codes[0])
    other = Study.objects.create(slug="other", title="Other")
    Stage.objects.create(study=other, position=1, name="Only", completion_code=codes[0])
    checked_now()


def test_an_unchanged_repeated_code_does_not_stop_other_changes(study):
    """Codes repeated from before the rule stay (they may have been paid with); the
    stage can still be renamed, and its other codes changed."""
    first, second = study.stages.order_by("position")
    with codes_trigger_off():
        Stage.objects.filter(pk=second.pk).update(completion_code=first.completion_code)
    second.refresh_from_db()
    second.name = "Renamed"
    second.screened_out_code = "NEWOUT2"
    second.save()
    checked_now()
    second.refresh_from_db()
    assert (second.name, second.screened_out_code) == ("Renamed", "NEWOUT2")
    assert second.completion_code == first.completion_code


@pytest.mark.django_db(transaction=True)
def test_codes_swapped_or_taken_from_a_deleted_stage_in_one_admin_save(client, loaded_study):
    """The rows of one save are checked together, and the database checks them as the
    save leaves them (each row is written one after the other)."""
    client.force_login(StaffUserFactory())
    url = reverse("admin:studies_study_change", args=[loaded_study.pk])
    data = form_data(client.get(url))
    first, second = loaded_study.stages.order_by("position")
    data["stages-0-completion_code"] = second.completion_code
    data["stages-1-completion_code"] = first.completion_code
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    first.refresh_from_db(), second.refresh_from_db()
    assert (first.completion_code, second.completion_code) == (
        data["stages-0-completion_code"],
        data["stages-1-completion_code"],
    )
    # The second stage goes; the first takes its partial-completion code.
    Stage.objects.filter(pk=second.pk).update(position=3)
    data = form_data(client.get(url))
    data["stages-0-partial_completion_code"] = second.partial_completion_code
    data["stages-1-DELETE"] = "on"
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    first.refresh_from_db()
    assert first.partial_completion_code == second.partial_completion_code
    assert not Stage.objects.filter(pk=second.pk).exists()


@contextmanager
def codes_trigger_off():
    """Write as before the rule (the trigger set aside; checks pending from the rows
    written so far run first, as PostgreSQL requires before altering the table)."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE studies_stage DISABLE TRIGGER studies_stage_codes_distinct")
        yield
        cursor.execute("ALTER TABLE studies_stage ENABLE TRIGGER studies_stage_codes_distinct")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def repeat_codes(study) -> tuple[Stage, Stage, Stage]:
    """Three stages whose completion codes all repeat the first's (as the admin's bug
    left them), the trigger set aside to write them."""
    Stage.objects.create(study=study, position=3, name="Third")
    first, second, third = study.stages.order_by("position")
    with codes_trigger_off():
        Stage.objects.filter(pk__in=[second.pk, third.pk]).update(
            completion_code=first.completion_code
        )
    return first, second, third


def test_the_migration_renews_repeated_codes_nothing_was_paid_with(loaded_study, capsys):
    first, second, third = repeat_codes(loaded_study)
    # A crowd worker entered the second stage: its code may have been paid with.
    worker = annotators_create(group=loaded_study.groups.get(name="Layperson"), count=1)[0]
    worker.platform, worker.platform_participant_id = "prolific", "pid1"
    worker.save()
    CrowdEntry.objects.create(annotator=worker, stage=second, platform="prolific", session_id="s")
    migration = importlib.import_module("studies.migrations.0021_stage_codes_distinct_and_partial")
    migration.renew_repeated_codes(apps, None)
    kept = first.completion_code
    first.refresh_from_db(), second.refresh_from_db(), third.refresh_from_db()
    assert first.completion_code == second.completion_code == kept
    assert third.completion_code != kept and len(third.completion_code) == 8
    assert f"stage 3: the completion code {kept} repeated another stage's" in (
        capsys.readouterr().out
    )
    # The one left is listed (flagged while the study is open; a draft cannot open).
    assert "Stage 2's completion code" in " ".join(stage_codes_repeated(study=loaded_study))


def test_an_open_study_flags_repeated_codes_and_a_missing_partial_code(staff_client, loaded_study):
    first, _, _ = repeat_codes(loaded_study)
    Stage.objects.filter(pk=first.pk).update(partial_completion_code="")
    Study.objects.filter(pk=loaded_study.pk).update(
        status=Study.Status.OPEN, crowd_group=loaded_study.groups.get(name="Layperson")
    )
    page = staff_client.get(reverse("admin:studies_study_change", args=[loaded_study.pk]))
    text = page.content.decode()
    assert f"Stage 2&#x27;s completion code {first.completion_code} is also stage 1" in text
    assert "has no partial-completion code" in text


def test_a_crowd_study_cannot_open_without_partial_codes_and_distinct_codes(loaded_study):
    from django.core.exceptions import ValidationError

    from studies.services import study_open

    first = loaded_study.stages.get(position=1)
    Stage.objects.filter(pk=first.pk).update(partial_completion_code="")
    Study.objects.filter(pk=loaded_study.pk).update(
        crowd_group=loaded_study.groups.get(name="Layperson")
    )
    loaded_study.refresh_from_db()
    with pytest.raises(ValidationError, match='a partial-completion code on the stage "GPT-2'):
        study_open(study=loaded_study)
    loaded_study.refresh_from_db()
    assert loaded_study.status == Study.Status.DRAFT
    assert CrowdEntry.objects.count() == 0


def test_the_migration_leaves_the_codes_of_a_study_ever_opened(loaded_study, capsys):
    """An open (or closed) study's codes may be on the platform already."""
    first, second, third = repeat_codes(loaded_study)
    Study.objects.filter(pk=loaded_study.pk).update(status=Study.Status.OPEN)
    migration = importlib.import_module("studies.migrations.0021_stage_codes_distinct_and_partial")
    migration.renew_repeated_codes(apps, None)
    for stage in (second, third):
        stage.refresh_from_db()
        assert stage.completion_code == first.completion_code
    assert capsys.readouterr().out == ""
    assert len(stage_codes_repeated(study=loaded_study)) == 2


def test_the_migration_renames_a_category_named_like_the_new_column(study, capsys):
    """The constraint the migration adds would refuse the row: it is renamed first."""
    checked_now()  # the checks pending from the rows written so far, before altering
    with connection.cursor() as cursor:
        cursor.execute(
            "ALTER TABLE studies_errorcategory DROP CONSTRAINT category_slug_not_an_export_column"
        )
    category = study.categories.first()
    ErrorCategory.objects.filter(pk=category.pk).update(slug="crowd_outcome")
    migration = importlib.import_module("studies.migrations.0021_stage_codes_distinct_and_partial")
    migration.rename_clashing_slugs(apps, None)
    category.refresh_from_db()
    assert category.slug == "crowd_outcome_2"
    assert "the error category crowd_outcome is now crowd_outcome_2" in capsys.readouterr().out
