"""Cross-table invariants as PostgreSQL triggers.

Check constraints cannot look at other tables, so these rules are enforced by
triggers raising ``check_violation`` (Django reports it as IntegrityError). The
services check the same rules first with friendly messages; the triggers are the
last line of defence for raw writes. On SQLite (the zero-setup demo) only the
services check them.

Each rule is guarded from both sides: the row that points elsewhere is checked on
insert and update (RULES), and the rows it points to cannot be moved or removed
from under it (GUARDS).
"""

from django.db import migrations

# trigger name (the table it guards is the name without a suffix after the model):
# (condition TRUE when NEW is invalid, message)
RULES = {
    "studies_annotator": (
        "(SELECT study_id FROM studies_annotatorgroup WHERE id = NEW.group_id) <> NEW.study_id",
        "annotator group belongs to another study",
    ),
    "studies_annotator_consent": (
        "NEW.consented_version_id IS NOT NULL AND"
        " (SELECT study_id FROM studies_consentversion WHERE id = NEW.consented_version_id)"
        " <> NEW.study_id",
        "annotator consent version belongs to another study",
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
        "(SELECT group_id FROM studies_annotator WHERE id = NEW.annotator_id) <> NEW.group_id"
        " OR (SELECT stage_id FROM studies_batch WHERE id = NEW.batch_id) <> NEW.stage_id"
        " OR (SELECT study_id FROM studies_annotator WHERE id = NEW.annotator_id)"
        " <> (SELECT study_id FROM studies_stage WHERE id = NEW.stage_id)",
        "assignment group, stage or study does not match its annotator and batch",
    ),
    # Slots above the study's k or m are refused when taken (a researcher may lower k
    # or m later without invalidating work already handed out).
    "studies_assignment_limits": (
        "(TG_OP = 'INSERT' OR NEW.group_slot <> OLD.group_slot"
        " OR NEW.annotator_slot <> OLD.annotator_slot)"
        " AND EXISTS (SELECT 1 FROM studies_stage st JOIN studies_study s ON s.id = st.study_id"
        " WHERE st.id = NEW.stage_id"
        " AND (NEW.group_slot > s.overlap_k OR NEW.annotator_slot > s.batches_per_stage))",
        "assignment slot exceeds the study's overlap k or batches per stage m",
    ),
    "studies_judgement": (
        "NOT EXISTS (SELECT 1 FROM studies_assignment a JOIN studies_batchitem bi"
        " ON bi.batch_id = a.batch_id WHERE a.id = NEW.assignment_id"
        " AND bi.reflection_id = NEW.reflection_id)",
        "judgement reflection is not part of the batch of its assignment",
    ),
    "studies_judgement_categories": (
        "(NEW.error_flags & ~COALESCE((SELECT bit_or(1 << c.bit) FROM studies_errorcategory c"
        " WHERE c.study_id = (SELECT st.study_id FROM studies_assignment a"
        " JOIN studies_stage st ON st.id = a.stage_id WHERE a.id = NEW.assignment_id)), 0)) <> 0",
        "judgement selects an error category its study does not have",
    ),
}

