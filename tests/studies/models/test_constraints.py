"""Database invariants: each one tried through a raw ORM write (which must hit the
database constraint) and, where a service writes the same rows, through the service
(which must refuse with a readable ValidationError before touching the database).

Raw writes name the constraint they expect to trip, so a test cannot pass because of
some other failure (a NOT NULL column the test forgot, a trigger). Cross-table rules
are PostgreSQL triggers (migration 0002); those tests are marked ``postgres``.
"""

import json
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import UniqueConstraint
from django.utils import timezone

from analysis.models import AnalysisRun
from studies.datafiles.materials import materials_import
from studies.models import (
    CHECK_MESSAGES,
    Annotator,
    AnnotatorGroup,
    Assignment,
    Batch,
    BatchItem,
    DialogueContext,
    ErrorCategory,
    Judgement,
    Reflection,
    Stage,
    StageGroupWait,
    Study,
)
from studies.services import (
    Answer,
    annotator_validate,
    annotators_create,
    assignment_create,
    judgement_record,
    study_category_bits,
    study_create,
)
from tests.conftest import materials_doc

TURNS = [{"role": "therapist", "text": "How are you?"}, {"role": "client", "text": "Tired."}]


@contextmanager
def violates(model, *names):
    """Expect the block to raise IntegrityError from one of the named constraints of
    ``model`` (several names when a row breaks more than one rule at once)."""
    constraints = {c.name: c for c in model._meta.constraints}
    unknown = [n for n in names if n not in constraints]
    assert not unknown, f"{model.__name__} has no constraint {unknown}"
    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        yield
    message = str(excinfo.value)
    assert any(name in message for name in names), f"{message!r} does not mention {names}"


@contextmanager
def trigger_rejects(message):
    """Expect a PostgreSQL trigger of migration 0002 to refuse the write."""
    with pytest.raises(IntegrityError, match=message), transaction.atomic():
        yield


def messages(excinfo, key=NON_FIELD_ERRORS) -> str:
    return " ".join(excinfo.value.message_dict[key])


# --- fixtures ------------------------------------------------------------------------


@pytest.fixture
def layperson(study):
    return study.groups.get(name="Layperson")


@pytest.fixture
def annotator(layperson):
    (annotator,) = annotators_create(group=layperson, count=1)
    return annotator


def batch_of(study, position, external_id):
    return Batch.objects.get(
        stage__study=study, stage__position=position, context__external_id=external_id
    )


@pytest.fixture
def batch(loaded_study):
    return batch_of(loaded_study, 1, "dlg-1")


@pytest.fixture
def assignment(annotator, batch):
    return assignment_create(annotator=annotator, batch=batch)


@pytest.fixture
def bits(study):
    return study_category_bits(study_id=study.pk)


@pytest.fixture
def other_study(db):
    """A second study with its own stage, group and two contexts."""
    other = study_create(
        slug="other",
        title="Other study",
        stages=[("Only stage", timedelta(0))],
        groups=["Expert"],
        seed=99,
    )
    materials_import(
        study=other, content=json.dumps(materials_doc(2, stages=("Only stage",))), fmt="json"
    )
    return other


def reflection_in(assignment, kind=Reflection.Kind.SYNTHETIC) -> Reflection:
    return assignment.batch.reflections.filter(kind=kind).order_by("id").first()


# --- Study ---------------------------------------------------------------------------


@pytest.mark.parametrize("slug", ["Pilot", "-pilot", "_pilot", "pi lot", "pi.lot", ""])
def test_study_slug_must_be_lower_case_letters_digits_hyphens_underscores(db, slug):
    with violates(Study, "study_slug_format"):
        Study.objects.create(slug=slug, title="x")


@pytest.mark.parametrize("slug", ["pilot_2", "pilot-study-two", "2026-pilot"])
def test_study_slug_with_digits_hyphens_and_underscores_is_accepted(db, slug):
    Study.objects.create(slug=slug, title="x")


@pytest.mark.parametrize(
    ("slug", "field", "message"),
    [
        ("-pilot", NON_FIELD_ERRORS, CHECK_MESSAGES["study_slug_format"]),
        ("Pilot", NON_FIELD_ERRORS, CHECK_MESSAGES["study_slug_format"]),
        ("pi lot", "slug", "Enter a valid “slug”"),
        ("pi.lot", "slug", "Enter a valid “slug”"),
    ],
)
def test_study_create_rejects_a_badly_formed_slug(db, slug, field, message):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug=slug, title="x")
    assert message in messages(excinfo, field)
    assert not Study.objects.exists()


def test_study_status_must_be_draft_open_or_closed(study):
    with violates(Study, "study_status_valid"):
        Study.objects.create(slug="other", title="x", status="archived")
    with violates(Study, "study_status_valid"):
        Study.objects.filter(pk=study.pk).update(status="archived")


