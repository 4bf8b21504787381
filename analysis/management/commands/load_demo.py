"""Create (or refresh) the demo study, a researcher login and annotator links, with
simulated annotators' judgements and an analysis run, so the dashboard shows figures
from the start; a second study of the same dialogues whose stages rate on Likert
dimensions, and a third whose first stage compares pairs of candidates and whose
second ranks them, simulated and analysed too.

It lives in the analysis app because it ends with an analysis run: analysis sits
above studies, so this command may use both.
"""

import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from analysis.models import AnalysisRun
from analysis.services import analysis_run_compute, candidate_texts_embed
from studies.datafiles.materials import materials_import
from studies.links import absolute_url
from studies.models import LikertDimension, Stage, StageGate, StagePay, Study
from studies.selectors import study_has_judgements
from studies.services import (
    annotators_create,
    demo_judgements_simulate,
    study_create,
    study_open,
)
from studies.services.roles import study_created_by

DEMO_DIR = Path(__file__).resolve().parents[3] / "studies" / "demo"
RESEARCHER_USERNAME = "researcher"
RESEARCHER_PASSWORD = "demo-researcher"  # demo only; printed so the quick start works
ANNOTATORS_PER_GROUP = 4
NEW_ANNOTATOR_GROUP = "Layperson"  # its last annotator is left to start, to try the pages
DEMO_RESAMPLES = 200  # bootstrap resamples of the demo's analysis (seconds, not minutes)
#: The demo run's crossed generation settings (its table: a label distribution per
#: decoding strategy × reflection complexity).
DEMO_CROSSED = ("decoding", "complexity")
#: Each group's pay in each stage of the main demo study.
DEMO_PAY = {
    "Layperson": {
        "unit": "batch",
        "amount": Decimal("1.50"),
        "currency": "GBP",
        "minimum_hourly_rate": Decimal("12.21"),
    },
    "Expert": {"unit": "hour", "amount": Decimal("25.00"), "currency": "GBP"},
}
LIKERT_TUTORIAL_INTRO = (
    "In this task you read an excerpt of a conversation between a therapist and a client, "
    "then several responses a therapist could give next. Rate each response on every "
    "statement shown under it: how fluent it is, and how much warmth it shows towards the "
    "client. There are no right or wrong answers: we want your own impression."
)
LIKERT_TUTORIAL_NOTES = (
    "A response that names what the client said in plain, grammatical words reads as "
    "fluent; one that acknowledges how the client feels shows warmth."
)
COMPARISON_TUTORIAL_INTRO = (
    "In this task you read an excerpt of a conversation between a therapist and a client, "
    "then responses a therapist could give next. First you compare them two at a time and "
    "choose the better one; later you put all the responses to a conversation in order, "
    "the best first. There are no right or wrong answers: we want your own impression."
)
COMPARISON_TUTORIAL_NOTES = (
    "A good response reflects what the client said and felt, in plain words, without "
    "adding anything the client did not say."
)
# The comparison demo's stages: pairs of candidates from different systems (a sample
# of six per context), then a ranking of the human reflection and two candidates of
# each model.
PAIRS_PER_CONTEXT = 6
# The gated study: every lay batch gets its three laypeople (the demo's fourth is left
# to start), and the experts' "good reflection" stage asks its own question.
GATED_LAY_BATCHES = 6
GOOD_QUESTION = "Is this a good reflection by counselling standards?"
RANKED_PER_SOURCE = 2
# The Likert demo's dimensions, in each of its stages.
LIKERT_DIMENSIONS = (
    {
        "position": 1,
        "name": "fluency",
        "statement": "The response is fluent and grammatical.",
        "points": 5,
        "labels": ["not at all", "", "", "", "completely"],
        "checks_attention": True,
    },
    {
        "position": 2,
        "name": "warmth",
        "statement": "The response shows warmth towards the client.",
        "points": None,
        "labels": ["cold", "warm"],
        "offers_cannot_judge": True,
    },
)


