"""A study's definition as a file: the checked-in schema, the round trip (export →
import → export gives the same file), what the file leaves out, and every bad file
refused with its place named and nothing written; through the commands too."""

import io
import json
from datetime import timedelta
from decimal import Decimal

import jsonschema
import pytest
import yaml
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from studies.definition import (
    definition_parse,
    definition_schema,
    definition_schema_file,
    definition_text,
    study_definition,
    study_import_definition,
)
from studies.models import (
    Batch,
    Code,
    ConsentVersion,
    Role,
    Stage,
    StageGroupWait,
    StagePay,
    Study,
    StudyRole,
)
from tests.factories import StaffMemberFactory, StaffUserFactory
from tests.studies.gate_fixtures import gated_study_build, gated_study_unbuilt
from tests.studies.likert_fixtures import make_likert
from tests.studies.questionnaire_helpers import after_stage, screening
from tests.studies.training_fixtures import quiz_add

pytestmark = pytest.mark.django_db
CONTACT = "lead.researcher@example.org"


@pytest.fixture
def rich_study():
    """Every part a definition holds: three gated stages and a Likert one, groups with
    their own waits and pay, a crowd group, the codebook, questionnaires before and
    after a stage, and a quiz (one item on a context of the materials)."""
    study = gated_study_build(gated_study_unbuilt())
    lay, expert = (study.groups.get(name=n) for n in ("Layperson", "Expert"))
    Study.objects.filter(pk=study.pk).update(
        crowd_group=lay,
        contact_email=CONTACT,
        data_license="cc-by-4.0",
        data_languages="en",
        mee_merge={"hallucinatory": ["off_topic", "dialogue_contradicting"]},
    )
    study.refresh_from_db()
    first = study.stages.get(position=1)
    Stage.objects.filter(pk=first.pk).update(
        platform_task_ids="HIT1,HIT2", screened_out_code="SCREENED1", no_answer="both"
    )
    first.categories.set(study.categories.filter(slug__in=["off_topic", "parroting"]))
    likert = Stage.objects.create(
        study=study, position=4, name="Ratings", min_wait=timedelta(days=2)
    )
    likert.groups.set([lay, expert])
    make_likert(likert)
    StageGroupWait.objects.create(stage=likert, group=expert, min_wait=timedelta(hours=12))
    StagePay.objects.create(
        stage=first, group=lay, unit="hour", amount=Decimal("9.50"), currency="GBP",
        minimum_hourly_rate=Decimal("9.00"),
    )  # fmt: skip
    Code.objects.create(study=study, slug="vague", label="Vague", definition="Says little.")
    screening(study)
    after_stage(study, position=1)
    quiz_add(study, items_per_attempt=3)
    return Study.objects.get(pk=study.pk)


def test_the_checked_in_schema_is_the_one_the_models_give():
    assert definition_schema_file() == definition_schema(), (
        "studies/definition/schema-v1.json is out of date: regenerate it from "
        "definition_schema(), and raise VERSION if old files no longer fit"
    )
    jsonschema.Draft202012Validator.check_schema(definition_schema_file())


def test_export_import_export_gives_the_same_file(rich_study):
    first = study_definition(rich_study)
    jsonschema.validate(first, definition_schema_file())
    text = definition_text(first)
    copy = study_import_definition(definition_parse(text), slug="gated-copy")
    again = study_definition(copy)
    assert again["study"]["slug"] == "gated-copy"
    again["study"]["slug"] = rich_study.slug
    assert again == first
    assert definition_text(again) == text
    assert definition_text(again, "json") == definition_text(first, "json")
    # JSON is read too; the same study again, this time under its own slug.
    Study.objects.filter(pk=rich_study.pk).update(slug="gated-before")
    same = study_import_definition(definition_parse(definition_text(first, "json")))
    assert definition_text(study_definition(same)) == text