def test_study_create_rejects_an_unknown_status(db):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="pilot", title="x", status="archived")
    assert "Value 'archived' is not a valid choice." in messages(excinfo, "status")
    assert not Study.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "constraint"),
    [
        ("overlap_k", 0, "study_overlap_k_positive"),
        ("batches_per_stage", 0, "study_batches_per_stage_positive"),
        ("batch_time_limit", timedelta(0), "study_time_limit_positive"),
        ("batch_time_limit", timedelta(seconds=-1), "study_time_limit_positive"),
    ],
)
def test_study_counts_and_time_limit_must_be_positive(study, field, value, constraint):
    with violates(Study, constraint):
        Study.objects.create(slug="other", title="x", **{field: value})
    with violates(Study, constraint):
        Study.objects.filter(pk=study.pk).update(**{field: value})


@pytest.mark.parametrize(
    ("field", "value", "constraint"),
    [
        ("overlap_k", 0, "study_overlap_k_positive"),
        ("batches_per_stage", 0, "study_batches_per_stage_positive"),
        ("batch_time_limit", timedelta(0), "study_time_limit_positive"),
    ],
)
def test_study_create_rejects_zero_counts_and_time_limit(db, field, value, constraint):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="pilot", title="x", **{field: value})
    assert CHECK_MESSAGES[constraint] in messages(excinfo)
    assert not Study.objects.exists()


# --- Stage ---------------------------------------------------------------------------


def test_stage_position_is_unique_within_a_study(study):
    with violates(Stage, "stage_position_unique"):
        Stage.objects.create(study=study, position=1, name="Another stage")


def test_stage_name_is_unique_within_a_study(study):
    with violates(Stage, "stage_name_unique"):
        Stage.objects.create(study=study, position=3, name="GPT-2 stage")


def test_same_stage_name_and_position_are_allowed_in_another_study(study):
    other = Study.objects.create(slug="other", title="Other")
    Stage.objects.create(study=other, position=1, name="GPT-2 stage")


def test_study_create_rejects_two_stages_with_the_same_name(db):
    with pytest.raises(ValidationError) as excinfo:
        study_create(
            slug="pilot",
            title="x",
            stages=[("GPT-2 stage", timedelta(0)), ("GPT-2 stage", timedelta(days=1))],
        )
    assert "Stage with this Study and Name already exists." in messages(excinfo)
    assert not Study.objects.exists()
    assert not Stage.objects.exists()


def test_stage_position_starts_at_1(study):
    with violates(Stage, "stage_position_positive"):
        Stage.objects.create(study=study, position=0, name="Stage zero")


def test_stage_min_wait_cannot_be_negative(study):
    with violates(Stage, "stage_min_wait_not_negative"):
        Stage.objects.create(study=study, position=3, name="Late", min_wait=timedelta(seconds=-1))
    with violates(Stage, "stage_min_wait_not_negative"):
        study.stages.filter(position=2).update(min_wait=timedelta(days=-1))


def test_stage_min_wait_of_zero_is_allowed(study):
    stage = Stage.objects.create(study=study, position=3, name="No wait", min_wait=timedelta(0))
    assert stage.min_wait == timedelta(0)


def test_study_create_rejects_a_negative_wait_and_accepts_zero(db):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="pilot", title="x", stages=[("Stage 1", timedelta(seconds=-1))])
    assert "The minimum wait cannot be negative (0 is allowed)." in messages(excinfo)
    assert not Study.objects.exists()
    assert not Stage.objects.exists()

    study = study_create(slug="pilot", title="x", stages=[("Stage 1", timedelta(0))])
    assert study.stages.get().min_wait == timedelta(0)


# --- AnnotatorGroup ------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["Layperson 2", "Layperson ", "Group7", " Expert", "3"])
def test_group_prefix_cannot_end_or_start_with_a_digit_or_space(study, prefix):
    with violates(AnnotatorGroup, "group_prefix_format"):
        AnnotatorGroup.objects.create(study=study, name="New group", pseudonym_prefix=prefix)


@pytest.mark.parametrize("prefix", ["L", "Crowd worker", "Expert-B"])
def test_group_prefix_without_trailing_digit_or_space_is_accepted(study, prefix):
    AnnotatorGroup.objects.create(study=study, name="New group", pseudonym_prefix=prefix)


@pytest.mark.parametrize("name", ["Layperson 2", "Layperson "])
def test_study_create_rejects_a_group_prefix_ending_in_digit_or_space(db, name):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="pilot", title="x", groups=[name])
    assert CHECK_MESSAGES["group_prefix_format"] in messages(excinfo)
    assert not Study.objects.exists()
    assert not AnnotatorGroup.objects.exists()


def test_group_name_is_unique_within_a_study(study):
    with violates(AnnotatorGroup, "group_name_unique"):
        AnnotatorGroup.objects.create(study=study, name="Layperson", pseudonym_prefix="Lay")


def test_group_prefix_is_unique_within_a_study(study):
    with violates(AnnotatorGroup, "group_prefix_unique"):
        AnnotatorGroup.objects.create(study=study, name="Lay", pseudonym_prefix="Layperson")


def test_study_create_rejects_two_groups_with_the_same_name(db):
    with pytest.raises(ValidationError) as excinfo:
        study_create(slug="pilot", title="x", groups=["Layperson", "Layperson"])
    text = messages(excinfo)
    assert "Annotator group with this Study and Name already exists." in text
    assert "Annotator group with this Study and Pseudonym prefix already exists." in text
    assert not Study.objects.exists()
    assert not AnnotatorGroup.objects.exists()


# --- ErrorCategory -------------------------------------------------------------------


