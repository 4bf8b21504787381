import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from analysis.dataset_card import dataset_card, dataset_zip_write
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's dataset for publishing: a zip of README.md (the dataset card: "
        "what the files hold, who annotated, how they were recruited and paid, the "
        "protocol, the agreement of the newest finished analysis run) and the published "
        "format with its optional columns as Parquet, one file per instrument. --card "
        "writes the card alone."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument(
            "--out",
            metavar="PATH",
            help="Where to write (a .zip; with --card, stdout if not given).",
        )
        parser.add_argument("--card", action="store_true", help="Only the card (README.md).")

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        out = Path(options["out"]) if options["out"] else None
        if out is not None and not out.parent.is_dir():
            raise CommandError(f"Cannot write {out}: no directory {out.parent}.")
        if options["card"]:
            text = dataset_card(study)
            if out is None:
                (self.stdout._out if hasattr(self.stdout, "_out") else sys.stdout).write(text)
                return
            out.write_text(text, encoding="utf-8")
        else:
            if out is None or out.suffix != ".zip":
                raise CommandError("The dataset is a zip: pass --out PATH.zip (or --card).")
            partial = out.with_name(out.name + ".partial")
            try:
                dataset_zip_write(study=study, target=partial)
            except BaseException:
                partial.unlink(missing_ok=True)
                raise
            partial.replace(out)
        self.stderr.write(f"Wrote {out}.")
