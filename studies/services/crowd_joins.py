"""Crowd workers joining a stage through its link: who the link says is arriving, who
is let in (admission while the crowd group still needs people), and who is resumed.
The returns to the platform live in ``studies.services.crowd``."""

import re
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html

from ..errors import ErrorCode
from ..locks import groups_locked, studies_locked
from ..models import Annotator, AnnotatorGroup, Assignment, CrowdEntry, Stage
from ..protocol import group_takes_part
from ..selectors.stages import StageStatus, annotator_stage_states, stage_group_rules
from ..selectors.training import TrainingStatus
from ..times import time_html
from .crowd import PLATFORM_NAMES, PLATFORM_TASK_NAMES
from .stages import AWAITING_SCHEME_MESSAGE
from .training import training_outcome

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
    """A join refused: ``code`` says why, ``message`` says it and what to do to the
    worker (text, or HTML made with ``format_html``); nothing was written."""

    def __init__(self, code: ErrorCode, message: str, *, status: int = 403):
        super().__init__(message)
        self.code = code
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
                ErrorCode.CROWD_IDS_MISSING,
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
                ErrorCode.CROWD_IDS_MISSING,
                "This link lacks your MTurk ids (workerId, assignmentId, hitId and "
                f"turkSubmitTo) or one of them is malformed. {again}",
                status=400,
            )
        worker, assignment, hit = ids
        return CrowdIdentity(Annotator.Platform.MTURK, worker, assignment, hit, submit_to)
    raise CrowdRefusal(
        ErrorCode.CROWD_IDS_MISSING, f"This link lacks your crowd-platform id. {again}", status=400
    )


def stage_places_left(*, stage: Stage, group: AnnotatorGroup, now) -> int:
    """How many more crowd workers of ``group`` ``stage`` can take: its slots (batches
    × k) minus those the group's active assignments hold, minus one place for each of
    the group's workers who entered the stage through their platform within the last
    ``CROWD_JOIN_HOLD`` seconds and have not claimed a batch of it yet (they are
    reading the consent and the tutorial). Three counting queries, whatever the number
    of people."""
    slots = stage.batches.count() * stage.k
    held = Assignment.objects.filter(stage=stage, group=group).filter(Assignment.active_q()).count()
    holding = (
        CrowdEntry.objects.filter(
            stage=stage,
            annotator__group=group,
            annotator__is_active=True,
            outcome="",
            created_at__gt=now - timedelta(seconds=settings.CROWD_JOIN_HOLD),
        )
        .exclude(annotator__assignments__stage=stage)
        .count()
    )
    return max(0, slots - held - holding)


def _first_position_of(*, group: AnnotatorGroup, study) -> int | None:
    """The position of the study's first stage ``group`` takes part in: where its
    newcomers start."""
    rules = stage_group_rules(study_id=study.pk)
    return next(
        (
            stage.position
            for stage in study.stages.order_by("position")
            if rules.takes_part(stage, group.pk)
        ),
        None,
    )


def stage_admits_newcomer(*, stage: Stage, group: AnnotatorGroup, now) -> bool:
    return stage_places_left(stage=stage, group=group, now=now) > 0


def stage_by_join_key(*, study, key: str) -> Stage | None:
    return Stage.objects.filter(study=study, join_key=key).select_related("study").first()


