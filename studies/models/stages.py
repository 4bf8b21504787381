"""Stages: the ordered steps of a study, each with its own batches, wait, crowd codes,
instrument and (falling back to the study's) wording and tutorial."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from ..limits import PAGE_TEXT_MAX_LENGTH, text_cap
from ..protocol import (
    INSTRUMENT_COHERENCE,
    INSTRUMENT_LIKERT,
    INSTRUMENT_PAIRWISE,
    INSTRUMENT_QUESTIONS,
    INSTRUMENT_RANKING,
    INSTRUMENTS,
    NO_ANSWER_BOTH,
    NO_ANSWER_CATEGORIES,
    NO_ANSWER_FREE_TEXT,
    AnswerSettings,
)
from ..validators import validate_turns_or_empty
from .study import CODE_REGEX, PLATFORM_TASK_IDS_REGEX, Study, new_crowd_code, new_stage_key


class Stage(models.Model):
    class Instrument(models.TextChoices):
        COHERENCE = INSTRUMENT_COHERENCE, "Coherence protocol"
        LIKERT = INSTRUMENT_LIKERT, "Likert ratings on named dimensions"
        PAIRWISE = INSTRUMENT_PAIRWISE, "Pairwise preference (A, B or a tie)"
        RANKING = INSTRUMENT_RANKING, "Ranking of a context's candidates"

    class NoAnswer(models.TextChoices):
        CATEGORIES = NO_ANSWER_CATEGORIES, "Error categories (and the most evident error)"
        FREE_TEXT = NO_ANSWER_FREE_TEXT, "A description in the annotator's own words"
        BOTH = NO_ANSWER_BOTH, "Error categories plus an optional description"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveSmallIntegerField(
        help_text="1, 2, ...: annotators do stages in order."
    )
    name = models.CharField(max_length=100, help_text='e.g. "GPT-2 stage"')
    min_wait = models.DurationField(
        default=timedelta(days=3),
        help_text="Minimum wait before an annotator may start this stage, counted from their "
        'own completion of the previous stage, e.g. "3 days", "2 days 4 hours" or "0".',
    )
    # Who takes part, how many of each group per batch, and how many batches each: the
    # study's unless the stage sets its own (``Stage.k``, ``Stage.m``,
    # ``protocol.group_takes_part``); a group's own wait: ``StageGroupWait``.
    groups = models.ManyToManyField(
        "AnnotatorGroup",
        blank=True,
        related_name="stages",
        verbose_name="groups taking part",
        help_text="The groups whose annotators work in this stage. None chosen: every group. "
        "An annotator of another group skips the stage; their wait before their next stage "
        "counts from their last batch in a stage they took part in.",
    )
    overlap_k = models.PositiveSmallIntegerField(
        "annotators per batch per group (k)",
        null=True,
        blank=True,
        help_text="Empty: the study's k.",
    )
    batches_per_stage = models.PositiveSmallIntegerField(
        "batches per annotator (m)",
        null=True,
        blank=True,
        help_text="Empty: the study's m.",
    )
    instrument = models.CharField(
        max_length=20,
        choices=Instrument.choices,
        default=Instrument.COHERENCE,
        help_text="What annotators give: for each response candidate, the coherence "
        "protocol (Yes/No, then categories, a description or a rating) or ratings on "
        "the stage's Likert dimensions; for pairs of candidates, which is better; or a "
        "ranking of each context's candidates, best first.",
    )
    allows_ties = models.BooleanField(
        "ties allowed",
        default=True,
        help_text="Pairwise and ranking stages: annotators may answer that two candidates "
        "are equally good (a tie in a pair, a shared rank in a ranking).",
    )
    asks_reason = models.BooleanField(
        "reason asked",
        default=False,
        help_text="Pairwise stages: a box for an optional reason for each choice.",
    )
    pairs_per_context = models.PositiveSmallIntegerField(
        "pairs per context",
        null=True,
        blank=True,
        help_text="Pairwise stages: how many pairs of candidates from different systems "
        "each context's batch holds (the human reflection counts as a system), drawn with "
        "the study's seed so that, within a context, every pair of systems comes up before "
        "any repeats. "
        "Empty: every such pair. Each batch also holds one attention pair.",
    )
    no_answer = models.CharField(
        'after "No"',
        max_length=20,
        choices=NoAnswer.choices,
        default=NoAnswer.CATEGORIES,
        help_text="What annotators give when they answer No. A description stage shows no "
        "categories: the first phase of a two-phase study, whose descriptions are then "
        "coded into categories.",
    )
    empathy_after_yes = models.BooleanField(
        'agreement question after "Yes"',
        default=True,
        help_text="Off: nothing follows a Yes.",
    )
    # The stage's own wording and tutorial; each empty field is the study's
    # (``stage_wording``, ``stage_tutorial``).
    coherence_question = models.CharField(
        max_length=500,
        blank=True,
        help_text="The Yes/No question of this stage (a pairwise or ranking stage: its "
        "question). Empty: the study's (a pairwise or ranking stage: its instrument's).",
    )
    description_prompt = models.CharField(
        max_length=500,
        blank=True,
        help_text="The prompt over the description box of this stage. Empty: the study's.",
    )
    tutorial_intro = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="This stage's tutorial introduction. Empty: the study's. A stage with "
        "any tutorial text of its own shows its tutorial to each annotator before their "
        "first batch of the stage (e.g. a second phase that explains the categories).",
    )
    tutorial_example_turns = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_turns_or_empty],
        help_text="This stage's worked example dialogue. Empty: the study's.",
    )
    tutorial_example_notes = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="Notes on this stage's worked example. Empty: the study's.",
    )
    tutorial_empathy_explanation = models.TextField(
        blank=True,
        max_length=PAGE_TEXT_MAX_LENGTH,
        help_text="How this stage's agreement question works. Empty: the study's.",
    )
    # Crowd platforms pay per stage: each stage has its own join link and codes
    # (studies.services.crowd).
    join_key = models.CharField(
        max_length=32,
        default=new_stage_key,
        help_text="Carried by this stage's crowd join link: only people given the link "
        "can enter the stage. Change it to close the old link.",
    )
    completion_code = models.CharField(
        max_length=64,
        default=new_crowd_code,
        help_text="Given to crowd workers who finish this stage (on Prolific: the "
        "completion code of the Prolific study for this stage).",
    )
    screened_out_code = models.CharField(
        max_length=64,
        blank=True,
        help_text="Given to crowd workers screened out in this stage (e.g. a failed "
        "training quiz), and to those for whom no batch was left before they did any. "
        "Empty: they are asked to return the task on the platform.",
    )
    partial_completion_code = models.CharField(
        max_length=64,
        blank=True,
        default=new_crowd_code,
        help_text="Given to crowd workers who did some of this stage's batches but can get "
        "no further batch now (others hold or did the rest): their stage ends there and "
        "this code pays the work they did (on Prolific: map it to a payment action). A "
        "crowd study cannot open while a stage lacks it.",
    )

    platform_task_ids = models.CharField(
        max_length=500,
        blank=True,
        help_text="Optional: the Prolific study id(s) and MTurk HIT id(s) of this stage's "
        "task on the platform, separated by commas. When set, the stage's join link is "
        "honoured only from one of them.",
    )

    # Which of the study's error categories the stage offers; the rule (none chosen:
    # all of them; the attention check's always) is ``stage_offered_categories``.
    categories = models.ManyToManyField(
        "ErrorCategory",
        blank=True,
        related_name="stages",
        verbose_name="categories offered",
        help_text="The error categories this stage offers after a No. None chosen: all of "
        "the study's categories. A category that catches the attention check is offered "
        "in every stage that asks for categories, chosen or not.",
    )
    categories_from_coding = models.BooleanField(
        "categories from coding",
        default=False,
        help_text="Its categories come from coding an earlier stage's descriptions: the "
        "stage stays closed to annotators until a researcher marks its scheme final "
        '(the stages list\'s action "Mark the error scheme final").',
    )
    scheme_final_at = models.DateTimeField(
        "scheme marked final",
        null=True,
        blank=True,
        editable=False,
        help_text="When a researcher marked this stage's error scheme final (a stage "
        "whose categories come from coding opens to annotators from then on).",
    )
    scheme_final_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        editable=False,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name="scheme marked final by",
    )

    class Meta:
        ordering = ["study", "position"]
        constraints = [
            models.UniqueConstraint(fields=["study", "position"], name="stage_position_unique"),
            models.UniqueConstraint(fields=["study", "name"], name="stage_name_unique"),
            models.CheckConstraint(condition=Q(position__gte=1), name="stage_position_positive"),
            models.CheckConstraint(condition=~Q(name=""), name="stage_name_not_empty"),
            models.CheckConstraint(
                condition=Q(min_wait__gte=timedelta(0)), name="stage_min_wait_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(
                    no_answer__in=[NO_ANSWER_CATEGORIES, NO_ANSWER_FREE_TEXT, NO_ANSWER_BOTH]
                ),
                name="stage_no_answer_valid",
            ),
            models.CheckConstraint(
                condition=Q(instrument__in=INSTRUMENTS),
                name="stage_instrument_valid",
            ),
            models.CheckConstraint(
                condition=Q(pairs_per_context__isnull=True) | Q(pairs_per_context__gte=1),
                name="stage_pairs_per_context_positive",
            ),
            models.CheckConstraint(
                condition=Q(overlap_k__isnull=True) | Q(overlap_k__gte=1),
                name="stage_overlap_k_positive",
            ),
            models.CheckConstraint(
                condition=Q(batches_per_stage__isnull=True) | Q(batches_per_stage__gte=1),
                name="stage_batches_per_stage_positive",
            ),
            models.UniqueConstraint(fields=["study", "join_key"], name="stage_join_key_unique"),
            models.CheckConstraint(
                condition=Q(join_key__regex=CODE_REGEX), name="stage_join_key_format"
            ),
            models.CheckConstraint(
                condition=Q(completion_code__regex=CODE_REGEX), name="stage_completion_code_format"
            ),
            models.CheckConstraint(
                condition=Q(screened_out_code="") | Q(screened_out_code__regex=CODE_REGEX),
                name="stage_screened_out_code_format",
            ),
            models.CheckConstraint(
                condition=Q(platform_task_ids__regex=PLATFORM_TASK_IDS_REGEX),
                name="stage_platform_task_ids_format",
            ),
            # Every code of a stage differs from the others; across the study's
            # stages, the trigger of migration 0021 keeps them distinct
            # (``studies.services.crowd.stage_codes_validate`` says so first).
            models.CheckConstraint(
                condition=~Q(screened_out_code=F("completion_code"))
                & ~Q(partial_completion_code=F("completion_code"))
                & (
                    Q(partial_completion_code="")
                    | ~Q(partial_completion_code=F("screened_out_code"))
                ),
                name="stage_codes_differ",
            ),
            models.CheckConstraint(
                condition=Q(partial_completion_code="")
                | Q(partial_completion_code__regex=CODE_REGEX),
                name="stage_partial_completion_code_format",
            ),
            models.CheckConstraint(
                condition=Q(categories_from_coding=False) | ~Q(no_answer=NO_ANSWER_FREE_TEXT),
                name="stage_coding_scheme_asks_categories",
            ),
            *(
                text_cap("stage", field, PAGE_TEXT_MAX_LENGTH)
                for field in (
                    "tutorial_intro",
                    "tutorial_example_notes",
                    "tutorial_empathy_explanation",
                )
            ),
        ]

    #: Each stage's codes, each paying one outcome; every code of a study differs from
    #: the others (the check constraint within a stage, the trigger of migration 0021
    #: across its stages, ``studies.services.crowd.stage_codes_validate`` first).
    CODE_FIELDS = ("completion_code", "partial_completion_code", "screened_out_code")

    def __str__(self) -> str:
        return f"{self.name} ({self.study.slug})"

    @classmethod
    def code_label(cls, name: str) -> str:
        """ "completion code", "partial completion code", "screened out code"."""
        return str(cls._meta.get_field(name).verbose_name)

    @property
    def platform_task_id_list(self) -> list[str]:
        """``platform_task_ids`` as a list (empty: any task may carry the link)."""
        return [i for i in self.platform_task_ids.split(",") if i]

    @property
    def k(self) -> int:
        """Annotators per batch per group in this stage: its own, else the study's."""
        return self.overlap_k or self.study.overlap_k

    @property
    def m(self) -> int:
        """Batches per annotator in this stage: its own, else the study's."""
        return self.batches_per_stage or self.study.batches_per_stage

    @property
    def answer_settings(self) -> AnswerSettings:
        """What this stage asks after Yes and after No."""
        return AnswerSettings(
            no_answer=self.no_answer,
            empathy_after_yes=self.empathy_after_yes,
            instrument=self.instrument,
            allows_ties=self.allows_ties,
            asks_reason=self.asks_reason,
        )

    @property
    def wording(self) -> "StageWording":
        """The questions' wording in this stage (``stage_wording``)."""
        own = {name: getattr(self, name) for name in ("instrument", *WORDING_FIELDS)}
        return stage_wording(self.study, own)

    @property
    def tutorial(self) -> "StageTutorial":
        """This stage's tutorial (``stage_tutorial``)."""
        return stage_tutorial(self.study, self)

    @property
    def has_own_wording(self) -> bool:
        """The stage words its question or description prompt differently."""
        return any(getattr(self, name) for name in WORDING_FIELDS)

    @property
    def has_own_tutorial(self) -> bool:
        """Some tutorial text is the stage's own, or it is a later stage of another
        instrument than the coherence protocol (its tutorial explains the task and its
        keys): each annotator reads its tutorial before their first batch of the
        stage."""
        later_other = self.instrument != self.Instrument.COHERENCE and self.position > 1
        return later_other or any(getattr(self, name) for name in TUTORIAL_FIELDS)

    @property
    def awaits_scheme(self) -> bool:
        """Closed to annotators: its categories come from coding and nobody has marked
        the scheme final yet."""
        return self.categories_from_coding and self.scheme_final_at is None

    @property
    def public_name(self) -> str:
        """What annotators see: "Stage 2". Stage names such as "GPT-3 stage" would tell
        them which candidates come from a model."""
        return f"Stage {self.position}"


