from django.db import migrations, models
from django.db.models import Exists, F, OuterRef


def imported_studies_mark(apps, schema_editor):
    """Studies imported before the field: the import stamped each assignment claimed
    and submitted at one instant (the import's), which live work never is."""
    Study = apps.get_model("studies", "Study")
    Assignment = apps.get_model("studies", "Assignment")
    of_study = Assignment.objects.filter(stage__study=OuterRef("pk"))
    Study.objects.filter(
        Exists(of_study),
        ~Exists(of_study.exclude(submitted_at=F("assigned_at"))),
    ).update(work_recorded=False)


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0033_gate_column_reserved"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="work_recorded",
            field=models.BooleanField(
                default=True,
                editable=False,
                help_text="Whether the study's assignments carry when and in what order the "
                "work was done. A study imported from a published file does not (its "
                "assignments carry the import's time and a made-up order): the statistics "
                "of times and of order, such as the waiting periods and the order effects, "
                "are unknown.",
            ),
        ),
        migrations.RunPython(imported_studies_mark, migrations.RunPython.noop),
    ]
