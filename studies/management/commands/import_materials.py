from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.importers import MaterialsImportError, materials_format_for, materials_import
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Import dialogue contexts with their human, synthetic and attention-check reflections "
        "from a JSON or CSV file into a study. All-or-nothing; re-importing is a no-op."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("path")
        parser.add_argument(
            "--format", choices=["json", "csv"], help="Default: from the file extension."
        )

    def handle(self, *args, study_slug: str, path: str, format: str | None, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"No such file: {path}")
        fmt = format or materials_format_for(file.name)
        if fmt is None:
            raise CommandError("Cannot tell the format from the file name: pass --format json|csv.")
        try:
            summary = materials_import(study=study, content=file.read_bytes(), fmt=fmt)
        except MaterialsImportError as exc:
            lines = "\n".join(f"  {issue}" for issue in exc.issues)
            raise CommandError(
                f"Nothing was imported: {len(exc.issues)} problem(s) in {file.name}:\n{lines}"
            ) from None
        self.stdout.write(self.style.SUCCESS(str(summary)))
