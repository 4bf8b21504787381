from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from studies.definition import KINDS, definition_text, study_definition
from studies.management.acting import acting_account
from studies.models import Study
from studies.permissions import Capability

#: What writing the crowd completion codes takes, besides seeing the study.
CODES_CAPABILITY = Capability.MANAGE_ANNOTATORS


class Command(BaseCommand):
    help = (
        "Write everything that defines a study but its materials (groups, categories, "
        "codebook, stages with k, m, waits, instruments and wording, tutorial, crowd "
        "settings, pay, Likert dimensions and gates, questionnaires, the training quiz) "
        "as one YAML or JSON file that import_study reads into a new draft study. Crowd "
        "completion codes only with --with-codes; never secrets or personal data."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--out", metavar="PATH", help="Write here (default: standard output).")
        parser.add_argument(
            "--format", choices=KINDS, help="Default: from --out's extension, else yaml."
        )
        parser.add_argument(
            "--with-codes", action="store_true", help="Include each stage's crowd codes."
        )
        parser.add_argument(
            "--by",
            metavar="USERNAME",
            help="The account asking; refused unless its role in the study may see it (and, "
            "with --with-codes, manage annotators and crowd settings).",
        )

    def handle(self, *args, study_slug, out, format, with_codes, by, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        acting_account(by, study, Capability.SEE, *([CODES_CAPABILITY] if with_codes else []))
        kind = format or ("json" if out and out.endswith(".json") else "yaml")
        text = definition_text(study_definition(study, with_codes=with_codes), kind)
        if out:
            Path(out).write_text(text, encoding="utf-8")
            self.stdout.write(f"Wrote the definition of {study.slug} to {out}.")
        else:
            self.stdout.write(text, ending="")