def category(study, **fields):
    values = {"slug": "new_category", "label": "New category", "definition": "d", "bit": 9}
    values.update(fields)
    return ErrorCategory.objects.create(study=study, **values)


@pytest.mark.parametrize("slug", ["Off_topic", "off-topic", "2nd", "off topic", ""])
def test_category_slug_must_be_lower_case_letters_digits_underscores(study, slug):
    with violates(ErrorCategory, "category_slug_format"):
        category(study, slug=slug)


def test_category_bit_above_30_is_rejected(study):
    with violates(ErrorCategory, "category_bit_range"):
        category(study, bit=31)


def test_category_bit_below_0_is_rejected(study):
    # PositiveSmallIntegerField's own column check, not one of the Meta constraints.
    with pytest.raises(IntegrityError), transaction.atomic():
        category(study, bit=-1)


def test_category_bits_0_to_30_are_accepted(study):
    study.categories.all().delete()
    category(study, slug="lowest", label="Lowest", bit=0)
    category(study, slug="highest", label="Highest", bit=30)


def test_category_slug_is_unique_within_a_study(study):
    with violates(ErrorCategory, "category_slug_unique"):
        category(study, slug="malformed")


def test_category_bit_is_unique_within_a_study(study):
    taken = study.categories.get(slug="malformed").bit
    with violates(ErrorCategory, "category_bit_unique"):
        category(study, bit=taken)


def test_category_label_is_unique_within_a_study(study):
    with violates(ErrorCategory, "category_label_unique"):
        category(study, label="Malformed")


# --- DialogueContext -----------------------------------------------------------------


def test_context_external_id_is_unique_within_a_study(loaded_study):
    with violates(DialogueContext, "context_external_id_unique"):
        DialogueContext.objects.create(study=loaded_study, external_id="dlg-1", turns=TURNS)


def test_context_external_id_may_repeat_in_another_study(loaded_study):
    other = Study.objects.create(slug="other", title="Other")
    DialogueContext.objects.create(study=other, external_id="dlg-1", turns=TURNS)


def test_context_validate_rejects_a_duplicate_external_id(loaded_study):
    with pytest.raises(ValidationError) as excinfo:
        # What the admin form runs: model validation, constraints included.
        DialogueContext(study=loaded_study, external_id="dlg-1", turns=TURNS).full_clean()
    assert "Dialogue context with this Study and External id already exists." in messages(excinfo)


def test_context_external_id_cannot_be_empty(study):
    with violates(DialogueContext, "context_external_id_not_empty"):
        DialogueContext.objects.create(study=study, external_id="", turns=TURNS)


def test_context_validate_rejects_an_empty_external_id(study):
    with pytest.raises(ValidationError) as excinfo:
        DialogueContext(study=study, external_id="", turns=TURNS).full_clean()
    assert "This field cannot be blank." in messages(excinfo, "external_id")


# --- Reflection ----------------------------------------------------------------------


@pytest.fixture
def context(study):
    return DialogueContext.objects.create(study=study, external_id="dlg-x", turns=TURNS)


def test_reflection_text_cannot_be_empty(context):
    with violates(Reflection, "reflection_text_not_empty"):
        Reflection.objects.create(context=context, text="", source="GPT-2", kind="synthetic")


def test_reflection_source_cannot_be_empty(context):
    with violates(Reflection, "reflection_source_not_empty"):
        Reflection.objects.create(context=context, text="A text.", source="", kind="synthetic")


def test_reflection_kind_must_be_known(context):
    with violates(Reflection, "reflection_kind_valid"):
        Reflection.objects.create(context=context, text="A text.", source="GPT-2", kind="model")


@pytest.mark.parametrize(
    ("kind", "source"),
    [("human", "GPT-2"), ("synthetic", "Human"), ("attention_check", "Human")],
)
def test_reflection_kind_human_goes_with_source_human_and_only_with_it(context, kind, source):
    with violates(Reflection, "reflection_human_kind_matches_source"):
        Reflection.objects.create(context=context, text="A text.", source=source, kind=kind)


def test_reflection_kind_cannot_be_changed_away_from_its_source(context):
    human = Reflection.objects.create(context=context, text="A text.", source="Human", kind="human")
    with violates(Reflection, "reflection_human_kind_matches_source"):
        Reflection.objects.filter(pk=human.pk).update(kind="synthetic")


def test_a_context_has_at_most_one_human_reflection(context):
    Reflection.objects.create(context=context, text="First.", source="Human", kind="human")
    with violates(Reflection, "reflection_one_human_per_context"):
        Reflection.objects.create(context=context, text="Second.", source="Human", kind="human")


def test_many_synthetic_reflections_per_context_are_allowed(context):
    Reflection.objects.bulk_create(
        Reflection(context=context, text=f"Candidate {n}.", source="GPT-2", kind="synthetic")
        for n in range(3)
    )
    assert context.reflections.count() == 3


def test_same_source_and_text_twice_in_one_context_is_rejected(context):
    Reflection.objects.create(context=context, text="Same.", source="GPT-2", kind="synthetic")
    with violates(Reflection, "reflection_unique_in_context"):
        Reflection.objects.create(context=context, text="Same.", source="GPT-2", kind="synthetic")


