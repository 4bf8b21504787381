import sys
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from studies.exports import export_csv_chunks, export_options_clean
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Write a study's annotations as CSV: the published format (BRIEF §6) or the full "
        "audit format. Streams; memory stays flat however large the study."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--format", choices=["published", "full"], default="published")
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

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        try:
            export = export_options_clean(
                study=study,
                data={
                    "format": options["format"],
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
        target = Path(options["out"]) if options["out"] else None
        if target is not None and not target.parent.is_dir():
            raise CommandError(f"Cannot write {target}: no directory {target.parent}.")
        chunks = export_csv_chunks(study=study, options=export)
        if target is None:
            out = self.stdout._out if hasattr(self.stdout, "_out") else sys.stdout
            for chunk in chunks:
                out.write(chunk)
            return
        partial = target.with_name(target.name + ".partial")
        # newline="" keeps the CSV's own \r\n line ends; the rename makes the file
        # appear only when complete.
        try:
            with partial.open("w", encoding="utf-8", newline="") as handle:
                for chunk in chunks:
                    handle.write(chunk)
        except BaseException:
            partial.unlink(missing_ok=True)  # no half-written file left behind
            raise
        partial.replace(target)
        self.stderr.write(f"Wrote {target}.")
