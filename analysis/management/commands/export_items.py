from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analysis.item_export import COLUMNS, KINDS, items_parameters_clean, items_rows
from analysis.management.options import add_judgement_options
from studies.exports import FILES, rows_file_write
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write the item-level export of a study: one row per (stage, item, group) of the "
        f"judgements the report analyses, with the columns {', '.join(COLUMNS)}."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        add_judgement_options(parser)
        parser.add_argument(
            "--file",
            default="csv",
            choices=list(FILES),
            help="csv (texts exactly as stored, the default), csv-spreadsheet-safe, xlsx, "
            "jsonl or parquet.",
        )
        parser.add_argument(
            "--instrument",
            choices=["coherence", "likert"],
            default="",
            help="Whose items: the coherence protocol's stages (the default) or the Likert "
            "stages' (the default in a study of Likert stages only), one row per item, group "
            "and dimension.",
        )
        parser.add_argument("--out", metavar="PATH", required=True, help="The file to write.")

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        try:
            parameters = items_parameters_clean(
                study=study,
                excluded_sources=options["exclude_source"],
                include_expired=options["include_expired"],
                file=options["file"],
                instrument=options["instrument"],
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        target = Path(options["out"])
        if not target.parent.is_dir():
            raise CommandError(f"Cannot write {target}: no directory {target.parent}.")
        # Written beside the target and renamed once complete: no half-written file.
        partial = target.with_name(target.name + ".partial")
        try:
            rows_file_write(
                items_rows(study=study, parameters=parameters),
                file=parameters["file"],
                target=partial,
                sheet_name="items",
                kinds=KINDS,
            )
        except ValidationError as exc:
            partial.unlink(missing_ok=True)
            raise CommandError(" ".join(exc.messages)) from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        self.stdout.write(self.style.SUCCESS(f"Wrote {target}."))