def test_no_unique_index_holds_a_text_that_can_exceed_the_index_row_limit():
    """Every unique constraint and unique field, in every app, on columns whose values
    fit a PostgreSQL index row (2,704 bytes; 4 bytes per character at most): long
    texts go through a hash (``reflection_unique_in_context``)."""
    from django.apps import apps
    from django.db import models

    def width(field) -> int:
        if isinstance(field, models.TextField | models.JSONField):
            return 10**9  # unbounded
        if isinstance(field, models.CharField):
            return 4 * field.max_length
        return 8

    too_wide = []
    for model in apps.get_models():
        opts = model._meta
        groups = [[f.name] for f in opts.local_fields if f.unique and not f.primary_key]
        groups += [list(c.fields) for c in opts.constraints if isinstance(c, UniqueConstraint)]
        for names in groups:
            if sum(width(opts.get_field(name)) for name in names) > 2704 - 100:
                too_wide.append(f"{opts.label}: {names}")
    assert too_wide == []


def test_long_reflections_are_stored_and_still_unique_in_their_context(context):
    """The unique index holds a hash of the text: PostgreSQL refuses index rows over
    2,704 bytes, which a text of a few KB (that does not compress) would need."""
    text = "".join(chr(0x4E00 + (n * 7919) % 20000) for n in range(5000))  # 15 KB of UTF-8
    Reflection.objects.create(context=context, text=text, source="GPT-2", kind="synthetic")
    Reflection.objects.create(context=context, text=text + ".", source="GPT-2", kind="synthetic")
    with violates(Reflection, "reflection_unique_in_context"):
        Reflection.objects.create(context=context, text=text, source="GPT-2", kind="synthetic")
    duplicate = Reflection(context=context, text=text, source="GPT-2", kind="synthetic")
    with pytest.raises(ValidationError) as excinfo:
        duplicate.full_clean()
    assert excinfo.value.messages == [
        "This context already has a reflection with this source and text."
    ]
    assert Reflection.objects.filter(context=context).count() == 2


# --- Batch and BatchItem -------------------------------------------------------------


def test_one_batch_per_stage_and_context(batch):
    with violates(Batch, "batch_one_per_stage_context"):
        Batch.objects.create(stage=batch.stage, context=batch.context)


def test_a_reflection_appears_once_per_batch(batch):
    human = batch.reflections.get(kind=Reflection.Kind.HUMAN)
    with violates(BatchItem, "batch_item_unique"):
        BatchItem.objects.create(batch=batch, reflection=human, position=99)


def test_batch_item_positions_are_unique_within_a_batch(batch):
    # A reflection of the same context that is not in this batch (the next stage's).
    outsider = (
        Reflection.objects.filter(context=batch.context, kind=Reflection.Kind.SYNTHETIC)
        .exclude(batches=batch)
        .first()
    )
    with violates(BatchItem, "batch_item_position_unique"):
        BatchItem.objects.bulk_create([BatchItem(batch=batch, reflection=outsider, position=1)])


# --- Annotator -----------------------------------------------------------------------


def test_annotator_pseudonym_is_unique_within_a_study(study, annotator):
    expert = study.groups.get(name="Expert")
    with violates(Annotator, "annotator_pseudonym_unique"):
        Annotator.objects.create(study=study, group=expert, number=1, pseudonym="Layperson 1")


def test_annotator_number_is_unique_within_a_group(study, annotator):
    with violates(Annotator, "annotator_number_unique"):
        Annotator.objects.create(
            study=study, group=annotator.group, number=1, pseudonym="Layperson one"
        )


def test_annotator_number_starts_at_1(study, layperson):
    with violates(Annotator, "annotator_number_positive"):
        Annotator.objects.create(study=study, group=layperson, number=0, pseudonym="Layperson 0")


def test_annotator_consent_version_needs_a_consent_time(study, annotator):
    version = study.consent_versions.get()
    with violates(Annotator, "annotator_consent_version_and_time"):
        Annotator.objects.filter(pk=annotator.pk).update(consented_version=version)


def test_annotator_consent_time_needs_a_consent_version(annotator):
    with violates(Annotator, "annotator_consent_version_and_time"):
        Annotator.objects.filter(pk=annotator.pk).update(consented_at=timezone.now())


def test_annotator_consent_version_with_time_is_accepted(study, annotator):
    version = study.consent_versions.get()
    Annotator.objects.filter(pk=annotator.pk).update(
        consented_version=version, consented_at=timezone.now()
    )


def test_annotator_platform_id_needs_a_platform(study, layperson):
    with violates(Annotator, "annotator_platform_id_with_platform"):
        Annotator.objects.create(
            study=study,
            group=layperson,
            number=1,
            pseudonym="Layperson 1",
            platform_participant_id="5f3c9a",
        )


def test_annotator_platform_needs_a_platform_id(annotator):
    with violates(Annotator, "annotator_platform_id_with_platform"):
        Annotator.objects.filter(pk=annotator.pk).update(platform="prolific")


def test_annotator_platform_must_be_known(annotator):
    with violates(Annotator, "annotator_platform_valid"):
        Annotator.objects.filter(pk=annotator.pk).update(
            platform="upwork", platform_participant_id="x1"
        )


