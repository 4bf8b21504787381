"""The training quiz tests knowledge: attempts draw their practice items (stored on the
attempt), the settings say how many items an attempt shows, and an expected "No" marks
categories required or wrong.

Existing data: an item's old expected categories ("at least one of these") become its
required categories (the through table is renamed, rows kept), with no wrong ones;
each existing attempt showed every practice item of its study in order, so that is
what it records.
"""

import django.contrib.postgres.fields
from django.db import migrations, models


def attempts_record_their_items(apps, schema_editor):
    TrainingAttempt = apps.get_model("studies", "TrainingAttempt")
    TrainingItem = apps.get_model("studies", "TrainingItem")
    items: dict[int, list[int]] = {}
    for study_id, item_id in TrainingItem.objects.order_by("study_id", "position").values_list(
        "study_id", "id"
    ):
        items.setdefault(study_id, []).append(item_id)
    attempts = TrainingAttempt.objects.select_related("annotator")
    for attempt in attempts.iterator():
        attempt.item_ids = items.get(attempt.annotator.study_id, [])
        attempt.save(update_fields=["item_ids"])


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0022_stage_categories_and_scheme_final"),
    ]

    operations = [
        migrations.RenameField(
            model_name="trainingitem",
            old_name="expected_categories",
            new_name="required_categories",
        ),
        migrations.AlterField(
            model_name="trainingitem",
            name="required_categories",
            field=models.ManyToManyField(
                blank=True,
                help_text="The answer must choose every one of these (the problems the "
                "candidate certainly has). Categories neither required nor wrong may be "
                "chosen or not.",
                related_name="+",
                to="studies.errorcategory",
                verbose_name='expected "No": required categories',
            ),
        ),
        migrations.AddField(
            model_name="trainingitem",
            name="wrong_categories",
            field=models.ManyToManyField(
                blank=True,
                help_text="Choosing any of these makes the answer wrong (problems the "
                "candidate certainly does not have). None of them may be required too.",
                related_name="+",
                to="studies.errorcategory",
                verbose_name='expected "No": wrong categories',
            ),
        ),
        migrations.AlterField(
            model_name="trainingitem",
            name="position",
            field=models.PositiveSmallIntegerField(
                help_text="An attempt shows the practice items it draws in this order."
            ),
        ),
        migrations.AlterField(
            model_name="trainingitem",
            name="explanation",
            field=models.CharField(
                help_text="Shown after the answer, whether it was right or wrong, unless the "
                "item may come back in a later attempt of that annotator.",
                max_length=2000,
            ),
        ),
        migrations.AddField(
            model_name="trainingquiz",
            name="items_per_attempt",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="How many practice items each attempt draws from the study's. "
                "Empty: all of them, every time. N attempts of k items need N × k practice "
                "items for every attempt to show items not seen before (3 attempts of 5 "
                "items: 15). With fewer, a retry shows some items again, and the feedback "
                "keeps back the expected answer and explanation of any item that may come "
                "back.",
                null=True,
                verbose_name="practice items per attempt",
            ),
        ),
        migrations.AddConstraint(
            model_name="trainingquiz",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("items_per_attempt__isnull", True),
                    ("items_per_attempt__gte", 1),
                    _connector="OR",
                ),
                name="training_quiz_items_per_attempt_positive",
                violation_error_message="An attempt shows at least one practice item (or "
                "leave it empty for all of them).",
            ),
        ),
        migrations.AddField(
            model_name="trainingattempt",
            name="item_ids",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.BigIntegerField(),
                blank=True,
                default=list,
                help_text="The practice items this attempt shows, in order (drawn when it "
                "started).",
                size=None,
            ),
        ),
        migrations.RunPython(attempts_record_their_items, migrations.RunPython.noop),
    ]