class StageGroupWait(models.Model):
    """A group's own minimum wait before a stage (the stage's ``min_wait`` for the
    other groups): e.g. experts may start as soon as the laypeople's items are in."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="group_waits")
    group = models.ForeignKey(
        "AnnotatorGroup", on_delete=models.CASCADE, related_name="stage_waits"
    )
    min_wait = models.DurationField(
        help_text="This group's minimum wait before the stage, counted from each "
        'annotator\'s last batch in a stage they took part in, e.g. "1 day" or "0".',
    )

    class Meta:
        ordering = ["stage", "group__name"]
        verbose_name = "group's own wait"
        constraints = [
            models.UniqueConstraint(fields=["stage", "group"], name="stage_group_wait_unique"),
            models.CheckConstraint(
                condition=Q(min_wait__gte=timedelta(0)), name="stage_group_wait_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group.name}: {self.min_wait}"


#: What a stage may word differently from its study (the item panel's questions) and
#: the parts of its tutorial; each empty field of a stage is the study's.
WORDING_FIELDS = ("coherence_question", "description_prompt")
TUTORIAL_FIELDS = (
    "tutorial_intro",
    "tutorial_example_turns",
    "tutorial_example_notes",
    "tutorial_empathy_explanation",
)


def stage_fallback(study: Study, own: Mapping[str, Any], names: tuple[str, ...]) -> dict:
    """A stage's own texts: each of ``names`` is the stage's value (``own``: a Stage
    or the hot path's row of one) when not empty, else the study's. Every reading of
    a stage's wording and tutorial goes through here."""
    get = own.get if isinstance(own, Mapping) else partial(getattr, own)
    return {name: get(name) or getattr(study, name) for name in names}


@dataclass(frozen=True)
class StageWording:
    """The item panel's questions in one stage."""

    question: str
    #: Empty: the panel's own prompt for the stage's settings.
    description_prompt: str


def stage_wording(study: Study, own: Mapping[str, Any] | Stage) -> StageWording:
    """The stage's question (a pairwise or ranking stage's own, else its instrument's:
    the study's coherence question asks something else) and description prompt."""
    values = stage_fallback(study, own, WORDING_FIELDS)
    get = own.get if isinstance(own, Mapping) else partial(getattr, own)
    instrument_question = INSTRUMENT_QUESTIONS.get(get("instrument"))
    if instrument_question is not None:
        values["coherence_question"] = get("coherence_question") or instrument_question
    return StageWording(
        question=values["coherence_question"], description_prompt=values["description_prompt"]
    )


@dataclass(frozen=True)
class StageTutorial:
    intro: str
    example_turns: list
    example_notes: str
    empathy_explanation: str


def stage_tutorial(study: Study, own: Stage | None) -> StageTutorial:
    """A stage's tutorial (None: the study's, before any stage)."""
    values = stage_fallback(study, own or {}, TUTORIAL_FIELDS)
    return StageTutorial(
        **{name.removeprefix("tutorial_"): values[name] for name in TUTORIAL_FIELDS}
    )
