"""Annotator-facing forms. They validate with the services' own rules
(``answer_encode``), so the page, the API and the database cannot disagree."""

from collections.abc import Sequence
from datetime import datetime

from django import forms
from django.core import signing
from django.core.exceptions import ValidationError
from django.utils import timezone

from .models import ErrorCategory, LikertDimension
from .protocol import (
    DEFAULT_ANSWER_SETTINGS,
    DESCRIPTION_MAX_LENGTH,
    EMPATHY_SCALE,
    PAIR_CHOICES,
    RATING_FIELD_PREFIX,
    AnswerSettings,
    selected_categories,
)
from .services import (
    Answer,
    answer_encode,
    likert_answer_encode,
    pairwise_answer_encode,
    ranking_encode,
)


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        required=True,
        error_messages={"required": "Please tick the box to say that you agree."},
    )
    version = forms.IntegerField(widget=forms.HiddenInput)


_SHOWN_AT = signing.Signer(salt="studies.answer-form.shown-at")


def item_shown_at(*, now: datetime | None = None) -> str:
    """The server's time when it showed an item, signed, for the form's ``shown_at``.
    The page's script measures the time spent itself; without JavaScript nothing
    does, so the save measures it from this (a tampered value is ignored)."""
    return _SHOWN_AT.sign(f"{(now or timezone.now()).timestamp():.3f}")


def seconds_since_shown(token: str, *, now: datetime | None = None) -> float | None:
    try:
        shown = float(_SHOWN_AT.unsign(token))
    except (signing.BadSignature, ValueError):
        return None
    seconds = (now or timezone.now()).timestamp() - shown
    return round(seconds, 1) if seconds >= 0 else None


#: A Likert rating's field: ``rating_<dimension name>``, a point, a slider value or
#: ``CANNOT_JUDGE``; a slider's "cannot judge" is a checkbox, ``cannot_judge_<name>``.
RATING_PREFIX, CANNOT_JUDGE_PREFIX = RATING_FIELD_PREFIX, "cannot_judge_"
CANNOT_JUDGE = "cannot_judge"