# name: (table, events, condition TRUE when the change would break a rule, message).
# In DELETE triggers only OLD exists; conditions are written accordingly.
GUARDS = {
    "studies_annotatorgroup_guard": (
        "studies_annotatorgroup",
        "UPDATE OF study_id",
        "NEW.study_id <> OLD.study_id"
        " AND EXISTS (SELECT 1 FROM studies_annotator WHERE group_id = OLD.id)",
        "a group with annotators cannot move to another study",
    ),
    "studies_stage_guard": (
        "studies_stage",
        "UPDATE OF study_id",
        "NEW.study_id <> OLD.study_id"
        " AND EXISTS (SELECT 1 FROM studies_batch WHERE stage_id = OLD.id)",
        "a stage with batches cannot move to another study",
    ),
    "studies_dialoguecontext_guard": (
        "studies_dialoguecontext",
        "UPDATE OF study_id",
        "NEW.study_id <> OLD.study_id"
        " AND EXISTS (SELECT 1 FROM studies_batch WHERE context_id = OLD.id)",
        "a context with batches cannot move to another study",
    ),
    "studies_reflection_guard": (
        "studies_reflection",
        "UPDATE OF context_id",
        "NEW.context_id <> OLD.context_id"
        " AND EXISTS (SELECT 1 FROM studies_batchitem WHERE reflection_id = OLD.id)",
        "a reflection in a batch cannot move to another context",
    ),
    "studies_batch_guard": (
        "studies_batch",
        "UPDATE OF context_id",
        "NEW.context_id <> OLD.context_id"
        " AND EXISTS (SELECT 1 FROM studies_batchitem WHERE batch_id = OLD.id)",
        "a batch with items cannot move to another context",
    ),
    "studies_assignment_guard": (
        "studies_assignment",
        "UPDATE OF batch_id",
        "NEW.batch_id <> OLD.batch_id"
        " AND EXISTS (SELECT 1 FROM studies_judgement WHERE assignment_id = OLD.id)",
        "an assignment with judgements cannot move to another batch",
    ),
    "studies_consentversion_guard": (
        "studies_consentversion",
        "UPDATE",
        "NEW.information_sheet <> OLD.information_sheet OR NEW.consent_text <> OLD.consent_text"
        " OR NEW.number <> OLD.number OR NEW.study_id <> OLD.study_id",
        "consent versions cannot be edited: change the study texts to create a new version",
    ),
    "studies_errorcategory_guard": (
        "studies_errorcategory",
        "UPDATE OF bit, study_id OR DELETE",
        "(TG_OP = 'DELETE' OR NEW.bit <> OLD.bit OR NEW.study_id <> OLD.study_id)"
        " AND EXISTS (SELECT 1 FROM studies_judgement j"
        " JOIN studies_assignment a ON a.id = j.assignment_id"
        " JOIN studies_stage st ON st.id = a.stage_id"
        " WHERE st.study_id = OLD.study_id AND (j.error_flags & (1 << OLD.bit)) <> 0)",
        "an error category chosen in judgements cannot be removed, moved or renumbered",
    ),
    "studies_batchitem_guard": (
        "studies_batchitem",
        "UPDATE OF batch_id, reflection_id OR DELETE",
        "(TG_OP = 'DELETE' OR NEW.batch_id <> OLD.batch_id"
        " OR NEW.reflection_id <> OLD.reflection_id)"
        " AND EXISTS (SELECT 1 FROM studies_judgement j JOIN studies_assignment a"
        " ON a.id = j.assignment_id WHERE a.batch_id = OLD.batch_id"
        " AND j.reflection_id = OLD.reflection_id)",
        "a batch item that has judgements cannot be moved or removed",
    ),
}


def _table(rule_name: str) -> str:
    return "_".join(rule_name.split("_")[:2])


def _trigger_sql(name: str, table: str, events: str, condition: str, message: str) -> str:
    quoted = message.replace("'", "''")
    return f"""
        CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF {condition} THEN
                RAISE EXCEPTION '{quoted}' USING ERRCODE = 'check_violation';
            END IF;
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER {name} BEFORE {events} ON {table}
            FOR EACH ROW EXECUTE FUNCTION {name}();
    """


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, (condition, message) in RULES.items():
        schema_editor.execute(
            _trigger_sql(f"{name}_rule", _table(name), "INSERT OR UPDATE", condition, message)
        )
    for name, (table, events, condition, message) in GUARDS.items():
        schema_editor.execute(_trigger_sql(name, table, events, condition, message))


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    names = [(f"{name}_rule", _table(name)) for name in RULES]
    names += [(name, table) for name, (table, *_rest) in GUARDS.items()]
    for name, table in names:
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS {name} ON {table}; DROP FUNCTION IF EXISTS {name}();"
        )


class Migration(migrations.Migration):
    dependencies = [("studies", "0001_initial")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
