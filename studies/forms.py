"""Annotator-facing forms. They validate with the services' own rules
(``answer_encode``), so the page, the API and the database cannot disagree."""

from django import forms
from django.core.exceptions import ValidationError

from .models import ErrorCategory
from .protocol import EMPATHY_SCALE, selected_categories
from .services import Answer, answer_encode


class ConsentForm(forms.Form):
    agree = forms.BooleanField(
        required=True,
        error_messages={"required": "Please tick the box to say that you agree."},
    )
    version = forms.IntegerField(widget=forms.HiddenInput)


class AnswerForm(forms.Form):
    """One response candidate: Yes/No, then categories and the most evident error
    (No) or the 1–5 agreement rating (Yes)."""

    coherent = forms.ChoiceField(
        choices=[("yes", "Yes"), ("no", "No")],
        widget=forms.RadioSelect,
        error_messages={"required": "Answer Yes or No."},
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
    seconds_spent = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)
    # "plain" when the page runs without JavaScript (the script sets "js"). A plain
    # form cannot untick a radio button, so there, answers to questions that no
    # longer apply (a rating after switching to No, categories after switching to
    # Yes) are dropped instead of refused. Anything else is checked strictly.
    form_mode = forms.CharField(required=False, widget=forms.HiddenInput)
    # The revision of the answer the page showed (0: none yet), for the service's check.
    revision = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args, categories: list[ErrorCategory], **kwargs):
        super().__init__(*args, **kwargs)
        self.study_categories = categories
        choices = [(c.slug, c.label) for c in categories]
        self.fields["categories"].choices = choices
        self.fields["most_evident"].choices = choices

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        if cleaned.get("form_mode") == "plain":
            if cleaned["coherent"] == "yes":
                cleaned["categories"], cleaned["most_evident"] = [], None
            else:
                cleaned["empathy"] = None
                if len(cleaned.get("categories") or ()) < 2:
                    cleaned["most_evident"] = None
        answer = self.answer()
        try:
            answer_encode(answer=answer, categories={c.slug: c.bit for c in self.study_categories})
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
        return cleaned

    def answer(self) -> Answer:
        data = self.cleaned_data
        return Answer(
            coherent=data["coherent"] == "yes",
            categories=frozenset(data.get("categories") or ()),
            most_evident=data.get("most_evident") or None,
            empathy=data.get("empathy"),
            seconds_spent=data.get("seconds_spent"),
        )

    @classmethod
    def initial_from(cls, judgement, categories: list[ErrorCategory]) -> dict:
        if judgement is None:
            return {}
        chosen = selected_categories(judgement.error_flags, [(c.bit, c.slug) for c in categories])
        most_evident = next(
            (c.slug for c in categories if c.bit == judgement.most_evident_bit), None
        )
        return {
            "coherent": "yes" if judgement.coherent else "no",
            "categories": chosen,
            "most_evident": most_evident if len(chosen) > 1 else None,
            "empathy": str(judgement.empathy) if judgement.empathy else None,
        }
