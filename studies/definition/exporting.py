"""A study as a definition file (see :mod:`.spec` for what it holds)."""

from __future__ import annotations

import json

import yaml
from django.db.models import Model

from ..models import Study
from .spec import CODE_FIELDS, FORMAT, SECTIONS, VERSION, Part, value_out

#: The kinds of file a definition is written as.
KINDS = ("yaml", "json")


def _children(instance: Model, part: Part, key: str, child: Part):
    """The objects of ``child`` belonging to ``instance``, in file order."""
    parent = part.model._meta.model_name
    manager = child.model.objects.filter(**{parent: instance})
    if child.single:
        return manager.first()
    order = ("position",) if child.positioned else ("pk",)
    return list(manager.order_by(*order))


def _object(instance: Model, part: Part, *, with_codes: bool) -> dict:
    data = {
        name: value_out(instance, name)
        for name in part.fields
        if with_codes or name not in CODE_FIELDS
    }
    if part.model.__name__ == "TrainingItem" and not data["turns"] and instance.context_id:
        data["turns"] = instance.context.turns  # the context stays in the materials
    for key, child in part.children.items():
        found = _children(instance, part, key, child)
        if child.single:
            data[key] = None if found is None else _object(found, child, with_codes=with_codes)
        else:
            data[key] = [_object(o, child, with_codes=with_codes) for o in found]
    return data


def study_definition(study: Study, *, with_codes: bool = False) -> dict:
    """Everything that defines ``study`` but its materials, as the file holds it;
    a stage's crowd completion codes only ``with_codes``."""
    definition: dict = {"format": FORMAT, "version": VERSION}
    for key, part in SECTIONS.items():
        if key == "study":
            definition[key] = _object(study, part, with_codes=with_codes)
            continue
        found = part.model.objects.filter(study=study)
        if part.single:
            one = found.first()
            definition[key] = None if one is None else _object(one, part, with_codes=with_codes)
        else:
            order = ("position",) if part.positioned else ("pk",)
            definition[key] = [
                _object(o, part, with_codes=with_codes) for o in found.order_by(*order)
            ]
    return definition


def definition_text(definition: dict, kind: str = "yaml") -> str:
    """The definition as YAML (block style, keys in the file's order, text as written)
    or as JSON (indented)."""
    if kind == "json":
        return json.dumps(definition, ensure_ascii=False, indent=2) + "\n"
    if kind == "yaml":
        return yaml.safe_dump(
            definition, sort_keys=False, allow_unicode=True, default_flow_style=False, width=88
        )
    raise ValueError(f'Choose "yaml" or "json", not "{kind}".')
