import sys
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.exports import (
    FORMATS,
    csv_chunks,
    export_csv_chunks,
    export_instruments,
    export_options_clean,
    export_xlsx_write,
    export_zip_write,
    rows_xlsx_write,
)
from studies.exports.questionnaires import questionnaire_export_rows
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's annotations: the published format or the full audit "
        "format, as CSV with every text exactly as stored (default), as a spreadsheet-safe "
        "CSV, or as an Excel workbook. Streams; memory stays flat however large the study. "
        "Likert, pairwise and ranking stages' answers have published formats of their "
        "own: a study whose stages use several instruments is written as a zip of one "
        "file per instrument (--out PATH.zip), or choose the stages of one with --stage."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--format", choices=list(FORMATS), default="published")
        parser.add_argument("--out", metavar="PATH", help="Write here instead of stdout.")
        parser.add_argument("--stage", action="append", default=[], help="Only this stage.")
        parser.add_argument("--group", action="append", default=[], help="Only this group.")
        parser.add_argument("--source", action="append", default=[], help="Only this source.")
        parser.add_argument("--include-expired", action="store_true")
        parser.add_argument("--include-rejected", action="store_true")
        parser.add_argument(
            "--extended",
            action="store_true",
            help="Published format plus annotator_group, most_evident_error and empathy.",
        )
        parser.add_argument(
            "--questionnaires",
            action="store_true",
            help="Write the questionnaire answers instead (one row per answer; the filters "
            "and --format do not apply).",
        )
        file = parser.add_mutually_exclusive_group()
        file.add_argument(
            "--spreadsheet-safe",
            action="store_true",
            help="CSV for a spreadsheet: a text starting with =, +, -, @, tab or carriage "
            "return gets a leading apostrophe (import_annotations --spreadsheet-safe "
            "removes it).",
        )
        file.add_argument(
            "--excel",
            action="store_true",
            help="An Excel workbook (.xlsx) whose cells are all text; needs --out.",
        )

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        file = "csv"
        if options["spreadsheet_safe"]:
            file = "csv-spreadsheet-safe"
        elif options["excel"]:
            file = "xlsx"
        try:
            export = export_options_clean(
                study=study,
                data={
                    "format": options["format"],
                    "file": file,
                    "stage": options["stage"],
                    "group": options["group"],
                    "source": options["source"],
                    "include_expired": options["include_expired"],
                    "include_rejected": options["include_rejected"],
                    "extended": options["extended"],
                },
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if options["questionnaires"]:
            rows = questionnaire_export_rows(
                study=study, spreadsheet_safe=file == "csv-spreadsheet-safe"
            )
            self._write(
                options["out"],
                file,
                lambda: csv_chunks(rows),
                lambda target: rows_xlsx_write(
                    rows=rows, target=target, sheet_name="questionnaires"
                ),
            )
            return
        if len(export_instruments(study=study, options=export)) > 1:
            self._write_zip(options["out"], study, export)
            return
        self._write(
            options["out"],
            export.file,
            lambda: export_csv_chunks(study=study, options=export),
            lambda target: export_xlsx_write(study=study, options=export, target=target),
        )

    def _write_zip(self, out_path, study, export):
        """A study whose stages use several instruments: a zip of one file per
        instrument."""
        if not out_path or not out_path.endswith(".zip"):
            raise CommandError(
                "The stages exported use different instruments, so the export is a zip of "
                "one file per instrument: pass --out PATH.zip, or --stage for the stages of "
                "one instrument."
            )
        self._through_partial(
            Path(out_path),
            lambda partial: export_zip_write(study=study, options=export, target=str(partial)),
        )

    def _write(self, out_path, file, csv_chunks, xlsx_write):
        """Write to stdout, or to ``out_path`` through a partial file renamed when done."""
        target = Path(out_path) if out_path else None
        if target is None and file == "xlsx":
            raise CommandError("An Excel workbook is a binary file: pass --out PATH.")
        if target is None:
            out = self.stdout._out if hasattr(self.stdout, "_out") else sys.stdout
            for chunk in csv_chunks():
                out.write(chunk)
            return

        def write(partial: Path) -> None:
            if file == "xlsx":
                xlsx_write(str(partial))
            else:
                # newline="" keeps the CSV's own \r\n line ends.
                with partial.open("w", encoding="utf-8", newline="") as handle:
                    for chunk in csv_chunks():
                        handle.write(chunk)

        self._through_partial(target, write)

    def _through_partial(self, target: Path, write) -> None:
        """``write(partial)`` to a partial file renamed to ``target`` when complete, so
        no half-written file is left behind."""
        if not target.parent.is_dir():
            raise CommandError(f"Cannot write {target}: no directory {target.parent}.")
        partial = target.with_name(target.name + ".partial")
        try:
            write(partial)
        except ValidationError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(" ".join(exc.messages)) from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        self.stderr.write(f"Wrote {target}.")
