"""Fields locked once their row is in use (``studies.services.in_use``): the service
refuses with the message the admin shows, a row not yet in use or a field that does
not lock passes, and the materials command obeys the batch rule."""

import json
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from studies.models import (
    AnnotatorGroup,
    BatchItem,
    DialogueContext,
    ErrorCategory,
    Reflection,
    Stage,
    Study,
)
from studies.services.in_use import (
    error_category_delete_validate,
    locked_fields,
    locked_fields_validate,
)
from tests.conftest import materials_doc
from tests.studies.admin.test_protection import judged  # noqa: F401 (a fixture)


def _rows(assignment) -> dict:
    """One row in use of every model with locked fields."""
    study = assignment.stage.study
    return {
        Study: study,
        Stage: assignment.stage,
        AnnotatorGroup: assignment.annotator.group,
        ErrorCategory: study.categories.get(slug="off_topic"),
        DialogueContext: assignment.batch.context,
        Reflection: assignment.batch.reflections.first(),
    }


MESSAGES = {
    Study: "Coherence question cannot change: annotators have already answered this "
    "study's questions.",
    Stage: "Position cannot change: annotators already work in this stage.",
    AnnotatorGroup: "Pseudonym prefix cannot change: the group's annotators are already "
    "named with it.",
    ErrorCategory: "Slug cannot change: judgements already chose this category.",
    DialogueContext: "Turns cannot change: annotators have already judged reflections of "
    "this context.",
    Reflection: "Context cannot change: annotators have already judged this reflection.",
}


@pytest.mark.parametrize("model", MESSAGES, ids=lambda m: m.__name__)
def test_a_locked_field_of_a_row_in_use_is_refused_naming_it(judged, model):
    row = _rows(judged)[model]
    first = locked_fields(model=model)[0]
    with pytest.raises(ValidationError) as info:
        locked_fields_validate(instance=row, changed=[first, "not_locked"])
    assert info.value.messages == [MESSAGES[model]]


@pytest.mark.parametrize("model", MESSAGES, ids=lambda m: m.__name__)
def test_other_fields_of_a_row_in_use_may_change(judged, model):
    locked_fields_validate(instance=_rows(judged)[model], changed=["title", "label", "name"])


def test_every_locked_field_changed_is_named(judged):
    with pytest.raises(ValidationError) as info:
        locked_fields_validate(instance=judged.stage, changed=["no_answer", "position"])
    assert info.value.messages == [
        'Position, After "No" cannot change: annotators already work in this stage.'
    ]


def test_rows_not_yet_in_use_may_change_every_field(loaded_study):
    stage = loaded_study.stages.get(position=2)
    group = loaded_study.groups.get(name="Expert")
    category = loaded_study.categories.get(slug="off_topic")
    for row in (loaded_study, stage, group, category):
        locked_fields_validate(instance=row, changed=locked_fields(model=type(row)))
    error_category_delete_validate(category=category)


def test_a_used_category_cannot_be_deleted(judged):
    category = judged.stage.study.categories.get(slug="off_topic")
    with pytest.raises(ValidationError) as info:
        error_category_delete_validate(category=category)
    assert info.value.messages == ['"Off-topic" cannot be deleted: judgements already chose it.']


def test_the_command_refuses_to_change_a_handed_out_batch_and_writes_nothing(judged, tmp_path):
    doc = materials_doc(n_contexts=1)
    doc["contexts"][0]["synthetic"][0]["text"] = "A different candidate."
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(doc))
    before = sorted(BatchItem.objects.values_list("batch_id", "reflection_id", "position"))
    n_reflections = Reflection.objects.count()
    with pytest.raises(CommandError) as info:
        call_command("import_materials", "pilot", str(path), stdout=StringIO())
    assert "already has annotators; its reflections cannot change" in str(info.value)
    assert sorted(BatchItem.objects.values_list("batch_id", "reflection_id", "position")) == before
    assert Reflection.objects.count() == n_reflections
