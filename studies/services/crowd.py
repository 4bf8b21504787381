"""Crowd platforms, per stage: what a worker who finishes (or is screened out of) a
stage is shown and sent back to the platform with.

Crowd platforms pay per unit of work they know, and with days between stages each
stage is one: on Prolific one Prolific study per stage, on MTurk one HIT per stage.
So each stage has its own join link (``Stage.join_key``), its own completion code and
screened-out code (``Stage.completion_code``, ``Stage.screened_out_code``), and each
worker's entry into a stage is a ``CrowdEntry`` (the Prolific submission or MTurk
assignment it belongs to). The return, for an outcome:

* **Prolific**: the completion URL ``https://app.prolific.com/submissions/complete?cc=<code>``
  with the stage's code for that outcome (the researcher gives the Prolific study of
  the stage the same codes); a screened-out worker without a screened-out code is asked
  to return the submission on Prolific.
* **MTurk** (ExternalQuestion): a form POSTed to ``<turkSubmitTo>/mturk/externalSubmit``
  (the worker site or the sandbox, as the HIT's ``turkSubmitTo`` said) with the
  ``assignmentId`` and the outcome, the stage and its code.

Invited annotators (no platform) get no return. This module is the one place these
rules live; pages render its ``CrowdReturn``.

https://docs.aws.amazon.com/AWSMechTurk/latest/AWSMechanicalTurkRequester/mturk-hits-defining-questions-html-rendered.html
"""

import re
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from ..models import Annotator, AnnotatorGroup, CrowdEntry, Stage
from ..times import time_display

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete"
MTURK_SUBMIT_PATH = "/mturk/externalSubmit"
PLATFORM_NAMES = {
    Annotator.Platform.PROLIFIC: "Prolific",
    Annotator.Platform.MTURK: "MTurk",
}

Outcome = CrowdEntry.Outcome


@dataclass(frozen=True)
class CrowdReturn:
    """What a crowd worker is shown and sent back with at the end of a stage.

    ``url``: a link to follow (Prolific), or the action of a form to POST with
    ``fields`` (MTurk); empty when there is nothing to follow (the worker is asked to
    return the task on the platform). ``code``: the code shown, "" when none.
    """

    platform: str
    platform_name: str
    outcome: str
    stage_position: int
    code: str
    url: str
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def posts(self) -> bool:
        """An MTurk form to POST (else a link, or nothing to follow)."""
        return bool(self.fields)

    @property
    def form_origin(self) -> str:
        """The origin the form posts to (the page's policy must allow it)."""
        return self.url[: -len(MTURK_SUBMIT_PATH)] if self.posts else ""


def stage_code(*, stage: Stage, outcome: str) -> str:
    """The stage's code for ``outcome`` ("" when it has none)."""
    if outcome == Outcome.COMPLETED:
        return stage.completion_code
    if outcome == Outcome.SCREENED_OUT:
        return stage.screened_out_code
    raise ValueError(f"Unknown outcome {outcome!r}")


def crowd_entry_of(*, annotator: Annotator, stage: Stage) -> CrowdEntry | None:
    """The annotator's entry into ``stage`` through their platform, if they came in so."""
    return CrowdEntry.objects.filter(annotator=annotator, stage=stage).first()


def crowd_return(*, annotator: Annotator, stage: Stage, outcome: str) -> CrowdReturn | None:
    """What ``annotator`` is shown and sent back with for ``outcome`` in ``stage``.

    None for an invited annotator, and for a crowd worker who did not enter this stage
    through the platform (nothing to pay on the platform for it). Reads only.
    """
    if not annotator.platform:
        return None
    entry = crowd_entry_of(annotator=annotator, stage=stage)
    if entry is None:
        return None
    return crowd_entry_return(entry=entry, stage=stage, outcome=outcome)