class Command(BaseCommand):
    help = "Load the demo study (idempotent), a researcher login, and print annotator links."

    def add_arguments(self, parser):
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even with DEBUG off (only on a throwaway deployment).",
        )
        parser.add_argument(
            "--no-judgements",
            action="store_true",
            help="Only the study, its materials and annotators: no simulated judgements "
            "and no analysis run.",
        )

    # The materials import is its own (durable) transaction. Each step is idempotent,
    # so running the command again completes an interrupted load.
    def handle(self, *args, force: bool, no_judgements: bool, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "The demo creates a superuser whose password is published in the README; "
                "refusing to run with DEBUG off. Pass --force on a throwaway deployment."
            )
        config = json.loads((DEMO_DIR / "study.json").read_text(encoding="utf-8"))
        with transaction.atomic():  # the study is configured whole, or not at all
            study = self._study(config)
        summary = materials_import(
            study=study, content=(DEMO_DIR / "materials.json").read_bytes(), fmt="json"
        )
        self.stdout.write(f"Materials: {summary}")
        study_open(study=study)

        User = get_user_model()
        researcher = User.objects.filter(username=RESEARCHER_USERNAME).first()
        if researcher is None:
            researcher = User.objects.create_superuser(
                RESEARCHER_USERNAME, password=RESEARCHER_PASSWORD
            )
        if study.created_by_id is None:  # its creator and owner, as in the admin
            study_created_by(study=study, user=researcher)

        for group in study.groups.all():
            missing = ANNOTATORS_PER_GROUP - group.annotators.count()
            if missing > 0:
                annotators_create(group=group, count=missing)
        newcomer = self._newcomer(study)
        if not no_judgements:
            self._simulate(study, newcomer, crossed=DEMO_CROSSED)
        likert = self._likert_study(config, researcher)
        if not no_judgements:
            self._simulate(likert, self._newcomer(likert))
        compared = self._comparison_study(config, researcher)
        if not no_judgements:
            self._simulate(compared, self._newcomer(compared))
        gated = self._gated_study(config, researcher)
        if not no_judgements:
            self._simulate(gated, self._newcomer(gated))

        # The links on the site's address: `make demo` sets DJANGO_SITE_URL from its PORT.
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Researcher (study admin):"))
        self.stdout.write(f"  {absolute_url(reverse('admin:index'))}")
        self.stdout.write(f"  username: {RESEARCHER_USERNAME}")
        self.stdout.write(f"  password: {RESEARCHER_PASSWORD}")
        self.stdout.write("")
        self.stdout.write(
            self.style.SUCCESS("Crowd entry link of stage 1 (joins the Layperson group):")
        )
        first = study.stages.order_by("position").first()
        join = absolute_url(reverse("studies:join", args=[study.slug, first.join_key]))
        self.stdout.write(f"  {join}?PROLIFIC_PID=demo-worker-1&STUDY_ID=s&SESSION_ID=x")
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Annotator invitation links (one per person):"))
        self._links(study)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Dashboard (agreement, figures, exports):"))
        self.stdout.write(f"  {absolute_url(reverse('analysis:dashboard', args=[study.slug]))}")
        self.stdout.write("")
        self.stdout.write(
            self.style.SUCCESS("A second demo study rates on Likert dimensions; its dashboard:")
        )
        self.stdout.write(f"  {absolute_url(reverse('analysis:dashboard', args=[likert.slug]))}")
        self.stdout.write("  and its annotators' invitation links:")
        self._links(likert)
        self.stdout.write("")
        self.stdout.write(
            self.style.SUCCESS(
                "A third demo study compares pairs of candidates, then ranks them; its dashboard:"
            )
        )
        self.stdout.write(f"  {absolute_url(reverse('analysis:dashboard', args=[compared.slug]))}")
        self.stdout.write("  and its annotators' invitation links:")
        self._links(compared)
        self.stdout.write("")
        self.stdout.write(
            self.style.SUCCESS(
                "A fourth demo study gates its expert stages on the laypeople's answers; its "
                "dashboard:"
            )
        )
        self.stdout.write(f"  {absolute_url(reverse('analysis:dashboard', args=[gated.slug]))}")
        self.stdout.write("  and its annotators' invitation links:")
        self._links(gated)

    def _links(self, study: Study) -> None:
        """Each annotator's invitation link, the ones not started yet marked."""
        for annotator in study.annotators.select_related("group").order_by("group__name", "number"):
            link = absolute_url(reverse("studies:invitation", args=[annotator.access_token]))
            note = "  (not started yet: try the annotator pages with this one)"
            started = annotator.consented_at is not None
            self.stdout.write(f"  {annotator.pseudonym:<14} {link}{'' if started else note}")

    def _newcomer(self, study: Study):
        """The annotator left to start, to try the pages with."""
        return study.annotators.filter(group__name=NEW_ANNOTATOR_GROUP).order_by("-number").first()

    def _simulate(self, study: Study, newcomer, *, crossed: tuple[str, ...] = ()) -> None:
        """Simulated annotators (all but ``newcomer``) and an analysis run, once (crossing
        the generation settings ``crossed``)."""
        if not study_has_judgements(study_id=study.pk):
            annotators = list(
                study.annotators.exclude(pk=getattr(newcomer, "pk", None)).order_by("pk")
            )
            done = demo_judgements_simulate(study=study, annotators=annotators)
            self.stdout.write(
                f"Simulated annotators: {done.annotators} annotators submitted "
                f"{done.batches} batches ({done.judgements} answers)."
            )
        if not AnalysisRun.objects.filter(study=study, status=AnalysisRun.Status.DONE).exists():
            # What the worker does after an import, here before the first run: the
            # candidates' embeddings its diversity reads.
            candidate_texts_embed(study_id=study.pk)
            run = analysis_run_compute(
                study=study,
                parameters={
                    "bootstrap_resamples": DEMO_RESAMPLES,
                    "crossed_settings": list(crossed),
                },
            )
            self.stdout.write(f"Analysis run #{run.pk}: {run.get_status_display().lower()}.")

    def _likert_study(self, config: dict, researcher) -> Study:
        """The demo's second study: the same dialogues and candidates, both stages rating
        fluency (5 points, the attention check's dimension) and warmth (a slider,
        "cannot judge" offered), two groups; open, owned by the researcher."""
        slug = f"{config['slug']}-likert"
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            with transaction.atomic():
                study = self._texts_study(
                    config,
                    slug=slug,
                    title="Demo: Likert ratings of counselling reflections",
                    tutorial_intro=LIKERT_TUTORIAL_INTRO,
                    tutorial_example_notes=LIKERT_TUTORIAL_NOTES,
                )
                for stage in study.stages.all():
                    stage.instrument = Stage.Instrument.LIKERT
                    stage.save(update_fields=["instrument"])
                    for dimension in LIKERT_DIMENSIONS:
                        dimension = LikertDimension(stage=stage, **dimension)
                        dimension.full_clean()
                        dimension.save()
        return self._opened(
            study, (DEMO_DIR / "materials.json").read_bytes(), researcher=researcher
        )

    def _comparison_study(self, config: dict, researcher) -> Study:
        """The demo's third study: stage 1 compares pairs of candidates from different
        systems (every model's candidates and the human reflection; a sample of
        ``PAIRS_PER_CONTEXT`` pairs per context, ties allowed, a reason asked), stage 2
        ranks the human reflection and ``RANKED_PER_SOURCE`` candidates of each model;
        two groups; open, owned by the researcher."""
        slug = f"{config['slug']}-comparisons"
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            with transaction.atomic():
                study = self._texts_study(
                    config,
                    slug=slug,
                    title="Demo: pairwise preference and ranking of counselling reflections",
                    tutorial_intro=COMPARISON_TUTORIAL_INTRO,
                    tutorial_example_notes=COMPARISON_TUTORIAL_NOTES,
                    stages=[
                        ("Pairwise stage", timedelta(days=3)),
                        ("Ranking stage", timedelta(days=3)),
                    ],
                )
                Stage.objects.filter(study=study, position=1).update(
                    instrument=Stage.Instrument.PAIRWISE,
                    pairs_per_context=PAIRS_PER_CONTEXT,
                    asks_reason=True,
                )
                Stage.objects.filter(study=study, position=2).update(
                    instrument=Stage.Instrument.RANKING
                )
        return self._opened(study, json.dumps(comparison_materials()), researcher=researcher)

    def _gated_study(self, config: dict, researcher) -> Study:
        """The demo's fourth study: laypeople judge coherence (three per batch); experts
        then judge whether the reflections the lay majority found coherent are good
        reflections (a stage of its own wording), and adjudicate coherence on the items
        whose laypeople were not unanimous (one expert per batch); open, owned by the
        researcher."""
        slug = f"{config['slug']}-gated"
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            with transaction.atomic():
                study = self._texts_study(
                    config,
                    slug=slug,
                    title="Demo: experts validate what laypeople found coherent",
                    stages=[
                        ("Lay stage", timedelta(0)),
                        ("Good reflection", timedelta(0)),
                        ("Adjudication", timedelta(0)),
                    ],
                )
                lay, expert = (study.groups.get(name=n) for n in ("Layperson", "Expert"))
                first, good, adjudication = study.stages.order_by("position")
                Stage.objects.filter(pk=first.pk).update(batches_per_stage=GATED_LAY_BATCHES)
                first.groups.set([lay])
                Stage.objects.filter(pk__in=[good.pk, adjudication.pk]).update(overlap_k=1)
                Stage.objects.filter(pk=good.pk).update(coherence_question=GOOD_QUESTION)
                for stage, rule in (
                    (good, StageGate.Rule.MAJORITY_COHERENT),
                    (adjudication, StageGate.Rule.NOT_UNANIMOUS),
                ):
                    stage.groups.set([expert])
                    StageGate.objects.create(
                        stage=stage, source_stage=first, rule=rule, deciding_group=lay
                    )
        return self._opened(study, json.dumps(gated_materials()), researcher=researcher)

    def _opened(self, study: Study, materials, *, researcher) -> Study:
        """``study`` with ``materials`` imported (a JSON document), open, owned by the
        researcher, with ``ANNOTATORS_PER_GROUP`` annotators per group (each step
        idempotent)."""
        materials_import(study=study, content=materials, fmt="json")
        study_open(study=study)
        if study.created_by_id is None:
            study_created_by(study=study, user=researcher)
        for group in study.groups.all():
            missing = ANNOTATORS_PER_GROUP - group.annotators.count()
            if missing > 0:
                annotators_create(group=group, count=missing)
        return study

    def _study(self, config: dict) -> Study:
        study = Study.objects.filter(slug=config["slug"]).first()
        if study is not None:
            return study
        study = self._texts_study(config, slug=config["slug"], title=config["title"])
        for category in study.categories.all():
            example = config["categories"].get(category.slug, {})
            category.example_reflection = example.get("example_reflection", "")
            category.example_explanation = example.get("example_explanation", "")
            category.save(update_fields=["example_reflection", "example_explanation"])
        study.crowd_group = study.groups.get(name="Layperson")
        study.save(update_fields=["crowd_group"])
        # What each group is paid (the report's pay table): laypeople per batch, with the
        # UK's 2025 National Living Wage as the least hourly rate; experts per hour.
        StagePay.objects.bulk_create(
            StagePay(stage=stage, group=study.groups.get(name=group), **pay)
            for stage in study.stages.all()
            for group, pay in DEMO_PAY.items()
        )
        self.stdout.write(f'Created the demo study "{study.title}".')
        return study

    def _texts_study(self, config: dict, *, slug: str, title: str, stages=None, **texts) -> Study:
        """A new study with the demo's texts (``texts``: others instead), its two stages
        (``stages``: others instead) and two groups."""
        tutorial = config["tutorial"]
        texts = {
            "tutorial_intro": tutorial["intro"],
            "tutorial_example_notes": tutorial["example_notes"],
            **texts,
        }
        return study_create(
            slug=slug,
            title=title,
            description=config["description"],
            contact_email=config["contact_email"],
            information_sheet=config["information_sheet"],
            consent_text=config["consent_text"],
            tutorial_example_turns=tutorial["example_turns"],
            tutorial_empathy_explanation=tutorial["empathy_explanation"],
            **texts,
            stages=stages
            or [("GPT-2 stage", timedelta(days=3)), ("GPT-3 stage", timedelta(days=3))],
            groups=["Layperson", "Expert"],
            seed=20261121,
        )


