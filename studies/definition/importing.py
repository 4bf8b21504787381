"""A definition file as a new draft study: checked against the schema, then every
object against the models' own rules, all in one transaction, so a file with any
mistake writes nothing and says where the mistake is."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection, transaction
from django.db.models import Model

from ..models import (
    Choice,
    LikertDimension,
    Question,
    Stage,
    StageGate,
    Study,
    TrainingItem,
    new_crowd_code,
)
from ..services.crowd import stage_codes_validate
from ..services.gates import gate_validate
from ..services.questionnaires import choice_validate, question_validate
from ..services.roles import study_created_by
from ..services.studies import consent_version_sync
from ..services.training import training_item_categories_check
from .spec import CODE_FIELDS, FORMAT, NATURAL_KEYS, SECTIONS, VERSION, Part, value_in

SCHEMA_PATH = Path(__file__).with_name(f"schema-v{VERSION}.json")


def definition_schema_file() -> dict:
    """The checked-in JSON Schema (tests keep it equal to :func:`.spec.definition_schema`)."""
    return json.loads(SCHEMA_PATH.read_text())


def definition_parse(text: str) -> dict:
    """A definition file's text (YAML, or JSON, which YAML reads too) as data;
    ``ValidationError`` when it is neither or not a mapping."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValidationError(f"The file is not YAML or JSON{where}.") from None
    if not isinstance(data, dict):
        raise ValidationError("The file does not hold a study definition (a mapping of keys).")
    return data


def _path(parts) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "the file"


def definition_check(data: dict) -> None:
    """Raise ``ValidationError`` with one message per place the file breaks its schema
    (at most 20), each naming the place: ``stages[1].overlap_k: -1 is less than …``."""
    if data.get("format") != FORMAT:
        raise ValidationError(f'This is not a study definition: its "format" is not "{FORMAT}".')
    if data.get("version") != VERSION:
        raise ValidationError(
            f"This file is version {data.get('version')!r} of the study definition; "
            f"this platform reads version {VERSION}."
        )
    validator = jsonschema.Draft202012Validator(definition_schema_file())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ValidationError([f"{_path(e.absolute_path)}: {e.message}" for e in errors[:20]])


def _placed(error: ValidationError, where: str) -> ValidationError:
    """``error``'s messages, each prefixed by the place in the file (and its field)."""
    if not hasattr(error, "error_dict"):
        return ValidationError([f"{where}: {message}" for message in error.messages])
    return ValidationError(
        [
            f"{where}.{name}: {message}" if name != "__all__" else f"{where}: {message}"
            for name, errors in error.message_dict.items()
            for message in errors
        ]
    )


