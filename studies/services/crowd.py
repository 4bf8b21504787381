"""Crowd platforms, per stage: what a worker who finishes (or is screened out of) a
stage is shown and sent back to the platform with, and the rules of the stages' codes.

Crowd platforms pay per unit of work they know, and with days between stages each
stage is one: on Prolific one Prolific study per stage, on MTurk one HIT per stage.
So each stage has its own join link (``Stage.join_key``), its own completion,
partial-completion and screened-out codes (``Stage.CODE_FIELDS``; every code of a study
differs from its others, ``stage_codes_validate``), and each worker's entry into a
stage is a ``CrowdEntry`` (the Prolific submission or MTurk assignment it belongs
to). A worker who submitted some batches of a stage and can get no further batch now
(others hold or did the rest) is not kept waiting while the platform's clock runs:
their part of the stage ends there, paid with the partial-completion code
(``crowd_stage_end_early``), so for crowd workers m batches per stage is a maximum, not
a promise. The return, for an outcome:

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

from dataclasses import dataclass, replace
from datetime import datetime
from typing import ClassVar
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from ..links import absolute_url
from ..locks import annotators_locked, crowd_entries_locked
from ..models import Annotator, CrowdEntry, Stage
from ..selectors.stages import StageStatus, annotator_stage_states, annotators_stage_states
from .lifecycle import assignments_expire_overdue

PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete"
MTURK_SUBMIT_PATH = "/mturk/externalSubmit"
PLATFORM_NAMES = {
    Annotator.Platform.PROLIFIC: "Prolific",
    Annotator.Platform.MTURK: "MTurk",
}
#: What each platform calls the task a worker returns to give up their place.
PLATFORM_TASK_NAMES = {
    Annotator.Platform.PROLIFIC: "study",
    Annotator.Platform.MTURK: "HIT",
}

Outcome = CrowdEntry.Outcome


@dataclass(frozen=True)
class CrowdReturn:
    """What a crowd worker is shown and sent back with at the end of a stage.

    ``url``: a link to follow (Prolific), or the action of a form to POST with
    ``fields`` (MTurk); empty when there is nothing to follow (the worker is asked to
    return the task on the platform). ``code``: the code shown, "" when none.
    """

    #: For templates, which compare ``outcome`` with its members.
    Outcome: ClassVar[type[CrowdEntry.Outcome]] = CrowdEntry.Outcome

    platform: str
    platform_name: str
    #: What the platform calls the task (``PLATFORM_TASK_NAMES``): "study", "HIT".
    task_name: str
    outcome: CrowdEntry.Outcome
    stage_position: int
    code: str
    url: str
    fields: tuple[tuple[str, str], ...] = ()
    #: For a part that ended early: the batches they submitted in the stage, of m.
    submitted: int = 0
    target: int = 0

    @property
    def posts(self) -> bool:
        """An MTurk form to POST (else a link, or nothing to follow)."""
        return bool(self.fields)

    @property
    def form_origin(self) -> str:
        """The origin the form posts to (the page's policy must allow it)."""
        return self.url[: -len(MTURK_SUBMIT_PATH)] if self.posts else ""


def stage_code(*, stage: Stage, outcome: str) -> str:
    """The stage's code for ``outcome`` ("" when it has none). A worker left without
    work gets the screened-out code: neither is paid as a completion."""
    if outcome == Outcome.COMPLETED:
        return stage.completion_code
    if outcome == Outcome.PARTIAL:
        return stage.partial_completion_code
    if outcome in (Outcome.SCREENED_OUT, Outcome.NO_WORK):
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
        "task_name": PLATFORM_TASK_NAMES[entry.platform],
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
    entry = crowd_entries_locked().filter(annotator=annotator, stage=stage).first()
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
    their platform: the recorded outcome's (e.g. screened out), or, once that stage is
    done for them (``states``: ``annotator_stage_states``), "completed" when they
    submitted a batch in it and "no work" when it ended for them before they submitted
    anything (others did every batch that could be theirs: no completion code, as
    nothing was done), recorded on first showing. None while the stage is under way,
    and for invited annotators."""
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
    state = next((s for s in states if s.stage.pk == entry.stage_id), None)
    if entry.outcome:
        back = crowd_entry_return(entry=entry, stage=entry.stage, outcome=entry.outcome)
    elif state is None or state.status != StageStatus.DONE:
        return None
    else:
        outcome = Outcome.COMPLETED if state.submitted else Outcome.NO_WORK
        back = crowd_entry_close(annotator=annotator, stage=entry.stage, outcome=outcome, now=now)
    if state is None:
        return back
    return replace(back, submitted=state.submitted, target=state.target)


def crowd_stage_end_early(*, annotator: Annotator, states, now: datetime | None = None) -> bool:
    """End a crowd worker's part of a stage early, recording ``PARTIAL``, when they
    submitted at least one batch in it, hold none, and can get no batch now (the stage
    ``busy`` for them): they are not kept waiting while their platform's clock runs.
    Only in a stage with a partial-completion code (without one they wait, as before
    such codes). True when it ended one now, or released batches held past their
    deadline (so ``states`` are out of date): the caller shows the annotator's page
    afresh (the stage's questionnaire, if any, comes before its code).

    Decided from ``states`` (``annotator_stage_states``) first, which costs nothing
    when nothing suggests it; then again as a claim would decide: after releasing the
    study's overdue assignments, under the annotator's row lock (the claims' lock, so
    a claim from another tab runs wholly before or after, never between)."""
    if _part_to_end(annotator=annotator, states=states) is None:
        return False
    now = now or timezone.now()
    released = assignments_expire_overdue(study_id=annotator.study_id, now=now)
    with transaction.atomic(durable=True):
        annotator = annotators_locked().select_related("study").get(pk=annotator.pk)
        states = annotator_stage_states(annotator=annotator, now=now)
        state = _part_to_end(annotator=annotator, states=states)
        if state is None:
            return released > 0
        crowd_entry_close(annotator=annotator, stage=state.stage, outcome=Outcome.PARTIAL, now=now)
    return True


def _part_to_end(*, annotator: Annotator, states):
    """The state of the stage whose part ``crowd_stage_end_early`` would end, or None."""
    if not annotator.platform:
        return None
    state = next(
        (s for s in states if s.status in (StageStatus.BUSY, StageStatus.AWAITING_ITEMS)), None
    )
    if state is None or not state.submitted or not state.stage.partial_completion_code:
        return None
    entry = crowd_entry_of(annotator=annotator, stage=state.stage)
    return state if entry is not None and not entry.outcome else None


# --- the stages' codes ------------------------------------------------------------------


def stage_codes_validate(*, stage: Stage, others, fields=Stage.CODE_FIELDS) -> None:
    """The trigger's rule, with a message per field: each code of ``stage`` in ``fields``
    (its new or changed ones) is not a code of another stage of its study (``others``:
    those stages as they will be saved). Codes that repeat already (from before the
    rule) stay until changed: ``studies.selectors.readiness.stage_codes_repeated`` lists
    them."""
    taken = {}
    for other in others:
        for name in Stage.CODE_FIELDS:
            if code := getattr(other, name):
                taken.setdefault(code, (other, name))
    errors = {}
    for name in fields:
        code = getattr(stage, name)
        if code and code in taken:
            other, other_name = taken[code]
            errors[name] = (
                f"{code} is already the {Stage.code_label(other_name)} of stage {other.position} "
                f'("{other.name}"). Each code pays one outcome of one stage, so give this one '
                "another code."
            )
    if errors:
        raise ValidationError(errors)


#: What each platform appends to a stage's join link (Prolific fills the placeholders;
#: MTurk adds assignmentId, hitId, turkSubmitTo and workerId by itself).
PROLIFIC_LINK_PARAMETERS = (
    "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
)


def stage_join_links(*, stage: Stage, request: HttpRequest | None = None) -> dict[str, str]:
    """The stage's join links, ready to paste into each platform: the Prolific study
    URL (with Prolific's placeholders) and the MTurk ExternalQuestion URL, on the
    site's address (:func:`studies.links.absolute_url`: the request's, else
    ``SITE_URL``)."""
    path = absolute_url(
        reverse("studies:join", args=[stage.study.slug, stage.join_key]), request=request
    )
    return {
        Annotator.Platform.PROLIFIC: f"{path}?{PROLIFIC_LINK_PARAMETERS}",
        Annotator.Platform.MTURK: path,
    }


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
    (docs/researchers/crowd.md); staff need the "export platform ids for payment" permission. A fixed
    number of queries, whatever the number of workers."""
    if stage.study.purged_at is not None:  # their ids were erased
        return []
    entered = CrowdEntry.objects.filter(stage=stage).values("annotator_id")
    workers = (
        Annotator.objects.filter(study_id=stage.study_id, platform=platform, is_active=True)
        .exclude(pk__in=entered)
        .order_by("pk")
    )
    states = annotators_stage_states(study=stage.study, annotators=workers, now=now)
    ids = dict(workers.values_list("pk", "platform_participant_id"))
    return [
        ids[pk]
        for pk, annotator_states in sorted(states.items())
        if next(s for s in annotator_states if s.stage.pk == stage.pk).status
        in (StageStatus.OPEN, StageStatus.BUSY, StageStatus.ON_PLATFORM)
    ]
