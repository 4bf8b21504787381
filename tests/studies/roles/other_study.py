"""Study B: a second study whose texts each carry a sentinel, for the tests that a user
with a role in another study only (A) never reads any of it, and never writes to it."""

import json
from dataclasses import dataclass
from datetime import timedelta

from django.apps import apps
from django.utils import timezone

from analysis.models import AnalysisRun
from studies.datafiles.materials import materials_import
from studies.models import Annotator, Assignment, Batch, Judgement, Reflection, Role, Stage, Study
from studies.protocol import NO_ANSWER_FREE_TEXT
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    consent_version_current,
    judgement_record,
    study_create,
)
from studies.services.coding import code_create, coder_join, coding_save
from tests.factories import user_with_role

SLUG = "quokka-sentinel"
TITLE = "Quokka sentinel trial"
REFLECTION = "quokkasentinel reflection"
GROUP = "Zorblax"  # annotators are "Zorblax 1", ...
EMAIL = "zorblax.sentinel@example.org"
DESCRIPTION = "wombatsentinel description"
CODE_LABEL = "Numbatsentinel code"

#: What no response to a user without a role in study B may contain.
SENTINELS = (SLUG, TITLE, REFLECTION, f"{GROUP} 1", EMAIL, DESCRIPTION, CODE_LABEL)


#: The 404 for a study URL echoes the slug asked for, as for a study that does not exist
#: (``studies.permissions.study_for_user``): the caller's own words, not a leak.
NO_SUCH_STUDY = f"No study with the slug {SLUG!r}."


def leaked(text: str) -> list[str]:
    """The sentinels of study B in ``text`` (beyond the echo of ``NO_SUCH_STUDY``)."""
    text = text.replace(NO_SUCH_STUDY, "")
    return [sentinel for sentinel in SENTINELS if sentinel in text]


@dataclass(frozen=True)
class OtherStudy:
    """Study B's ids, for filling URLs."""

    study: int
    stage: int
    group: int
    assignment: int
    judgement: int
    run: int
    batch: int
    reflection: int


def _materials() -> dict:
    return {
        "contexts": [
            {
                "id": f"quokka-{i}",
                "turns": [
                    {"role": "therapist", "text": f"What brings you here ({i})?"},
                    {"role": "client", "text": f"The quokkas keep me awake ({i})."},
                ],
                "human_reflection": f"The {REFLECTION} number {i}.",
                "synthetic": [
                    {"stage": "Sentinel stage", "source": "GPT-2", "text": f"{REFLECTION} {i}."}
                ],
            }
            for i in (1, 2)
        ]
    }


def make_other_study() -> OtherStudy:
    """Study B, open, with an annotator (with an e-mail address) who submitted a batch
    with descriptions, a code of its codebook applied by its owner, and a finished
    analysis run."""
    study = study_create(
        slug=SLUG,
        title=TITLE,
        stages=[("Sentinel stage", timedelta(0))],
        groups=[GROUP],
        information_sheet=f"About the {TITLE}.",
        consent_text="I agree.",
        seed=99,
    )
    materials_import(study=study, content=json.dumps(_materials()), fmt="json")
    stage = study.stages.get()
    Stage.objects.filter(pk=stage.pk).update(no_answer=NO_ANSWER_FREE_TEXT)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.OPEN)
    annotator = annotators_create(group=study.groups.get(), count=1)[0]
    Annotator.objects.filter(pk=annotator.pk).update(
        email=EMAIL,
        consented_version=consent_version_current(study=study),
        consented_at=timezone.now(),
    )
    batch = Batch.objects.filter(stage=stage).order_by("pk").first()
    assignment = assignment_create(annotator=annotator, batch=batch)
    reflections = Reflection.objects.in_bulk(assignment.order)
    for pk in assignment.order:
        reflection = reflections[pk]
        if reflection.kind == Reflection.Kind.SYNTHETIC:
            answer = Answer(coherent=False, description=DESCRIPTION)
        elif reflection.kind == Reflection.Kind.ATTENTION_CHECK:
            answer = Answer(coherent=False, description=f"Off topic: {DESCRIPTION}")
        else:
            answer = Answer(coherent=True, empathy=4)
        judgement_record(assignment=assignment, reflection=reflection, answer=answer)
    assignment_submit(assignment=assignment)
    owner = user_with_role(study, Role.OWNER, username="quokka_owner")
    code = code_create(study=study, slug="numbat", label=CODE_LABEL, user=owner)
    described = (
        Judgement.objects.filter(assignment=assignment, reflection__kind=Reflection.Kind.SYNTHETIC)
        .order_by("pk")
        .first()
    )
    coding_save(
        coder=coder_join(study=study, user=owner), judgement=described, codes=[code], user=owner
    )
    run = AnalysisRun.objects.create(
        study=study,
        status=AnalysisRun.Status.DONE,
        trigger=AnalysisRun.Trigger.COMMAND,
        result={"study": TITLE},
        finished_at=timezone.now(),
    )
    return OtherStudy(
        study=study.pk,
        stage=stage.pk,
        group=study.groups.get().pk,
        assignment=Assignment.objects.get(pk=assignment.pk).pk,
        judgement=described.pk,
        run=run.pk,
        batch=batch.pk,
        reflection=described.reflection_id,
    )


def rows_snapshot() -> dict[str, list]:
    """Every row of every model of the studies and analysis apps, by model: a request
    that writes anything changes it."""
    return {
        model._meta.label: list(model.objects.order_by("pk").values_list())
        for app in ("studies", "analysis")
        for model in apps.get_app_config(app).get_models()
    }