def gated_materials() -> dict:
    """The demo's materials for the gated study: each context's GPT-2 candidates, in its
    lay stage (the gated stages take theirs from it)."""
    document = json.loads((DEMO_DIR / "materials.json").read_text(encoding="utf-8"))
    for context in document["contexts"]:
        context["synthetic"] = [
            {**candidate, "stage": "Lay stage"}
            for candidate in context["synthetic"]
            if candidate["stage"] == "GPT-2 stage"
        ]
    return document


def comparison_materials() -> dict:
    """The demo's materials for the comparison study: each context's candidates of
    every model in the pairwise stage, and the first ``RANKED_PER_SOURCE`` of each
    model in the ranking stage."""
    document = json.loads((DEMO_DIR / "materials.json").read_text(encoding="utf-8"))
    for context in document["contexts"]:
        candidates = context["synthetic"]
        ranked, seen = [], {}
        for candidate in candidates:
            seen[candidate["source"]] = seen.get(candidate["source"], 0) + 1
            if seen[candidate["source"]] <= RANKED_PER_SOURCE:
                ranked.append({**candidate, "stage": "Ranking stage"})
        context["synthetic"] = [
            *({**candidate, "stage": "Pairwise stage"} for candidate in candidates),
            *ranked,
        ]
    return document