class AnswerForm(forms.Form):
    """One response candidate: Yes/No, then what the stage asks (``AnswerSettings``):
    after No the categories and the most evident error, a description, or both; after
    Yes the 1–5 agreement rating, or nothing. In a Likert stage: a rating on each of
    its dimensions (``rating_<name>``), or "cannot judge" where offered. In a pairwise
    stage: A, B or Tie for the pair shown, and a reason where asked."""

    coherent = forms.ChoiceField(
        required=False,
        choices=[("yes", "Yes"), ("no", "No")],
        widget=forms.RadioSelect,
    )
    categories = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    most_evident = forms.ChoiceField(required=False, widget=forms.RadioSelect)
    empathy = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        choices=[(str(k), v) for k, v in sorted(EMPATHY_SCALE.items())],
        widget=forms.RadioSelect,
    )
    # Trimmed by answer_encode (which also checks its length: one rule for the page,
    # the API and imports); the cap here only stops a huge post early.
    description = forms.CharField(
        required=False,
        strip=False,
        max_length=DESCRIPTION_MAX_LENGTH * 2,
        widget=forms.Textarea(attrs={"rows": 4, "maxlength": DESCRIPTION_MAX_LENGTH}),
    )
    choice = forms.ChoiceField(
        required=False, choices=[(c, c) for c in PAIR_CHOICES], widget=forms.RadioSelect
    )
    # Trimmed and checked by pairwise_answer_encode, as the description above.
    reason = forms.CharField(
        required=False,
        strip=False,
        max_length=DESCRIPTION_MAX_LENGTH * 2,
        widget=forms.Textarea(attrs={"rows": 2, "maxlength": DESCRIPTION_MAX_LENGTH}),
    )
    seconds_spent = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)
    # item_shown_at() of the page: the time spent when the browser sends none.
    shown_at = forms.CharField(required=False, widget=forms.HiddenInput)
    # "plain" when the page runs without JavaScript (the script sets "js"). A plain
    # form cannot untick a radio button, so there, answers to questions that no
    # longer apply (a rating after switching to No, categories after switching to
    # Yes) are dropped instead of refused. Anything else is checked strictly.
    form_mode = forms.CharField(required=False, widget=forms.HiddenInput)
    # The revision of the answer the page showed (0: none yet), for the service's check.
    revision = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(
        self,
        *args,
        categories: list[ErrorCategory],
        settings: AnswerSettings | None = DEFAULT_ANSWER_SETTINGS,
        dimensions: Sequence[LikertDimension] = (),
        **kwargs,
    ):
        """``settings``: what the item's stage asks; None when the stage is not known
        yet (a save names only the assignment): the save's service then checks the
        answer against the stage, with the same rules and messages. ``dimensions``:
        the Likert dimensions the stage rates (the study's Likert stages' while the
        stage is not known)."""
        super().__init__(*args, **kwargs)
        self.study_categories = categories
        self.settings = settings
        self.dimensions = list(dimensions)
        choices = [(c.slug, c.label) for c in categories]
        self.fields["categories"].choices = choices
        self.fields["most_evident"].choices = choices
        for dimension in self.dimensions:
            self.fields[RATING_PREFIX + dimension.name] = forms.CharField(required=False)
            self.fields[CANNOT_JUDGE_PREFIX + dimension.name] = forms.BooleanField(required=False)

    @property
    def rates_dimensions(self) -> bool:
        """Whether the answer is a Likert answer: the stage's, else (the stage not
        known) an answer with ratings and without Yes or No."""
        if self.settings is not None:
            return self.settings.rates_dimensions
        return not self.data.get("coherent") and any(
            key.startswith(RATING_PREFIX) for key in self.data
        )

    @property
    def compares_pairs(self) -> bool:
        """Whether the answer is a pairwise answer: the stage's, else (the stage not
        known) an answer with a choice and without Yes or No."""
        if self.settings is not None:
            return self.settings.compares_pairs
        return bool(self.data.get("choice")) and not self.data.get("coherent")

    def _ratings(self) -> dict[str, int | None]:
        """The ratings given (name → value, None for "cannot judge"); a rating that is
        not a whole number is an error at its dimension."""
        ratings = {}
        for dimension in self.dimensions:
            name = dimension.name
            cannot_judge = self.cleaned_data.get(CANNOT_JUDGE_PREFIX + name)
            given = (self.cleaned_data.get(RATING_PREFIX + name) or "").strip()
            if cannot_judge or given == CANNOT_JUDGE:
                ratings[name] = None
            elif given:
                try:
                    ratings[name] = int(given)
                except ValueError:
                    self.add_error(RATING_PREFIX + name, f"A rating of {name} is a whole number.")
        return ratings

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        if cleaned.get("seconds_spent") is None and cleaned.get("shown_at"):
            cleaned["seconds_spent"] = seconds_since_shown(cleaned["shown_at"])
        if self.compares_pairs:
            cleaned["pair"] = True
            if self.settings is not None:
                try:
                    pairwise_answer_encode(answer=self.answer(), settings=self.settings)
                except ValidationError as exc:
                    self.add_answer_errors(exc)
            return cleaned
        if self.rates_dimensions:
            cleaned["ratings"] = self._ratings()
            if self.settings is not None and not self.errors:
                try:
                    likert_answer_encode(answer=self.answer(), dimensions=self.dimensions)
                except ValidationError as exc:
                    self.add_answer_errors(exc)
            return cleaned
        if self.settings is not None and not cleaned.get("coherent"):
            self.add_error("coherent", "Answer Yes or No.")
            return cleaned
        if cleaned.get("form_mode") == "plain":
            if cleaned["coherent"] == "yes":
                cleaned["categories"], cleaned["most_evident"] = [], None
                cleaned["description"] = ""
            else:
                cleaned["empathy"] = None
                if len(cleaned.get("categories") or ()) < 2:
                    cleaned["most_evident"] = None
        if self.settings is None:
            return cleaned  # (checked by the save, against the assignment's stage)
        answer = self.answer()
        try:
            answer_encode(
                answer=answer,
                categories={c.slug: c.bit for c in self.study_categories},
                settings=self.settings,
            )
        except ValidationError as exc:
            self.add_answer_errors(exc)
        return cleaned

    def add_answer_errors(self, exc: ValidationError) -> None:
        """``answer_encode``'s refusal, each message at its question."""
        if not hasattr(exc, "error_dict"):
            self.add_error(None, exc.messages)
            return
        for field, messages in exc.message_dict.items():
            self.add_error(field if field in self.fields else None, messages)

    def answer(self) -> Answer:
        data = self.cleaned_data
        if data.get("pair"):
            return Answer(
                coherent=None,
                choice=data.get("choice") or "",
                reason=data.get("reason") or "",
                seconds_spent=data.get("seconds_spent"),
            )
        if "ratings" in data:
            return Answer(
                coherent=None,
                ratings=data["ratings"],
                seconds_spent=data.get("seconds_spent"),
            )
        return Answer(
            coherent={"yes": True, "no": False}.get(data.get("coherent")),
            categories=frozenset(data.get("categories") or ()),
            most_evident=data.get("most_evident") or None,
            empathy=data.get("empathy"),
            seconds_spent=data.get("seconds_spent"),
            description=data.get("description") or "",
        )

    @classmethod
    def initial_from(
        cls, judgement, categories: list[ErrorCategory], dimensions: Sequence[LikertDimension] = ()
    ) -> dict:
        """The form's values for a saved answer (a Likert answer's ratings: read with
        it, ``judgement.likert_ratings``)."""
        if judgement is None:
            return {}
        if judgement.choice:
            return {"choice": judgement.choice, "reason": judgement.reason}
        if judgement.coherent is None:
            names = {d.pk: d.name for d in dimensions}
            initial = {}
            for rating in judgement.likert_ratings:
                name = names.get(rating.dimension_id)
                if name is None:
                    continue
                if rating.cannot_judge:
                    initial[CANNOT_JUDGE_PREFIX + name] = True
                    initial[RATING_PREFIX + name] = CANNOT_JUDGE
                else:
                    initial[RATING_PREFIX + name] = str(rating.value)
            return initial
        chosen = selected_categories(judgement.error_flags, [(c.bit, c.slug) for c in categories])
        most_evident = next(
            (c.slug for c in categories if c.bit == judgement.most_evident_bit), None
        )
        return {
            "coherent": "yes" if judgement.coherent else "no",
            "categories": chosen,
            "most_evident": most_evident if len(chosen) > 1 else None,
            "empathy": str(judgement.empathy) if judgement.empathy else None,
            "description": judgement.error_description,
        }


