import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.exports import codes_csv_chunks
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's codes of free-text descriptions as CSV: one row per (description, "
        "coder, code), with an empty code and uninformative = Yes for an uninformative "
        "description."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--stage", type=int, metavar="POSITION", help="Only this stage.")
        parser.add_argument("--out", metavar="PATH", help="Write here instead of stdout.")
        parser.add_argument(
            "--spreadsheet-safe",
            action="store_true",
            help="A text starting with =, +, -, @, tab or carriage return gets a leading "
            "apostrophe.",
        )

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        stage = None
        if options["stage"] is not None:
            stage = study.stages.filter(position=options["stage"]).first()
            if stage is None:
                raise CommandError(f"{study_slug} has no stage {options['stage']}.")
        chunks = codes_csv_chunks(
            study=study, stage=stage, spreadsheet_safe=options["spreadsheet_safe"]
        )
        target = Path(options["out"]) if options["out"] else None
        if target is None:
            out = self.stdout._out if hasattr(self.stdout, "_out") else sys.stdout
            for chunk in chunks:
                out.write(chunk)
            return
        if not target.parent.is_dir():
            raise CommandError(f"Cannot write {target}: no directory {target.parent}.")
        partial = target.with_name(target.name + ".partial")
        try:
            with partial.open("w", encoding="utf-8", newline="") as handle:
                for chunk in chunks:
                    handle.write(chunk)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        partial.replace(target)
        self.stderr.write(f"Wrote {target}.")
