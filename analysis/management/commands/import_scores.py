from analysis.importers import automatic_scores_import
from studies.datafiles.commands import DataFileImportCommand


class Command(DataFileImportCommand):
    help = (
        "Import automatic-evaluator scores (BLEU, BERTScore, an LLM judge...) from a CSV file "
        "into a study. All-or-nothing; re-importing the same file changes nothing, a corrected "
        "file updates the scores it gives."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("path")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Accept evaluators named like a metric computed here (bleu, rouge_l, ignoring "
            "case), deleting that metric's computed scores.",
        )

    def handle(self, *args, study_slug: str, path: str, replace: bool, **options):
        study = self.study_or_error(study_slug)
        file = self.file_or_error(path)
        self.run_import(
            file,
            lambda: automatic_scores_import(study=study, file=file.read_bytes(), replace=replace),
        )
