from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.importers import AutomaticScoresImportError, automatic_scores_import
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Import automatic-evaluator scores (BLEU, BERTScore, an LLM judge...) from a CSV file "
        "into a study. All-or-nothing; re-importing the same file changes nothing, a corrected "
        "file updates the scores it gives."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("path")

    def handle(self, *args, study_slug: str, path: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        file = Path(path)
        if not file.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            summary = automatic_scores_import(study=study, file=file.read_bytes())
        except AutomaticScoresImportError as exc:
            lines = "\n".join(f"  {issue}" for issue in exc.issues)
            raise CommandError(
                f"Nothing was imported: {len(exc.issues)} problem(s) in {file.name}:\n{lines}"
            ) from None
        self.stdout.write(self.style.SUCCESS(str(summary)))
