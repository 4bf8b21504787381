import json
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analysis.management.options import add_judgement_options
from analysis.models import AnalysisRun
from analysis.parameters import DEFAULT_PARAMETERS
from analysis.report.text import report_summary_lines
from analysis.services import analysis_run_compute
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Compute a study's agreement report now (in this process, not on the worker), store "
        "it as an analysis run, print a summary, and optionally write the JSON report."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        add_judgement_options(parser)
        parser.add_argument("--json", metavar="PATH", help="Write the JSON report to PATH.")
        parser.add_argument(
            "--cross",
            action="append",
            default=[],
            metavar="SETTING",
            help="A generation setting to cross with the other --cross ones (repeat): the "
            "label distribution per combination of their values.",
        )
        parser.add_argument(
            "--resamples",
            type=int,
            default=1000,
            help="Bootstrap resamples for the confidence intervals (0: no intervals).",
        )
        parser.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap.")
        parser.add_argument(
            "--fast-seconds",
            type=float,
            default=DEFAULT_PARAMETERS["fast_seconds"],
            help="Annotator quality: answers faster than this are fast (default 3).",
        )
        parser.add_argument(
            "--agreement-floor",
            type=float,
            default=DEFAULT_PARAMETERS["agreement_floor"],
            help="Annotator quality: flag agreement with the group below this (default 0.5).",
        )

    def handle(self, *args, study_slug: str, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        target = Path(options["json"]) if options["json"] else None
        if target is not None and not target.parent.is_dir():
            raise CommandError(f"Cannot write {target}: no directory {target.parent}.")
        parameters = {
            "excluded_sources": options["exclude_source"],
            "include_expired": options["include_expired"],
            "bootstrap_resamples": options["resamples"],
            "seed": options["seed"],
            "fast_seconds": options["fast_seconds"],
            "agreement_floor": options["agreement_floor"],
            "crossed_settings": options["cross"],
        }
        try:
            run = analysis_run_compute(study=study, parameters=parameters)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if run.status != AnalysisRun.Status.DONE:
            raise CommandError(f"Analysis run #{run.pk} failed: {run.error}")
        for line in report_summary_lines(run.result):
            self.stdout.write(line)
        if target is not None:
            target.write_text(
                json.dumps(run.result, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
                encoding="utf-8",
            )
            self.stdout.write(f"JSON report written to {target}.")
        self.stdout.write(
            self.style.SUCCESS(
                f"Stored as analysis run #{run.pk} ({run.duration_seconds or 0:.1f} s)."
            )
        )