def test_a_platform_participant_joins_a_study_once(study, layperson):
    first, second = annotators_create(group=layperson, count=2)
    Annotator.objects.filter(pk=first.pk).update(platform="prolific", platform_participant_id="p1")
    with violates(Annotator, "annotator_platform_id_unique"):
        Annotator.objects.filter(pk=second.pk).update(
            platform="prolific", platform_participant_id="p1"
        )


def test_annotator_validate_rejects_a_pseudonym_that_does_not_match_group_and_number(
    study, layperson
):
    with pytest.raises(ValidationError) as excinfo:
        annotator_validate(
            annotator=Annotator(study=study, group=layperson, number=2, pseudonym="Layperson 3")
        )
    assert 'The pseudonym must be "Layperson 2".' in messages(excinfo, "pseudonym")


# --- Assignment ----------------------------------------------------------------------


def test_an_annotator_gets_a_batch_once(assignment):
    with violates(Assignment, "assignment_unique"):
        Assignment.objects.create(
            annotator=assignment.annotator,
            batch=assignment.batch,
            group=assignment.group,
            stage=assignment.stage,
            group_slot=2,
            annotator_slot=2,
            order=assignment.order,
            assigned_at=timezone.now(),
            expires_at=timezone.now() + timedelta(minutes=30),
        )


def test_assignment_create_refuses_the_same_batch_twice(assignment):
    with pytest.raises(ValidationError) as excinfo:
        assignment_create(annotator=assignment.annotator, batch=assignment.batch)
    assert "Layperson 1 already has this batch." in messages(excinfo, "batch")
    assert Assignment.objects.count() == 1


def test_assignment_status_must_be_known(assignment):
    with violates(Assignment, "assignment_status_valid"):
        Assignment.objects.filter(pk=assignment.pk).update(status="done")


def test_submitted_assignment_needs_a_submission_time(assignment):
    with violates(Assignment, "assignment_submitted_has_time"):
        Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.SUBMITTED)


@pytest.mark.parametrize("status", [Assignment.Status.ASSIGNED, Assignment.Status.IN_PROGRESS])
def test_open_assignment_cannot_have_a_submission_time(assignment, status):
    with violates(Assignment, "assignment_open_not_closed"):
        Assignment.objects.filter(pk=assignment.pk).update(
            status=status, submitted_at=timezone.now()
        )


def test_submitted_assignment_with_time_is_accepted(assignment):
    Assignment.objects.filter(pk=assignment.pk).update(
        status=Assignment.Status.SUBMITTED, submitted_at=timezone.now()
    )


def test_assignment_cannot_start_before_it_was_assigned(assignment):
    with violates(Assignment, "assignment_started_after_assigned"):
        Assignment.objects.filter(pk=assignment.pk).update(
            started_at=assignment.assigned_at - timedelta(minutes=1)
        )


# --- Judgement -----------------------------------------------------------------------


def judge(assignment, reflection=None, **fields):
    return Judgement.objects.create(
        assignment=assignment, reflection=reflection or reflection_in(assignment), **fields
    )


def test_one_judgement_per_assignment_and_reflection(assignment):
    reflection = reflection_in(assignment)
    judgement_record(
        assignment=assignment, reflection=reflection, answer=Answer(coherent=True, empathy=4)
    )
    with violates(Judgement, "judgement_unique"):
        Judgement.objects.bulk_create(
            [Judgement(assignment=assignment, reflection=reflection, coherent=False)]
        )


def test_categories_only_on_a_no(assignment, bits):
    with violates(Judgement, "judgement_categories_only_when_incoherent"):
        judge(assignment, coherent=True, error_flags=1 << bits["off_topic"])


def test_most_evident_error_only_on_a_no(assignment, bits):
    # With no flags set the row also breaks "most evident among selected"; either will do.
    with violates(Judgement, "judgement_mee_only_when_incoherent", "judgement_mee_among_selected"):
        judge(assignment, coherent=True, most_evident_bit=bits["off_topic"])


def test_most_evident_error_must_be_among_the_selected(assignment, bits):
    with violates(Judgement, "judgement_mee_among_selected"):
        judge(
            assignment,
            coherent=False,
            error_flags=1 << bits["malformed"],
            most_evident_bit=bits["off_topic"],
        )


def test_most_evident_error_among_the_selected_is_accepted(assignment, bits):
    judge(
        assignment,
        coherent=False,
        error_flags=(1 << bits["malformed"]) | (1 << bits["parroting"]),
        most_evident_bit=bits["parroting"],
    )


def test_empathy_only_on_a_yes(assignment, bits):
    with violates(Judgement, "judgement_empathy_only_when_coherent"):
        judge(assignment, coherent=False, error_flags=1 << bits["off_topic"], empathy=3)


@pytest.mark.parametrize("empathy", [0, 6])
def test_empathy_must_be_1_to_5(assignment, empathy):
    with violates(Judgement, "judgement_empathy_only_when_coherent"):
        judge(assignment, coherent=True, empathy=empathy)


@pytest.mark.parametrize("empathy", [1, 5])
def test_empathy_1_and_5_are_accepted(assignment, empathy):
    judge(assignment, coherent=True, empathy=empathy)


