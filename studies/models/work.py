"""The work: assignments of batches to annotators, and their judgements."""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Trim
from django.db.models.lookups import GreaterThan, LessThanOrEqual

from ..limits import REASON_MAX_LENGTH, text_cap
from ..protocol import (
    CHOICE_A,
    CHOICE_B,
    CHOICE_TIE,
    DESCRIPTION_MAX_LENGTH,
    EMPATHY_SCALE,
    PAIR_CHOICES,
)
from .materials import Batch, Reflection
from .people import Annotator
from .stages import Stage
from .study import MAX_CATEGORY_BIT, AnnotatorGroup


def _unanswered_release() -> timedelta:
    return timedelta(seconds=settings.ASSIGNMENT_UNANSWERED_RELEASE)


FIRST_REVISION = 1  # a judgement's first answer; each save adds one


class AssignmentQuerySet(models.QuerySet):
    """The assignment states the protocol speaks of, defined once (``Assignment``'s
    ``*_q`` class methods hold the conditions, for filters through relations)."""

    def open(self):
        return self.filter(Assignment.open_q())

    def active(self):
        return self.filter(Assignment.active_q())

    def overdue(self, now):
        return self.filter(Assignment.overdue_q(now))

    def expire(self, now) -> int:
        """Expire these assignments, those still open (``.overdue(now).expire(now)``:
        those whose time is up); their answers stay, their slots are released. Returns
        how many expired. Their drafts go: the batches take no more answers."""
        expiring = self.open()
        # (ItemDraft through its relation: drafts.py builds on this module.)
        Assignment.drafts.field.model.objects.filter(assignment__in=expiring).delete()
        return expiring.update(status=Assignment.Status.EXPIRED, expired_at=now, updated_at=now)


