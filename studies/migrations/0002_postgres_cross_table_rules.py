"""Cross-table invariants as PostgreSQL triggers.

Check constraints cannot look at other tables, so these rules are enforced by
triggers (raising check_violation, which Django reports as IntegrityError). The
services check the same rules first with friendly messages; the triggers are the
last line of defence for raw writes. On SQLite (the zero-setup demo) only the
services check them.
"""

from django.db import migrations

RULES = {
    # table: (function body condition that is TRUE when the row is invalid, message)
    "studies_annotator": (
        "(SELECT study_id FROM studies_annotatorgroup WHERE id = NEW.group_id) <> NEW.study_id",
        "annotator group belongs to another study",
    ),
    "studies_batch": (
        "(SELECT study_id FROM studies_stage WHERE id = NEW.stage_id)"
        " <> (SELECT study_id FROM studies_dialoguecontext WHERE id = NEW.context_id)",
        "batch stage and context belong to different studies",
    ),
    "studies_batchitem": (
        "(SELECT context_id FROM studies_reflection WHERE id = NEW.reflection_id)"
        " <> (SELECT context_id FROM studies_batch WHERE id = NEW.batch_id)",
        "batch item reflection belongs to another context than its batch",
    ),
    "studies_assignment": (
        "(SELECT g.study_id FROM studies_annotator a JOIN studies_annotatorgroup g"
        " ON g.id = a.group_id WHERE a.id = NEW.annotator_id)"
        " <> (SELECT s.study_id FROM studies_batch b JOIN studies_stage s ON s.id = b.stage_id"
        " WHERE b.id = NEW.batch_id)",
        "assignment batch belongs to another study than its annotator",
    ),
    "studies_judgement": (
        "NOT EXISTS (SELECT 1 FROM studies_assignment a JOIN studies_batchitem bi"
        " ON bi.batch_id = a.batch_id WHERE a.id = NEW.assignment_id"
        " AND bi.reflection_id = NEW.reflection_id)",
        "judgement reflection is not part of the batch of its assignment",
    ),
}


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, (condition, message) in RULES.items():
        schema_editor.execute(
            f"""
            CREATE FUNCTION {table}_rule() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF {condition} THEN
                    RAISE EXCEPTION '{message}' USING ERRCODE = 'check_violation';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER {table}_rule BEFORE INSERT OR UPDATE ON {table}
                FOR EACH ROW EXECUTE FUNCTION {table}_rule();
            """
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in RULES:
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS {table}_rule ON {table}; DROP FUNCTION IF EXISTS {table}_rule();"
        )


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
