"""The admin of coding: codes become error categories (of this study or of a new draft
copy) or are refused with nothing written; the primary coder; read-only codings."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from studies.models import MAX_CATEGORY_BIT, Code, Coder, ErrorCategory, Judgement, Stage, Study
from studies.protocol import NO_ANSWER_CATEGORIES
from studies.services import study_create
from studies.services.coding import code_create, coder_join, coding_save
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import coded_descriptions

pytestmark = pytest.mark.django_db

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
    response = act(admin_client, codes, target="copy", slug="pilot-phase-2", title="Phase 2")
    assert "2 error categories added to pilot-phase-2." in said(response)
    copy = Study.objects.get(slug="pilot-phase-2")
    source = coding_stage.study
    assert copy.status == Study.Status.DRAFT and copy.title == "Phase 2"
    assert copy.information_sheet == source.information_sheet
    assert list(copy.stages.values_list("name", "no_answer")) == [
        ("GPT-2 stage", NO_ANSWER_CATEGORIES),
        ("GPT-3 stage", NO_ANSWER_CATEGORIES),
    ]
    assert set(copy.groups.values_list("name", flat=True)) == {"Layperson", "Expert"}
    slugs = [slug for slug, _, _ in categories(copy)]
    assert slugs[-2:] == ["lost_context", "parrots"] and len(slugs) == 7
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


def test_a_new_study_refused_for_its_categories_is_not_created(admin_client, codes, coding_stage):
    taken = code_create(study=coding_stage.study, slug="off_topic", label="Other", definition="D")
    refused(
        admin_client,
        [taken],
        coding_stage.study,
        'pilot-2 already has an error category "off_topic".',
        target="copy",
        slug="pilot-2",
        title="Phase 2",
    )
    assert not Study.objects.filter(slug="pilot-2").exists()


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
