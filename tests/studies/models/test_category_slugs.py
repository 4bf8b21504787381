"""A category slug is an export column of its own, so it may not take the name of
another export column (``studies.columns.RESERVED_COLUMN_NAMES``): refused with a clear
message by the admin form and the model's validation, and by the database."""

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from studies.admin.forms import ErrorCategoryForm
from studies.columns import PUBLISHED_CATEGORY_COLUMNS, RESERVED_COLUMN_NAMES
from studies.exports import ExportOptions
from studies.exports.rows import export_header
from studies.models import ErrorCategory

MESSAGE = "This slug is already the name of an export column"


def test_every_export_column_but_the_categories_is_reserved(annotated_study):
    categories = set(annotated_study.categories.values_list("slug", flat=True))
    for options in (
        ExportOptions(fmt="full"),
        ExportOptions(fmt="published", extended=True),
    ):
        columns = set(export_header(study=annotated_study, options=options))
        assert columns - categories <= RESERVED_COLUMN_NAMES
    assert not RESERVED_COLUMN_NAMES & set(PUBLISHED_CATEGORY_COLUMNS)
    assert {"error_description", "empathy", "annotator", "study"} <= RESERVED_COLUMN_NAMES


@pytest.mark.parametrize("slug", ["error_description", "empathy", "most_evident_error"])
def test_the_admin_form_refuses_an_export_column_as_slug(study, slug):
    form = ErrorCategoryForm(
        data={"study": study.pk, "slug": slug, "label": "New", "order": 9, "definition": "d"}
    )
    assert not form.is_valid()
    assert MESSAGE in str(form.errors)
    assert not ErrorCategory.objects.filter(slug=slug).exists()


def test_the_model_and_the_database_refuse_it(study):
    category = ErrorCategory(
        study=study, slug="error_description", label="X", definition="d", bit=9
    )
    with pytest.raises(ValidationError, match=MESSAGE):
        category.full_clean()
    with (
        pytest.raises(IntegrityError, match="category_slug_not_an_export_column"),
        transaction.atomic(),
    ):
        category.save()
    assert not ErrorCategory.objects.filter(slug="error_description").exists()


def test_an_ordinary_new_slug_is_accepted(study):
    form = ErrorCategoryForm(
        data={
            "study": study.pk,
            "slug": "too_long",
            "label": "Too long",
            "order": 9,
            "definition": "d",
        }
    )
    assert form.is_valid(), form.errors