def crowd_entry_return(*, entry: CrowdEntry, stage: Stage, outcome: str) -> CrowdReturn:
    """The return of one entry (``crowd_return`` without the look-up)."""
    code = stage_code(stage=stage, outcome=outcome)
    common = {
        "platform": entry.platform,
        "platform_name": PLATFORM_NAMES[entry.platform],
        "outcome": outcome,
        "stage_position": stage.position,
        "code": code,
    }
    if entry.platform == Annotator.Platform.MTURK:
        fields = (
            ("assignmentId", entry.session_id),
            ("outcome", outcome),
            ("stage", str(stage.position)),
            ("code", code),
        )
        submit_to = entry.submit_to or CrowdEntry.SubmitTo.WORKER
        return CrowdReturn(**common, url=submit_to + MTURK_SUBMIT_PATH, fields=fields)
    url = f"{PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}" if code else ""
    return CrowdReturn(**common, url=url)


@transaction.atomic
def crowd_entry_close(
    *, annotator: Annotator, stage: Stage, outcome: str, now: datetime | None = None
) -> CrowdReturn | None:
    """Record that ``annotator`` is sent back from ``stage`` with ``outcome`` and give
    the return. The first outcome stands: asking again (a reload, a second tab) gives
    the same return, and a worker who completed the stage is never sent back as
    screened out. Locks the entry row. None when there is no entry (see
    ``crowd_return``)."""
    if outcome not in Outcome.values:
        raise ValidationError(f"Unknown outcome {outcome!r}.")
    if not annotator.platform:
        return None
    entry = CrowdEntry.objects.select_for_update().filter(annotator=annotator, stage=stage).first()
    if entry is None:
        return None
    if not entry.outcome:
        entry.outcome = outcome
        entry.returned_at = now or timezone.now()
        entry.save(update_fields=["outcome", "returned_at"])
    return crowd_entry_return(entry=entry, stage=stage, outcome=entry.outcome)


def crowd_return_due(
    *, annotator: Annotator, states, now: datetime | None = None
) -> CrowdReturn | None:
    """The return to show a crowd worker now, for the latest stage they entered through
    their platform: the recorded outcome's (e.g. screened out), or "completed" once
    that stage is done for them (``states``: ``annotator_stage_states``), recorded on
    first showing. None while the stage is under way, and for invited annotators."""
    if not annotator.platform:
        return None
    entry = (
        CrowdEntry.objects.filter(annotator=annotator)
        .select_related("stage")
        .order_by("-stage__position")
        .first()
    )
    if entry is None:
        return None
    if entry.outcome:
        return crowd_entry_return(entry=entry, stage=entry.stage, outcome=entry.outcome)
    state = next((s for s in states if s.stage.pk == entry.stage_id), None)
    if state is None or state.status != "done":
        return None
    return crowd_entry_close(
        annotator=annotator, stage=entry.stage, outcome=Outcome.COMPLETED, now=now
    )


#: What each platform appends to a stage's join link (Prolific fills the placeholders;
#: MTurk adds assignmentId, hitId, turkSubmitTo and workerId by itself).
PROLIFIC_LINK_PARAMETERS = (
    "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
)


def stage_join_links(*, stage: Stage) -> dict[str, str]:
    """The stage's join links, ready to paste into each platform: the Prolific study
    URL (with Prolific's placeholders) and the MTurk ExternalQuestion URL, on the
    site's address (``SITE_URL``)."""
    path = settings.SITE_URL + reverse("studies:join", args=[stage.study.slug, stage.join_key])
    return {
        Annotator.Platform.PROLIFIC: f"{path}?{PROLIFIC_LINK_PARAMETERS}",
        Annotator.Platform.MTURK: path,
    }


# --- joining a stage ---------------------------------------------------------------------

MTURK_PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"  # MTurk's assignmentId before acceptance
CROWD_ID_REGEX = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class CrowdIdentity:
    """Who a join link says is arriving: the platform, the worker's id, and the
    platform session this visit belongs to (Prolific SESSION_ID, MTurk assignmentId)."""

    platform: str
    participant_id: str
    session_id: str
    platform_study_id: str  # Prolific STUDY_ID, MTurk hitId
    submit_to: str = ""  # MTurk only: CrowdEntry.SubmitTo

    @property
    def data(self) -> dict:
        """The ids as kept on the annotator (their first visit)."""
        if self.platform == Annotator.Platform.MTURK:
            return {"assignmentId": self.session_id, "hitId": self.platform_study_id}
        return {"STUDY_ID": self.platform_study_id, "SESSION_ID": self.session_id}


