"""A free-text first stage with descriptions to code, and two coders (staff with the
coder role in its study)."""

import hashlib

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from studies.models import Assignment, Batch, Judgement, Reflection, Role, Stage
from studies.protocol import NO_ANSWER_FREE_TEXT
from studies.services import (
    Answer,
    annotators_create,
    assignment_create,
    assignment_submit,
    judgement_record,
)
from tests.conftest import load_materials, make_study, module_transaction
from tests.factories import user_with_role


def describe(reflection: Reflection) -> Answer:
    """No with a description for synthetic candidates, Yes for the rest."""
    if reflection.kind == Reflection.Kind.SYNTHETIC:
        return Answer(
            coherent=False, description=f"It ignores what the client said: {reflection.text}"
        )
    if reflection.kind == Reflection.Kind.ATTENTION_CHECK:
        return Answer(coherent=False, description="Not about this conversation at all.")
    return Answer(coherent=True, empathy=4)


def code_first_stage(study) -> Stage:
    """Stage 1 asks for a description; one Layperson annotator answers every batch of
    it (submitted); a second annotator's batch stays open (its descriptions don't count)."""
    stage = study.stages.get(position=1)
    Stage.objects.filter(pk=stage.pk).update(no_answer=NO_ANSWER_FREE_TEXT)
    stage.refresh_from_db()
    done, open_ = annotators_create(group=study.groups.get(name="Layperson"), count=2)
    batches = list(Batch.objects.filter(stage=stage).order_by("context__external_id"))
    for annotator, submit in ((done, True), (open_, False)):
        for batch in batches if submit else batches[:1]:
            assignment = assignment_create(annotator=annotator, batch=batch)
            reflections = {r.pk: r for r in batch.reflections.all()}
            for pk in assignment.order:
                judgement_record(
                    assignment=assignment,
                    reflection=reflections[pk],
                    answer=describe(reflections[pk]),
                )
            if submit:
                assignment_submit(assignment=assignment)
    return stage


@pytest.fixture
def coding_stage(loaded_study):
    return code_first_stage(loaded_study)


@pytest.fixture(scope="module")
def coding_stage_of_the_module(django_db_setup, django_db_blocker) -> int:
    """The primary key of a ``coding_stage`` built once per module (see
    :func:`tests.conftest.module_transaction`)."""
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            stage = code_first_stage(load_materials(make_study()))
        yield stage.pk


@pytest.fixture
def shared_coding_stage(db, coding_stage_of_the_module) -> Stage:
    """The module's coding stage, fresh from the database. A module whose tests take
    ``coding_stage`` and no other study of that slug may define ``coding_stage`` as this
    one, to build it once."""
    return Stage.objects.get(pk=coding_stage_of_the_module)


def coded_descriptions(stage):
    """The descriptions that count, in coding order (ids): by dialogue, then the
    candidates in the order of the MD5 of "<study seed>:<reflection id>", then by
    answer (worked out here in Python, apart from the selector's SQL)."""
    seed = stage.study.seed
    rows = Judgement.objects.filter(
        assignment__stage=stage,
        assignment__status=Assignment.Status.SUBMITTED,
        reflection__kind=Reflection.Kind.SYNTHETIC,
    ).values_list("assignment__batch__context__external_id", "reflection_id", "pk")
    return [
        pk
        for dialogue, reflection, pk in sorted(
            rows,
            key=lambda r: (
                r[0],
                hashlib.md5(f"{seed}:{r[1]}".encode()).hexdigest(),
                r[1],
                r[2],
            ),
        )
    ]


def make_coder(username: str, study, role: str = Role.CODER):
    """A staff account holding ``role`` (the coder role unless said) in ``study``."""
    return user_with_role(study, role, username=username)


def make_staff(username: str, perms=()):
    """A staff account with the global permissions ``perms`` (codenames of the studies
    app) and no role: they grant nothing in a study."""
    user = get_user_model().objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(content_type__app_label="studies", codename__in=perms)
    )
    return get_user_model().objects.get(pk=user.pk)  # fresh permission cache


@pytest.fixture
def alice(coding_stage):
    return make_coder("alice", coding_stage.study)


@pytest.fixture
def bob(coding_stage):
    return make_coder("bob", coding_stage.study)
