import sys
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.exports import (
    FILES,
    FORMATS,
    TEXT_FILES,
    export_column_kinds,
    export_instruments,
    export_options_clean,
    export_rows,
    export_zip_write,
    rows_file_write,
    rows_text_chunks,
)
from studies.exports.questionnaires import questionnaire_export_rows
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's annotations: the published format or the full audit "
        "format, as CSV with every text exactly as stored (default), as a spreadsheet-safe "
        "CSV, as an Excel workbook, or typed for publishing as JSON Lines or Parquet. "
        "Memory stays flat however large the study. "
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
        add_file_argument(file)

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        file = file_option(options)
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
            self._write(
                options["out"],
                rows=lambda: questionnaire_export_rows(
                    study=study, spreadsheet_safe=file == "csv-spreadsheet-safe"
                ),
                file=file,
                sheet_name="questionnaires",
            )
            return
        if len(export_instruments(study=study, options=export)) > 1:
            self._write_zip(options["out"], study, export)
            return
        self._write(
            options["out"],
            rows=lambda: export_rows(study=study, options=export),
            file=export.file,
            sheet_name="annotations",
            kinds=export_column_kinds(study=study, options=export),
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

    def _write(self, out_path, *, rows, file: str, sheet_name: str, kinds=None):
        """Write ``rows()`` as ``file`` to stdout (a text file only), or to ``out_path``
        through a partial file renamed when done."""
        target = Path(out_path) if out_path else None
        if target is None and file not in TEXT_FILES:
            raise CommandError(f'"{file}" is a binary file: pass --out PATH.')
        if target is None:
            out = self.stdout._out if hasattr(self.stdout, "_out") else sys.stdout
            for chunk in rows_text_chunks(rows(), file=file, kinds=kinds):
                out.write(chunk)
            return
        self._through_partial(
            target,
            lambda partial: rows_file_write(
                rows(), file=file, target=partial, sheet_name=sheet_name, kinds=kinds
            ),
        )

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


def add_file_argument(group) -> None:
    """``--file KIND`` (one of ``FILES``), beside the older ``--spreadsheet-safe`` and
    ``--excel`` of the same exclusive group."""
    group.add_argument(
        "--file",
        choices=list(FILES),
        help="The kind of file: "
        + "; ".join(f"{name}: {what}" for name, what in FILES.items())
        + ". jsonl and parquet are typed (numbers, true/false, times); parquet needs --out.",
    )


def file_option(options) -> str:
    """The kind of file the options ask for (default csv)."""
    if options.get("file"):
        return options["file"]
    if options.get("spreadsheet_safe"):
        return "csv-spreadsheet-safe"
    if options.get("excel"):
        return "xlsx"
    return "csv"
