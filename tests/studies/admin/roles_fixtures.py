"""Two studies holding a row of every kind the admin lists, the second marked with
sentinel strings (its title and slug, a reflection text, an annotator's e-mail address
and platform id) that no response to a user without a role in it may contain."""

import json
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib import admin
from django.utils import timezone

from analysis.models import AnalysisRun, AutomaticScore, CandidateSelection
from studies.admin.per_study import PerStudyAdminMixin
from studies.datafiles.materials import materials_import
from studies.models import Annotator, PersonalDataPurge, Reflection, Role, Study
from studies.permissions import Capability
from studies.selectors.coding import stage_descriptions
from studies.services import study_create
from studies.services.coding import code_create, coder_join, coding_save
from studies.services.stages import wait_exemption_grant
from tests.conftest import materials_doc, module_transaction
from tests.factories import StaffMemberFactory
from tests.studies.coding_fixtures import code_first_stage
from tests.studies.questionnaire_helpers import after_stage

B_TITLE = "Sentinel-Title-B"
B_SLUG = "sentinel-slug-b"
B_REFLECTION = "Sentinel reflection text B"
B_EMAIL = "sentinel-b@example.org"
B_PLATFORM_ID = "SENTINEL-PID-B"
SENTINELS = (B_TITLE, B_SLUG, B_REFLECTION, B_EMAIL, B_PLATFORM_ID)

# The table, by hand (as tests/studies/roles/test_roles.py).
ROLE_MAY = {
    Role.OWNER: set(Capability),
    Role.COLLABORATOR: set(Capability) - {Capability.GOVERN},
    Role.ANALYST: {Capability.SEE, Capability.READ_ROWS, Capability.ANALYSE},
    Role.CODER: {Capability.CODE},
    Role.VIEWER: {Capability.SEE},
}


def full_study(*, slug: str, title: str, reflection: str, email: str, platform_id: str) -> Study:
    """A study with stages, groups, categories, a consent version, materials (one
    synthetic candidate reading ``reflection``), annotators (the first with ``email``
    and a Prolific ``platform_id``), submitted descriptions (stage 1 asks for them),
    a code, a coder and a coding, a questionnaire, a wait exemption, a purge log line,
    an analysis run, an automatic score and a candidate selection."""
    study = study_create(
        slug=slug,
        title=title,
        stages=[("GPT-2 stage", timedelta(days=3)), ("GPT-3 stage", timedelta(days=3))],
        groups=["Layperson", "Expert"],
        information_sheet="What the study is about.",
        consent_text="I agree to take part.",
        seed=1234,
    )
    doc = materials_doc()
    doc["contexts"][0]["synthetic"][0]["text"] = reflection
    materials_import(study=study, content=json.dumps(doc), fmt="json")
    stage = code_first_stage(study)
    annotator = Annotator.objects.filter(study=study).order_by("pk").first()
    Annotator.objects.filter(pk=annotator.pk).update(
        email=email, platform=Annotator.Platform.PROLIFIC, platform_participant_id=platform_id
    )
    wait_exemption_grant(annotator=annotator, stage=study.stages.get(position=2), reason="Away")
    code = code_create(study=study, slug="vague", label="Vague", definition="Says little.")
    coder = coder_join(study=study, user=StaffMemberFactory())
    coding_save(coder=coder, judgement=stage_descriptions(stage=stage).first(), codes=[code])
    after_stage(study)
    PersonalDataPurge.objects.create(
        study=study, purged_at=timezone.now(), purged_by_name="someone", deleted={}
    )
    AnalysisRun.objects.create(study=study)
    scored = Reflection.objects.filter(context__study=study, text=reflection).get()
    AutomaticScore.objects.create(
        study=study,
        stage=stage,
        reflection=scored,
        evaluator="BLEU",
        score=0.5,
        imported_at=timezone.now(),
    )
    CandidateSelection.objects.create(
        study=study, stage=stage, seed=1, status=CandidateSelection.Status.FAILED, error=title
    )
    return study


@dataclass(frozen=True)
class TwoStudies:
    a: Study
    b: Study


@pytest.fixture(scope="module")
def two_studies_of_the_module(django_db_setup, django_db_blocker) -> tuple[int, int]:
    with module_transaction(django_db_blocker):
        with django_db_blocker.unblock():
            a = full_study(
                slug="alpha",
                title="Alpha study",
                reflection="A candidate of study A.",
                email="someone-a@example.org",
                platform_id="PID-A",
            )
            b = full_study(
                slug=B_SLUG,
                title=B_TITLE,
                reflection=B_REFLECTION,
                email=B_EMAIL,
                platform_id=B_PLATFORM_ID,
            )
        yield a.pk, b.pk


@pytest.fixture
def two_studies(db, two_studies_of_the_module) -> TwoStudies:
    a, b = two_studies_of_the_module
    return TwoStudies(a=Study.objects.get(pk=a), b=Study.objects.get(pk=b))


def per_study_admins() -> dict:
    """Every registered admin of a per-study model: ``{model: model admin}``."""
    return {
        model: model_admin
        for model, model_admin in admin.site._registry.items()
        if isinstance(model_admin, PerStudyAdminMixin)
    }


def rows_of(model, study: Study):
    """``model``'s rows of ``study``, along its admin's ``study_path``."""
    path = admin.site.get_model_admin(model).study_path
    return model._default_manager.filter(**{path: study.pk})
