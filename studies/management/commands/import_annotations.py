from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.published import AnnotationsImportError, annotations_import


class Command(BaseCommand):
    help = (
        "Create a new, closed study from published annotation data (one CSV row per "
        "reflection and annotator; README, 'Importing published annotations'). All-or-nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="The CSV file (UTF-8, with or without BOM).")
        parser.add_argument(
            "--study", required=True, dest="study_slug", help="Slug of the new study."
        )
        parser.add_argument("--title", help="Title of the new study (default: the slug).")

    def handle(self, *args, path: str, study_slug: str, title: str | None, **options):
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            summary = annotations_import(path_or_file=file, study_slug=study_slug, title=title)
        except AnnotationsImportError as exc:
            raise CommandError(
                f"Nothing was imported: {exc.total} problem(s) in {file.name}:\n"
                + "\n".join(f"  {line}" for line in str(exc).splitlines())
            ) from None
        self.stdout.write(self.style.SUCCESS(str(summary)))