@transaction.atomic
def crowd_join(
    *, study, stage: Stage, identity: CrowdIdentity, joined_before: int | None = None, now=None
) -> Annotator:
    """The annotator of a crowd worker arriving at ``stage``'s join link.

    * A stage with platform task ids (``Stage.platform_task_ids``) is entered and
      resumed only from one of them.
    * A worker first seen here, on the first stage: a new pseudonymous annotator of the
      study's crowd group (while it has a place left: ``stage_places_left``), with
      their entry.
    * A worker first seen on a later stage: refused (they never did the first).
    * A known worker entering a new stage: only once the stage is open to them (the
      earlier stage finished, the wait over), with a platform session never seen in the
      study and from a platform study (HIT) none of their earlier stages came from (a
      new task per stage); the visit's platform session becomes their entry.
    * A known worker coming back within a stage: resumed only from the same platform
      session of the same platform study, or from the browser that joined
      (``joined_before``: the annotator id this browser's signed join cookie names). A
      platform id alone resumes nobody.

    Raises ``CrowdRefusal`` with the reason; a refusal writes nothing. Locks the
    study's crowd group row, so concurrent joins of one worker resolve one by one,
    and, first, for a worker not yet known, the study's row (a new annotator locks it:
    ``annotators_create``).
    """
    from .studies import annotators_create

    now = now or timezone.now()
    if study.status != study.Status.OPEN or study.crowd_group_id is None:
        raise CrowdRefusal(
            ErrorCode.CROWD_CLOSED,
            "This study is not taking part through a crowd platform right now.",
        )
    pinned = stage.platform_task_id_list
    if pinned and identity.platform_study_id not in pinned:
        raise CrowdRefusal(
            ErrorCode.CROWD_WRONG_TASK,
            f"This link did not come from the crowd platform's task for {stage.public_name}. "
            "Please open it from that task on the platform.",
        )
    known = Annotator.objects.filter(
        study=study, platform=identity.platform, platform_participant_id=identity.participant_id
    )
    if not known.exists():
        # A newcomer may be created (annotators_create locks the study): the study first,
        # then the group, as the lock order says. A known worker locks the group only.
        studies_locked().filter(pk=study.pk).first()
    group = groups_locked().get(pk=study.crowd_group_id)
    annotator = (
        known.first()
    )  # read again under the lock: a join beside this one may have made them
    if not group_takes_part(set(stage.groups.values_list("pk", flat=True)), group.pk):
        raise CrowdRefusal(
            ErrorCode.STAGE_NOT_FOR_GROUP,
            f"{stage.public_name} is not done through this crowd platform. Please return the "
            f"{PLATFORM_TASK_NAMES[identity.platform]} on {PLATFORM_NAMES[identity.platform]}; "
            "thank you for your interest.",
        )
    if annotator is None:
        if stage.position != _first_position_of(group=group, study=study):
            raise CrowdRefusal(
                ErrorCode.CROWD_NOT_A_PARTICIPANT,
                f"{stage.public_name} is open only to people who took part in the earlier "
                "stages of this study. If you did, please write to the research team.",
            )
        if not stage_admits_newcomer(stage=stage, group=group, now=now):
            raise CrowdRefusal(
                ErrorCode.CROWD_FULL,
                "This study has all the participants it needs. Please return the "
                f"{PLATFORM_TASK_NAMES[identity.platform]} on {PLATFORM_NAMES[identity.platform]}; "
                "thank you for your interest.",
            )
        annotator = annotators_create(group=group, count=1)[0]
        annotator.platform = identity.platform
        annotator.platform_participant_id = identity.participant_id
        annotator.platform_data = identity.data
        annotator.save(update_fields=["platform", "platform_participant_id", "platform_data"])
        _entry_create(annotator=annotator, stage=stage, identity=identity)
        return annotator
    if not annotator.is_active:
        raise CrowdRefusal(
            ErrorCode.PARTICIPATION_ENDED,
            "Your participation in this study has been ended by the research team.",
        )
    entry = CrowdEntry.objects.filter(annotator=annotator, stage=stage).first()
    if entry is not None:
        same_task = (entry.session_id, entry.platform_study_id) == (
            identity.session_id,
            identity.platform_study_id,
        )
        if same_task or joined_before == annotator.pk:
            return annotator
    ended = _participation_ended(annotator=annotator)
    if ended is not None:
        raise ended
    if entry is not None:
        if entry.outcome in (CrowdEntry.Outcome.COMPLETED, CrowdEntry.Outcome.PARTIAL):
            raise CrowdRefusal(
                ErrorCode.CROWD_PART_FINISHED,
                f"Your part of {stage.public_name} is finished, so there is nothing more to do "
                "in this task. Its code was shown in the browser where you worked on it; if "
                "you have lost it, please write to the research team.",
            )
        raise CrowdRefusal(
            ErrorCode.CROWD_STARTED_ELSEWHERE,
            f"You have started {stage.public_name} already, in another browser or from another "
            "session on the crowd platform. Please go on in the browser where you started, from "
            "the same task on the platform.",
        )
    # A later stage is a new task on the platform: a new session, from a platform study
    # (Prolific) or HIT (MTurk) none of the worker's earlier stages came from.
    seen = CrowdEntry.objects.filter(stage__study=study, platform=identity.platform)
    if (
        seen.filter(session_id=identity.session_id).exists()
        or seen.filter(annotator=annotator, platform_study_id=identity.platform_study_id).exists()
    ):
        raise CrowdRefusal(
            ErrorCode.CROWD_WRONG_TASK,
            f"This task on the crowd platform belongs to another stage. Please open "
            f"{stage.public_name} from its own task on the platform.",
        )
    state = next(
        s for s in annotator_stage_states(annotator=annotator, now=now) if s.stage == stage
    )
    if state.status == StageStatus.LOCKED:
        raise CrowdRefusal(
            ErrorCode.STAGE_LOCKED,
            f"{stage.public_name} opens once you have finished the stage before it. "
            "Please finish that one first, from its own task on the crowd platform.",
        )
    if state.status == StageStatus.WAITING:
        raise CrowdRefusal(
            ErrorCode.STAGE_WAITING,
            format_html(
                "{} opens for you at {}, after the pause between stages. Please come back "
                "then; your place is kept.",
                stage.public_name,
                time_html(state.unlocks_at),
            ),
        )
    if state.status == StageStatus.AWAITING_SCHEME:
        raise CrowdRefusal(
            ErrorCode.STAGE_SCHEME_NOT_FINAL,
            AWAITING_SCHEME_MESSAGE.format(stage=stage.public_name) + " Your place is kept.",
        )
    if state.status == StageStatus.DONE:
        # Without an entry the worker did nothing in the stage: it ended for them
        # because others did every batch that could be theirs.
        raise CrowdRefusal(
            ErrorCode.CROWD_NO_WORK_LEFT,
            f"There is no work left for you in {stage.public_name}: other people have done "
            "every batch that could be yours. Please return the task on the crowd platform; "
            "thank you for your interest.",
        )
    _entry_create(annotator=annotator, stage=stage, identity=identity)
    return annotator


