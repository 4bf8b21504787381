"""Prepare the annotators of the screenshots that need more than a new annotator
(`make screenshots` runs it on the demo database, before the server starts), and write
their links as JSON for ``capture.py --prepared``:

* ``crowd_done``: a Prolific worker who joined stage 1 of the demo study through its
  join link and finished it (their page shows the stage's completion code);
* ``free_text``: a new annotator of a small study whose first stage asks for a
  description after No (a copy of the demo's materials);
* ``likert``: the Likert demo study's annotator left to start, past consent and
  tutorial;
* ``pairwise``: the comparison demo study's annotator left to start, past consent and
  tutorial (its first stage compares pairs);
* ``ranking``: a new annotator of a small study whose first stage ranks (the
  comparison demo's ranking materials), past consent and tutorial;
* the demo study's roles: two staff accounts, a collaborator and a coder, granted by
  the demo researcher (its owner), for the Roles page's screenshot;
* ``candidates``: the Candidate selection page of a study whose pool (the demo's
  reflections, each also under a second decoding setting and in a variant differing only
  in case and punctuation, and extended) a selection has drawn into its stage.

    DATABASE_URL=... python docs/screenshots/prepare.py /tmp/screenshots-links.json
"""

import json
import os
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()
    from django.urls import reverse
    from django.utils import timezone

    from analysis.management.commands.load_demo import DEMO_DIR, comparison_materials
    from studies.datafiles.materials import materials_import
    from studies.models import Annotator, Stage, Study
    from studies.protocol import NO_ANSWER_FREE_TEXT
    from studies.services import (
        annotator_complete_tutorial,
        annotator_consent,
        annotators_create,
        consent_version_current,
        study_create,
        study_open,
    )
    from studies.services.crowd_joins import CrowdIdentity, crowd_join
    from studies.services.demo import demo_judgements_simulate

    demo = Study.objects.get(slug="demo")
    first = demo.stages.order_by("position").first()
    worker = Annotator.objects.filter(study=demo, platform_participant_id="demo-prolific-1").first()
    if worker is None:
        worker = crowd_join(
            study=demo,
            stage=first,
            identity=CrowdIdentity(Annotator.Platform.PROLIFIC, "demo-prolific-1", "S1", "P1"),
        )
        # Stage 1 done yesterday: the page shows its code and when stage 2 opens.
        demo_judgements_simulate(study=demo, annotators=[worker], seed=7, days_ago=1)

    config = json.loads((DEMO_DIR / "study.json").read_text(encoding="utf-8"))
    tutorial = config["tutorial"]
    study = Study.objects.filter(slug="free-text").first()
    if study is None:
        study = study_create(
            slug="free-text",
            title="Free-text stage",
            information_sheet=config["information_sheet"],
            consent_text=config["consent_text"],
            tutorial_intro=tutorial["intro"],
            tutorial_example_turns=tutorial["example_turns"],
            tutorial_example_notes=tutorial["example_notes"],
            tutorial_empathy_explanation=tutorial["empathy_explanation"],
            stages=[("GPT-2 stage", timedelta(0)), ("GPT-3 stage", timedelta(days=3))],
            groups=["Layperson"],
        )
        Stage.objects.filter(study=study, position=1).update(no_answer=NO_ANSWER_FREE_TEXT)
        materials_import(
            study=study, content=(DEMO_DIR / "materials.json").read_bytes(), fmt="json"
        )
    if study.status != Study.Status.OPEN:
        study_open(study=study)
    writer = (
        study.annotators.order_by("pk").first()
        or annotators_create(group=study.groups.get(), count=1)[0]
    )
    if writer.consented_at is None:
        annotator_consent(annotator=writer, version=consent_version_current(study=study))
        annotator_complete_tutorial(annotator=writer, now=timezone.now())

    demo_roles_grant(study=demo)

    # A new annotator of the Likert demo, past consent and tutorial.
    likert = Study.objects.get(slug="demo-likert")
    rater = (
        Annotator.objects.filter(study=likert, consented_at__isnull=True).first()
        or Annotator.objects.filter(study=likert, assignments__isnull=True).first()
    )
    if rater.consented_at is None:
        annotator_consent(annotator=rater, version=consent_version_current(study=likert))
        annotator_complete_tutorial(annotator=rater, now=timezone.now())

    # The comparison demo's newcomer, and a small study whose first stage ranks.
    compared = Study.objects.get(slug="demo-comparisons")
    chooser = (
        Annotator.objects.filter(study=compared, consented_at__isnull=True).first()
        or Annotator.objects.filter(study=compared, assignments__isnull=True).first()
    )
    if chooser.consented_at is None:
        annotator_consent(annotator=chooser, version=consent_version_current(study=compared))
        annotator_complete_tutorial(annotator=chooser, now=timezone.now())
    ranked = Study.objects.filter(slug="ranking-first").first()
    if ranked is None:
        ranked = study_create(
            slug="ranking-first",
            title="Ranking stage",
            information_sheet=config["information_sheet"],
            consent_text=config["consent_text"],
            tutorial_intro=tutorial["intro"],
            tutorial_example_turns=tutorial["example_turns"],
            tutorial_example_notes=tutorial["example_notes"],
            tutorial_empathy_explanation=tutorial["empathy_explanation"],
            stages=[("Ranking stage", timedelta(0))],
            groups=["Layperson"],
        )
        Stage.objects.filter(study=ranked).update(instrument=Stage.Instrument.RANKING)
        document = comparison_materials()
        for context in document["contexts"]:
            context["synthetic"] = [
                s for s in context["synthetic"] if s["stage"] == "Ranking stage"
            ]
        materials_import(study=ranked, content=json.dumps(document), fmt="json")
    if ranked.status != Study.Status.OPEN:
        study_open(study=ranked)
    ranker = (
        ranked.annotators.order_by("pk").first()
        or annotators_create(group=ranked.groups.get(), count=1)[0]
    )
    if ranker.consented_at is None:
        annotator_consent(annotator=ranker, version=consent_version_current(study=ranked))
        annotator_complete_tutorial(annotator=ranker, now=timezone.now())

    candidates = candidates_prepare(config=config)

    links = {
        "candidates": reverse("admin:analysis_candidateselection_study", args=[candidates.pk]),
        "crowd_done": reverse("studies:invitation", args=[worker.access_token]),
        "free_text": reverse("studies:invitation", args=[writer.access_token]),
        "likert": reverse("studies:invitation", args=[rater.access_token]),
        "pairwise": reverse("studies:invitation", args=[chooser.access_token]),
        "ranking": reverse("studies:invitation", args=[ranker.access_token]),
    }
    out.write_text(json.dumps(links), encoding="utf-8")
    print(f"Prepared: {', '.join(links)} -> {out}")