def test_seconds_spent_cannot_be_negative(assignment):
    with violates(Judgement, "judgement_seconds_not_negative"):
        judge(assignment, coherent=True, empathy=3, seconds_spent=-0.5)


def test_a_saved_judgement_cannot_be_updated_into_an_invalid_one(assignment, bits):
    judgement = judge(assignment, coherent=True, empathy=3)
    with violates(Judgement, "judgement_categories_only_when_incoherent"):
        Judgement.objects.filter(pk=judgement.pk).update(error_flags=1 << bits["malformed"])


@pytest.mark.parametrize(
    ("answer", "field", "message"),
    [
        (
            Answer(coherent=True, categories=frozenset({"off_topic"}), empathy=3),
            "categories",
            "Error categories can only be chosen when the answer is No.",
        ),
        (
            Answer(coherent=True, most_evident="off_topic", empathy=3),
            "most_evident",
            "A most evident error can only be chosen when the answer is No.",
        ),
        (
            Answer(coherent=False, categories=frozenset({"malformed"}), most_evident="off_topic"),
            "most_evident",
            "The most evident error must be one of the chosen categories.",
        ),
        (
            Answer(coherent=False, categories=frozenset({"off_topic"}), empathy=3),
            "empathy",
            "The agreement rating is only asked when the answer is Yes.",
        ),
        (
            Answer(coherent=True, empathy=0),
            "empathy",
            "The agreement rating must be between 1 and 5.",
        ),
        (
            Answer(coherent=True, empathy=6),
            "empathy",
            "The agreement rating must be between 1 and 5.",
        ),
        (
            Answer(coherent=True, empathy=3, seconds_spent=-0.5),
            "seconds_spent",
            "Time spent cannot be negative.",
        ),
    ],
    ids=[
        "categories-on-yes",
        "most-evident-on-yes",
        "most-evident-not-selected",
        "empathy-on-no",
        "empathy-0",
        "empathy-6",
        "negative-seconds",
    ],
)
def test_judgement_record_refuses_what_the_database_forbids(assignment, answer, field, message):
    with pytest.raises(ValidationError) as excinfo:
        judgement_record(assignment=assignment, reflection=reflection_in(assignment), answer=answer)
    assert message in messages(excinfo, field)
    assert not Judgement.objects.exists()


def test_judgement_record_revises_instead_of_adding_a_second_row(assignment):
    reflection = reflection_in(assignment)
    for empathy in (2, 4):
        judgement_record(
            assignment=assignment, reflection=reflection, answer=Answer(True, empathy=empathy)
        )
    assert Judgement.objects.get().empathy == 4


# --- AnalysisRun ---------------------------------------------------------------------


def test_finished_analysis_needs_a_result(study):
    with violates(AnalysisRun, "analysis_run_done_has_result"):
        AnalysisRun.objects.create(study=study, status="done", finished_at=timezone.now())


def test_failed_analysis_needs_an_error(study):
    with violates(AnalysisRun, "analysis_run_failed_has_error"):
        AnalysisRun.objects.create(study=study, status="failed", finished_at=timezone.now())


def test_analysis_progress_cannot_exceed_100(study):
    with violates(AnalysisRun, "analysis_run_progress_range"):
        AnalysisRun.objects.create(study=study, progress=101)


def test_analysis_status_must_be_known(study):
    with violates(AnalysisRun, "analysis_run_status_valid"):
        AnalysisRun.objects.create(study=study, status="paused")


def test_complete_analysis_runs_are_accepted(study):
    now = timezone.now()
    AnalysisRun.objects.create(study=study, status="done", result={}, finished_at=now)
    AnalysisRun.objects.create(study=study, status="failed", error="boom", finished_at=now)
    AnalysisRun.objects.create(study=study, progress=100)


# --- Cross-table rules: services everywhere, triggers on PostgreSQL ------------------


def test_annotator_in_a_group_of_another_study_is_rejected_by_postgres(
    study, annotator, other_study
):
    expert = other_study.groups.get()
    with trigger_rejects("annotator group belongs to another study"):
        Annotator.objects.create(study=study, group=expert, number=1, pseudonym="Expert 1")
    with trigger_rejects("annotator group belongs to another study"):
        Annotator.objects.filter(pk=annotator.pk).update(group=expert)


def test_annotator_validate_rejects_a_group_of_another_study(study, other_study):
    expert = other_study.groups.get()
    with pytest.raises(ValidationError) as excinfo:
        annotator_validate(
            annotator=Annotator(study=study, group=expert, number=1, pseudonym="Expert 1")
        )
    assert "This group belongs to another study." in messages(excinfo, "group")


def test_batch_with_stage_and_context_of_different_studies_is_rejected_by_postgres(
    loaded_study, other_study
):
    context = loaded_study.contexts.get(external_id="dlg-1")
    with trigger_rejects("batch stage and context belong to different studies"):
        Batch.objects.create(stage=other_study.stages.get(), context=context)


def test_batch_item_with_a_reflection_of_another_context_is_rejected_by_postgres(batch):
    foreign = Reflection.objects.get(
        context__study=batch.stage.study, context__external_id="dlg-2", kind="human"
    )
    with trigger_rejects("batch item reflection belongs to another context than its batch"):
        BatchItem.objects.create(batch=batch, reflection=foreign, position=99)


