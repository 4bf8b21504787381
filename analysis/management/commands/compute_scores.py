from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analysis.computed_scores import automatic_scores_compute
from analysis.metrics.overlap import METRICS
from studies.errors import ErrorCode
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Score every synthetic reflection of a study against its context's human reflection "
        f"with BLEU-4 and/or ROUGE-L ({', '.join(METRICS)}), in this process, and store the "
        "scores as the automatic evaluators of those names, replacing the earlier computed ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument(
            "--metric",
            nargs="+",
            required=True,
            metavar="NAME",
            help=f"The metrics to compute: {', '.join(METRICS)}.",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Delete scores imported under a metric's name (e.g. BLEU) and compute it here.",
        )

    def handle(self, *args, study_slug: str, metric: list[str], replace: bool, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        try:
            summary = automatic_scores_compute(study=study, metrics=metric, replace=replace)
        except ValidationError as exc:
            message = " ".join(exc.messages)
            if exc.code == ErrorCode.SCORES_IMPORTED_UNDER_METRIC_NAME:
                message += " To replace them: --replace."
            raise CommandError(message) from None
        self.stdout.write(self.style.SUCCESS(str(summary)))