def test_the_file_holds_every_part_of_the_study(rich_study):
    definition = study_definition(rich_study)
    assert definition["format"] == "reflection-study-definition" and definition["version"] == 1
    assert definition["study"]["crowd_group"] == "Layperson"
    assert [g["name"] for g in definition["groups"]] == ["Layperson", "Expert"]
    stages = definition["stages"]
    assert [s["name"] for s in stages] == [
        "Lay stage",
        "Good reflection",
        "Adjudication",
        "Ratings",
    ]
    assert stages[0]["categories"] == ["off_topic", "parroting"]
    assert stages[0]["pay"] == [
        {"group": "Layperson", "unit": "hour", "amount": "9.50", "currency": "GBP",
         "minimum_hourly_rate": "9.00"}
    ]  # fmt: skip
    assert stages[1]["gate"]["rule"] == "majority_coherent"
    assert stages[1]["gate"]["source_stage"] == "Lay stage"
    assert stages[3]["min_wait"] == "P2DT00H00M00S"
    assert stages[3]["waits"] == [{"group": "Expert", "min_wait": "P0DT12H00M00S"}]
    assert [d["name"] for d in stages[3]["dimensions"]] == ["fluency", "warmth"]
    assert [q["name"] for q in definition["questionnaires"]] == ["Screening", "After stage 1"]
    assert definition["questionnaires"][1]["stage"] == "Lay stage"
    assert len(definition["questionnaires"][0]["questions"][0]["choices"]) == 2
    assert definition["quiz"] == {"pass_mark": 80, "attempts": 2, "items_per_attempt": 3}
    assert len(definition["quiz_items"]) == 5
    context = rich_study.contexts.order_by("external_id").first()
    assert definition["quiz_items"][0]["turns"] == context.turns  # the context, inlined
    assert definition["codes"] == [
        {"slug": "vague", "label": "Vague", "definition": "Says little.", "example": ""}
    ]


def test_no_secrets_personal_data_or_codes_unless_asked(rich_study):
    text = definition_text(study_definition(rich_study))
    stages = list(rich_study.stages.all())
    assert CONTACT not in text
    for stage in stages:
        assert stage.join_key not in text
        assert stage.completion_code not in text and stage.partial_completion_code not in text
    assert "SCREENED1" not in text and "completion_code" not in text
    with_codes = study_definition(rich_study, with_codes=True)
    assert with_codes["stages"][0]["screened_out_code"] == "SCREENED1"
    assert with_codes["stages"][0]["completion_code"] == stages[0].completion_code
    Study.objects.filter(pk=rich_study.pk).update(slug="gated-before")
    copy = study_import_definition(with_codes)
    assert copy.stages.get(position=1).completion_code == stages[0].completion_code


def test_an_import_is_a_draft_owned_by_who_imported_it_without_materials(rich_study):
    user = StaffUserFactory()
    copy = study_import_definition(study_definition(rich_study), user=user, slug="mine",
                                   title="My copy")  # fmt: skip
    assert (copy.status, copy.title) == (Study.Status.DRAFT, "My copy")
    assert StudyRole.objects.get(study=copy).role == Role.OWNER
    assert not copy.contexts.exists()
    assert not Batch.objects.filter(stage__study=copy).exists()
    assert ConsentVersion.objects.filter(study=copy).count() == 1
    assert copy.contact_email == ""
    original_stage = rich_study.stages.get(position=1)
    stage = copy.stages.get(position=1)
    assert stage.join_key != original_stage.join_key  # made anew


def test_a_reference_to_a_dimension_of_the_right_stage():
    """Two stages may each have a dimension of the same name: a gate's is its source
    stage's."""
    data = {
        "format": "reflection-study-definition",
        "version": 1,
        "study": {"slug": "two-likert", "title": "Two Likert stages"},
        "groups": [{"name": "Lay", "pseudonym_prefix": "Lay"}],
        "stages": [
            {"name": name, "instrument": "likert", "groups": ["Lay"], "dimensions": [
                {"name": "fluency", "statement": f"Fluent ({name}).", "points": 5,
                 "labels": ["1", "2", "3", "4", "5"]}]}
            for name in ("One", "Two")
        ] + [{"name": "Three", "groups": ["Lay"], "gate": {
            "source_stage": "Two", "rule": "likert_mean_at_least", "deciding_group": "Lay",
            "dimension": "fluency", "threshold": 3.5}}],
    }  # fmt: skip
    study = study_import_definition(data)
    gate = study.stages.get(name="Three").gate
    assert gate.dimension.stage.name == "Two"