def test_judgement_for_a_reflection_outside_the_batch_is_rejected_by_postgres(assignment):
    # Same context, other stage: a real reflection, just not in this batch.
    outsider = Reflection.objects.filter(
        context=assignment.batch.context, kind="synthetic"
    ).exclude(batches=assignment.batch)[0]
    with trigger_rejects("judgement reflection is not part of the batch of its assignment"):
        Judgement.objects.create(
            assignment=assignment, reflection=outsider, coherent=True, empathy=3
        )


def test_judgement_record_rejects_a_reflection_outside_the_batch(assignment):
    outsider = Reflection.objects.filter(
        context=assignment.batch.context, kind="synthetic"
    ).exclude(batches=assignment.batch)[0]
    with pytest.raises(ValidationError) as excinfo:
        judgement_record(assignment=assignment, reflection=outsider, answer=Answer(True, empathy=3))
    assert "This response candidate is not part of this batch." in messages(excinfo, "reflection")
    assert not Judgement.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.ASSIGNED


def test_assignment_for_a_batch_of_another_study_is_rejected_by_postgres(annotator, other_study):
    foreign = Batch.objects.filter(stage__study=other_study).first()
    now = timezone.now()
    with trigger_rejects("assignment group, stage or study does not match its annotator"):
        Assignment.objects.create(
            annotator=annotator,
            batch=foreign,
            group=annotator.group,
            stage=foreign.stage,
            group_slot=1,
            annotator_slot=1,
            order=[1],
            assigned_at=now,
            expires_at=now + timedelta(minutes=30),
        )


def _raw_assignment(annotator, batch, **fields):
    now = timezone.now()
    values = {
        "group": annotator.group,
        "stage": batch.stage,
        "group_slot": 1,
        "annotator_slot": 1,
        "order": [1],
        "assigned_at": now,
        "expires_at": now + timedelta(minutes=30),
        **fields,
    }
    return Assignment.objects.create(annotator=annotator, batch=batch, **values)


def test_assignment_group_or_stage_must_match_annotator_and_batch_on_postgres(
    annotator, batch, study
):
    expert = study.groups.get(name="Expert")
    with trigger_rejects("assignment group, stage or study does not match"):
        _raw_assignment(annotator, batch, group=expert)
    other_stage = study.stages.exclude(pk=batch.stage_id).get()
    with trigger_rejects("assignment group, stage or study does not match"):
        _raw_assignment(annotator, batch, stage=other_stage)


def test_assignment_slots_beyond_k_or_m_are_rejected_by_postgres(annotator, batch):
    with trigger_rejects("assignment slot exceeds the stage's overlap k or batches per stage m"):
        _raw_assignment(annotator, batch, group_slot=4)  # k = 3
    with trigger_rejects("assignment slot exceeds the stage's overlap k or batches per stage m"):
        _raw_assignment(annotator, batch, annotator_slot=6)  # m = 5


def test_a_stage_of_its_own_k_and_m_bounds_the_slots(annotator, batch):
    """A stage's own k and m replace the study's (3 and 5) for its slots, either way."""
    Stage.objects.filter(pk=batch.stage_id).update(overlap_k=1, batches_per_stage=6)
    with trigger_rejects("assignment slot exceeds the stage's overlap k or batches per stage m"):
        _raw_assignment(annotator, batch, group_slot=2)
    assert _raw_assignment(annotator, batch, annotator_slot=6).annotator_slot == 6
    with violates(Stage, "stage_overlap_k_positive"):
        Stage.objects.filter(pk=batch.stage_id).update(overlap_k=0)
    with violates(Stage, "stage_batches_per_stage_positive"):
        Stage.objects.filter(pk=batch.stage_id).update(batches_per_stage=0)


def test_an_assignment_of_a_group_not_taking_part_is_rejected_by_postgres(annotator, batch, study):
    stage = Stage.objects.get(pk=batch.stage_id)
    stage.groups.set([study.groups.get(name="Expert")])
    with trigger_rejects("the assignment's group does not take part in its stage"):
        _raw_assignment(annotator, batch)
    assert not Assignment.objects.exists()
    stage.groups.add(annotator.group)
    assert _raw_assignment(annotator, batch).group_id == annotator.group_id


def test_a_stage_takes_groups_and_group_waits_of_its_own_study_only(study):
    other = study_create(title="Other", slug="other")
    foreign = AnnotatorGroup.objects.create(study=other, name="Foreign", pseudonym_prefix="F")
    stage = study.stages.first()
    with trigger_rejects("a stage takes only groups of its own study"):
        stage.groups.add(foreign)
    with trigger_rejects("a group's own wait is for a stage of its own study"):
        StageGroupWait.objects.create(stage=stage, group=foreign, min_wait=timedelta(0))
    with violates(StageGroupWait, "stage_group_wait_not_negative"):
        StageGroupWait.objects.create(
            stage=stage, group=study.groups.first(), min_wait=timedelta(days=-1)
        )
    assert not StageGroupWait.objects.exists() and not stage.groups.exists()


def test_two_active_assignments_cannot_share_a_group_slot(loaded_study, layperson, batch):
    first, second = annotators_create(group=layperson, count=2)
    _raw_assignment(first, batch, group_slot=1)
    with violates(Assignment, "assignment_group_slot_unique"):
        _raw_assignment(second, batch, group_slot=1)


