from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from analysis.candidates.clustering import LINKAGES, METRICS
from analysis.candidates.parameters import SelectionParameters
from analysis.candidates.selection import (
    CandidateSelectionError,
    candidate_selection_create,
    candidate_selection_run,
)
from studies.management.acting import acting_account
from studies.models import Study
from studies.permissions import Capability

DEFAULTS = SelectionParameters()


class Command(BaseCommand):
    help = (
        "Select candidates from a study's pools into a stage that has no batches yet: "
        "duplicates removed, the rest embedded and clustered, the longest member of each "
        "cluster its representative, and a seeded draw of clusters per context. Runs in "
        "this process and records the selection with its parameters and seed; the same "
        "seed and parameters give the same selection."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_slug")
        parser.add_argument("--stage", required=True, help="The stage to fill (by name).")
        parser.add_argument(
            "--per-context",
            type=int,
            default=DEFAULTS.per_context,
            help=f"Clusters drawn per context (default {DEFAULTS.per_context}).",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=DEFAULTS.threshold,
            help=f"The clustering's distance threshold (default {DEFAULTS.threshold}).",
        )
        parser.add_argument("--metric", choices=METRICS, default=DEFAULTS.metric)
        parser.add_argument("--linkage", choices=LINKAGES, default=DEFAULTS.linkage)
        parser.add_argument(
            "--stratify-by",
            default="",
            metavar="SETTING",
            help="Draw the clusters in turn across the values of this generation setting "
            "of their representatives (e.g. decoding).",
        )
        parser.add_argument(
            "--model",
            default=DEFAULTS.model,
            help="A sentence-transformers model: a folder or a hub name (default: the "
            f"packaged {DEFAULTS.model}).",
        )
        parser.add_argument(
            "--pool-pairs",
            default=str(DEFAULTS.pool_pairs_per_context),
            metavar="N|all",
            help="Pairs per context scored for the pool's Self-BLEU (a seeded sample; "
            f"default {DEFAULTS.pool_pairs_per_context}), or all.",
        )
        parser.add_argument("--seed", type=int, help="Default: the study's seed.")
        parser.add_argument(
            "--by",
            metavar="USERNAME",
            help="The account asking; refused unless it may change the study's configuration.",
        )

    def handle(self, *args, study_slug, stage, by, seed, **options):
        study = Study.objects.filter(slug=study_slug).first()
        if study is None:
            raise CommandError(f'No study with slug "{study_slug}".')
        user = acting_account(by, study, Capability.CONFIGURE)
        target = study.stages.filter(name=stage).first()
        if target is None:
            names = ", ".join(study.stages.order_by("position").values_list("name", flat=True))
            raise CommandError(f'No stage "{stage}" in {study.slug} (it has: {names or "none"}).')
        pool_pairs = options["pool_pairs"]
        if pool_pairs != "all" and not pool_pairs.isdigit():
            raise CommandError("--pool-pairs takes a whole number or all.")
        parameters = SelectionParameters(
            model=options["model"],
            threshold=options["threshold"],
            metric=options["metric"],
            linkage=options["linkage"],
            per_context=options["per_context"],
            stratify_by=options["stratify_by"],
            pool_pairs_per_context=None if pool_pairs == "all" else int(pool_pairs),
        )
        try:
            selection = candidate_selection_create(
                study=study, stage=target, parameters=parameters, seed=seed, user=user
            )
        except ValidationError as exc:
            problems = "\n".join(
                f"  {'' if field == '__all__' else field + ': '}{message}"
                for field, messages in exc.message_dict.items()
                for message in messages
            )
            raise CommandError(f"Nothing selected:\n{problems}") from None
        try:
            candidate_selection_run(
                selection_id=selection.pk, progress=lambda message: self.stdout.write(message)
            )
        except CandidateSelectionError as exc:
            raise CommandError(f"Selection {selection.pk} failed, nothing written: {exc}") from None
        selection.refresh_from_db()
        counts = selection.counts
        self.stdout.write(
            self.style.SUCCESS(
                f"Selection {selection.pk} (seed {selection.seed}): {counts['candidates']} "
                f"candidates in {counts['contexts']} contexts, {counts['exact_duplicates']} "
                f"exact and {counts['near_duplicates']} near duplicates removed, "
                f"{counts['clusters']} clusters, {counts['selected']} selected into stage "
                f'"{target.name}".'
            )
        )
