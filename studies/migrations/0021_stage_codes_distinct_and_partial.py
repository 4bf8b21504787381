"""Per-stage codes that are distinct, and the partial-completion code.

Stages added in one admin save used to copy one generated completion code, so a stage's
code could complete another. From here on every code of a study (completion,
partial-completion and screened-out, across its stages) differs from every other: a
trigger refuses a new or changed code that another stage of the study already has
(check constraints cannot see other rows), when the transaction commits. Codes that
repeat today are renewed in draft studies whose stage has no submissions and no crowd
entries (nothing can have been paid with them, nor can the platform have been told
them by an open study; the migration prints each renewal); the others stay as they
are (a code handed to a platform must not change silently) and the study's admin page
flags them.

The full export gains a crowd_outcome column, so that name is no category slug (a
category that has it gets another one, printed).

Existing stages get no partial-completion code (an open study keeps its behaviour
until a researcher sets one); new stages get one made up, as the completion code.
"""

import secrets

from django.db import migrations, models

import studies.models.study

CODE_FIELDS = ("completion_code", "partial_completion_code", "screened_out_code")

# The alphabet and length of ``studies.models.study.new_crowd_code``, frozen here.
ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def renew_repeated_codes(apps, schema_editor):
    Stage = apps.get_model("studies", "Stage")
    Assignment = apps.get_model("studies", "Assignment")
    CrowdEntry = apps.get_model("studies", "CrowdEntry")
    # A code of a study that was ever opened may be on the platform already.
    used = (
        set(Assignment.objects.filter(status="submitted").values_list("stage_id", flat=True))
        | set(CrowdEntry.objects.values_list("stage_id", flat=True))
        | set(Stage.objects.exclude(study__status="draft").values_list("pk", flat=True))
    )
    seen: dict[int, set[str]] = {}
    for stage in Stage.objects.order_by("study_id", "position").select_related("study"):
        codes = seen.setdefault(stage.study_id, set())
        for field in CODE_FIELDS:
            code = getattr(stage, field)
            if code and code in codes and stage.pk not in used:
                new = "".join(secrets.choice(ALPHABET) for _ in range(8))
                setattr(stage, field, new)
                stage.save(update_fields=[field])
                print(
                    f"\n  {stage.study.slug}, stage {stage.position}: the {field.replace('_', ' ')} "
                    f"{code} repeated another stage's, so it is now {new}",
                    end="",
                )
                code = new
            if code:
                codes.add(code)


NEW_COLUMN = "crowd_outcome"


def rename_clashing_slugs(apps, schema_editor):
    """A category named like the export's new column gets another slug (its column would
    otherwise shift the export's), printed."""
    ErrorCategory = apps.get_model("studies", "ErrorCategory")
    for category in ErrorCategory.objects.filter(slug=NEW_COLUMN).select_related("study"):
        taken = set(
            ErrorCategory.objects.filter(study_id=category.study_id).values_list("slug", flat=True)
        )
        new = next(f"{NEW_COLUMN}_{n}" for n in range(2, 1000) if f"{NEW_COLUMN}_{n}" not in taken)
        ErrorCategory.objects.filter(pk=category.pk).update(slug=new)
        print(
            f"\n  {category.study.slug}: the error category {NEW_COLUMN} is now {new} (the full "
            "export has a column of that name)",
            end="",
        )


# A new or changed code (INSERT, a changed code, a stage moved to another study) that
# another stage of the same study has is refused. Checked when the transaction commits
# (a deferred constraint trigger), against the stages as they are then: codes swapped
# between two stages, or taken over from a stage deleted in the same save, are fine.
# The advisory lock per study orders two concurrent commits of one study's stages (the
# second then sees the first's rows).
TRIGGER = """
CREATE FUNCTION studies_stage_codes_distinct() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    codes text[];
    now_ record;
BEGIN
    IF TG_OP = 'INSERT' OR NEW.study_id <> OLD.study_id THEN
        codes := ARRAY[NEW.completion_code, NEW.partial_completion_code,
                       NEW.screened_out_code]::text[];
    ELSE
        codes := ARRAY[]::text[];
        IF NEW.completion_code <> OLD.completion_code THEN
            codes := codes || NEW.completion_code;
        END IF;
        IF NEW.partial_completion_code <> OLD.partial_completion_code THEN
            codes := codes || NEW.partial_completion_code;
        END IF;
        IF NEW.screened_out_code <> OLD.screened_out_code THEN
            codes := codes || NEW.screened_out_code;
        END IF;
    END IF;
    codes := array_remove(codes, '');
    IF cardinality(codes) = 0 THEN
        RETURN NULL;
    END IF;
    -- The row as it is now (changed again, or deleted, later in the transaction): only
    -- the codes it still has.
    SELECT * INTO now_ FROM studies_stage WHERE id = NEW.id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('studies_stage_codes'), now_.study_id::integer);
    codes := ARRAY(
        SELECT unnest(codes)
        INTERSECT
        SELECT unnest(ARRAY[now_.completion_code, now_.partial_completion_code,
                            now_.screened_out_code]::text[])
    );
    IF cardinality(codes) > 0 AND EXISTS (
        SELECT 1 FROM studies_stage s
        WHERE s.study_id = now_.study_id AND s.id <> now_.id
        AND ARRAY[s.completion_code, s.partial_completion_code, s.screened_out_code]::text[]
            && codes
    ) THEN
        RAISE EXCEPTION 'stage code already used by another stage of the study'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER studies_stage_codes_distinct
    AFTER INSERT OR UPDATE ON studies_stage
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION studies_stage_codes_distinct();
"""


