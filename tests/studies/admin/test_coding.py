"""The admin of coding: codes become error categories (of this study or of a new draft
copy) or are refused with nothing written; the primary coder; read-only codings."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from studies.models import (
    MAX_CATEGORY_BIT,
    Annotator,
    Batch,
    Code,
    Coder,
    ErrorCategory,
    Judgement,
    Role,
    Stage,
    Study,
    StudyRole,
)
from studies.protocol import NO_ANSWER_CATEGORIES
from studies.services import assignment_create, study_create
from studies.services.coding import code_create, coder_join, coding_save
from studies.services.coding_categories import NOT_COPIED, copied_fields
from tests.factories import StudyFactory, user_with_role
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import coded_descriptions, make_staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def coding_stage(shared_coding_stage):
    """Built once for the module: no test here builds another study of its slug."""
    return shared_coding_stage


CHANGELIST = "admin:studies_code_changelist"


@pytest.fixture
def codes(coding_stage):
    study = coding_stage.study
    return [
        code_create(
            study=study,
            slug="lost_context",
            label="Lost the context",
            definition="Ignores what the client said.",
            example="It does not follow the conversation.",
        ),
        code_create(
            study=study, slug="parrots", label="Parrots the client", definition="Repeats words."
        ),
    ]


def act(client, codes, **form):
    data = {"action": "make_error_categories", "_selected_action": [c.pk for c in codes]}
    if form:
        data |= {"apply": "1", **form}
    return client.post(reverse(CHANGELIST), data, follow=True)


def said(response) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


def categories(study):
    return list(
        ErrorCategory.objects.filter(study=study)
        .order_by("bit")
        .values_list("slug", "bit", "order")
    )


def test_the_action_asks_for_the_target_first(admin_client, codes):
    response = act(admin_client, codes)
    assert "A new draft study" in response.content.decode()
    assert ErrorCategory.objects.filter(slug="parrots").count() == 0


def test_codes_become_categories_of_this_study(admin_client, codes, coding_stage):
    study = coding_stage.study
    before = categories(study)
    top_bit = max(bit for _, bit, _ in before)
    top_order = max(order for _, _, order in before)
    response = act(admin_client, codes, target="same")
    assert "2 error categories added to pilot." in said(response)
    added = categories(study)[len(before) :]
    assert added == [
        ("lost_context", top_bit + 1, top_order + 1),
        ("parrots", top_bit + 2, top_order + 2),
    ]
    lost = ErrorCategory.objects.get(study=study, slug="lost_context")
    assert (lost.label, lost.definition, lost.example_reflection) == (
        "Lost the context",
        "Ignores what the client said.",
        "It does not follow the conversation.",
    )


def refused(client, codes, study, expected, **form):
    before = categories(study)
    n_studies = Study.objects.count()
    response = act(client, codes, **(form or {"target": "same"}))
    assert expected in said(response)
    assert "Nothing was changed" in said(response)
    assert categories(study) == before and Study.objects.count() == n_studies


def test_a_taken_slug_is_refused(admin_client, codes, coding_stage):
    taken = code_create(study=coding_stage.study, slug="off_topic", label="Other", definition="D")
    refused(
        admin_client,
        [*codes, taken],
        coding_stage.study,
        'pilot already has an error category "off_topic".',
    )


def test_a_taken_label_is_refused(admin_client, codes, coding_stage):
    label = ErrorCategory.objects.filter(study=coding_stage.study).first().label
    taken = code_create(study=coding_stage.study, slug="fresh", label=label, definition="D")
    refused(
        admin_client,
        [taken],
        coding_stage.study,
        f'pilot already has an error category labelled "{label}".',
    )


def test_a_code_without_definition_is_refused(admin_client, coding_stage):
    bare = code_create(study=coding_stage.study, slug="bare", label="Bare")
    refused(admin_client, [bare], coding_stage.study, 'The code "bare" needs a definition')


def test_no_free_bit_left_is_refused(admin_client, codes, coding_stage):
    study = coding_stage.study
    top = max(bit for _, bit, _ in categories(study))
    ErrorCategory.objects.bulk_create(
        ErrorCategory(study=study, slug=f"c{bit}", label=f"C{bit}", definition="D", bit=bit)
        for bit in range(top + 1, MAX_CATEGORY_BIT)
    )
    refused(
        admin_client,
        codes,
        study,
        "pilot has room for 1 more error category (at most 31); 2 codes were chosen.",
    )


def test_codes_become_categories_of_a_new_draft_study(admin_client, codes, coding_stage):
    Stage.objects.filter(study=coding_stage.study, position=2).update(
        coherence_question="Does it fit?", tutorial_intro="Stage 2 explains the categories."
    )
    response = act(
        admin_client,
        codes,
        target="copy",
        slug="pilot-phase-2",
        title="Phase 2",
        attention_check="lost_context",
    )
    assert "2 error categories added to pilot-phase-2." in said(response)
    copy = Study.objects.get(slug="pilot-phase-2")
    source = coding_stage.study
    assert copy.status == Study.Status.DRAFT and copy.title == "Phase 2"
    assert copy.information_sheet == source.information_sheet
    assert list(copy.stages.values_list("name", "no_answer")) == [
        ("GPT-2 stage", NO_ANSWER_CATEGORIES),
        ("GPT-3 stage", NO_ANSWER_CATEGORIES),
    ]
    # Each stage's own wording and tutorial come along.
    assert list(copy.stages.values_list("coherence_question", "tutorial_intro")) == [
        ("", ""),
        ("Does it fit?", "Stage 2 explains the categories."),
    ]
    assert set(copy.groups.values_list("name", flat=True)) == {"Layperson", "Expert"}
    # A bottom-up scheme: the codes only, no default categories.
    assert [slug for slug, _, _ in categories(copy)] == ["lost_context", "parrots"]
    assert list(
        copy.categories.filter(catches_attention_check=True).values_list("slug", flat=True)
    ) == ["lost_context"]
    # The original keeps its categories and its free-text stage.
    assert not ErrorCategory.objects.filter(study=source, slug="parrots").exists()
    assert Stage.objects.get(study=source, position=1).no_answer != NO_ANSWER_CATEGORIES


def test_a_new_study_needs_a_free_slug_and_a_title(admin_client, codes, coding_stage):
    response = act(admin_client, codes, target="copy", slug="", title="")
    assert response.content.decode().count("A new study needs this.") == 2
    refused(
        admin_client,
        codes,
        coding_stage.study,
        'A study "pilot" already exists.',
        target="copy",
        slug="pilot",
        title="X",
    )


def test_a_code_named_like_a_default_category_makes_a_new_study(admin_client, coding_stage):
    like = code_create(study=coding_stage.study, slug="off_topic", label="Other", definition="D")
    response = act(
        admin_client, [like], target="copy", slug="pilot-2", title="Phase 2", attention_check=""
    )
    assert "pilot-2 asks for error categories but no category catches the attention check" in (
        said(response)
    )
    assert not Study.objects.filter(slug="pilot-2").exists()
    response = act(
        admin_client,
        [like],
        target="copy",
        slug="pilot-2",
        title="Phase 2",
        attention_check="off_topic",
    )
    assert "1 error category added to pilot-2." in said(response)
    copy = Study.objects.get(slug="pilot-2")
    assert list(copy.categories.values_list("slug", "label")) == [("off_topic", "Other")]


def test_a_new_study_refused_for_its_categories_is_not_created(admin_client, coding_stage):
    bare = code_create(study=coding_stage.study, slug="bare", label="Bare")
    refused(
        admin_client,
        [bare],
        coding_stage.study,
        'The code "bare" needs a definition',
        target="copy",
        slug="pilot-2",
        title="Phase 2",
        attention_check="bare",
    )
    assert not Study.objects.filter(slug="pilot-2").exists()


def test_a_started_categories_stage_refuses_new_categories(admin_client, codes, coding_stage):
    study = coding_stage.study
    stage = study.stages.get(position=2)
    annotator = Annotator.objects.filter(study=study).first()
    assignment_create(annotator=annotator, batch=Batch.objects.filter(stage=stage).first())
    refused(
        admin_client,
        codes,
        study,
        "pilot has answers in GPT-3 stage, which ask for error categories: earlier answers "
        "never saw a new category.",
    )


def test_a_study_asking_categories_keeps_one_catching_the_attention_check(
    admin_client, codes, coding_stage
):
    study = coding_stage.study
    study.categories.update(catches_attention_check=False)
    refused(
        admin_client,
        codes,
        study,
        "pilot asks for error categories but no category catches the attention check: choose "
        "the code whose category does",
    )
    response = act(admin_client, codes, target="same", attention_check="parrots")
    assert "2 error categories added to pilot." in said(response)
    assert list(
        study.categories.filter(catches_attention_check=True).values_list("slug", flat=True)
    ) == ["parrots"]


def test_a_code_named_like_an_export_column_is_refused(admin_client, coding_stage):
    Code.objects.create(study=coding_stage.study, slug="empathy", label="Empathy", definition="D")
    refused(
        admin_client,
        list(Code.objects.filter(slug="empathy")),
        coding_stage.study,
        'The code "empathy": "empathy" names a column of the exports',
    )


def test_codes_of_two_studies_are_refused(admin_client, codes, coding_stage):
    other = study_create(slug="other", title="Other")
    foreign = code_create(study=other, slug="foreign", label="Foreign", definition="D")
    response = act(admin_client, [codes[0], foreign], target="same")
    assert "Choose codes of one study at a time." in said(response)
    assert not ErrorCategory.objects.filter(slug__in=["lost_context", "foreign"]).exists()


def test_the_primary_coder_is_chosen_in_the_admin(admin_client, coding_stage, alice, bob):
    study = coding_stage.study
    coder_join(study=study, user=alice)
    second = coder_join(study=study, user=bob)
    response = admin_client.post(
        reverse("admin:studies_coder_changelist"),
        {"action": "make_primary", "_selected_action": [second.pk]},
        follow=True,
    )
    assert "bob is now the primary coder of pilot." in said(response)
    assert Coder.objects.primary(study) == second


def test_an_analyst_cannot_change_the_primary_coder(client, coding_stage, alice, bob):
    """An analyst reads the coders (rows of the study) but does not configure it."""
    study = coding_stage.study
    first = coder_join(study=study, user=alice)
    second = coder_join(study=study, user=bob)
    client.force_login(user_with_role(study, Role.ANALYST))
    listed = client.get(reverse("admin:studies_coder_changelist"))
    assert listed.status_code == 200 and "bob" in listed.content.decode()
    assert 'value="make_primary"' not in listed.content.decode()  # not offered
    response = client.post(
        reverse("admin:studies_coder_changelist"),
        {"action": "make_primary", "_selected_action": [second.pk]},
        follow=True,
    )
    assert response.status_code == 200 and "now the primary coder" not in said(response)
    assert Coder.objects.primary(study) == first
    assert list(Coder.objects.filter(is_primary=True)) == [first]


def test_a_collaborator_in_another_study_cannot_change_this_studys_primary_coder(
    client, coding_stage, alice, bob
):
    """The action is offered (they configure a study), but the row chosen is of a study
    where they are analyst: nothing changes and the message says why."""
    study = coding_stage.study
    first = coder_join(study=study, user=alice)
    second = coder_join(study=study, user=bob)
    user = user_with_role(study, Role.ANALYST)
    StudyRole.objects.create(study=StudyFactory(), user=user, role=Role.COLLABORATOR)
    client.force_login(user)
    listed = client.get(reverse("admin:studies_coder_changelist")).content.decode()
    assert 'value="make_primary"' in listed
    response = client.post(
        reverse("admin:studies_coder_changelist"),
        {"action": "make_primary", "_selected_action": [second.pk]},
        follow=True,
    )
    assert said(response) == (
        "Nothing was changed: Pilot study: Your role in this study (analyst) does not "
        "allow this: it takes a role that may change the study's configuration and open "
        "or close it."
    )
    assert Coder.objects.primary(study) == first


def test_a_coder_with_codings_cannot_be_deleted(admin_client, coding_stage, alice, bob):
    study = coding_stage.study
    busy = coder_join(study=study, user=alice)
    idle = coder_join(study=study, user=bob)
    parrots = code_create(study=study, slug="parrots", label="Parrots", definition="D")
    coding_save(
        coder=busy,
        judgement=Judgement.objects.get(pk=coded_descriptions(coding_stage)[0]),
        codes=[parrots],
    )
    changelist = reverse("admin:studies_coder_changelist")
    data = {"action": "delete_selected", "_selected_action": [busy.pk, idle.pk], "post": "yes"}
    response = admin_client.post(changelist, data, follow=True)
    assert "Nothing was deleted: alice (pilot) coded descriptions" in said(response)
    assert Coder.objects.count() == 2
    delete = reverse("admin:studies_coder_delete", args=[busy.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    assert Coder.objects.count() == 2
    admin_client.post(changelist, {**data, "_selected_action": [idle.pk]})
    assert list(Coder.objects.all()) == [busy]


def test_the_coders_list_reads_the_primary_coder_in_one_query(
    admin_client, coding_stage, alice, bob
):
    study = coding_stage.study
    coder_join(study=study, user=alice)
    coder_join(study=study, user=bob)
    changelist = reverse("admin:studies_coder_changelist")
    with CaptureQueriesContext(connection) as two:
        html = admin_client.get(changelist).content.decode()
    n_queries = len(two)  # read now: the next request empties the query log
    assert html.count('alt="True"') == 2  # alice: marked primary and primary now
    for name in ("carol", "dave", "erin"):
        coder_join(study=study, user=make_staff(name))
    with CaptureQueriesContext(connection) as five:
        admin_client.get(changelist)
    assert len(five) == n_queries


def test_codings_are_read_only_in_the_admin(admin_client, coding_stage):
    assert admin_client.get(reverse("admin:studies_descriptioncoding_add")).status_code == 403
    assert (
        admin_client.get(reverse("admin:studies_descriptioncoding_changelist")).status_code == 200
    )
    assert admin_client.get(reverse("admin:studies_coder_changelist")).status_code == 200
    assert admin_client.get(reverse(CHANGELIST)).status_code == 200


def test_a_code_in_use_cannot_be_deleted(admin_client, codes, coding_stage, alice):
    used, unused = codes
    coding_save(
        coder=coder_join(study=coding_stage.study, user=alice),
        judgement=Judgement.objects.get(pk=coded_descriptions(coding_stage)[0]),
        codes=[used],
    )
    delete = "admin:studies_code_delete"
    assert admin_client.post(reverse(delete, args=[used.pk]), {"post": "yes"}).status_code == 403
    admin_client.post(reverse(delete, args=[unused.pk]), {"post": "yes"})
    assert list(Code.objects.all()) == [used]


def test_only_staff_become_coders_in_the_admin(admin_client, coding_stage, alice):
    outsider = get_user_model().objects.create_user(username="outsider", password="pw")
    url = reverse("admin:studies_coder_add")
    response = admin_client.post(url, {"study": coding_stage.study.pk, "user": outsider.pk})
    assert "Only active staff users code descriptions." in response.content.decode()
    assert not Coder.objects.exists()
    admin_client.post(url, {"study": coding_stage.study.pk, "user": alice.pk})
    assert Coder.objects.get().user == alice


def test_a_copy_takes_every_editable_study_field_but_its_identity():
    fields = set(copied_fields())
    assert {"information_sheet", "overlap_k", "batch_time_limit", "mturk_frame"} <= fields
    assert not fields & (NOT_COPIED | {"id", "created_at", "updated_at"})


def test_the_admin_refuses_a_code_named_like_an_export_column(admin_client, coding_stage):
    url = reverse("admin:studies_code_add")
    data = {"study": coding_stage.study.pk, "slug": "error_description", "label": "Desc"}
    response = admin_client.post(url, data)
    assert "&quot;error_description&quot; names a column of the exports" in (
        response.content.decode()
    )
    assert not Code.objects.exists()
    admin_client.post(url, {**data, "slug": "vague"})
    assert list(Code.objects.values_list("slug", flat=True)) == ["vague"]


def test_making_codes_categories_needs_a_role_that_configures_the_study(
    client, codes, coding_stage
):
    """An analyst sees the codebook but is not offered the action; posted anyway, it is
    refused with nothing written."""
    study = coding_stage.study
    stage = study.stages.get(position=2)
    before = categories(study)
    client.force_login(user_with_role(study, Role.ANALYST))
    listed = client.get(reverse(CHANGELIST)).content.decode()
    assert "Lost the context" in listed and 'value="make_error_categories"' not in listed
    response = act(client, codes, target="same", stage=str(stage.position))
    assert "Make codes error categories" not in response.content.decode()
    assert categories(study) == before
    stage.refresh_from_db()
    assert not stage.categories_from_coding and not stage.categories.exists()


def test_a_collaborator_offers_codes_in_a_stage(client, codes, coding_stage):
    study = coding_stage.study
    stage = study.stages.get(position=2)
    client.force_login(user_with_role(study, Role.COLLABORATOR))
    page = act(client, codes).content.decode()
    assert "A new draft study" in page and stage.name in page
    response = act(client, codes, target="same", stage=str(stage.position))
    assert "2 error categories added to pilot." in said(response)
    stage.refresh_from_db()
    assert stage.categories_from_coding


def test_a_new_draft_study_from_codes_needs_create_study_and_makes_its_creator_owner(
    client, codes, coding_stage
):
    study = coding_stage.study
    collaborator = user_with_role(study, Role.COLLABORATOR)
    client.force_login(collaborator)
    response = act(
        client, codes, target="copy", slug="pilot-2", title="Phase 2", attention_check="parrots"
    )
    assert "Nothing was changed: Creating a study needs the permission to create studies." in said(
        response
    )
    assert not Study.objects.filter(slug="pilot-2").exists()

    collaborator.user_permissions.add(Permission.objects.get(codename="create_study"))
    collaborator = get_user_model().objects.get(pk=collaborator.pk)
    client.force_login(collaborator)
    response = act(
        client, codes, target="copy", slug="pilot-2", title="Phase 2", attention_check="parrots"
    )
    assert "2 error categories added to pilot-2." in said(response)
    copy = Study.objects.get(slug="pilot-2")
    assert copy.created_by == collaborator
    assert StudyRole.objects.get(study=copy).user == collaborator
    assert StudyRole.objects.get(study=copy).role == Role.OWNER