class _Importer:
    def __init__(self, data: dict):
        self.data = data
        self.study: Study | None = None
        self.keys: dict[type[Model], dict[str, Model]] = {model: {} for model in NATURAL_KEYS}

    @staticmethod
    def key_of(instance: Model):
        """How the file names ``instance``: its natural key; a Likert dimension's is
        unique within its stage only, so with its stage's name."""
        name = getattr(instance, NATURAL_KEYS[type(instance)])
        return (instance.stage.name, name) if isinstance(instance, LikertDimension) else name

    def refer(self, where: str, model_field, name, *, stage: str | None = None):
        """The object ``name`` refers to (by its natural key) among those made so far
        (a Likert dimension: of the stage ``stage``)."""
        if name is None:
            return None
        key = (stage, name) if model_field.related_model is LikertDimension else name
        found = self.keys[model_field.related_model].get(key)
        if found is None:
            noun = model_field.related_model._meta.verbose_name
            earlier = (
                " before this one"
                if model_field.related_model is Stage and ".gate" in where
                else ""
            )
            raise ValidationError(
                f'{where}.{model_field.name}: there is no {noun} "{name}"{earlier}.'
            )
        return found

    def make(self, part: Part, raw: dict, where: str, **parents) -> Model:
        """One object of ``part`` from its mapping: fields as the file gives them (the
        model's defaults for the rest), checked by the model, saved, its many-to-many
        references set; then its children."""
        instance = part.model(**parents)
        later = {}
        for name in part.fields:
            if name not in raw:
                continue
            model_field = part.model._meta.get_field(name)
            if model_field.many_to_many:
                later[name] = [self.refer(where, model_field, n) for n in raw[name]]
            elif model_field.is_relation:
                # (A gate's dimension is one of its source stage's.)
                stage = raw.get("source_stage")
                setattr(instance, name, self.refer(where, model_field, raw[name], stage=stage))
            else:
                setattr(instance, name, value_in(model_field, raw[name]))
        if isinstance(instance, Stage) and not any(name in raw for name in CODE_FIELDS):
            # A file without codes: the stage's are made anew, the screened-out one too.
            instance.screened_out_code = new_crowd_code()
        self.check(instance, raw, later, where)
        self.save(instance, where)
        for name, objects in later.items():
            try:
                with transaction.atomic():
                    getattr(instance, name).set(objects)
            except DatabaseError as exc:
                raise ValidationError(f"{where}.{name}: {str(exc).splitlines()[0]}") from None
        key = NATURAL_KEYS.get(part.model)
        if key is not None:
            self.keys[part.model][self.key_of(instance)] = instance
        parent_name = part.model._meta.model_name
        for child_key, child in part.children.items():
            value = raw.get(child_key)
            if child.single:
                if value is not None:
                    self.make(child, value, f"{where}.{child_key}", **{parent_name: instance})
                continue
            for position, item in enumerate(value or (), start=1):
                extra = {"position": position} if child.positioned else {}
                self.make(
                    child, item, f"{where}.{child_key}[{position - 1}]",
                    **{parent_name: instance}, **extra,
                )  # fmt: skip
        return instance

    def check(self, instance: Model, raw: dict, later: dict, where: str) -> None:
        """The rules the admin's forms apply besides the model's own (each in its
        service, their one home), before ``instance`` is saved."""
        try:
            if isinstance(instance, Stage):
                made = [s for s in self.keys[Stage].values() if s.study_id == instance.study_id]
                stage_codes_validate(stage=instance, others=made)
            elif isinstance(instance, StageGate):
                gate_validate(gate=instance)
            elif isinstance(instance, TrainingItem):
                training_item_categories_check(
                    study=self.study,
                    expected_coherent=instance.expected_coherent,
                    required=later.get("required_categories", ()),
                    wrong=later.get("wrong_categories", ()),
                )
            elif isinstance(instance, Question):
                ends = [bool(c.get("ends_participation")) for c in raw.get("choices") or ()]
                question_validate(question=instance, ends=ends)
            elif isinstance(instance, Choice):
                choice_validate(
                    question=instance.question, ends_participation=instance.ends_participation
                )
        except ValidationError as exc:
            raise _placed(exc, where) from None

    @staticmethod
    def save(instance: Model, where: str) -> None:
        try:
            instance.full_clean()
        except ValidationError as exc:
            raise _placed(exc, where) from None
        try:
            with transaction.atomic():
                instance.save()
        except DatabaseError as exc:
            raise ValidationError(f"{where}: {str(exc).splitlines()[0]}") from None

    def run(self, *, slug: str | None, title: str | None, user) -> Study:
        raw_study = dict(self.data["study"])
        crowd_group = raw_study.pop("crowd_group", None)
        if slug:
            raw_study["slug"] = slug
        if title:
            raw_study["title"] = title
        if Study.objects.filter(slug=raw_study.get("slug")).exists():
            raise ValidationError(
                f'study.slug: a study with the slug "{raw_study.get("slug")}" exists already; '
                "choose another."
            )
        study_part = SECTIONS["study"]
        self.study = self.make(study_part, raw_study, "study")
        for key, part in SECTIONS.items():
            if key == "study":
                continue
            value = self.data.get(key)
            if part.single:
                if value is not None:
                    self.make(part, value, key, study=self.study)
                continue
            for index, item in enumerate(value or ()):
                extra = {"position": index + 1} if part.positioned else {}
                self.make(part, item, f"{key}[{index}]", study=self.study, **extra)
            if key == "groups" and crowd_group is not None:
                study_field = Study._meta.get_field("crowd_group")
                self.study.crowd_group = self.refer("study", study_field, crowd_group)
                self.save(self.study, "study")
        return self.study


def study_import_definition(
    data: dict, *, user=None, slug: str | None = None, title: str | None = None
) -> Study:
    """A new draft study from a parsed definition file (``slug`` and ``title`` replace
    the file's), owned by ``user``; its consent text becomes its first consent
    version, as when a study is created. All or nothing: ``ValidationError`` naming
    each place the file is wrong, and nothing written."""
    definition_check(data)
    with transaction.atomic():
        study = _Importer(data).run(slug=slug, title=title, user=user)
        consent_version_sync(study=study, user=user)
        if user is not None:
            study_created_by(study=study, user=user)
        try:  # the deferred triggers' checks now, not at the commit after this function
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        except DatabaseError as exc:
            raise ValidationError(
                f"The database refused the study: {str(exc).splitlines()[0]}"
            ) from None
    return study
