"""The coding service: codes, coders and codings, each refusal with its message and
nothing written."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from studies.models import Code, Coder, DescriptionCoding, Judgement
from studies.services import study_create
from studies.services.coding import code_create, coder_join, coder_make_primary, coding_save
from tests.studies.coding_fixtures import *  # noqa: F403  (fixtures)
from tests.studies.coding_fixtures import coded_descriptions, make_staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def coding_stage(shared_coding_stage):
    """Built once for the module: no test here builds another study of its slug."""
    return shared_coding_stage


@pytest.fixture
def codebook(coding_stage):
    study = coding_stage.study
    return {
        "lost": code_create(study=study, slug="lost_context", label="Lost the context"),
        "parrot": code_create(study=study, slug="parrots", label="Parrots the client"),
    }


@pytest.fixture
def other_study(db):
    return study_create(slug="other", title="Other", stages=[("S", timedelta(0))], groups=["G"])


def counts():
    return (
        Code.objects.count(),
        Coder.objects.count(),
        DescriptionCoding.objects.count(),
        DescriptionCoding.codes.through.objects.count(),
    )


def refused(call, field: str, message: str):
    before = counts()
    with pytest.raises(ValidationError) as info:
        call()
    assert message in " ".join(info.value.message_dict[field])
    assert counts() == before


# --- codes ------------------------------------------------------------------------------


def test_a_code_is_created_trimmed(coding_stage, alice):
    code = code_create(
        study=coding_stage.study,
        slug=" off_topic2 ",
        label=" Off topic ",
        definition=" d ",
        user=alice,
    )
    assert (code.slug, code.label, code.definition, code.created_by) == (
        "off_topic2",
        "Off topic",
        "d",
        alice,
    )


@pytest.mark.parametrize(
    ("slug", "label", "field", "message"),
    [
        ("", "A", "slug", "A code needs a slug"),
        ("Bad-Slug", "A", "slug", "Use lower-case letters, digits and underscores"),
        ("1abc", "A", "slug", "starting with a letter"),
        ("x" * 65, "A", "slug", "at most 64 characters"),
        ("lost_context", "New label", "slug", 'already has a code "lost_context"'),
        ("fresh", "Lost the context", "label", 'already has a code labelled "Lost the context"'),
        ("fresh", "  ", "label", "A code needs a label."),
        ("fresh", "y" * 101, "label", "at most 100 characters"),
        ("error_description", "A", "slug", '"error_description" names a column of the exports'),
        ("description_codes", "A", "slug", '"description_codes" names a column of the exports'),
        ("empathy", "A", "slug", '"empathy" names a column of the exports'),
    ],
)
def test_bad_codes_are_refused(codebook, coding_stage, slug, label, field, message):
    refused(lambda: code_create(study=coding_stage.study, slug=slug, label=label), field, message)


def test_a_too_long_definition_is_refused(codebook, coding_stage):
    refused(
        lambda: code_create(study=coding_stage.study, slug="z", label="Z", definition="d" * 2001),
        "definition",
        "at most 2,000 characters (it has 2,001)",
    )


def test_the_same_slug_in_another_study_is_fine(codebook, other_study):
    assert code_create(study=other_study, slug="lost_context", label="Lost the context").pk


# --- coders -----------------------------------------------------------------------------


def test_the_first_coder_is_primary_until_another_is_chosen(coding_stage, alice, bob):
    study = coding_stage.study
    first = coder_join(study=study, user=alice)
    second = coder_join(study=study, user=bob)
    assert coder_join(study=study, user=alice) == first  # idempotent
    # The first coder is marked primary on joining (under the study's row lock).
    assert first.is_primary and not second.is_primary
    assert Coder.objects.primary(study) == first
    coder_make_primary(coder=second)
    assert Coder.objects.primary(study) == second
    coder_make_primary(coder=first)
    assert Coder.objects.primary(study) == first
    assert list(Coder.objects.filter(is_primary=True)) == [first]


def test_non_staff_cannot_become_coders(coding_stage):
    user = make_staff("carol")
    user.is_staff = False
    refused(lambda: coder_join(study=coding_stage.study, user=user), "user", "Only active staff")


# --- codings ----------------------------------------------------------------------------


def test_a_coding_is_saved_and_replaced_by_its_coder(coding_stage, codebook, alice):
    coder = coder_join(study=coding_stage.study, user=alice)
    judgement = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    coding_save(coder=coder, judgement=judgement, codes=codebook.values(), user=alice)
    coding = coding_save(coder=coder, judgement=judgement, uninformative=True)
    assert DescriptionCoding.objects.count() == 1
    assert coding.uninformative and not coding.codes.exists()
    coding_save(coder=coder, judgement=judgement, codes=[codebook["lost"]])
    assert list(DescriptionCoding.objects.get().codes.values_list("slug", flat=True)) == [
        "lost_context"
    ]
    assert DescriptionCoding.objects.get().uninformative is False


def test_two_coders_keep_their_own_codings(coding_stage, codebook, alice, bob):
    study = coding_stage.study
    judgement = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    coding_save(coder=coder_join(study=study, user=alice), judgement=judgement, uninformative=True)
    coding_save(
        coder=coder_join(study=study, user=bob), judgement=judgement, codes=[codebook["parrot"]]
    )
    rows = {c.coder.user.username: c for c in DescriptionCoding.objects.all()}
    assert rows["alice"].uninformative and not rows["alice"].codes.exists()
    assert list(rows["bob"].codes.all()) == [codebook["parrot"]]


@pytest.fixture
def setup(coding_stage, codebook, alice):
    coder = coder_join(study=coding_stage.study, user=alice)
    judgement = Judgement.objects.get(pk=coded_descriptions(coding_stage)[0])
    return coder, judgement


def test_codes_of_another_study_are_refused(setup, other_study):
    coder, judgement = setup
    foreign = code_create(study=other_study, slug="foreign", label="Foreign")
    refused(
        lambda: coding_save(coder=coder, judgement=judgement, codes=[foreign]),
        "codes",
        "Not codes of this study: foreign.",
    )


def test_an_empty_coding_is_refused(setup):
    coder, judgement = setup
    refused(
        lambda: coding_save(coder=coder, judgement=judgement),
        "codes",
        "Choose at least one code, or mark the description uninformative.",
    )


def test_uninformative_with_codes_is_refused(setup, codebook):
    coder, judgement = setup
    refused(
        lambda: coding_save(
            coder=coder, judgement=judgement, codes=[codebook["lost"]], uninformative=True
        ),
        "codes",
        "An uninformative description gets no codes",
    )


def test_a_judgement_without_a_description_is_refused(setup, coding_stage):
    coder, _ = setup
    plain = Judgement.objects.filter(assignment__stage=coding_stage, coherent=True).first()
    refused(
        lambda: coding_save(coder=coder, judgement=plain, uninformative=True),
        "judgement",
        "This answer has no description to code.",
    )


def test_a_judgement_of_another_study_is_refused(setup, bob, other_study):
    _, judgement = setup
    foreign_coder = coder_join(study=other_study, user=bob)
    refused(
        lambda: coding_save(coder=foreign_coder, judgement=judgement, uninformative=True),
        "judgement",
        "This answer belongs to another study.",
    )


def test_a_description_of_an_unsubmitted_batch_is_refused(setup, coding_stage):
    coder, _ = setup
    open_one = Judgement.objects.filter(
        assignment__stage=coding_stage, assignment__submitted_at__isnull=True
    ).exclude(error_description="")[0]
    refused(
        lambda: coding_save(coder=coder, judgement=open_one, uninformative=True),
        "judgement",
        "its batch was not submitted",
    )


def test_writing_another_coders_coding_is_refused(setup, bob):
    coder, judgement = setup  # alice's
    refused(
        lambda: coding_save(coder=coder, judgement=judgement, uninformative=True, user=bob),
        "coder",
        "You can only save your own coding.",
    )
