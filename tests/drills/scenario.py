"""Study set-up and service calls for the fault drills, run in a subprocess against a
drill's private database (``DATABASE_URL``) with the real services:
``python -m tests.drills.scenario COMMAND [options]``; prints one JSON object.

The drill process itself never opens the private database through Django (its
Django is configured for the test database); it reads results with plain SQL."""

import argparse
import json
import os
import sys
from datetime import timedelta

SLUG = "drill"


def _setup(args) -> dict:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from studies.datafiles.materials import materials_import
    from studies.models import Study
    from studies.services import (
        annotator_complete_tutorial,
        annotator_consent,
        annotators_create,
        consent_version_current,
        study_create,
    )
    from tests.conftest import annotate_study, materials_doc

    study = study_create(
        slug=SLUG,
        title="Drill study",
        stages=[("GPT-2 stage", timedelta(days=3)), ("GPT-3 stage", timedelta(days=3))],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        seed=7,
        batches_per_stage=max(5, args.contexts),  # room for annotate_study's rotation
    )
    materials_import(study=study, content=json.dumps(materials_doc(args.contexts)), fmt="json")
    if args.annotate:
        # A fully annotated study for the analysis drills (k = 3 per group and batch).
        annotate_study(study, annotators_per_group=args.annotate)
    # Open, one batch per annotator and stage; a failed attention check is recorded
    # only, so whatever the drill client answers, its batch is submitted.
    Study.objects.filter(pk=study.pk).update(
        status=Study.Status.OPEN,
        batches_per_stage=1,
        attention_failure_policy=Study.AttentionPolicy.RECORD,
    )
    study.refresh_from_db()
    version = consent_version_current(study=study)
    annotators = annotators_create(group=study.groups.get(name="Layperson"), count=args.annotators)
    for annotator in annotators:
        annotator_consent(annotator=annotator, version=version, now=timezone.now())
        annotator_complete_tutorial(annotator=annotator)
    get_user_model().objects.create_superuser("drill", "drill@example.org", "drill-password-1")
    return {
        "slug": SLUG,
        "tokens": [a.access_token for a in annotators],
        "staff": {"username": "drill", "password": "drill-password-1"},
    }


def _enqueue(args) -> dict:
    from django.db import transaction

    from analysis.services import analysis_run_enqueue
    from studies.models import Study

    with transaction.atomic():
        run = analysis_run_enqueue(
            study=Study.objects.get(slug=SLUG),
            parameters={"bootstrap_resamples": args.resamples},
        )
    run.refresh_from_db()
    return {"run": run.pk, "dispatched": run.dispatched_at is not None}


def _recover(args) -> dict:
    from django.utils import timezone

    from analysis.services import analysis_runs_recover

    # As the beat job would run it ``--later`` seconds from now (it leaves runs younger
    # than 30 s to the dispatch that their own request scheduled).
    return analysis_runs_recover(now=timezone.now() + timedelta(seconds=args.later))


def _request_auto(args) -> dict:
    from django.utils import timezone

    from analysis.services import analysis_runs_request_auto

    # As the beat job would run it ``--later`` seconds from now.
    return {"runs": analysis_runs_request_auto(now=timezone.now() + timedelta(seconds=args.later))}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    setup = sub.add_parser("setup")
    setup.add_argument("--contexts", type=int, default=4)
    setup.add_argument("--annotators", type=int, default=4)
    setup.add_argument("--annotate", type=int, default=0, help="annotators per group")
    enqueue = sub.add_parser("enqueue")
    enqueue.add_argument("--resamples", type=int, default=1000)
    recover = sub.add_parser("recover")
    recover.add_argument("--later", type=float, default=0)
    request_auto = sub.add_parser("request-auto")
    request_auto.add_argument("--later", type=float, default=0)
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    import django

    django.setup()
    result = {
        "setup": _setup,
        "enqueue": _enqueue,
        "recover": _recover,
        "request-auto": _request_auto,
    }[args.command](args)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