class Assignment(models.Model):
    """One annotator's work on one batch.

    ``group`` and ``stage`` repeat the annotator's group and the batch's stage (kept
    consistent by a PostgreSQL trigger) so that the database itself can cap the work:
    an active assignment holds one of the k ``group_slot``s of its batch for its group
    and one of the m ``annotator_slot``s of its annotator in its stage; expired and
    rejected assignments release both.
    """

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        IN_PROGRESS = "in_progress", "In progress"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"
        REJECTED = "rejected", "Rejected"

    # Open: still taking answers (until its deadline). Active: holding its slots (open
    # or submitted); expired and rejected assignments release them.
    OPEN = (Status.ASSIGNED, Status.IN_PROGRESS)
    ACTIVE = (*OPEN, Status.SUBMITTED)

    annotator = models.ForeignKey(Annotator, on_delete=models.PROTECT, related_name="assignments")
    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="assignments")
    group = models.ForeignKey(AnnotatorGroup, on_delete=models.PROTECT, related_name="assignments")
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="assignments")
    group_slot = models.PositiveSmallIntegerField(help_text="1..k among the group's annotators.")
    annotator_slot = models.PositiveSmallIntegerField(
        help_text="1..m among the annotator's batches in the stage."
    )
    order = models.JSONField(
        help_text="This annotator's shuffled order of the batch's reflection ids (stable)."
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ASSIGNED)
    is_recurring = models.BooleanField(
        default=False, help_text="The annotator already judged this context in an earlier stage."
    )
    assigned_at = models.DateTimeField()
    expires_at = models.DateTimeField(help_text="Not submitted by then: the assignment expires.")
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    expired_at = models.DateTimeField(null=True, blank=True)
    rejected_at = models.DateTimeField(null=True, blank=True)
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rejection_reason = models.TextField(blank=True, max_length=REASON_MAX_LENGTH)
    attention_passed = models.BooleanField(
        null=True, blank=True, help_text="Outcome of the hidden attention check (set on submit)."
    )
    updated_at = models.DateTimeField(auto_now=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-assigned_at"]
        indexes = [
            models.Index(fields=["status", "expires_at"], name="assignment_open_deadline"),
            models.Index(
                fields=["annotator", "stage", "status"], name="assignment_annotator_stage"
            ),
        ]
        constraints = [
            # One batch per (stage, context), so this is also "one per context per stage".
            models.UniqueConstraint(fields=["annotator", "batch"], name="assignment_unique"),
            # At most k active assignments per batch and group, at most m per annotator
            # and stage: the services pick free slots, these indexes refuse a double.
            models.UniqueConstraint(
                fields=["batch", "group", "group_slot"],
                condition=Q(status__in=["assigned", "in_progress", "submitted"]),
                name="assignment_group_slot_unique",
            ),
            models.UniqueConstraint(
                fields=["annotator", "stage", "annotator_slot"],
                condition=Q(status__in=["assigned", "in_progress", "submitted"]),
                name="assignment_annotator_slot_unique",
            ),
            models.CheckConstraint(
                condition=Q(group_slot__gte=1, annotator_slot__gte=1),
                name="assignment_slots_positive",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["assigned", "in_progress", "submitted", "expired", "rejected"]
                ),
                name="assignment_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("assigned_at")),
                name="assignment_expires_after_assigned",
            ),
            models.CheckConstraint(
                condition=~Q(status="submitted") | Q(submitted_at__isnull=False),
                name="assignment_submitted_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status__in=["assigned", "in_progress"])
                | Q(submitted_at__isnull=True, expired_at__isnull=True, rejected_at__isnull=True),
                name="assignment_open_not_closed",
            ),
            models.CheckConstraint(
                condition=~Q(status="expired") | Q(expired_at__isnull=False),
                name="assignment_expired_has_time",
            ),
            models.CheckConstraint(
                condition=~Q(status="rejected")
                | (Q(rejected_at__isnull=False) & ~Q(rejection_reason="")),
                name="assignment_rejected_has_reason",
            ),
            models.CheckConstraint(
                condition=Q(started_at__isnull=True) | Q(started_at__gte=F("assigned_at")),
                name="assignment_started_after_assigned",
            ),
            models.CheckConstraint(
                condition=Q(submitted_at__isnull=True) | Q(submitted_at__gte=F("assigned_at")),
                name="assignment_submitted_after_assigned",
            ),
            text_cap("assignment", "rejection_reason", REASON_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} – {self.batch}"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN

    @property
    def deadline(self) -> datetime:
        """This assignment's effective deadline, the one home of "when its time is up"
        (``overdue_q`` in SQL; the timer, the batch page and every answer use it): its
        time limit (``expires_at``), or earlier, while no answer is saved yet, the
        ``ASSIGNMENT_UNANSWERED_RELEASE`` seconds after the claim."""
        if self.status == self.Status.ASSIGNED:
            return min(self.expires_at, self.assigned_at + _unanswered_release())
        return self.expires_at

    @property
    def awaits_first_answer(self) -> bool:
        """Its ``deadline`` is still the first answer's, earlier than its time limit."""
        return self.deadline < self.expires_at

    @property
    def first_answer_allowance(self) -> timedelta:
        """How long after the claim the first answer must be saved."""
        return _unanswered_release()

    @property
    def time_limit(self) -> timedelta:
        """Its full time limit, counted from the claim (the study's at the claim)."""
        return self.expires_at - self.assigned_at

    def is_past_deadline(self, now) -> bool:
        """At ``deadline`` the time is up."""
        return self.deadline <= now

    def accepts_answers(self, now) -> bool:
        return self.is_open and not self.is_past_deadline(now)

    @classmethod
    def counted_statuses(
        cls, *, include_expired: bool = False, include_rejected: bool = False
    ) -> tuple[str, ...]:
        """Whose judgements count: submitted assignments, and on request expired and
        rejected ones."""
        statuses = [cls.Status.SUBMITTED]
        if include_expired:
            statuses.append(cls.Status.EXPIRED)
        if include_rejected:
            statuses.append(cls.Status.REJECTED)
        return tuple(statuses)

    @classmethod
    def open_q(cls, prefix: str = "") -> Q:
        """``prefix``: the lookup path to the assignment, e.g. ``"assignments__"``."""
        return Q(**{f"{prefix}status__in": cls.OPEN})

    @classmethod
    def active_q(cls, prefix: str = "") -> Q:
        return Q(**{f"{prefix}status__in": cls.ACTIVE})

    @classmethod
    def _unanswered_q(cls, now, prefix: str = "") -> Q:
        """Claimed with no answer for ``ASSIGNMENT_UNANSWERED_RELEASE`` seconds (a claim
        nobody works on must not hold a slot for the whole time limit). ``now``: a
        datetime, or a statement's parameter (``studies.hot_path``)."""
        status = Q(**{f"{prefix}status": cls.Status.ASSIGNED})
        if isinstance(now, datetime):
            return status & Q(**{f"{prefix}assigned_at__lte": now - _unanswered_release()})
        released_at = F(f"{prefix}assigned_at") + Value(_unanswered_release())
        return status & Q(LessThanOrEqual(released_at, now))

    @classmethod
    def overdue_q(cls, now, prefix: str = "") -> Q:
        """Due to expire: open and past its ``deadline``. Expiry runs on claims, page
        views and the periodic task (``assignments_expire_overdue``)."""
        return cls.open_q(prefix) & (
            Q(**{f"{prefix}expires_at__lte": now}) | cls._unanswered_q(now, prefix)
        )

    @classmethod
    def accepting_answers_q(cls, now, prefix: str = "") -> Q:
        """Open and not yet past its ``deadline`` (``overdue_q``'s complement)."""
        return (
            cls.open_q(prefix)
            & Q(**{f"{prefix}expires_at__gt": now})
            & ~cls._unanswered_q(now, prefix)
        )


class JudgementQuerySet(models.QuerySet):
    def coherence(self):
        """The coherence protocol's answers (those with a Yes/No): the coherence
        analysis and its published format read these; a Likert stage's answers (no
        Yes/No, ``ratings``) have their own."""
        return self.filter(Judgement.coherence_q())

    def analysed(self, *, include_expired: bool = False, excluded_sources=()):
        """The judgements that count for analysis (``Judgement.analysed_q``)."""
        return self.filter(
            Judgement.analysed_q(include_expired=include_expired, excluded_sources=excluded_sources)
        )


class Judgement(models.Model):
    """One annotator's answer for one reflection of one assignment: the coherence
    protocol's Yes/No and what follows it; a Likert stage's ratings (``ratings``); a
    ranking stage's rank of the reflection; or, in a pairwise stage, the choice
    between the reflection and its ``opponent`` (one answer per pair).

    Selected error categories are stored as a bit set (``ErrorCategory.bit``) so the
    database itself can check "categories only on No" and "the most evident error is
    one of the selected categories", and analysis reads one integer per row.
    """

    class Choice(models.TextChoices):
        A = CHOICE_A, "A (the candidate shown on the left)"
        B = CHOICE_B, "B (the candidate shown on the right)"
        TIE = CHOICE_TIE, "Tie"

    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="judgements")
    reflection = models.ForeignKey(Reflection, on_delete=models.PROTECT, related_name="judgements")
    coherent = models.BooleanField(
        null=True,
        blank=True,
        help_text="The coherence protocol's Yes/No; empty for an answer of another "
        "instrument (a Likert stage's ratings: ``ratings``).",
    )
    error_flags = models.PositiveIntegerField(
        default=0, help_text="Bit set of selected ErrorCategory.bit values."
    )
    most_evident_bit = models.PositiveSmallIntegerField(null=True, blank=True)
    empathy = models.PositiveSmallIntegerField(
        null=True, blank=True, choices=sorted(EMPATHY_SCALE.items())
    )
    error_description = models.TextField(
        blank=True,
        default="",
        db_default="",
        max_length=DESCRIPTION_MAX_LENGTH,
        help_text="What is wrong, in the annotator's own words (a No in a stage that asks "
        "for a description).",
    )
    opponent = models.ForeignKey(
        Reflection,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="opposed_judgements",
        help_text="A pairwise answer: the pair's second candidate (``reflection`` is its "
        "first; in the attention pair, the off-topic candidate).",
    )
    shown_swapped = models.BooleanField(
        default=False,
        db_default=False,
        help_text="A pairwise answer: the second candidate was shown on the left, as A.",
    )
    choice = models.CharField(
        max_length=3,
        blank=True,
        default="",
        db_default="",
        choices=Choice.choices,
        help_text="A pairwise answer: A (the candidate shown on the left), B or Tie.",
    )
    reason = models.TextField(
        blank=True,
        default="",
        db_default="",
        max_length=DESCRIPTION_MAX_LENGTH,
        help_text="A pairwise answer: the annotator's optional reason for the choice.",
    )
    rank = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="A ranking answer: the reflection's rank among its context's candidates, "
        "1 for the best; tied candidates share the lowest rank of their tie (1, 2, 2, 4).",
    )
    seconds_spent = models.FloatField(null=True, blank=True)
    revision = models.PositiveIntegerField(
        default=FIRST_REVISION,
        db_default=FIRST_REVISION,  # bulk loads that bypass the ORM (COPY) get it too
        help_text="1 for the first answer, one more for every revision: a save made "
        "from a page that showed an older revision is refused, so a late, abandoned "
        "request cannot overwrite a newer answer.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = JudgementQuerySet.as_manager()

    class Meta:
        ordering = ["assignment", "id"]
        constraints = [
            # One answer per reflection, or per pair (a null opponent is one value here).
            models.UniqueConstraint(
                fields=["assignment", "reflection", "opponent"],
                nulls_distinct=False,
                name="judgement_unique",
            ),
            # A pairwise answer has a choice and nothing of the other instruments; any
            # other answer has none of a pairwise answer's fields.
            models.CheckConstraint(
                condition=Q(
                    opponent__isnull=True,
                    choice="",
                    shown_swapped=False,
                    reason="",
                )
                | Q(
                    opponent__isnull=False,
                    choice__in=PAIR_CHOICES,
                    coherent__isnull=True,
                    rank__isnull=True,
                ),
                name="judgement_pair_answer",
            ),
            models.CheckConstraint(
                condition=Q(opponent__isnull=True) | ~Q(opponent=F("reflection")),
                name="judgement_pair_of_two",
            ),
            models.CheckConstraint(
                condition=Q(rank__isnull=True) | Q(rank__gte=1, coherent__isnull=True),
                name="judgement_rank_positive_without_coherence",
            ),
            models.CheckConstraint(
                condition=Q(reason=Trim("reason")), name="judgement_reason_trimmed"
            ),
            text_cap("judgement", "reason", DESCRIPTION_MAX_LENGTH),
            # An answer without a Yes/No (another instrument's) has none of the coherence
            # protocol's fields: the checks below pass on a null ``coherent`` otherwise.
            models.CheckConstraint(
                condition=Q(coherent__isnull=False)
                | Q(
                    error_flags=0,
                    most_evident_bit__isnull=True,
                    empathy__isnull=True,
                    error_description="",
                ),
                name="judgement_other_instrument_without_coherence_fields",
            ),
            models.CheckConstraint(
                condition=Q(coherent=False) | Q(error_flags=0),
                name="judgement_categories_only_when_incoherent",
            ),
            models.CheckConstraint(
                condition=Q(most_evident_bit__isnull=True) | Q(coherent=False),
                name="judgement_mee_only_when_incoherent",
            ),
            models.CheckConstraint(
                condition=Q(most_evident_bit__isnull=True)
                | (
                    Q(most_evident_bit__lte=MAX_CATEGORY_BIT)
                    & Q(
                        GreaterThan(
                            F("error_flags").bitand(Value(1).bitleftshift(F("most_evident_bit"))),
                            0,
                        )
                    )
                ),
                name="judgement_mee_among_selected",
            ),
            models.CheckConstraint(
                condition=Q(empathy__isnull=True)
                | Q(coherent=True, empathy__gte=1, empathy__lte=5),
                name="judgement_empathy_only_when_coherent",
            ),
            models.CheckConstraint(
                condition=Q(seconds_spent__isnull=True) | Q(seconds_spent__gte=0),
                name="judgement_seconds_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(error_description="") | Q(coherent=False),
                name="judgement_description_only_when_incoherent",
            ),
            models.CheckConstraint(
                condition=Q(error_description=Trim("error_description")),
                name="judgement_description_trimmed",
            ),
            text_cap("judgement", "error_description", DESCRIPTION_MAX_LENGTH),
        ]

    def __str__(self) -> str:
        if self.choice:
            answer = self.choice
        elif self.rank is not None:
            answer = f"rank {self.rank}"
        else:
            answer = "rated" if self.coherent is None else "Yes" if self.coherent else "No"
        return f"{self.assignment.annotator}: {answer}"

    @property
    def key(self) -> tuple[int, int | None]:
        """What the answer answers, as an assignment's order names it
        (``protocol.order_key``): the reflection, or a pairwise answer's pair."""
        return (self.reflection_id, self.opponent_id)

    @staticmethod
    def coherence_q(*, prefix: str = "") -> Q:
        """An answer of the coherence protocol (``JudgementQuerySet.coherence``)."""
        return Q(**{f"{prefix}coherent__isnull": False})

    @staticmethod
    def analysed_q(
        *,
        prefix: str = "",
        assignment_prefix: str | None = None,
        include_expired: bool = False,
        excluded_sources=(),
    ) -> Q:
        """Judgements that count for analysis: of submitted assignments (and expired
        ones when asked; never rejected ones), never of attention-check items, minus
        the excluded sources. ``prefix``: the lookup path to the judgement, e.g.
        ``"judgements__"``; ``assignment_prefix``: to its assignment (default: through
        the judgement; ``""`` from the assignment itself, with no join back). A pairwise
        answer's attention pair has the off-topic candidate first (``reflection``)."""
        statuses = Assignment.counted_statuses(include_expired=include_expired)
        if assignment_prefix is None:
            assignment_prefix = f"{prefix}assignment__"
        q = Q(**{f"{assignment_prefix}status__in": statuses}) & ~Q(
            **{f"{prefix}reflection__kind": Reflection.Kind.ATTENTION_CHECK}
        )
        if excluded_sources:
            # (A pairwise answer is left out when either candidate's source is.)
            q &= ~Q(**{f"{prefix}reflection__source__in": list(excluded_sources)}) & ~Q(
                **{f"{prefix}opponent__source__in": list(excluded_sources)}
            )
        return q