#: A ranking's field per candidate: ``rank_<reflection id>``.
RANK_PREFIX = "rank_"


class RankingForm(forms.Form):
    """A ranking stage's answer: a rank per candidate (``rank_<reflection id>``, 1 the
    best, equal numbers a tie where the stage allows ties), checked with the save's
    rules (``ranking_encode``). The page's script keeps the numbers in step with the
    order the annotator drags or moves the candidates into; without it they are typed."""

    seconds_spent = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)
    shown_at = forms.CharField(required=False, widget=forms.HiddenInput)
    revision = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args, candidates: Sequence[int], settings: AnswerSettings | None, **kwargs):
        """``settings``: the stage's (None: not known yet; the save checks the ranking
        against the assignment's stage, with the same rules and messages)."""
        super().__init__(*args, **kwargs)
        self.candidates = list(candidates)
        self.settings = settings
        for rid in self.candidates:
            self.fields[f"{RANK_PREFIX}{rid}"] = forms.CharField(required=False)

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        if cleaned.get("seconds_spent") is None and cleaned.get("shown_at"):
            cleaned["seconds_spent"] = seconds_since_shown(cleaned["shown_at"])
        ranks = {}
        for rid in self.candidates:
            given = (cleaned.get(f"{RANK_PREFIX}{rid}") or "").strip()
            try:
                ranks[rid] = int(given) if given else None
            except ValueError:
                self.add_error(f"{RANK_PREFIX}{rid}", "A rank is a whole number.")
        if self.errors:
            return cleaned
        cleaned["ranks"] = ranks
        if self.settings is None:
            return cleaned
        try:
            ranking_encode(ranks=ranks, candidates=self.candidates, settings=self.settings)
        except ValidationError as exc:
            self.add_error(None, exc.messages)
        return cleaned

    @staticmethod
    def initial_from(judgements) -> dict:
        """The form's values for a saved ranking (the batch's answers)."""
        return {f"{RANK_PREFIX}{j.reflection_id}": str(j.rank) for j in judgements if j.rank}
