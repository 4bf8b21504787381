"""The migration to a quiz that tests knowledge keeps existing data meaningful: an
item's old expected categories become its required ones (no wrong ones), and each
existing attempt records the items it showed (every practice item, in order)."""

import importlib

import pytest
from django.apps import apps as global_apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from studies.models import TrainingAttempt
from studies.services.training import training_attempt_start
from tests.studies.training_fixtures import annotator_ready_for_quiz, quiz_add

BEFORE = ("studies", "0022_stage_categories_and_scheme_final")
MIGRATION = "0023_training_quiz_draws_and_category_marks"


@pytest.mark.django_db(transaction=True)
def test_old_expected_categories_become_required_ones():
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([BEFORE])
        apps = executor.loader.project_state([BEFORE]).apps
        study = apps.get_model("studies", "Study").objects.create(slug="m", title="M", seed=1)
        categories = [
            apps.get_model("studies", "ErrorCategory").objects.create(
                study=study, slug=slug, label=slug, bit=bit, order=bit + 1, definition="d"
            )
            for bit, slug in enumerate(["off_topic", "parroting"])
        ]
        item = apps.get_model("studies", "TrainingItem").objects.create(
            study=study,
            position=1,
            turns=[{"role": "client", "text": "I lost my job."}],
            text="You enjoy gardening.",
            expected_coherent=False,
            explanation="Nothing in the dialogue is about gardening.",
        )
        item.expected_categories.set(categories)
        executor = MigrationExecutor(connection)
        executor.migrate([("studies", MIGRATION)])
        apps = executor.loader.project_state([("studies", MIGRATION)]).apps
        migrated = apps.get_model("studies", "TrainingItem").objects.get(pk=item.pk)
        required = migrated.required_categories.order_by("slug").values_list("slug", flat=True)
        assert list(required) == ["off_topic", "parroting"]
        assert not migrated.wrong_categories.exists()
    finally:
        MigrationExecutor(connection).migrate(leaves)


def test_existing_attempts_record_every_practice_item_in_order(loaded_study):
    items = quiz_add(loaded_study)
    attempt = training_attempt_start(annotator=annotator_ready_for_quiz(loaded_study))
    TrainingAttempt.objects.filter(pk=attempt.pk).update(item_ids=[])
    migration = importlib.import_module(f"studies.migrations.{MIGRATION}")
    migration.attempts_record_their_items(global_apps, None)
    attempt.refresh_from_db()
    assert attempt.item_ids == [i.pk for i in items]