BAD_FILES = [
    ("study: [unclosed", "The file is not YAML or JSON (line 1, column 17)."),
    ("- a list", "The file does not hold a study definition (a mapping of keys)."),
    ("format: other\nversion: 1\nstudy: {}", 'its "format" is not "reflection-study-definition"'),
    (
        "format: reflection-study-definition\nversion: 9\nstudy: {}",
        "This file is version 9 of the study definition; this platform reads version 1.",
    ),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_a_file_that_is_no_definition_is_refused(text, message):
    with pytest.raises(Exception) as refused:
        study_import_definition(definition_parse(text))
    assert message in " ".join(refused.value.messages)
    assert not Study.objects.exists()


def _broken(definition: dict, change) -> dict:
    broken = json.loads(json.dumps(definition))
    change(broken)
    return broken


CHANGES = {
    "a negative k": (
        lambda d: d["stages"][0].__setitem__("overlap_k", -1),
        "stages[0].overlap_k: -1 is less than the minimum of 0",
    ),
    "an unknown key": (
        lambda d: d["study"].__setitem__("colour", "blue"),
        "study: Additional properties are not allowed ('colour' was unexpected)",
    ),
    "an unknown group": (
        lambda d: d["stages"][1]["groups"].append("Nobody"),
        'stages[1].groups: there is no annotator group "Nobody".',
    ),
    "two stages of one name": (
        lambda d: d["stages"][1].__setitem__("name", "Lay stage"),
        "stages[1]:",
    ),
    "a bad duration": (
        lambda d: d["stages"][0].__setitem__("min_wait", "3 days"),
        "stages[0].min_wait: '3 days' does not match",
    ),
    "a Likert stage without its points or labels right": (
        lambda d: d["stages"][3]["dimensions"][0].__setitem__("labels", ["only one"]),
        "stages[3].dimensions[0]",
    ),
    "the slug of an existing study": (lambda d: None, 'a study with the slug "gated" exists'),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_bad_definition_names_its_place_and_writes_nothing(rich_study, case):
    change, message = CHANGES[case]
    definition = _broken(study_definition(rich_study), change)
    if case != "the slug of an existing study":
        definition["study"]["slug"] = "broken"
    counts = {model: model.objects.count() for model in (Study, Stage, Code, StageGroupWait)}
    with pytest.raises(Exception) as refused:
        study_import_definition(definition)
    assert message in " ".join(refused.value.messages), refused.value.messages
    assert counts == {model: model.objects.count() for model in counts}


def test_the_commands_write_and_read_the_file(rich_study, tmp_path):
    out = tmp_path / "gated.yaml"
    call_command("export_study", "gated", "--out", str(out), stdout=io.StringIO())
    assert yaml.safe_load(out.read_text()) == study_definition(rich_study)
    printed = io.StringIO()
    call_command("export_study", "gated", "--format", "json", stdout=printed)
    assert json.loads(printed.getvalue()) == study_definition(rich_study)
    said = io.StringIO()
    call_command("import_study", str(out), "--slug", "from-file", stdout=said)
    assert 'Created the draft study "Gated" (from-file) with 4 stages and 2 groups.' in (
        said.getvalue()
    )
    copy = Study.objects.get(slug="from-file")
    copied = study_definition(copy)
    copied["study"]["slug"] = "gated"
    assert copied == study_definition(rich_study)


def test_the_commands_refuse_with_the_reason(rich_study, tmp_path):
    with pytest.raises(CommandError, match='No study with slug "nope"'):
        call_command("export_study", "nope")
    viewer = StaffMemberFactory(username="viewer")
    StudyRole.objects.create(study=rich_study, user=viewer, role=Role.VIEWER)
    call_command("export_study", "gated", "--by", "viewer", stdout=io.StringIO())
    with pytest.raises(CommandError, match="manage crowd settings"):
        call_command("export_study", "gated", "--by", "viewer", "--with-codes")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        definition_text(_broken(study_definition(rich_study), CHANGES["a negative k"][0]))
    )
    with pytest.raises(CommandError) as refused:
        call_command("import_study", str(bad), "--slug", "other")
    assert "bad.yaml was not imported (nothing was written):" in str(refused.value)
    assert "stages[0].overlap_k" in str(refused.value)
    with pytest.raises(CommandError, match='"viewer" may not create studies'):
        call_command("import_study", str(bad), "--by", "viewer")
    assert not Study.objects.filter(slug="other").exists()


RULES = {
    "a gate on a stage that is gated itself": (
        lambda d: d["stages"][2]["gate"].__setitem__("source_stage", "Good reflection"),
        "stages[2].gate.source_stage: Good reflection is gated itself",
    ),
    "a practice item with a category both required and wrong": (
        lambda d: d["quiz_items"][1].update(
            expected_coherent=False,
            required_categories=["off_topic"],
            wrong_categories=["off_topic"],
        ),
        "quiz_items[1]",
    ),
    "choices on a text question": (
        lambda d: d["questionnaires"][0]["questions"][3].__setitem__(
            "choices", [{"text": "A choice"}]
        ),
        "questionnaires[0].questions[3]: A question answered with",
    ),
    "a mistake inside a gate, named at its field": (
        lambda d: d["stages"][1]["gate"].__setitem__("rule", "coin_toss"),
        "stages[1].gate.rule: 'coin_toss' is not one of",
    ),
    "a gate on a later stage": (
        lambda d: d["stages"][1]["gate"].__setitem__("source_stage", "Ratings"),
        'stages[1].gate.source_stage: there is no stage "Ratings" before this one.',
    ),
}


@pytest.mark.parametrize("case", list(RULES))
def test_the_admin_forms_rules_hold_for_a_file_too(rich_study, case):
    change, message = RULES[case]
    definition = _broken(study_definition(rich_study), change)
    definition["study"]["slug"] = "broken"
    with pytest.raises(ValidationError) as refused:
        study_import_definition(definition)
    assert message in " ".join(refused.value.messages), refused.value.messages
    assert not Study.objects.filter(slug="broken").exists()


def test_durations_as_people_write_them_in_iso_8601(rich_study):
    definition = study_definition(rich_study)
    definition["study"]["slug"] = "short"
    definition["stages"][3]["min_wait"] = "P2D"
    definition["stages"][3]["waits"][0]["min_wait"] = "PT12H"
    copy = study_import_definition(definition)
    again = study_definition(copy)
    assert again["stages"][3]["min_wait"] == "P2DT00H00M00S"
    assert again["stages"][3]["waits"][0]["min_wait"] == "P0DT12H00M00S"


@pytest.mark.django_db(transaction=True)
def test_two_stages_with_one_code_are_refused_before_the_commit(rich_study):
    """The database's check of repeated codes waits for the commit: the import runs it
    before, so the refusal is a message, and nothing is left behind."""
    definition = study_definition(rich_study, with_codes=True)
    definition["study"]["slug"] = "same-codes"
    definition["stages"][1]["completion_code"] = definition["stages"][0]["completion_code"]
    with pytest.raises(ValidationError) as refused:
        study_import_definition(definition)
    assert "stages[1].completion_code:" in " ".join(refused.value.messages)
    assert "Each code pays one outcome of one stage" in " ".join(refused.value.messages)
    assert not Study.objects.filter(slug="same-codes").exists()
    definition["stages"][1]["completion_code"] = "FRESHCODE1"
    assert study_import_definition(definition).slug == "same-codes"  # committed cleanly