def trigger_create(apps, schema_editor):
    schema_editor.execute(TRIGGER)


def trigger_drop(apps, schema_editor):
    schema_editor.execute(
        "DROP TRIGGER IF EXISTS studies_stage_codes_distinct ON studies_stage;"
        " DROP FUNCTION IF EXISTS studies_stage_codes_distinct();"
    )


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0020_training_quiz"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="crowdentry",
            name="crowd_entry_outcome_valid",
        ),
        migrations.RemoveConstraint(
            model_name="stage",
            name="stage_codes_differ",
        ),
        migrations.AddField(
            model_name="stage",
            name="partial_completion_code",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AlterField(
            model_name="stage",
            name="partial_completion_code",
            field=models.CharField(
                blank=True,
                default=studies.models.study.new_crowd_code,
                help_text="Given to crowd workers who did some of this stage's batches but can get no further batch now (others hold or did the rest): their stage ends there and this code pays the work they did (on Prolific: map it to a payment action). A crowd study cannot open while a stage lacks it.",
                max_length=64,
            ),
        ),
        migrations.AlterField(
            model_name="crowdentry",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("completed", "Completed the stage"),
                    ("screened_out", "Screened out"),
                    ("no_work", "No work left"),
                    ("partial", "Finished part of the stage"),
                ],
                default="",
                max_length=20,
            ),
        ),
        migrations.AddConstraint(
            model_name="crowdentry",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("outcome__in", ["", "completed", "screened_out", "no_work", "partial"])
                ),
                name="crowd_entry_outcome_valid",
                violation_error_message="Unknown outcome.",
            ),
        ),
        migrations.AddConstraint(
            model_name="stage",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("screened_out_code", models.F("completion_code")), _negated=True),
                    models.Q(
                        ("partial_completion_code", models.F("completion_code")), _negated=True
                    ),
                    models.Q(
                        ("partial_completion_code", ""),
                        models.Q(
                            ("partial_completion_code", models.F("screened_out_code")),
                            _negated=True,
                        ),
                        _connector="OR",
                    ),
                ),
                name="stage_codes_differ",
                violation_error_message="The completion, partial-completion and screened-out codes of a stage must differ from each other.",
            ),
        ),
        migrations.AddConstraint(
            model_name="stage",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("partial_completion_code", ""),
                    ("partial_completion_code__regex", "^[A-Za-z0-9_-]{1,64}$"),
                    _connector="OR",
                ),
                name="stage_partial_completion_code_format",
                violation_error_message="Use 1 to 64 letters, digits, hyphens and underscores, or leave it empty.",
            ),
        ),
        migrations.RunPython(rename_clashing_slugs, migrations.RunPython.noop, elidable=False),
        migrations.RemoveConstraint(
            model_name="errorcategory",
            name="category_slug_not_an_export_column",
        ),
        migrations.AddConstraint(
            model_name="errorcategory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "slug__in",
                        [
                            "annomi_dialogue_id",
                            "annotator",
                            "annotator_agreement_with_group",
                            "annotator_attention_failed",
                            "annotator_fast_share",
                            "annotator_flags",
                            "annotator_group",
                            "annotator_median_seconds",
                            "annotator_n_batches",
                            "annotator_yes_rate",
                            "assigned_at",
                            "assignment_id",
                            "assignment_status",
                            "attention_check_passed",
                            "batch_id",
                            "coherent_and_context_consistent",
                            "crowd_outcome",
                            "description_codes",
                            "dialogue_context",
                            "empathy",
                            "empathy_label",
                            "error_description",
                            "generation",
                            "is_recurring",
                            "item_position",
                            "judged_at",
                            "most_evident_error",
                            "reflection",
                            "reflection_id",
                            "reflection_kind",
                            "reflection_source",
                            "revised_at",
                            "seconds_spent",
                            "stage",
                            "stage_position",
                            "study",
                            "submitted_at",
                        ],
                    ),
                    _negated=True,
                ),
                name="category_slug_not_an_export_column",
                violation_error_message="This slug is already the name of an export column (e.g. error_description, empathy, annotator); please choose another.",
            ),
        ),
        migrations.RunPython(trigger_create, trigger_drop, elidable=False),
        migrations.RunPython(renew_repeated_codes, migrations.RunPython.noop, elidable=False),
    ]
