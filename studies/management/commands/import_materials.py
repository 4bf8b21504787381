from django.core.management.base import CommandError

from studies.datafiles.commands import DataFileImportCommand
from studies.datafiles.materials import materials_format_for, materials_import


class Command(DataFileImportCommand):
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
        parser.add_argument(
            "--pool",
            action="store_true",
            help="The synthetic reflections are each context's candidate pool, in no stage "
            "(select_candidates chooses from it).",
        )

    def handle(self, *args, study_slug: str, path: str, format: str | None, pool: bool, **options):
        study = self.study_or_error(study_slug)
        file = self.file_or_error(path)
        fmt = format or materials_format_for(file.name)
        if fmt is None:
            raise CommandError("Cannot tell the format from the file name: pass --format json|csv.")
        self.run_import(
            file,
            lambda: materials_import(study=study, content=file.read_bytes(), fmt=fmt, pool=pool),
        )