class CrowdRefusal(Exception):
    """A join refused: ``message`` says why and what to do; nothing was written."""

    def __init__(self, message: str, *, status: int = 403):
        super().__init__(message)
        self.message = message
        self.status = status


def _well_formed(params, name: str) -> str:
    value = (params.get(name) or "").strip()
    return value if CROWD_ID_REGEX.match(value) else ""


def crowd_is_preview(params) -> bool:
    """An MTurk preview (the worker has not accepted the HIT): shown, never stored."""
    return params.get("assignmentId") == MTURK_PREVIEW


def crowd_identity(params) -> CrowdIdentity:
    """The identity a join link carries. Prolific: PROLIFIC_PID, STUDY_ID and
    SESSION_ID; MTurk: workerId, assignmentId, hitId and turkSubmitTo (MTurk or its
    sandbox). Ids are letters, digits, - and _. Raises ``CrowdRefusal`` (400) when
    one is missing or malformed."""
    again = "Please start again from the crowd platform's page for this study."
    if params.get("PROLIFIC_PID") is not None:
        ids = [_well_formed(params, n) for n in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")]
        if not all(ids):
            raise CrowdRefusal(
                "This link lacks your Prolific ids (PROLIFIC_PID, STUDY_ID and SESSION_ID) or "
                f"one of them is malformed. {again}",
                status=400,
            )
        pid, study_id, session_id = ids
        return CrowdIdentity(Annotator.Platform.PROLIFIC, pid, session_id, study_id)
    if params.get("workerId") is not None:
        ids = [_well_formed(params, n) for n in ("workerId", "assignmentId", "hitId")]
        submit_to = (params.get("turkSubmitTo") or "").strip().rstrip("/")
        if not all(ids) or submit_to not in CrowdEntry.SubmitTo.values or not submit_to:
            raise CrowdRefusal(
                "This link lacks your MTurk ids (workerId, assignmentId, hitId and "
                f"turkSubmitTo) or one of them is malformed. {again}",
                status=400,
            )
        worker, assignment, hit = ids
        return CrowdIdentity(Annotator.Platform.MTURK, worker, assignment, hit, submit_to)
    raise CrowdRefusal(f"This link lacks your crowd-platform id. {again}", status=400)


def stage_by_join_key(*, study, key: str) -> Stage | None:
    return Stage.objects.filter(study=study, join_key=key).first()


@transaction.atomic
def crowd_join(
    *, study, stage: Stage, identity: CrowdIdentity, joined_before: int | None = None, now=None
) -> Annotator:
    """The annotator of a crowd worker arriving at ``stage``'s join link.

    * A worker first seen here, on the first stage: a new pseudonymous annotator of the
      study's crowd group (while the group still needs people), with their entry.
    * A worker first seen on a later stage: refused (they never did the first).
    * A known worker entering a new stage: only once the stage is open to them (the
      earlier stage finished, the wait over); the visit's platform session becomes
      their entry into the stage.
    * A known worker coming back within a stage: resumed only from the same platform
      session, or from the browser that joined (``joined_before``: the annotator id
      this browser's signed join cookie names). A platform id alone resumes nobody.

    Raises ``CrowdRefusal`` with the reason; a refusal writes nothing. Locks the
    study's crowd group row, so concurrent joins of one worker resolve one by one.
    """
    from ..selectors import study_progress
    from .stages import annotator_stage_states
    from .studies import annotators_create

    now = now or timezone.now()
    if study.status != study.Status.OPEN or study.crowd_group_id is None:
        raise CrowdRefusal("This study is not taking part through a crowd platform right now.")
    group = AnnotatorGroup.objects.select_for_update().get(pk=study.crowd_group_id)
    annotator = Annotator.objects.filter(
        study=study, platform=identity.platform, platform_participant_id=identity.participant_id
    ).first()
    if annotator is None:
        if stage.position != 1:
            raise CrowdRefusal(
                f"{stage.public_name} is open only to people who took part in the earlier "
                "stages of this study. If you did, please write to the research team."
            )
        first = study_progress(study=study).cell(stage_position=1, group_id=group.pk)
        if first is None or first.open_slots == 0:
            raise CrowdRefusal(
                "This study has all the participants it needs. Please return the study on the "
                "crowd platform; thank you for your interest."
            )
        annotator = annotators_create(group=group, count=1)[0]
        annotator.platform = identity.platform
        annotator.platform_participant_id = identity.participant_id
        annotator.platform_data = identity.data
        annotator.save(update_fields=["platform", "platform_participant_id", "platform_data"])
        _entry_create(annotator=annotator, stage=stage, identity=identity)
        return annotator
    if not annotator.is_active:
        raise CrowdRefusal("Your participation in this study has been ended by the research team.")
    entry = CrowdEntry.objects.filter(annotator=annotator, stage=stage).first()
    if entry is not None:
        if entry.session_id == identity.session_id or joined_before == annotator.pk:
            return annotator
        if entry.outcome == Outcome.SCREENED_OUT:
            raise CrowdRefusal(
                "Your answers to this study's screening questions ended your participation, so "
                "there is nothing more to do here. Please return this task on the crowd platform."
            )
        raise CrowdRefusal(
            f"You have started {stage.public_name} already, in another browser or from another "
            "session on the crowd platform. Please go on in the browser where you started, from "
            "the same task on the platform."
        )
    if CrowdEntry.objects.filter(annotator=annotator, session_id=identity.session_id).exists():
        raise CrowdRefusal(
            f"This task on the crowd platform belongs to another stage. Please open "
            f"{stage.public_name} from its own task on the platform."
        )
    state = next(
        s for s in annotator_stage_states(annotator=annotator, now=now) if s.stage == stage
    )
    if state.status == "locked":
        raise CrowdRefusal(
            f"{stage.public_name} opens once you have finished the stage before it. "
            "Please finish that one first, from its own task on the crowd platform."
        )
    if state.status == "waiting":
        raise CrowdRefusal(
            f"{stage.public_name} opens for you at {time_display(state.unlocks_at)}, after the "
            "pause between stages. Please come back then; your place is kept."
        )
    if state.status == "done":
        raise CrowdRefusal(f"You have already done {stage.public_name}. Thank you!")
    _entry_create(annotator=annotator, stage=stage, identity=identity)
    return annotator


def _entry_create(*, annotator: Annotator, stage: Stage, identity: CrowdIdentity) -> CrowdEntry:
    return CrowdEntry.objects.create(
        annotator=annotator,
        stage=stage,
        platform=identity.platform,
        session_id=identity.session_id,
        platform_study_id=identity.platform_study_id,
        submit_to=identity.submit_to,
    )


# --- MTurk's frame ------------------------------------------------------------------------


def study_frame_origins(*, study) -> list[str]:
    """The origins that may frame ``study``'s annotator pages: MTurk's worker site and
    sandbox (``CROWD_FRAME_ORIGINS``) when the study is shown in MTurk's frame, else
    none."""
    return list(settings.CROWD_FRAME_ORIGINS) if study.mturk_frame else []


# --- inviting workers back -------------------------------------------------------------


def stage_platform_ids_ready(*, stage: Stage, platform: str, now=None) -> list[str]:
    """The platform ids of the crowd workers (of ``platform``) for whom ``stage`` is now
    open but who have not entered it yet: they finished the stage before and their
    wait has passed. Ready for the platform's allow-list (Prolific: a custom
    allow-list of participant ids). The one place platform ids leave the system
    (README); staff need the "export platform ids for payment" permission."""
    from .stages import annotator_stage_states

    entered = CrowdEntry.objects.filter(stage=stage).values_list("annotator_id", flat=True)
    workers = (
        Annotator.objects.filter(study_id=stage.study_id, platform=platform, is_active=True)
        .exclude(pk__in=entered)
        .select_related("study")
        .order_by("pk")
    )
    ready = []
    for annotator in workers:
        state = next(
            s for s in annotator_stage_states(annotator=annotator, now=now) if s.stage == stage
        )
        if state.status in ("open", "busy", "on_platform"):
            ready.append(annotator.platform_participant_id)
    return ready
