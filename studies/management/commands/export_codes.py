from django.core.management.base import CommandError

from studies.exports import codes_rows
from studies.models import Study

from .export_annotations import Command as AnnotationsCommand
from .export_annotations import add_file_argument, file_option


class Command(AnnotationsCommand):
    """Writes its file as ``export_annotations`` does (its ``_write``: stdout, or a
    partial file renamed when complete)."""

    help = (
        "Write a study's codes of free-text descriptions: one row per (description, "
        "coder, code), with an empty code and uninformative = Yes for an uninformative "
        "description; as CSV (default), a spreadsheet-safe CSV, an Excel workbook, JSON "
        "Lines or Parquet."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--stage", type=int, metavar="POSITION", help="Only this stage.")
        parser.add_argument("--out", metavar="PATH", help="Write here instead of stdout.")
        file = parser.add_mutually_exclusive_group()
        file.add_argument(
            "--spreadsheet-safe",
            action="store_true",
            help="A text starting with =, +, -, @, tab or carriage return gets a leading "
            "apostrophe.",
        )
        file.add_argument(
            "--excel",
            action="store_true",
            help="An Excel workbook (.xlsx) whose cells are all text; needs --out.",
        )
        add_file_argument(file)

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        stage = None
        if options["stage"] is not None:
            stage = study.stages.filter(position=options["stage"]).first()
            if stage is None:
                raise CommandError(f"{study_slug} has no stage {options['stage']}.")
        file = file_option(options)
        self._write(
            options["out"],
            rows=lambda: codes_rows(
                study=study, stage=stage, spreadsheet_safe=file == "csv-spreadsheet-safe"
            ),
            file=file,
            sheet_name="codes",
        )
