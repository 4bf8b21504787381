"""A reflection's generation metadata is capped (``GENERATION_MAX_LENGTH``, as compact
JSON): the admin, the materials import (JSON and CSV) and the API (which uses the
import) refuse more with one message naming the cap and the reflection, and write
nothing."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from studies.limits import GENERATION_MAX_LENGTH
from studies.models import Reflection
from studies.validators import validate_generation_metadata
from tests.conftest import form_data
from tests.factories import StaffUserFactory
from tests.studies.datafiles.test_materials import csv_rows, issue_at, new_doc, rejected, to_csv

CAP = f"more than the {GENERATION_MAX_LENGTH:,} allowed"


def metadata_of_length(length: int) -> dict:
    """Generation metadata exactly ``length`` characters long as compact JSON."""
    padding = length - len('{"model":""}')
    return {"model": "x" * padding}


def test_metadata_up_to_the_cap_is_accepted_and_one_character_more_is_refused():
    validate_generation_metadata(metadata_of_length(GENERATION_MAX_LENGTH))
    with pytest.raises(ValidationError) as caught:
        validate_generation_metadata(metadata_of_length(GENERATION_MAX_LENGTH + 1))
    assert caught.value.messages == [
        f"Generation metadata is {GENERATION_MAX_LENGTH + 1:,} characters as JSON, {CAP}: "
        "give the model, decoding, p, prompt type and complexity, not the generation's "
        "inputs or outputs (the full export repeats it on every row)."
    ]


def test_the_admin_refuses_oversized_metadata_and_keeps_the_reflection(client, loaded_study):
    client.force_login(StaffUserFactory())
    reflection = Reflection.objects.filter(kind=Reflection.Kind.SYNTHETIC).first()
    url = reverse("admin:studies_reflection_change", args=[reflection.pk])
    data = form_data(client.get(url))
    data["generation"] = json.dumps(metadata_of_length(5_000_000))  # 5 MB

    response = client.post(url, data)

    assert response.status_code == 200
    assert f"Generation metadata is 5,000,000 characters as JSON, {CAP}" in (
        response.content.decode()
    )
    stored = Reflection.objects.get(pk=reflection.pk)
    assert stored.generation == reflection.generation


def test_the_json_import_names_the_reflection_and_writes_nothing(loaded_study):
    doc = new_doc()
    doc["contexts"][1]["synthetic"][2]["generation"] = metadata_of_length(5_000_000)
    issues = rejected(loaded_study, json.dumps(doc), "json")
    issue = issue_at(issues, """contexts[1] (id "new-2"), synthetic[2], field 'generation'""")
    assert issue.message.startswith(f"is 5,000,000 characters as JSON, {CAP}: give the model")


def test_the_csv_import_names_the_row_and_writes_nothing(loaded_study):
    rows = csv_rows(new_doc())
    rows[2]["model"] = "x" * GENERATION_MAX_LENGTH
    issues = rejected(loaded_study, to_csv(rows), "csv")
    issue = issue_at(issues, "row 4")
    assert issue.message.startswith(
        "the generation metadata (model, decoding, p, prompt_type, complexity) is "
    )
    assert CAP in issue.message