def _participation_ended(*, annotator: Annotator) -> CrowdRefusal | None:
    """The refusal for a worker sent back as screened out (from any stage), saying
    what ended their participation: the practice quiz when they failed its last
    attempt (``training_screen_out``), else the screening questions. None for anyone
    else."""
    if not CrowdEntry.objects.filter(
        annotator=annotator, outcome=CrowdEntry.Outcome.SCREENED_OUT
    ).exists():
        return None
    quiz = training_outcome(annotator=annotator)
    if quiz is not None and quiz.status == TrainingStatus.FAILED:
        return CrowdRefusal(
            ErrorCode.CROWD_QUIZ_FAILED,
            "Your participation in this study ended with its practice quiz: no attempt "
            "reached the pass mark, so there is nothing more to do here. Please return this "
            "task on the crowd platform; thank you for your time.",
        )
    return CrowdRefusal(
        ErrorCode.CROWD_SCREENED_OUT,
        "Your answers to this study's screening questions ended your participation, so "
        "there is nothing more to do here. Please return this task on the crowd platform.",
    )


def _entry_create(*, annotator: Annotator, stage: Stage, identity: CrowdIdentity) -> CrowdEntry:
    return CrowdEntry.objects.create(
        annotator=annotator,
        stage=stage,
        platform=identity.platform,
        session_id=identity.session_id,
        platform_study_id=identity.platform_study_id,
        submit_to=identity.submit_to,
    )