def test_an_expired_assignment_releases_its_group_slot(loaded_study, layperson, batch):
    first, second = annotators_create(group=layperson, count=2)
    now = timezone.now()
    _raw_assignment(first, batch, group_slot=1, status="expired", expired_at=now)
    assert _raw_assignment(second, batch, group_slot=1).group_slot == 1


def test_an_annotator_cannot_hold_two_active_assignments_in_one_workload_slot(
    annotator, loaded_study
):
    stage1 = loaded_study.stages.get(position=1)
    first, second = Batch.objects.filter(stage=stage1)[:2]
    _raw_assignment(annotator, first, annotator_slot=1)
    with violates(Assignment, "assignment_annotator_slot_unique"):
        _raw_assignment(annotator, second, annotator_slot=1)


def test_rejected_assignment_needs_a_reason_and_time(assignment):
    with violates(Assignment, "assignment_rejected_has_reason"):
        Assignment.objects.filter(pk=assignment.pk).update(
            status="rejected", rejected_at=timezone.now(), rejection_reason=""
        )


def test_expired_assignment_needs_its_time(assignment):
    with violates(Assignment, "assignment_expired_has_time"):
        Assignment.objects.filter(pk=assignment.pk).update(status="expired")


def test_assignment_deadline_must_follow_assignment(assignment):
    with violates(Assignment, "assignment_expires_after_assigned"):
        Assignment.objects.filter(pk=assignment.pk).update(expires_at=assignment.assigned_at)


def test_assignment_create_rejects_a_batch_of_another_study(annotator, other_study):
    foreign = Batch.objects.filter(stage__study=other_study).first()
    with pytest.raises(ValidationError) as excinfo:
        assignment_create(annotator=annotator, batch=foreign)
    assert "This batch belongs to another study." in messages(excinfo, "batch")
    assert not Assignment.objects.exists()


# The triggers above fire on the row that points across tables; the guard triggers
# stop the rows it points at from being moved or removed underneath it.


def test_moving_a_batched_reflection_to_another_context_is_rejected_by_postgres(batch):
    synthetic = batch.reflections.filter(kind="synthetic").first()
    other_context = batch.stage.study.contexts.get(external_id="dlg-2")
    with trigger_rejects("a reflection in a batch cannot move to another context"):
        Reflection.objects.filter(pk=synthetic.pk).update(context=other_context)


def test_moving_a_batch_to_another_context_is_rejected_by_postgres(batch):
    # The batch keeps its items, whose reflections belong to dlg-1.
    fresh = DialogueContext.objects.create(
        study=batch.stage.study, external_id="dlg-new", turns=TURNS
    )
    with trigger_rejects("a batch with items cannot move to another context"):
        Batch.objects.filter(pk=batch.pk).update(context=fresh)


def test_moving_a_group_with_annotators_to_another_study_is_rejected_by_postgres(
    annotator, other_study
):
    with trigger_rejects("a group with annotators cannot move to another study"):
        AnnotatorGroup.objects.filter(pk=annotator.group_id).update(study=other_study)


def test_moving_a_stage_or_context_with_batches_to_another_study_is_rejected_by_postgres(
    batch, other_study
):
    with trigger_rejects("a stage with batches cannot move to another study"):
        Stage.objects.filter(pk=batch.stage_id).update(study=other_study)
    with trigger_rejects("a context with batches cannot move to another study"):
        DialogueContext.objects.filter(pk=batch.context_id).update(study=other_study)


def test_removing_or_moving_a_judged_batch_item_is_rejected_by_postgres(assignment):
    reflection = reflection_in(assignment)
    judgement_record(
        assignment=assignment, reflection=reflection, answer=Answer(coherent=True, empathy=3)
    )
    item = BatchItem.objects.get(batch=assignment.batch, reflection=reflection)
    with trigger_rejects("a batch item that has judgements cannot be moved or removed"):
        BatchItem.objects.filter(pk=item.pk).delete()
    other = BatchItem.objects.filter(batch=assignment.batch).exclude(pk=item.pk).first()
    with trigger_rejects("a batch item that has judgements cannot be moved or removed"):
        BatchItem.objects.filter(pk=item.pk).update(reflection=other.reflection_id)
    assert BatchItem.objects.filter(pk=item.pk, reflection=reflection).exists()


def test_moving_a_judged_assignment_to_another_batch_is_rejected_by_postgres(assignment):
    judgement_record(
        assignment=assignment,
        reflection=reflection_in(assignment),
        answer=Answer(coherent=True, empathy=3),
    )
    other_batch = (
        Batch.objects.exclude(pk=assignment.batch_id).filter(stage=assignment.batch.stage).first()
    )
    with trigger_rejects("an assignment with judgements cannot move to another batch"):
        Assignment.objects.filter(pk=assignment.pk).update(batch=other_batch)


def test_unjudged_batch_items_can_still_be_rearranged_on_postgres(batch):
    """The guards only protect judged data: an import may still rebuild a fresh batch."""
    deleted, _ = BatchItem.objects.filter(batch=batch).delete()
    assert deleted == 4