def candidates_prepare(*, config: dict):
    """The candidates study: a pool from the demo's materials, and a finished selection
    of 4 clusters per context into its stage (made once)."""
    from analysis.candidates.parameters import SelectionParameters
    from analysis.candidates.selection import candidate_selection_create, candidate_selection_run
    from analysis.management.commands.load_demo import DEMO_DIR
    from studies.datafiles.materials import materials_import
    from studies.models import Study
    from studies.services import study_create

    study = Study.objects.filter(slug="candidates").first()
    if study is not None:
        return study
    study = study_create(
        slug="candidates",
        title="Candidates chosen from a pool",
        information_sheet=config["information_sheet"],
        consent_text=config["consent_text"],
        stages=[("Selected stage", timedelta(0))],
        groups=["Layperson"],
    )
    document = json.loads((DEMO_DIR / "materials.json").read_text(encoding="utf-8"))
    for context in document["contexts"]:
        pool = []
        for item in context["synthetic"]:
            generation = {k: v for k, v in item["generation"].items() if v is not None}
            base = {"source": item["source"], "generation": generation}
            pool.append({**base, "text": item["text"]})
            # The same text under another decoding, and again but for case and punctuation.
            pool.append(
                {**base, "text": item["text"], "generation": {**generation, "decoding": "beam"}}
            )
            pool.append({**base, "text": item["text"].lower().rstrip(".!?")})
            pool.append({**base, "text": item["text"] + " That sounds hard for you."})
        context["synthetic"] = pool
    materials_import(study=study, content=json.dumps(document), fmt="json", pool=True)
    selection = candidate_selection_create(
        study=study,
        stage=study.stages.get(),
        parameters=SelectionParameters(per_context=4, stratify_by="decoding"),
    )
    candidate_selection_run(selection_id=selection.pk)
    return study


#: The demo's colleagues: (username, first name, last name, e-mail address, role, note).
COLLEAGUES = [
    ("sam", "Sam", "Cole", "sam.cole@uni.example", "collaborator", "ethics amendment 2"),
    ("cora", "Cora", "Diaz", "cora.diaz@uni.example", "coder", "codes stage 1"),
]


def demo_roles_grant(*, study) -> None:
    """A collaborator and a coder in ``study``, granted by its creator (the demo
    researcher); accounts and roles already there are left as they are."""
    from django.contrib.auth import get_user_model

    from studies.models import StudyRole
    from studies.services.roles import study_role_grant

    User = get_user_model()
    for username, first_name, last_name, email, role, note in COLLEAGUES:
        user, _ = User.objects.get_or_create(
            username=username,
            defaults={
                "first_name": first_name,
                "last_name": last_name,
                "email": email,
                "is_staff": True,
            },
        )
        if not StudyRole.objects.filter(study=study, user=user, role=role).exists():
            study_role_grant(study=study, user=user, role=role, by=study.created_by, note=note)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
