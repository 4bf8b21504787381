from studies.datafiles.commands import DataFileImportCommand
from studies.datafiles.published import annotations_import


class Command(DataFileImportCommand):
    help = (
        "Create a new, closed study from published annotation data (one CSV row per "
        "reflection and annotator; the documentation's 'Importing published annotations', "
        "/docs/analysts/imports/). All-or-nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="The CSV file (UTF-8, with or without BOM).")
        parser.add_argument(
            "--study", required=True, dest="study_slug", help="Slug of the new study."
        )
        parser.add_argument("--title", help="Title of the new study (default: the slug).")
        parser.add_argument(
            "--spreadsheet-safe",
            action="store_true",
            help="The file was exported with --spreadsheet-safe (or by a version that always "
            "escaped): remove the one apostrophe added before a text starting with =, +, -, "
            "@, tab or carriage return. Without it, texts are kept exactly as written.",
        )

    def handle(
        self, *args, path: str, study_slug: str, title: str | None, spreadsheet_safe: bool, **opts
    ):
        file = self.file_or_error(path)
        self.run_import(
            file,
            lambda: annotations_import(
                path_or_file=file,
                study_slug=study_slug,
                title=title,
                spreadsheet_safe=spreadsheet_safe,
            ),
        )
